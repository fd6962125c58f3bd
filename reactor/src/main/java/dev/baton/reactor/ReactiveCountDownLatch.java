package dev.baton.reactor;

import dev.baton.BatonCountDownLatch;
import dev.baton.SynchronizerDeletedException;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** A Baton count-down latch as Reactor publishers ({@link ReactiveBaton}). */
public final class ReactiveCountDownLatch {
    private final BatonCountDownLatch latch;

    ReactiveCountDownLatch(BatonCountDownLatch latch) {
        this.latch = latch;
    }

    /** The latch's name. */
    public String name() {
        return latch.getName();
    }

    /** Sets the count if the latch is not counting already; emits whether it did. */
    public Mono<Boolean> trySetCount(long count) {
        return ReactiveSemaphore.call(() -> latch.trySetCountAsync(count), false);
    }

    /**
     * Counts down by one; see {@link BatonCountDownLatch#countDown()} for an unconfirmed
     * count-down. Cancelling the subscription does not cancel the count-down.
     */
    public Mono<Void> countDown() {
        return ReactiveSemaphore.call(latch::countDownAsync, true);
    }

    /** The count now. */
    public Mono<Long> count() {
        return ReactiveSemaphore.call(latch::getCountAsync, false);
    }

    /**
     * Completes when the count is zero; errors with {@link SynchronizerDeletedException} if the
     * latch is deleted meanwhile. Cancelling the subscription stops the wait and unsubscribes.
     */
    public Mono<Void> await() {
        return ReactiveSemaphore.call(latch::awaitAsync, false);
    }

    /** Emits true when the count reaches zero within {@code timeout}, false if it does not. */
    public Mono<Boolean> await(Duration timeout) {
        return ReactiveSemaphore.call(() -> latch.awaitAsync(timeout.toMillis(), TimeUnit.MILLISECONDS), false);
    }

    @Override
    public String toString() {
        return "ReactiveCountDownLatch{" + latch.getName() + "}";
    }
}
