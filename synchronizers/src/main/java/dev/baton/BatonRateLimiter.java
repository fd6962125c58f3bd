package dev.baton;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A rate limiter shared by every process that uses the same name on the same Redis: at most
 * {@link RateLimit a rate} of permits start, across the fleet, measured on <em>Redis's</em> clock.
 * A semaphore caps how many calls run at once; this caps how many start per second.
 * <pre>{@code
 * BatonRateLimiter partner = baton.rateLimiter("partner-api", RateLimit.perSecond(49));
 * partner.acquire();            // sleeps until this call's slot, then goes
 * callPartner();
 * }</pre>
 *
 * <h2>How it counts</h2>
 * One Lua script call decides each acquisition on Redis's {@code TIME}, so clients' clocks, and
 * how far apart they are, never change what is admitted. In every window of length {@code w} of
 * Redis's time, the admitted permits add up to at most {@code permits × w / period + burst}
 * (a generic cell rate algorithm; admitted permits count at their slot). A call that must wait
 * <em>reserves</em> its slot in that same call and then sleeps on this client's timer until
 * the slot, without polling or wake-ups; waiters on every client are served in the order they
 * reserved. The sleep adds the client's clock-drift allowance ({@link
 * BatonOptions#clockDriftAllowance()}, 1 % by default) so that a client clock running fast by
 * up to that much cannot start a call before its slot.
 *
 * <p>State lives in one Redis hash per name ({@code baton_rate:{name}}) that expires by itself
 * once the limiter has refilled, so a limiter per customer ({@code "partner:" + customerId})
 * leaves nothing behind; a request key per admitted call lives beside it for the request memory
 * (see docs/data-layout.md).
 *
 * <h2>The limit, and two clients that disagree</h2>
 * Every call carries this handle's limit. While the limiter exists in Redis, <em>the limit
 * stored there wins</em>: a handle created with another limit is served under the stored one,
 * and logs a WARN (once per stored limit) that names both; {@link #state()} shows the limit in
 * force. A limiter that does not exist (never used, deleted, or expired after refilling) is
 * created with the limit of the call that finds it absent. {@link #setLimit} changes the stored
 * limit for every client, keeping what was admitted: the permits already taken, reservations
 * included, stay owed under the new limit.
 *
 * <h2>How a wait ends</h2>
 * <ul>
 *   <li><b>admitted</b>: the slot came; the call returns {@code true} (or completes) at or
 *       after it, no later than the slot + the drift allowance of the wait + one reply's
 *       transit;</li>
 *   <li><b>refused</b>: {@code tryAcquire} returns {@code false} <em>at once</em> (one round
 *       trip) when the slot lies beyond its timeout, having reserved nothing: it never waits in
 *       vain;</li>
 *   <li><b>interrupted or cancelled</b> while sleeping toward its slot: {@link
 *       InterruptedException} (or the stage cancelled); the reservation is undone, and its
 *       permits come back if nobody reserved after it (otherwise its slot goes unused: the
 *       limiter admits less, never more);</li>
 *   <li><b>Redis unreachable</b>: {@link RedisUnavailableException} within the command timeout
 *       + 150 ms. A call whose reply never came admitted nothing: Baton undoes its request by
 *       its id, so a copy that reaches Redis later reserves nothing. Calling again is
 *       safe.</li>
 * </ul>
 */
public interface BatonRateLimiter {

    /** The limiter's name (its Redis key is {@code baton_rate:{name}}). */
    String getName();

    /** The limit this handle was created with (the one in force may differ: {@link #state()}). */
    RateLimit getLimit();

    /** One permit if it can go now; see {@link #tryAcquire(int)}. */
    default boolean tryAcquire() {
        return tryAcquire(1);
    }

    /**
     * {@code permits} permits if they can go now; otherwise nothing is taken. One round trip.
     *
     * @throws IllegalArgumentException if {@code permits < 1} or above this handle's burst
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    default boolean tryAcquire(int permits) {
        return Sync.await(tryAcquireAsync(permits));
    }

    /** One permit, waiting at most {@code timeout} for its slot; see {@link #tryAcquire(int, long, TimeUnit)}. */
    default boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, timeout, unit);
    }

    /**
     * {@code permits} permits, if their slot comes within {@code timeout}: reserves the slot and
     * sleeps until it, then returns {@code true}; returns {@code false} at once, reserving
     * nothing, when the slot lies further away. Zero or less tries once, as the JDK's.
     *
     * @throws IllegalArgumentException if {@code permits < 1} or above this handle's burst
     * @throws InterruptedException     if interrupted while sleeping toward the slot (the
     *                                  reservation is undone; see "How a wait ends")
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException;

    /** One permit, however long its slot takes; see {@link #acquire(int)}. */
    default void acquire() throws InterruptedException {
        acquire(1);
    }

    /**
     * {@code permits} permits, however long their slot takes: reserves it in one call and
     * sleeps until it.
     *
     * @throws IllegalArgumentException if {@code permits < 1} or above this handle's burst
     * @throws IllegalStateException    if the limit in force has a smaller burst than
     *                                  {@code permits} (they can never go)
     * @throws InterruptedException     if interrupted while sleeping (the reservation is undone)
     * @throws RedisUnavailableException if Redis did not answer within the command timeout
     */
    void acquire(int permits) throws InterruptedException;

    /** {@link #tryAcquire(int)} without blocking. */
    CompletionStage<Boolean> tryAcquireAsync(int permits);

    /**
     * {@link #tryAcquire(int, long, TimeUnit)} without blocking. Cancelling the stage (or
     * completing it, as {@code orTimeout} does) while it sleeps toward its slot undoes the
     * reservation as an interrupt does. It completes on a Baton thread, never the caller's.
     */
    CompletionStage<Boolean> tryAcquireAsync(int permits, long timeout, TimeUnit unit);

    /** {@link #acquire(int)} without blocking; completes with {@code null} at the slot. Cancelling undoes the reservation. */
    CompletionStage<Void> acquireAsync(int permits);

    /**
     * The limiter as Redis has it now: the limit in force (this handle's if the limiter does not
     * exist), the permits that could go at once, and how long until one more could. One round trip.
     */
    default State state() {
        return Sync.await(stateAsync());
    }

    /** {@link #state()} without blocking. */
    CompletionStage<State> stateAsync();

    /**
     * Makes {@code limit} the limit in force for every client, keeping the permits already
     * admitted or reserved owed under it (rounded up to a whole microsecond). Handles created
     * with another limit are served under this one from now on, and log so. A limiter that does
     * not exist is not created: the next call creates it with its own limit.
     *
     * @throws NullPointerException if {@code limit} is null
     */
    default void setLimit(RateLimit limit) {
        Sync.await(setLimitAsync(limit));
    }

    /** {@link #setLimit} without blocking. */
    CompletionStage<Void> setLimitAsync(RateLimit limit);

    /**
     * Deletes the limiter: it is full again, under the limit the next call brings. Calls already
     * told their slot keep it.
     *
     * @return whether it existed
     */
    default boolean delete() {
        return Sync.await(deleteAsync());
    }

    /** {@link #delete()} without blocking. */
    CompletionStage<Boolean> deleteAsync();

    /**
     * A limiter's state on Redis's clock.
     *
     * @param limit            the limit in force
     * @param availablePermits the permits that could go at once now (0 when reservations wait)
     * @param untilNextPermit  how long until one more permit could go ({@link Duration#ZERO}
     *                         when the limiter is full)
     * @param reservedAhead    how far the reservations already made reach beyond the burst,
     *                         that is, how long a call for one permit made now would wait
     */
    record State(RateLimit limit, long availablePermits, Duration untilNextPermit, Duration reservedAhead) {
    }
}
