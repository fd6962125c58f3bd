package dev.baton.reactor;

import dev.baton.BatonSemaphore;
import dev.baton.RedisUnavailableException;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A Baton semaphore as Reactor publishers ({@link ReactiveBaton}). Permits have no owner, so
 * nothing here depends on the thread or the Context.
 */
public final class ReactiveSemaphore {
    private final BatonSemaphore semaphore;

    ReactiveSemaphore(BatonSemaphore semaphore) {
        this.semaphore = semaphore;
    }

    /** The semaphore's name. */
    public String name() {
        return semaphore.getName();
    }

    /**
     * Takes {@code permits} for the time the Mono {@code work} gives runs, and gives them back
     * however it ends (completes, errors, or is cancelled). Cancelling the subscription while it
     * waits abandons the wait: no permit is taken. Errors with
     * {@link RedisUnavailableException} if Redis does not answer within the command timeout.
     */
    public <T> Mono<T> withPermits(int permits, Supplier<? extends Mono<T>> work) {
        return Mono.usingWhen(acquire(permits).thenReturn(permits), p -> work.get(),
                this::release, (p, error) -> release(p), this::release);
    }

    /** Takes {@code permits}, waiting as long as it takes; cancelling the subscription abandons the wait. */
    public Mono<Void> acquire(int permits) {
        return call(() -> semaphore.acquireAsync(permits));
    }

    /** Takes {@code permits} if they become free within {@code wait}; emits whether it did. */
    public Mono<Boolean> tryAcquire(int permits, Duration wait) {
        return call(() -> semaphore.tryAcquireAsync(permits, wait.toMillis(), TimeUnit.MILLISECONDS));
    }

    /** Gives back {@code permits}; see {@link BatonSemaphore#release(int)} for an unconfirmed release. */
    public Mono<Void> release(int permits) {
        return call(() -> semaphore.releaseAsync(permits));
    }

    /** The permits free now. */
    public Mono<Integer> availablePermits() {
        return call(semaphore::availablePermitsAsync);
    }

    /** Sets the permits if the semaphore does not exist yet; emits whether it did. */
    public Mono<Boolean> trySetPermits(int permits) {
        return call(() -> semaphore.trySetPermitsAsync(permits));
    }

    static <T> Mono<T> call(Supplier<? extends CompletionStage<T>> call) {
        return Mono.fromFuture(() -> call.get().toCompletableFuture(), false)
                .onErrorMap(CompletionException.class, e -> e.getCause() != null ? e.getCause() : e);
    }

    @Override
    public String toString() {
        return "ReactiveSemaphore{" + semaphore.getName() + "}";
    }
}
