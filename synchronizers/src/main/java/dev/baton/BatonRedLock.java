package dev.baton;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * The RedLock algorithm over N independent Redis masters (one Baton client per master): a grant
 * needs the lock on a majority of them, taken within the lease, and is good for a
 * <em>validity time</em> of lease − acquisition time − clock drift allowance, which the caller
 * can read with {@link #validityMillis()}.
 *
 * <p>Each attempt asks every master at once with a short per-node timeout; with fewer than a
 * majority granted, or no validity time left, it releases whatever it got on every master and,
 * if the wait time allows, tries again after a random pause.
 *
 * <h2>What it does not guarantee</h2>
 * RedLock assumes bounded process pauses, bounded network delay and clocks that advance at about
 * the same rate. A holder that pauses longer than the validity time (garbage collection, a
 * stopped VM) still believes it holds the lock; a master that restarts without persistence
 * forgets its grants and can give the lock to a second client; a clock that jumps expires keys
 * early. Martin Kleppmann argued that this makes RedLock unsafe for correctness (a lock that can
 * be lost unknowingly needs fencing tokens, which RedLock cannot produce); Salvatore Sanfilippo
 * answered that the assumptions are reasonable in practice and that the validity check catches
 * most pauses. Both agree that where correctness matters the protected resource must check a
 * fencing token: use {@link BatonFencedLock} for that, and RedLock for efficiency (avoiding
 * duplicate work) or where a single Redis is not acceptable and occasional overlap is tolerable.
 *
 * <p>Leases are always fixed: RedLock holds are not renewed by a watchdog. Obtained from
 * {@link Baton#redLock(String, List, Duration)}.
 */
public interface BatonRedLock {

    /** The default per-node timeout (see {@link Baton#redLock(String, List)}). */
    Duration DEFAULT_NODE_TIMEOUT = Duration.ofMillis(200);

    /** The lock's name on every master. */
    String getName();

    /**
     * Acquires on a majority of masters for {@code leaseTime}, trying for at most
     * {@code waitTime} (zero or less: one round). The lease is the hold's validity: a RedLock has
     * no watchdog, so Redisson's {@code -1} has no meaning here and is refused. Taken again by its
     * holder (a re-entry), every master's lease becomes {@code leaseTime} (a lock keeps one
     * expiry): the hold's {@link #validityMillis()} drops to the new lease's as the call starts if
     * that is shorter, and is never lengthened by a re-entry that fails.
     *
     * @return {@code true} if acquired with validity time left; {@code false} otherwise (what a
     *         refused round took is given back on every master, sent before this returns)
     * @throws IllegalArgumentException if {@code leaseTime <= 0}
     * @throws InterruptedException     if interrupted while waiting; nothing is held then
     */
    boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Releases the current thread's hold on every master. Once one master confirms its release,
     * a master that did not answer keeps nothing counted here (its hold ends with its lease).
     *
     * @throws LeaseLostException          if it was held, but every hold's lease ran out before
     *                                      its release landed
     * @throws IllegalMonitorStateException if the current thread holds it on no master
     * @throws RedisUnavailableException    if no master confirmed its release; the holds are
     *                                      kept, and calling unlock again completes them
     */
    void unlock();

    /**
     * Milliseconds of validity left for the current thread's hold: past it, the lock may already
     * be held by someone else. 0 when not held.
     */
    long validityMillis();

    /** Asynchronous {@link #tryLock(long, long, TimeUnit)} for an explicit owner. */
    CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId);

    /** Asynchronous {@link #unlock()} for an explicit owner. */
    CompletionStage<Void> unlockAsync(long ownerId);

    /** {@link #validityMillis()} for an explicit owner. */
    long validityMillis(long ownerId);

    /**
     * Lease-scoped work under the RedLock: acquires it for the current thread with
     * {@code leaseTime}, trying rounds as long as it takes (as {@link #tryLock} with no wait
     * limit, interruptibly), runs {@code work} in the calling thread with the hold's
     * {@link LeaseScope}, and releases it on every master however the work ends.
     *
     * <p>A RedLock's lease is fixed and nothing renews it, so nothing finds it lost early: the
     * scope is valid until at most the granting round's start + {@code leaseTime} − (1 % of it +
     * 25 ms) on this client's clock ({@link #validityMillis()} less 24 ms, the drift being
     * counted in whole milliseconds), and the work is stopped, by
     * interrupting its thread, when that passes or when the thread calls {@link #unlock()} on
     * this object inside the work, a nested {@code withLock}'s own release included (a RedLock
     * counts no re-entries on the client: its {@link #validityMillis()} is 0 after any unlock;
     * an unlock through another object of the same name is not seen). A re-entry inside the
     * work with a shorter lease shortens the scope and moves the stop. A lease of 25 ms or less
     * leaves no validity: the work does not run and the call throws {@link LeaseLostException}.
     *
     * <p>How the call can end: with the work's result; with the work's exception after the
     * release; with {@link LeaseLostException} if the work was stopped (the work's exception as
     * its cause, the thread's interrupt status as it was) or every master's lease had run out
     * before the release landed; with {@link InterruptedException} if interrupted while waiting
     * (nothing held, the work not run); with {@link RedisUnavailableException} if no master
     * confirmed the release (the holds are kept; {@link #unlock()} from the same thread
     * completes them; else they end with their lease).
     *
     * @param leaseTime the lease on every master, which the work must finish within
     * @param unit      its unit
     * @param work      the work; called once, with the hold's scope
     * @return what the work returned
     * @throws IllegalArgumentException if {@code leaseTime <= 0}
     * @throws E                        what the work threw
     * @throws InterruptedException     if interrupted while waiting
     */
    <T, E extends Exception> T withLock(long leaseTime, TimeUnit unit, LeaseWork<T, E> work) throws E, InterruptedException;
}
