package dev.baton;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A count-down latch shared by every process that uses the same name on the same Redis, shaped
 * like {@link java.util.concurrent.CountDownLatch} but re-armable: a coordinator
 * {@link #trySetCount(long) sets the count}, workers anywhere {@link #countDown() count down},
 * and everybody blocked in {@link #await()} is released when the count reaches zero. It is
 * stored the way Redisson stores its {@code RCountDownLatch}, so both clients can share one.
 *
 * <p>A latch that does not exist counts as zero: {@link #await()} on it returns at once and
 * {@link #countDown()} on it does nothing. Reaching zero deletes the key, so the same name can
 * be armed again for a second round with {@link #trySetCount(long)}.
 *
 * <p>Rounds: a wait belongs to the round that was armed when it began. It returns once that
 * round's count has reached zero (or a later round's), even if the latch is armed again before
 * the waiter could look; it never returns on an earlier round's zero, whose announcement may
 * reach this client after the wait began (the waiter tells them apart by the order of the
 * channel's messages, with a {@code PING} on its subscription: docs/data-layout.md).
 *
 * <h2>How a wait ends</h2>
 * <ul>
 *   <li><b>zero</b>: the count reached zero (announced over pub/sub; a lost announcement is
 *       recovered by a re-check at most {@value #RECHECK_SECONDS} seconds later);</li>
 *   <li><b>timed out</b>: {@link #await(long, TimeUnit)} returns {@code false};</li>
 *   <li><b>interrupted</b>: {@link InterruptedException}, flag cleared, no subscription left
 *       behind;</li>
 *   <li><b>deleted</b>: {@link #delete()} (by anyone) while waiting throws
 *       {@link SynchronizerDeletedException}; Redisson's own waiters would stay blocked. If the
 *       deletion's announcement is lost, a waiter that finds the latch gone cannot tell a
 *       deletion from reaching zero and returns normally;</li>
 *   <li><b>Redis unreachable</b>: {@link RedisUnavailableException}. {@link #await(long, TimeUnit)}
 *       rides through connection failures that end inside its timeout and throws only if its
 *       last check failed that way (no later than the timeout + the command timeout + 150 ms);
 *       {@link #await()} throws when a check fails (command timeout + 150 ms).</li>
 * </ul>
 */
public interface BatonCountDownLatch {

    /** The bound on how late a waiter notices zero when the announcement was lost. */
    int RECHECK_SECONDS = 5;

    /** The latch's name, which is also its Redis key. */
    String getName();

    /**
     * Arms the latch with {@code count} if it is not armed (absent or at zero), and wakes
     * anybody watching for a new round.
     *
     * @return {@code true} if the count was set, {@code false} if the latch is armed already
     * @throws IllegalArgumentException if {@code count < 1}
     */
    default boolean trySetCount(long count) {
        return Sync.await(trySetCountAsync(count));
    }

    /**
     * Counts down by one; at zero, releases every waiter. On an absent latch does nothing.
     * Counted exactly once: it carries a request id the script remembers, so a copy sent again
     * after a lost reply (or arriving after the latch was armed for a new round) does not count.
     * If Redis does not confirm it within the command timeout, this throws
     * {@link DoNotRetryException} and Baton finishes it in the background (for at least 60 s;
     * still counted once): do not call it again, a second call is a second countDown.
     *
     * @throws DoNotRetryException if Redis did not confirm it in time (Baton finishes it), or if
     *                             it landed but too few replicas acknowledged it
     */
    default void countDown() {
        Sync.await(countDownAsync());
    }

    /** The current count; 0 if the latch is absent. */
    default long getCount() {
        return Sync.await(getCountAsync());
    }

    /**
     * Waits until the count is zero.
     *
     * @throws InterruptedException          if interrupted while waiting
     * @throws SynchronizerDeletedException  if the latch was deleted while waiting
     * @throws RedisUnavailableException     if Redis did not answer within the command timeout
     */
    void await() throws InterruptedException;

    /**
     * Waits until the count is zero or the timeout elapses; a timeout of zero or less checks the
     * count once without waiting, as {@link java.util.concurrent.CountDownLatch#await(long, TimeUnit)}.
     *
     * @return {@code true} if the count reached zero, {@code false} if the time ran out
     * @throws InterruptedException         if interrupted while waiting
     * @throws SynchronizerDeletedException if the latch was deleted while waiting
     */
    boolean await(long timeout, TimeUnit unit) throws InterruptedException;

    /**
     * Deletes the latch; every waiter, here or in other processes, fails with
     * {@link SynchronizerDeletedException}.
     *
     * @return whether the latch existed
     */
    default boolean delete() {
        return Sync.await(deleteAsync());
    }

    /** Asynchronous {@link #trySetCount(long)}. */
    CompletionStage<Boolean> trySetCountAsync(long count);

    /** Asynchronous {@link #countDown()}. */
    CompletionStage<Void> countDownAsync();

    /** Asynchronous {@link #getCount()}. */
    CompletionStage<Long> getCountAsync();

    /**
     * How many clients wait in await() now, as far as Redis can tell: the connections
     * subscribed to the latch's channel, counted where they subscribe (as
     * {@link BatonLock#waiterCount()} counts them). Each Baton or Redisson client with one or more
     * awaiting threads counts once. For operators and tests; one read, no waiting.
     *
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    default long waiterCount() {
        return Sync.await(waiterCountAsync());
    }

    /** Asynchronous {@link #waiterCount()}. */
    CompletionStage<Long> waiterCountAsync();

    /**
     * Completes when the count is zero; completes exceptionally with
     * {@link SynchronizerDeletedException} if the latch is deleted meanwhile. Cancelling it
     * stops the wait and unsubscribes.
     */
    CompletionStage<Void> awaitAsync();

    /** Completes with {@code true} at zero or {@code false} when the timeout elapses. */
    CompletionStage<Boolean> awaitAsync(long timeout, TimeUnit unit);

    /** Asynchronous {@link #delete()}. */
    CompletionStage<Boolean> deleteAsync();
}
