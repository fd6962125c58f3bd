package dev.baton;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;

/**
 * A reentrant mutual-exclusion lock shared by every process that uses the same name on the
 * same Redis. It behaves like {@link java.util.concurrent.locks.ReentrantLock} (non-fair),
 * except that a hold is a <em>lease</em> in Redis:
 * <ul>
 *   <li>Without a lease time the lock is kept alive by Baton's watchdog: it expires
 *       {@link BatonOptions#watchdogTimeout()} after the holder's process stops renewing it (for
 *       example because it crashed), and is renewed every third of that while held.</li>
 *   <li>With a lease time it is never renewed; it is released by {@link #unlock()} or expires
 *       when the lease runs out, whichever comes first.</li>
 * </ul>
 * A hold belongs to an <em>owner</em>: for the blocking methods the calling thread, for the
 * {@code *Async} methods the {@code ownerId} the caller passes, so asynchronous code can lock on
 * one thread and unlock on another. An owner's acquisitions of one lock take turns: a second
 * one started while the first still waits (two {@code *Async} calls with one owner id) begins
 * when the first has ended (and re-enters if the first was granted); if its own wait ends first,
 * even a wait of zero, it ends without asking Redis ({@code false}, or its cancellation). The lock is stored the way Redisson stores its
 * {@code RLock}, so Baton and Redisson clients exclude and wake each other on the same name.
 *
 * <h2>How a wait ends</h2>
 * A call that waits for the lock returns or throws for one of these reasons only:
 * <ul>
 *   <li><b>acquired</b>: the lock became free (a release is announced over pub/sub and wakes a
 *       waiter within a second; a lost announcement only delays the waiter until the holder's
 *       lease would run out);</li>
 *   <li><b>timed out</b>: {@code tryLock} with a wait time returns {@code false} when the wait
 *       time has passed (its last attempt is made at the deadline);</li>
 *   <li><b>interrupted</b>: the interruptible methods throw {@link InterruptedException} and
 *       clear the interrupt flag; {@link #lock()} keeps waiting and restores the flag before it
 *       returns. An interrupted wait leaves no hold and no subscription behind;</li>
 *   <li><b>Redis unreachable</b>: {@link RedisUnavailableException}. A wait with a wait time
 *       rides through connection failures (a reset, a reconnect, a command that got no answer)
 *       that end inside its wait time: it tries again after a short pause, and throws only if
 *       its last attempt, at the latest at the end of the wait time, failed that way, no later
 *       than the wait time + {@link BatonOptions#commandTimeout()} + 150 ms. A call without a
 *       wait time ({@link #lock()}, {@link #tryLock()}) throws when its attempt fails, within the
 *       command timeout + 150 ms. An attempt whose answer never came is undone by Baton (in the
 *       background, ahead of the caller's next command), so nothing is held after the throw;</li>
 *   <li><b>wrong type</b>: {@link WrongTypeException} when the name holds another kind of
 *       value.</li>
 * </ul>
 *
 * <h2>Wait times and lease times</h2>
 * A {@code waitTime} of zero or less means "try once, do not wait", as in
 * {@link Lock#tryLock(long, TimeUnit)}: a computed {@code deadline - now} that has run out is
 * answered, never refused. A negative {@code leaseTime} means "no lease time", as Redisson's
 * {@code -1} does: the hold is watchdog-renewed, exactly as with the overload without a lease.
 * A {@code leaseTime} of zero is refused with {@link IllegalArgumentException}.
 *
 * <h2>Asynchronous methods</h2>
 * Each {@code *Async} method returns a {@link CompletionStage} whose
 * {@code toCompletableFuture()} is Baton's own future, not a copy: a timed
 * {@code get(timeout, unit)} waits on the operation itself. Completing an acquisition's future
 * before it ends, in any way ({@code cancel}, {@code orTimeout}, {@code completeOnTimeout},
 * {@code complete}), abandons the wait: it leaves nothing held, and a grant that raced the
 * completion is given back. (Why stages and not {@code CompletableFuture}: docs/adr/0005.)
 *
 * <h2>Memory consistency</h2>
 * Actions before {@link #unlock()} in one process happen-before actions after a later
 * successful acquire in any process, as far as state kept in Redis or made visible before the
 * release is concerned; Baton cannot order effects on other systems (see fencing in the
 * guarantees document).
 */
public interface BatonLock extends Lock {

    /** The lock's name, which is also its Redis key. */
    String getName();

    /**
     * Acquires the lock (watchdog mode), waiting as long as it takes; not interruptible. If
     * interrupted while waiting, it keeps waiting and returns with the interrupt flag set.
     *
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    @Override
    void lock();

    /**
     * Acquires the lock for a fixed lease, waiting as long as it takes; not interruptible.
     *
     * @param leaseTime how long the hold lasts unless released first; negative (Redisson's -1)
     *                  for a watchdog-renewed hold, as {@link #lock()}
     * @param unit      the unit of {@code leaseTime}
     * @throws IllegalArgumentException  if {@code leaseTime == 0}
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    void lock(long leaseTime, TimeUnit unit);

    /**
     * Acquires the lock (watchdog mode) unless interrupted.
     *
     * @throws InterruptedException      if interrupted while waiting; nothing is held then
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    @Override
    void lockInterruptibly() throws InterruptedException;

    /**
     * Acquires the lock for a fixed lease unless interrupted; a negative {@code leaseTime} means
     * a watchdog-renewed hold.
     *
     * @throws IllegalArgumentException  if {@code leaseTime == 0}
     * @throws InterruptedException      if interrupted while waiting; nothing is held then
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Acquires the lock (watchdog mode) only if it is free or already held by this thread, in
     * one round trip, without waiting.
     *
     * @return whether the lock is now held by the current thread
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    @Override
    boolean tryLock();

    /**
     * Acquires the lock (watchdog mode), waiting at most {@code waitTime}; a {@code waitTime} of
     * zero or less tries once without waiting.
     *
     * @return {@code true} if acquired, {@code false} if the wait time elapsed first
     * @throws InterruptedException      if interrupted while waiting; nothing is held then
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    @Override
    boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException;

    /**
     * Acquires the lock for a fixed lease, waiting at most {@code waitTime}; a {@code waitTime} of
     * zero or less tries once, a negative {@code leaseTime} means a watchdog-renewed hold.
     *
     * @return {@code true} if acquired, {@code false} if the wait time elapsed first
     * @throws IllegalArgumentException  if {@code leaseTime == 0}
     * @throws InterruptedException      if interrupted while waiting; nothing is held then
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Releases one hold of the current thread; the last hold frees the lock and wakes a waiter.
     * A connection failure does not lose the release: Baton sends it again (it is safe to apply
     * twice) until Redis answers or the command timeout passes. If Redis still did not answer,
     * this throws {@link RedisUnavailableException} <em>and keeps the hold</em>: call
     * {@code unlock()} again to complete it; a release that had in fact landed is recognised,
     * so the second call returns normally either way. The watchdog stops renewing a last hold
     * before its release is sent, so an unconfirmed release also ends when the lease runs out.
     *
     * @throws LeaseLostException           if the thread held the lock but its lease was lost
     *                                      (every outstanding hold's unlock reports it)
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     * @throws RedisUnavailableException    if Redis did not confirm the release within the
     *                                      command timeout (+ 150 ms); the hold is kept, so
     *                                      call {@code unlock()} again
     * @throws DoNotRetryException          if the release landed on the master but too few
     *                                      replicas acknowledged it (replica sync set to fail);
     *                                      the hold is over, do not call {@code unlock()} again
     */
    @Override
    void unlock();

    /**
     * Acquires the lock like {@link #lock()} and returns a handle that releases it on
     * {@link LockHold#close()}, for try-with-resources.
     */
    LockHold acquire();

    /**
     * Acquires the lock like {@link #lockInterruptibly(long, TimeUnit)} and returns a handle
     * that releases it on {@link LockHold#close()}.
     */
    LockHold acquire(long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Acquires the lock like {@link #tryLock(long, TimeUnit)} and, if it was acquired, returns a
     * handle that releases it on {@link LockHold#close()}: a bounded wait without a hand-written
     * try/finally.
     * <pre>{@code
     * Optional<LockHold> held = lock.tryAcquire(2, TimeUnit.SECONDS);
     * if (held.isEmpty()) {
     *     return; // busy elsewhere
     * }
     * try (LockHold hold = held.get()) {
     *     // one process at a time
     * }
     * }</pre>
     *
     * @return the hold, or empty if the wait time elapsed first
     * @throws InterruptedException      if interrupted while waiting; nothing is held then
     * @throws RedisUnavailableException as {@link #tryLock(long, TimeUnit)}
     */
    Optional<LockHold> tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException;

    /**
     * Acquires the lock like {@link #tryLock(long, long, TimeUnit)} and, if it was acquired,
     * returns a handle that releases it on {@link LockHold#close()}.
     *
     * @return the hold, or empty if the wait time elapsed first
     * @throws IllegalArgumentException if {@code leaseTime == 0}
     * @throws InterruptedException     if interrupted while waiting; nothing is held then
     */
    Optional<LockHold> tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Acquires the lock like {@link #lockInterruptibly()} (the watchdog keeps the lease alive),
     * runs {@code work} in the calling thread with the {@link LeaseScope} of this hold, and
     * releases the lock however the work ends: work that is stopped when its lease is lost.
     * <pre>{@code
     * lock.withLock(scope -> {
     *     for (Invoice invoice : batch) {
     *         scope.checkValid();          // LeaseLostException once the lease is not known to be held
     *         ledger.post(invoice);
     *     }
     *     return null;
     * });
     * }</pre>
     *
     * <p>The work is stopped, by interrupting the thread that runs it, when
     * <ul>
     *   <li>Baton finds the lease lost: the watchdog's renewal finds the lock gone from Redis
     *       (deleted, force-unlocked, Redis restarted without its data), which it does within a
     *       third of the watchdog timeout after it went, plus that renewal's round trip; or</li>
     *   <li>the lease's validity runs out on this client's clock (see {@link LeaseScope}):
     *       renewal has not been confirmed for the watchdog timeout less the margin, because
     *       Redis is unreachable or paused. The stop is set for before Redis itself can let the
     *       lease expire (a thread that the JVM does not run for longer than the margin still
     *       gets it late: that is what fencing tokens are for); or</li>
     *   <li>the client is closed, since nothing renews the lease any more.</li>
     * </ul>
     * Work that blocks (I/O, {@code sleep}, a wait) ends with {@link InterruptedException} or
     * its interruptible equivalent; work that computes should call {@link LeaseScope#checkValid()}.
     * Either way, once the work returns or throws, {@code withLock} throws
     * {@link LeaseLostException} with the work's exception, if any, as its cause (the work's own
     * {@code LeaseLostException}, from {@link LeaseScope#checkValid()}, is thrown as it is; so is
     * an {@link Error}, with the {@code LeaseLostException} suppressed), and the
     * thread's interrupt status is as it was before the stop. If the release then cannot be
     * confirmed either, Baton forgets the hold (nothing renews it, so Redis lets it expire
     * within its lease) and adds the {@link RedisUnavailableException} to the
     * {@code LeaseLostException} as suppressed. A loss found before the work starts ends the call
     * the same way without running it. Scoped work may run inside scoped work on the same
     * thread; each is stopped by its own lease.
     *
     * <p>How the call can end: with the work's result; with the work's exception after the lock
     * was released; with {@link LeaseLostException} as above; with {@link InterruptedException}
     * if the thread is interrupted while waiting for the lock (nothing is held and the work does
     * not run); with {@link RedisUnavailableException} if Redis does not answer the acquisition
     * within the command timeout (+ 150 ms; nothing is held) or does not confirm the release
     * (the work ran; the hold is kept, and {@link #unlock()} from the same thread completes it,
     * as for any unconfirmed release). A release's own failure after work that threw is added to
     * the work's exception as suppressed.
     *
     * @param work the work; called once, with the scope of this hold
     * @return what the work returned
     * @throws E                         what the work threw
     * @throws InterruptedException      if interrupted while waiting for the lock
     * @throws LeaseLostException        if the lease was lost, or its validity ran out, while the
     *                                   work ran
     * @throws RedisUnavailableException as above
     */
    <T, E extends Exception> T withLock(LeaseWork<T, E> work) throws E, InterruptedException;

    /**
     * The asynchronous form of {@link #withLock(LeaseWork)}: acquires the lock for an owner of
     * its own ({@link Baton#newOwnerId()}, so never a thread's: a pipeline that hops threads
     * still releases what it took), calls {@code work} with the scope once it is held, and
     * releases the lock when the stage the work returned completes, however it completes.
     * <pre>{@code
     * lock.withLockAsync(scope -> client.sendAsync(request, handler))
     *     .whenComplete((response, failure) -> ...);   // released by then
     * }</pre>
     *
     * <p>The work is stopped, by cancelling the stage it returned (from another thread), in the
     * same cases and within the same bounds as {@link #withLock(LeaseWork)}'s; its scope is no
     * longer valid from then on, and the returned stage completes exceptionally with
     * {@link LeaseLostException} (the work's own failure, if it failed otherwise, as its cause;
     * an {@link Error} as it is) after the release was tried. Cancelling a stage does not stop
     * code already running for it (upstream stages, a task on another thread): such code should
     * check its scope, and the lock is released as soon as the stage is cancelled. The stage the
     * work returns is cancelled, so return one of the work's own, not a shared or cached one.
     * How the returned stage can end: with
     * the work's result; with the work's failure (after the release); with
     * {@link LeaseLostException} as above; with {@link RedisUnavailableException} if Redis does
     * not answer the acquisition within the command timeout (+ 150 ms; nothing is held) or does
     * not confirm the release (the work completed; nobody can call unlock again for this call's
     * owner id, so Baton forgets the hold, which nothing renews any more, and Redis lets it
     * expire within its lease). Completing or cancelling the returned
     * stage before the lock is granted abandons the acquisition (nothing stays held, the work
     * does not run); after, it stops the work as a loss would, and the lock is released. The
     * hold's owner is this call's own: a {@code lock()} or another {@code withLockAsync} of the
     * same lock inside the work waits for this hold like any other owner.
     *
     * @param work the work; called once, with the scope of this hold, on the default
     *             asynchronous executor of {@link java.util.concurrent.CompletableFuture} (never
     *             on one of Baton's I/O or timer threads); it should return at once and do its
     *             waiting in the stage
     * @return the stage of the work's result, completed after the release
     */
    <T> CompletionStage<T> withLockAsync(Function<? super LeaseScope, ? extends CompletionStage<T>> work);

    /**
     * {@link #withLockAsync(java.util.function.Function)} for the given owner: an owner that
     * holds the lock already re-enters it (the scope is of that same lease), as
     * {@link #lockAsync(long)} does. For a caller that carries its owner id itself, as a
     * coroutine or a reactive pipeline carries its context.
     */
    <T> CompletionStage<T> withLockAsync(long ownerId,
                                         Function<? super LeaseScope, ? extends CompletionStage<T>> work);

    /** Not supported: a distributed lock has no conditions. */
    @Override
    default Condition newCondition() {
        throw new UnsupportedOperationException("Baton locks do not support conditions");
    }

    /**
     * Deletes the lock whoever holds it and wakes its waiters. The former holder learns of it
     * through {@link LeaseLostException} on its next unlock. A grant Redis made just before the
     * force, whose reply was still on its way, still reaches its caller: that holder too learns
     * of the force at its unlock.
     *
     * @return whether the lock was held (for a side of a read-write lock: held in that side's
     *         mode; held in the other mode, it is left as it is and this returns {@code false})
     */
    default boolean forceUnlock() {
        return Sync.await(forceUnlockAsync());
    }

    /** Whether any owner, in any process, holds the lock now. */
    default boolean isLocked() {
        return Sync.await(isLockedAsync());
    }

    /**
     * How many wait for this lock now, as far as Redis can tell, for operators and tests (one
     * read, no waiting):
     * <ul>
     *   <li>a <b>fair lock</b>: the owners in its queue, of every client: exact, except that a
     *       waiter whose process died stays counted until its waiter lease
     *       ({@link BatonOptions#fairLockWaiterTimeout()}) runs out;</li>
     *   <li>every <b>other lock</b>: the clients waiting for it, that is the connections
     *       subscribed to its channel (PUBSUB NUMSUB; SHARDNUMSUB on the slot's master in a
     *       Redis 7+ cluster; the sum over every node in an older cluster). Each Baton or
     *       Redisson client with one or more waiting owners counts once, since a client
     *       subscribes once per lock.</li>
     * </ul>
     * The answer may be out of date by the time it arrives.
     *
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    default long waiterCount() {
        return Sync.await(waiterCountAsync());
    }

    /** Whether anyone waits for this lock now, as {@link #waiterCount()} counts. */
    default boolean hasWaiters() {
        return waiterCount() > 0;
    }

    /** Whether the current thread holds the lock, as Redis sees it now. */
    boolean isHeldByCurrentThread();

    /** Whether the owner with this thread id (or async owner id) of this client holds it now. */
    boolean isHeldByThread(long ownerId);

    /** How many holds the current thread has on the lock, as Redis sees it (0 if none). */
    int getHoldCount();

    /**
     * How many holds the owner with this thread id (or async owner id) of this client has on the
     * lock, as Redis sees it (0 if none): {@link #getHoldCount()} for an asynchronous owner.
     */
    int getHoldCount(long ownerId);

    /**
     * Gives the current thread's hold a new fixed lease: the lock now expires {@code leaseTime}
     * from now unless it is released or updated again. Checked against the owner in Redis, in
     * one script call. For a hold taken with a lease time ({@link #lock(long, TimeUnit)},
     * {@link #tryLock(long, long, TimeUnit)}, ...); a watchdog-renewed hold needs no update.
     *
     * @param leaseTime the new lease, positive and at most 3650 days
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     * @throws IllegalStateException        if the hold is renewed by the watchdog
     * @throws LeaseLostException           if the lease had already run out or the lock was
     *                                      deleted; reported to the {@link LeaseLostListener} too
     * @throws RedisUnavailableException    if Redis did not confirm the update within the command
     *                                      timeout (+ 150 ms); the hold keeps the old lease,
     *                                      unless the update reached Redis and runs when it
     *                                      answers again: call {@code updateLease} again to be
     *                                      sure
     */
    void updateLease(Duration leaseTime);

    /**
     * The lock's remaining time to live in milliseconds: -2 if it is not held, -1 if it is held
     * without expiry (only possible when written by something other than Baton).
     */
    long remainTimeToLive();

    // ---- asynchronous twins: owner given explicitly ---------------------------------------

    /**
     * Acquires the lock for {@code ownerId} (watchdog mode), waiting as long as it takes.
     * Cancelling the returned stage's {@code toCompletableFuture()}, or bounding it with
     * {@code orTimeout} / {@code completeOnTimeout}, abandons the wait and leaves nothing held.
     */
    CompletionStage<Void> lockAsync(long ownerId);

    /**
     * Acquires the lock for {@code ownerId} with a fixed lease (negative: watchdog mode), waiting
     * as long as it takes.
     */
    CompletionStage<Void> lockAsync(long leaseTime, TimeUnit unit, long ownerId);

    /** Tries once to acquire the lock for {@code ownerId} (watchdog mode), without waiting. */
    CompletionStage<Boolean> tryLockAsync(long ownerId);

    /**
     * Acquires the lock for {@code ownerId} (watchdog mode), waiting at most {@code waitTime}
     * (zero or less: one attempt); completes with {@code false} when the wait time elapsed.
     */
    CompletionStage<Boolean> tryLockAsync(long waitTime, TimeUnit unit, long ownerId);

    /**
     * Acquires the lock for {@code ownerId} with a fixed lease (negative: watchdog mode), waiting
     * at most {@code waitTime} (zero or less: one attempt); completes with {@code false} when the
     * wait time elapsed.
     */
    CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId);

    /**
     * Releases one hold of {@code ownerId}; completes exceptionally like {@link #unlock()}
     * throws. An owner's operations must not overlap: wait for one to complete before starting
     * the next.
     */
    CompletionStage<Void> unlockAsync(long ownerId);

    /**
     * {@link #updateLease(Duration)} for {@code ownerId}; completes exceptionally as
     * that method throws.
     */
    CompletionStage<Void> updateLeaseAsync(Duration leaseTime, long ownerId);

    /** Asynchronous {@link #waiterCount()}. */
    CompletionStage<Long> waiterCountAsync();

    /** Asynchronous {@link #forceUnlock()}. */
    CompletionStage<Boolean> forceUnlockAsync();

    /** Asynchronous {@link #isLocked()}. */
    CompletionStage<Boolean> isLockedAsync();
}
