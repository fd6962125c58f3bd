package dev.baton;

import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;

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
 *
 * <p>Giving up on an asynchronous call: completing the stage it returned in any way
 * ({@code cancel}, {@code orTimeout}, {@code completeOnTimeout}, {@code complete}) before the set
 * is held abandons the call, and the give-backs of every member it holds are sent before any
 * callback of that stage runs; the same owner's next call over any of those members, even one
 * started inside such a callback, waits for them, so what it is granted is what Redis holds for
 * it. A completion that comes after Baton completed the stage fails, as on any completed future:
 * the set is then held, and the stage says so.
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

    /**
     * Lease-scoped work under every lock of the set: takes them one by one in the canonical
     * order, as {@link BatonLock#withLock(LeaseWork)} takes one (watchdog leases, interruptible
     * waits), runs {@code work} in the calling thread once all are held, and releases them in
     * reverse order however the work ends. The work's scope is the set's: valid while every
     * lock's lease is known to be held ({@link LeaseScope#remaining()} is the least of theirs),
     * its {@link LeaseScope#members()} the locks' own scopes in the order taken. The work is
     * stopped, by interrupting its thread, when any lock's lease is lost or runs out, in the
     * cases and within the bounds of {@link BatonLock#withLock(LeaseWork)}; the call then throws
     * that lock's {@link LeaseLostException}. A lock the thread waits for while another is
     * already held ends the wait the same way if the held one is lost meanwhile (nothing held,
     * the work not run). How the call can end is otherwise as for the single lock's.
     *
     * @param work the work; called once, with the set's scope
     * @return what the work returned
     * @throws E                    what the work threw
     * @throws InterruptedException if interrupted while waiting for a lock (none are held then)
     * @throws LeaseLostException   if any lock's lease was lost, or its validity ran out, while
     *                              the work ran or while a later lock was awaited
     */
    <T, E extends Exception> T withLock(LeaseWork<T, E> work) throws E, InterruptedException;

    /**
     * The asynchronous form of {@link #withLock(LeaseWork)}, as
     * {@link BatonLock#withLockAsync(java.util.function.Function)} is of the single lock's: the
     * locks are held for an owner of the call's own, the work's stage is cancelled when any lock's
     * lease is lost or runs out, and the returned stage completes after every release. Completing
     * or cancelling the returned stage before all are held abandons the wait and gives back what
     * was taken; after, it stops the work and releases them.
     *
     * @param work the work; called once, with the set's scope, off Baton's threads
     * @return the stage of the work's result, completed after the releases
     */
    <T> CompletionStage<T> withLockAsync(Function<? super LeaseScope, ? extends CompletionStage<T>> work);

    /** {@link #withLockAsync(java.util.function.Function)} for the given owner (re-entering what it holds). */
    <T> CompletionStage<T> withLockAsync(long ownerId,
                                         Function<? super LeaseScope, ? extends CompletionStage<T>> work);
}
