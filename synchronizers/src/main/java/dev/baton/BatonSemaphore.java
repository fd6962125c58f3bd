package dev.baton;

import java.util.Optional;
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
 * <h2>Exactly once</h2>
 * Every acquire attempt, release and {@link #addPermits} carries a request id that the script
 * remembers beside the count (Redisson clients never see it), so a command that Lettuce or Baton
 * sends again after a lost reply counts once. An acquire whose answer never came is cancelled by
 * its id: the permits come back if it had taken them, and it takes none if it arrives later. A
 * release that Redis does not confirm within the command timeout throws
 * {@link DoNotRetryException} (not a {@link RedisUnavailableException}, so a retry policy that
 * retries those stops here) and Baton <em>finishes it in the background</em> (it keeps sending
 * the same request for at least 60 s; it still counts once): do not call {@link #release(int)}
 * again for the same permits, a second call is a second release. To be able to retry, release
 * through the handle of {@link #acquirePermits(int)}: its {@link SemaphorePermits#close()} may
 * be called again after a failure and counts once.
 *
 * <h2>Releases within one client</h2>
 * A release on a client where a wait of the same semaphore is parked (between attempts, not
 * while one is in Redis) hands the permits to that wait, oldest first, without a command: the
 * count in Redis stays as it is (the released permits and the waiter's were both counted out
 * of it), so no permit is counted twice or lost, {@link #availablePermits()} never shows them
 * and nothing is published. A wait that asks for more permits than the release carries is
 * passed over; permits no wait here takes go to Redis. So that waiters on other clients (and
 * Redisson's) get their turn, a client hands at most {@value #LOCAL_TURNS} releases of one
 * semaphore in a row to its own waits; the next goes to Redis and is announced. A blocking
 * wait's thread is woken by the releasing thread; an asynchronous wait's stage completes on
 * another thread, never inside {@code release}.
 *
 * <h2>How a wait ends</h2>
 * <ul>
 *   <li><b>acquired</b>: enough permits became available (a release announces the new count
 *       and wakes up to that many waiters; a lost announcement is recovered by a re-check at
 *       most {@value #RECHECK_SECONDS} seconds later), or a release on this client handed them
 *       over (above);</li>
 *   <li><b>timed out</b>: {@code tryAcquire} with a wait time returns {@code false}, having
 *       taken nothing;</li>
 *   <li><b>interrupted</b>: {@link InterruptedException}, nothing taken, no subscription left;</li>
 *   <li><b>deleted</b>: {@link #delete()} while waiting throws
 *       {@link SynchronizerDeletedException};</li>
 *   <li><b>Redis unreachable</b>: {@link RedisUnavailableException}. A wait with a wait time
 *       rides through connection failures that end inside it and throws only if its last
 *       attempt failed that way (no later than the wait time + the command timeout + 150 ms);
 *       a wait without one throws when an attempt fails (command timeout + 150 ms). Permits an
 *       unanswered attempt may have taken are given back by Baton.</li>
 * </ul>
 */
public interface BatonSemaphore {

    /** The bound on how late a waiter notices permits when the announcement was lost. */
    int RECHECK_SECONDS = 5;

    /**
     * How many releases of one semaphore in a row a client hands to its own parked waits before
     * one goes to Redis (see "Releases within one client").
     */
    int LOCAL_TURNS = 8;

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

    /** Takes one permit, waiting at most {@code timeout}; zero or less tries once, as the JDK's. */
    boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException;

    /** Takes {@code permits} permits, waiting at most {@code timeout}; zero or less tries once. */
    boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException;

    /**
     * Takes {@code permits} permits like {@link #acquire(int)} and returns a handle whose
     * {@link SemaphorePermits#close()} releases them, for try-with-resources.
     */
    SemaphorePermits acquirePermits(int permits) throws InterruptedException;

    /**
     * Takes {@code permits} permits like {@link #tryAcquire(int, long, TimeUnit)} and, if they
     * were taken, returns a handle whose {@link SemaphorePermits#close()} releases them: a bounded
     * wait without a hand-written try/finally.
     *
     * @return the handle, or empty if the timeout elapsed first (nothing taken)
     * @throws IllegalArgumentException if {@code permits < 1}
     * @throws InterruptedException     if interrupted while waiting; nothing taken then
     */
    Optional<SemaphorePermits> tryAcquirePermits(int permits, long timeout, TimeUnit unit) throws InterruptedException;

    /** Returns one permit; see {@link #release(int)}. */
    default void release() {
        release(1);
    }

    /**
     * Returns {@code permits} permits and wakes up to that many waiters; a parked wait of this
     * client may take them without Redis (see "Releases within one client"). Counted exactly once:
     * if it throws {@link DoNotRetryException}, Baton is still sending it and will apply it
     * once; do not call it again (see "Exactly once" above).
     *
     * @throws IllegalArgumentException if {@code permits < 1}, or if the count would exceed
     *                                  {@link Integer#MAX_VALUE}
     * @throws DoNotRetryException      if Redis did not confirm it within the command timeout
     *                                  (+ 150 ms): Baton finishes it in the background; or if it
     *                                  landed but too few replicas acknowledged it
     */
    default void release(int permits) {
        Sync.await(releaseAsync(permits));
    }

    /** The permits available now (0 if the semaphore does not exist). */
    default int availablePermits() {
        return Sync.await(availablePermitsAsync());
    }

    /**
     * Sets the permits if the semaphore does not exist yet.
     *
     * @return whether it was set
     * @throws IllegalArgumentException if {@code permits < 0}
     */
    default boolean trySetPermits(int permits) {
        return Sync.await(trySetPermitsAsync(permits));
    }

    /**
     * Adds permits, or removes them when negative (the count may then go below zero until
     * enough are released). Counted exactly once, like {@link #release(int)}.
     *
     * @throws IllegalArgumentException if the count would exceed {@link Integer#MAX_VALUE}
     * @throws DoNotRetryException      if Redis did not confirm it in time (Baton finishes it in
     *                                  the background) or too few replicas acknowledged it
     */
    default void addPermits(int permits) {
        Sync.await(addPermitsAsync(permits));
    }

    /**
     * Takes every available permit; returns how many: 0 when none is available, and then a count
     * below zero (after {@link #addPermits(int)} removed permits that were taken) is left as it is.
     */
    default int drainPermits() {
        return Sync.await(drainPermitsAsync());
    }

    /**
     * Deletes the semaphore; waiters in every process fail with
     * {@link SynchronizerDeletedException}.
     *
     * @return whether it existed
     */
    default boolean delete() {
        return Sync.await(deleteAsync());
    }

    /**
     * How many clients wait for permits now, as far as Redis can tell: the connections
     * subscribed to the semaphore's channel, counted where they subscribe (as
     * {@link BatonLock#waiterCount()} counts them). Each Baton or Redisson client with one or more
     * waiting threads counts once. For operators and tests; one read, no waiting.
     *
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    default long waiterCount() {
        return Sync.await(waiterCountAsync());
    }

    /** Asynchronous {@link #waiterCount()}. */
    CompletionStage<Long> waiterCountAsync();

    /**
     * Asynchronous {@link #acquire(int)}; cancelling the stage's {@code toCompletableFuture()}, or
     * completing it first in any other way ({@code orTimeout}, {@code completeOnTimeout}),
     * abandons the wait, and permits granted meanwhile are given back. The stage completes with
     * {@code null} either way, so a caller that completes it with {@code null} itself cannot tell
     * from its value whether it holds the permits: {@code complete(null)} says so by its return
     * value ({@code true}: the caller's completion won, nothing is held), {@code cancel} and
     * {@code orTimeout} by the exception; to give up after a time, prefer
     * {@link #tryAcquireAsync(int, long, TimeUnit)}, whose value says it.
     */
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
