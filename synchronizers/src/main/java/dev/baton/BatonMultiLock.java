package dev.baton;

import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * Several Baton locks taken as one, all or nothing: any mix of reentrant, fair, fenced, read or
 * write locks, on one Redis or on several. When one of them cannot be taken, every lock already
 * taken is released again, in reverse order, before the call returns or throws.
 *
 * <p>The locks are always taken in one canonical order (by name; each name may appear once),
 * whatever order the caller listed them in, so two multi-locks over the same locks can never
 * deadlock each other. Released in the reverse order.
 *
 * <p>How a wait ends is as for {@link BatonLock}; a wait time applies to the whole set.
 * Obtained from {@link Baton#multiLock(List)}.
 */
public interface BatonMultiLock extends Lock {

    /** The locks, in the order they are taken. */
    List<BatonLock> locks();

    /**
     * Takes every lock with a fixed lease, waiting as long as it takes; not interruptible. A
     * negative {@code leaseTime} (Redisson's -1) means watchdog leases, as {@link #lock()}.
     *
     * @throws IllegalArgumentException if {@code leaseTime == 0}
     */
    void lock(long leaseTime, TimeUnit unit);

    /**
     * Takes every lock with a fixed lease, waiting at most {@code waitTime} in all (zero or less:
     * one attempt at each lock); a negative {@code leaseTime} means watchdog leases.
     *
     * @return {@code true} if all are held; {@code false} if the time ran out (none are held)
     * @throws IllegalArgumentException if {@code leaseTime == 0}
     * @throws InterruptedException if interrupted while waiting; none are held then
     */
    boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** Releases every lock, in reverse order; all are attempted even if one fails. */
    @Override
    void unlock();

    /** Not supported: a distributed lock has no conditions. */
    @Override
    default Condition newCondition() {
        throw new UnsupportedOperationException("Baton locks do not support conditions");
    }

    /** Asynchronous {@link #lock()} for an explicit owner (watchdog mode). */
    CompletionStage<Void> lockAsync(long ownerId);

    /**
     * Asynchronous {@link #tryLock(long, long, TimeUnit)} for an explicit owner; a negative
     * {@code leaseTime} means watchdog mode.
     */
    CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId);

    /** Asynchronous {@link #unlock()} for an explicit owner. */
    CompletionStage<Void> unlockAsync(long ownerId);
}
