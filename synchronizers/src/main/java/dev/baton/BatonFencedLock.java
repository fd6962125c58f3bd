package dev.baton;

import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A reentrant lock whose every grant carries a <em>fencing token</em>: a number that strictly
 * rises each time the lock goes from free to held, and stays the same on a reentrant acquire.
 * Pass the token with every write to the resource the lock protects, and have the resource
 * reject a token lower than the highest it has seen: then a holder that lost its lease without
 * knowing it (a long pause, a network partition) cannot overwrite a later holder's work.
 *
 * <p>Tokens keep rising even if Redis loses its data (restart without persistence): a token is
 * the larger of the previous token + 1 and the Redis server's clock in microseconds. This
 * assumes the Redis server's clock never goes back across such a restart and that fewer than a
 * million grants a second are made.
 *
 * <p>Everything else, including how waits end, is as in {@link BatonLock}; the lock shares its
 * layout with Redisson's {@code RFencedLock} (Redisson raises the token on re-entry too, which
 * keeps it rising for everybody).
 */
public interface BatonFencedLock extends BatonLock {

    /** Like {@link #lock()}; returns the token of the hold. */
    long lockAndGetToken();

    /** Like {@link #lock(long, TimeUnit)}; returns the token of the hold. */
    long lockAndGetToken(long leaseTime, TimeUnit unit);

    /** Like {@link #tryLock()}; the token of the hold, or empty if the lock is held elsewhere. */
    OptionalLong tryLockAndGetToken();

    /**
     * Like {@link #tryLock(long, long, TimeUnit)}; the token, or empty if the wait time elapsed.
     *
     * @throws InterruptedException if interrupted while waiting; nothing is held then
     */
    OptionalLong tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * The token of the current thread's hold, without a round trip.
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     */
    long getToken();

    /** Asynchronous {@link #lockAndGetToken()} for an explicit owner. */
    CompletionStage<Long> lockAndGetTokenAsync(long ownerId);

    /** Asynchronous {@link #tryLockAndGetToken(long, long, TimeUnit)} for an explicit owner. */
    CompletionStage<OptionalLong> tryLockAndGetTokenAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId);
}
