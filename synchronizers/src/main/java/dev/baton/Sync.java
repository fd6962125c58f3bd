package dev.baton;

import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * The one sync-over-async adapter: the blocking methods that do not wait for anyone (reads,
 * releases, counts) are default methods of the API interfaces that wait here on their
 * asynchronous twin. Every such twin is bounded by the command timeout, so this wait is too. An
 * interrupt does not stop it but is restored afterwards; a failure is rethrown as the exception
 * the twin failed with.
 */
final class Sync {
    private Sync() {
    }

    static <T> T await(CompletionStage<T> stage) {
        Future<T> future = stage.toCompletableFuture();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return future.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw rethrow(e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static RuntimeException rethrow(Throwable cause) {
        Throwable c = cause;
        while (c instanceof CompletionException && c.getCause() != null) {
            c = c.getCause();
        }
        if (c instanceof RuntimeException re) {
            return re;
        }
        if (c instanceof Error err) {
            throw err;
        }
        return new IllegalStateException(c);
    }
}
