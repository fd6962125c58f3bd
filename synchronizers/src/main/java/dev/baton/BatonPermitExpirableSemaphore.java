package dev.baton;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * A semaphore whose every taken permit has an id and, optionally, a lease: a permit whose lease
 * runs out returns to the pool by itself, so a holder that crashes does not leak it. Stored like
 * Redisson's {@code RPermitExpirableSemaphore} (available permits in a string at the name; taken
 * permits in {@code {name}:timeout}, a sorted set of permit id → expiry in epoch milliseconds).
 * Baton decides expiry with the Redis server's clock; see the guarantees document for mixing
 * with Redisson clients, which use their own clocks.
 *
 * <p>How a wait ends is as for {@link BatonSemaphore}; a waiter also wakes when the earliest
 * permit's lease runs out. Every attempt picks its own permit ids and Redis remembers the
 * attempt, so a re-sent acquire never takes a second permit, and an attempt whose reply never
 * came is cancelled: what it took comes back, and a copy of it that runs later takes nothing
 * (Baton keeps sending the cancel until Redis answers).
 * A release by id is safe to repeat: if {@link #release(String)} throws
 * {@link RedisUnavailableException}, call it again with the same id; if the first one had
 * landed, the second returns normally.
 */
public interface BatonPermitExpirableSemaphore {

    /** The semaphore's name, which is also its Redis key. */
    String getName();

    /** Takes a permit that never expires, waiting as long as it takes; returns its id. */
    String acquire() throws InterruptedException;

    /**
     * Takes a permit with a lease, waiting as long as it takes; returns its id. A negative
     * {@code leaseTime} (Redisson's -1) means the permit never expires, as {@link #acquire()}.
     *
     * @throws IllegalArgumentException if {@code leaseTime == 0}
     */
    String acquire(long leaseTime, TimeUnit unit) throws InterruptedException;

    /** Takes a permit (no expiry) if one is available now. */
    Optional<String> tryAcquire();

    /**
     * Takes a permit with a lease, waiting at most {@code waitTime} (zero or less: one attempt);
     * a negative {@code leaseTime} means the permit never expires.
     */
    Optional<String> tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Takes {@code permits} permits at once (all or none), each with its own id and the same
     * lease, waiting as long as it takes; returns their ids. A negative {@code leaseTime} means
     * the permits never expire. Ends only when acquired, interrupted (nothing taken), or with
     * {@link RedisUnavailableException} as {@link #acquire()} does.
     *
     * @throws IllegalArgumentException if {@code permits} is not 1 to 10,000 or {@code leaseTime == 0}
     */
    List<String> acquire(int permits, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Takes {@code permits} permits at once (all or none), waiting at most {@code waitTime} (zero
     * or less: one attempt);
     * returns their ids, or an empty list when the wait time passed without enough permits. A
     * negative {@code leaseTime} means the permits never expire. Each id is released on its own
     * ({@link #release(String)}).
     *
     * @throws IllegalArgumentException if {@code permits} is not 1 to 10,000 or {@code leaseTime == 0}
     */
    List<String> tryAcquire(int permits, long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Takes a permit with a lease and returns a handle that releases it on close.
     */
    ExpirablePermit acquirePermit(long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Takes a permit like {@link #tryAcquire(long, long, TimeUnit)} and, if one was taken, returns
     * it as a handle whose {@link ExpirablePermit#close()} returns it.
     *
     * @return the permit, or empty if the wait time elapsed first
     * @throws IllegalArgumentException if {@code leaseTime == 0}
     * @throws InterruptedException     if interrupted while waiting; nothing taken then
     */
    Optional<ExpirablePermit> tryAcquirePermit(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Lease-scoped work under one permit: takes a permit with {@code leaseTime} as
     * {@link #acquire(long, TimeUnit)} does (waiting as long as it takes, interruptibly), runs
     * {@code work} in the calling thread with the permit's {@link LeaseScope}, and returns the
     * permit however the work ends.
     *
     * <p>A permit's lease is fixed and nothing renews it: the scope is valid until the send of
     * the granting attempt + {@code leaseTime} − (1 % of it, or the client's
     * {@link BatonOptions#clockDriftAllowance()}, + 25 ms) on this client's clock, so
     * until Redis cannot yet have given the permit to anyone else, and the work is stopped, by
     * interrupting its thread, when that passes, or at once when the client is closed (which
     * stops its timer and can no longer give the permit back). Nothing else stops it: a permit
     * taken away meanwhile (the semaphore deleted) is found only at the release. A lease of
     * 25 ms or less leaves no validity: the work does not run and the call throws
     * {@link LeaseLostException}. The scope's {@link LeaseScope#lockName()} is the semaphore's
     * name; it has no fencing token.
     *
     * <p>How the call can end: with the work's result; with the work's exception after the
     * release; with {@link LeaseLostException} if the work was stopped (the work's exception as
     * its cause, the thread's interrupt status as it was) or the permit was no longer held at its
     * release; with {@link InterruptedException} if interrupted while waiting (nothing taken, the
     * work not run); with {@link RedisUnavailableException} if Redis does not answer the
     * acquisition (nothing taken) or does not confirm the release (the permit comes back at its
     * lease's end at the latest).
     *
     * @param leaseTime the permit's lease, which the work must finish within
     * @param unit      its unit
     * @param work      the work; called once, with the permit's scope
     * @return what the work returned
     * @throws IllegalArgumentException if {@code leaseTime <= 0}: scoped work needs a lease to
     *                                  be bounded by
     * @throws E                        what the work threw
     * @throws InterruptedException     if interrupted while waiting
     */
    <T, E extends Exception> T withPermit(long leaseTime, TimeUnit unit, LeaseWork<T, E> work) throws E, InterruptedException;

    /**
     * Returns the permit. Re-sent on connection failures within the command timeout; safe to
     * call again after a {@link RedisUnavailableException}.
     *
     * @throws IllegalArgumentException  if no such permit is held (never issued, released
     *                                   already, or expired and returned to the pool)
     * @throws RedisUnavailableException if Redis did not confirm the release in time; call it
     *                                   again with the same id to complete it
     */
    default void release(String permitId) {
        Sync.await(releaseAsync(permitId));
    }

    /** Returns the permit if it is held; whether it was. */
    default boolean tryRelease(String permitId) {
        return Sync.await(tryReleaseAsync(permitId));
    }

    /**
     * Gives a held permit a new lease counted from now; a negative {@code leaseTime} means it
     * never expires.
     *
     * @return whether the permit was held
     */
    default boolean updateLeaseTime(String permitId, long leaseTime, TimeUnit unit) {
        return Sync.await(updateLeaseTimeAsync(permitId, leaseTime, unit));
    }

    /** Permits available now, after returning expired ones to the pool. */
    default int availablePermits() {
        return Sync.await(availablePermitsAsync());
    }

    /** Sets the total permits (available + taken); the available count follows. */
    void setPermits(int permits);

    /** Sets the available permits if the semaphore does not exist yet; whether it was set. */
    boolean trySetPermits(int permits);

    /** Adds (or, negative, removes) available permits. */
    default void addPermits(int permits) {
        Sync.await(addPermitsAsync(permits));
    }

    /** Deletes the semaphore and its taken permits; waiters fail with {@link SynchronizerDeletedException}. */
    boolean delete();

    /** Asynchronous {@link #tryAcquire(long, long, TimeUnit)}; empty when the wait time ran out. */
    CompletionStage<Optional<String>> tryAcquireAsync(long waitTime, long leaseTime, TimeUnit unit);

    /** Asynchronous {@link #release(String)}. */
    CompletionStage<Void> releaseAsync(String permitId);

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

    /** Asynchronous {@link #tryAcquire(int, long, long, TimeUnit)}. */
    CompletionStage<List<String>> tryAcquireAsync(int permits, long waitTime, long leaseTime, TimeUnit unit);

    /** Asynchronous {@link #tryRelease(String)}. */
    CompletionStage<Boolean> tryReleaseAsync(String permitId);

    /** Asynchronous {@link #updateLeaseTime(String, long, TimeUnit)}. */
    CompletionStage<Boolean> updateLeaseTimeAsync(String permitId, long leaseTime, TimeUnit unit);

    /** Asynchronous {@link #availablePermits()}. */
    CompletionStage<Integer> availablePermitsAsync();

    /** Asynchronous {@link #addPermits(int)}. */
    CompletionStage<Void> addPermitsAsync(int permits);
}
