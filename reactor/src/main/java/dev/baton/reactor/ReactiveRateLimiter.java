package dev.baton.reactor;

import dev.baton.BatonRateLimiter;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A Baton rate limiter as Reactor publishers ({@link ReactiveBaton}). Permits have no owner, so
 * nothing here depends on the thread or the Context. Publishers signal on a Reactor scheduler,
 * never on Baton's own threads. Cancelling a subscription while it waits for its slot undoes the
 * reservation (see {@link BatonRateLimiter}, "How a wait ends").
 */
public final class ReactiveRateLimiter {
    private final BatonRateLimiter limiter;

    ReactiveRateLimiter(BatonRateLimiter limiter) {
        this.limiter = limiter;
    }

    /** The limiter's name. */
    public String name() {
        return limiter.getName();
    }

    /** Completes at the slot of {@code permits}, however long it takes; a cancel undoes the reservation. */
    public Mono<Void> acquire(int permits) {
        return ReactiveSemaphore.call(() -> limiter.acquireAsync(permits), false);
    }

    /** Emits whether {@code permits} could go now (one round trip; nothing reserved if not). */
    public Mono<Boolean> tryAcquire(int permits) {
        return ReactiveSemaphore.call(() -> limiter.tryAcquireAsync(permits), false);
    }

    /**
     * Emits {@code true} at the slot of {@code permits} if it comes within {@code wait}, or
     * {@code false} at once if it lies further away; a cancel undoes the reservation.
     */
    public Mono<Boolean> tryAcquire(int permits, Duration wait) {
        return ReactiveSemaphore.call(() -> limiter.tryAcquireAsync(permits, wait.toNanos(), TimeUnit.NANOSECONDS), false);
    }

    /** The limiter's state on Redis's clock ({@link BatonRateLimiter#state()}). */
    public Mono<BatonRateLimiter.State> state() {
        return ReactiveSemaphore.call(limiter::stateAsync, false);
    }

    @Override
    public String toString() {
        return "ReactiveRateLimiter{" + limiter.getName() + "}";
    }
}
