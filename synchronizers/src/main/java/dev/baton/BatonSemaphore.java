package dev.baton;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A counting semaphore shared by every process that uses the same name on the same Redis,
 * shaped like {@link java.util.concurrent.Semaphore} (non-fair) and stored like Redisson's
 * {@code RSemaphore}: the available permits in a string at the name. Typical use: at most N
 * concurrent calls to a rate-limited partner across a fleet.
 * <pre>{@code
 * BatonSemaphore partner = baton.semaphore("partner-api");
 * partner.trySetPermits(4);                 // once; does nothing if already set
 * try (SemaphorePermits permit = partner.acquirePermits(1)) {
 *     callPartner();
 * }
 * }</pre>
 * Permits are not owned: any process may release them. A holder that crashes never releases
 * its permits (they leak); use {@link BatonPermitExpirableSemaphore} when that matters.
 * A semaphore that does not exist has 0 permits; waiters then wait for permits to be added.
 *
 * <h2>How a wait ends</h2>
 * <ul>
 *   <li><b>acquired</b>: enough permits became available (a release announces the new count
 *       and wakes up to that many waiters; a lost announcement is recovered by a re-check at
 *       most {@value #RECHECK_SECONDS} seconds later);</li>
 *   <li><b>timed out</b>: {@code tryAcquire} with a wait time returns {@code false}, having
 *       taken nothing;</li>
 *   <li><b>interrupted</b>: {@link InterruptedException}, nothing taken, no subscription left;</li>
 *   <li><b>deleted</b>: {@link #delete()} while waiting throws
 *       {@link SynchronizerDeletedException};</li>
 *   <li><b>Redis unreachable</b>: {@link RedisUnavailableException} within the command
 *       timeout.</li>
 * </ul>
 */
public interface BatonSemaphore {

    /** The bound on how late a waiter notices permits when the announcement was lost. */
    int RECHECK_SECONDS = 5;

    /** The semaphore's name, which is also its Redis key. */
    String getName();

    /** Takes one permit, waiting as long as it takes. */
    void acquire() throws InterruptedException;

    /**
     * Takes {@code permits} permits at once, waiting as long as it takes.
     *
     * @throws IllegalArgumentException if {@code permits < 1}
     */
    void acquire(int permits) throws InterruptedException;

    /** Takes one permit if one is available now. */
    boolean tryAcquire();

    /** Takes {@code permits} permits if that many are available now. */
    boolean tryAcquire(int permits);

    /** Takes one permit, waiting at most {@code timeout}. */
    boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException;

    /** Takes {@code permits} permits, waiting at most {@code timeout}. */
    boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException;

    /**
     * Takes {@code permits} permits like {@link #acquire(int)} and returns a handle whose
     * {@link SemaphorePermits#close()} releases them, for try-with-resources.
     */
    SemaphorePermits acquirePermits(int permits) throws InterruptedException;

    /** Returns one permit. */
    void release();

    /**
     * Returns {@code permits} permits and wakes up to that many waiters.
     *
     * @throws IllegalArgumentException if {@code permits < 1}, or if the count would exceed
     *                                  {@link Integer#MAX_VALUE}
     */
    void release(int permits);

    /** The permits available now (0 if the semaphore does not exist). */
    int availablePermits();

    /**
     * Sets the permits if the semaphore does not exist yet.
     *
     * @return whether it was set
     * @throws IllegalArgumentException if {@code permits < 0}
     */
    boolean trySetPermits(int permits);

    /**
     * Adds permits, or removes them when negative (the count may then go below zero until
     * enough are released).
     *
     * @throws IllegalArgumentException if the count would exceed {@link Integer#MAX_VALUE}
     */
    void addPermits(int permits);

    /** Takes every available permit; returns how many. */
    int drainPermits();

    /**
     * Deletes the semaphore; waiters in every process fail with
     * {@link SynchronizerDeletedException}.
     *
     * @return whether it existed
     */
    boolean delete();

    /** Asynchronous {@link #acquire(int)}; cancelling the stage abandons the wait. */
    CompletionStage<Void> acquireAsync(int permits);

    /** Asynchronous {@link #tryAcquire(int, long, TimeUnit)}. */
    CompletionStage<Boolean> tryAcquireAsync(int permits, long timeout, TimeUnit unit);

    /** Asynchronous {@link #release(int)}. */
    CompletionStage<Void> releaseAsync(int permits);

    /** Asynchronous {@link #availablePermits()}. */
    CompletionStage<Integer> availablePermitsAsync();

    /** Asynchronous {@link #trySetPermits(int)}. */
    CompletionStage<Boolean> trySetPermitsAsync(int permits);

    /** Asynchronous {@link #addPermits(int)}. */
    CompletionStage<Void> addPermitsAsync(int permits);

    /** Asynchronous {@link #drainPermits()}. */
    CompletionStage<Integer> drainPermitsAsync();

    /** Asynchronous {@link #delete()}. */
    CompletionStage<Boolean> deleteAsync();
}
