package dev.baton;

import dev.baton.internal.engine.Blocking;

import java.util.concurrent.CompletionStage;

/**
 * The API's door to the one sync-over-async wait: the blocking methods that do not wait for
 * anyone (reads, releases, counts) are default methods of the API interfaces that wait here on
 * their asynchronous twin, with the same wait the implementations use ({@link Blocking#join}).
 * Every such twin is bounded by the command timeout, so this wait is too. An interrupt does not
 * stop it but is restored afterwards; a failure is rethrown as the exception the twin failed with.
 */
final class Sync {
    private Sync() {
    }

    static <T> T await(CompletionStage<T> stage) {
        return Blocking.join(stage.toCompletableFuture());
    }
}
