package dev.baton.internal.engine;


import dev.baton.internal.command.Failures;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The blocking API is a thin wait on the asynchronous one; these are its waits. They never use
 * {@code synchronized}, so virtual threads unmount while they wait. Public only so that the API
 * package's default methods wait with the same {@link #join} (through {@code dev.baton.Sync}); the
 * module does not export this package.
 */
public final class Blocking {
    private Blocking() {
    }

    /**
     * The one sync-over-async wait, for a future whose completion is bounded (by the command
     * timeout): an interrupt does not stop the wait but is restored afterwards; a failure is
     * rethrown as the exception the future failed with (an {@link Error} as itself, a checked
     * cause wrapped in {@link IllegalStateException}).
     */
    public static <T> T join(CompletableFuture<T> future) {
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

    /**
     * Starts an acquisition and waits for it interruptibly (an interrupt already pending throws
     * before anything starts): on interrupt the acquisition is cancelled, the caller waits (at
     * most {@code settleNanos}) until its clean-up commands are dispatched, so that its next
     * command reaches Redis after them, and {@link InterruptedException} is thrown with the flag
     * cleared.
     */
    public static boolean awaitInterruptibly(Supplier<AcquireEngine.Acquisition> start, long settleNanos)
            throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(); // as the JDK's waits do: nothing is started
        }
        AcquireEngine.Acquisition acquisition = start.get();
        try {
            return acquisition.result().get();
        } catch (InterruptedException e) {
            // cancel(false) settles the race with a grant atomically: either the wait is
            // cancelled (and a late grant is handed back by the engine) or it had succeeded.
            if (!acquisition.result().cancel(false) && successfully(acquisition.result())) {
                Thread.currentThread().interrupt();
                return true;
            }
            awaitQuietly(acquisition.settled(), settleNanos);
            throw e;
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        }
    }

    /** Waits for an acquisition without giving up on interrupt; the flag is restored. */
    public static boolean awaitUninterruptibly(AcquireEngine.Acquisition acquisition) {
        return join(acquisition.result());
    }

    private static boolean successfully(CompletableFuture<Boolean> result) {
        return !result.isCompletedExceptionally() && Boolean.TRUE.equals(result.getNow(false));
    }

    private static void awaitQuietly(CompletableFuture<?> future, long nanos) {
        boolean interrupted = false;
        long deadline = System.nanoTime() + nanos;
        try {
            while (true) {
                try {
                    future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    return;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | TimeoutException | CancellationException e) {
                    return;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * What a blocking call throws for a failed future's cause: a runtime exception as itself, an
     * {@link Error} thrown here, a checked cause wrapped in {@link IllegalStateException}.
     */
    public static RuntimeException rethrow(Throwable cause) {
        Throwable c = Failures.unwrap(cause);
        if (c instanceof RuntimeException re) {
            return re;
        }
        if (c instanceof Error err) {
            throw err;
        }
        return new IllegalStateException(c);
    }
}
