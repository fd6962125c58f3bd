package dev.baton;

import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The entry point: one Baton client per application (or per Redis deployment), from which
 * every synchronizer is obtained by name.
 * <pre>{@code
 * try (Baton baton = Baton.create(BatonOptions.create("redis://localhost:6379"))) {
 *     BatonLock lock = baton.lock("orders");
 *     try (LockHold held = lock.acquire()) {
 *         // one process at a time, across the whole fleet
 *     }
 * }
 * }</pre>
 * A client is thread-safe and cheap to share; synchronizer objects are light views that may be
 * obtained again whenever needed. Each client has its own random {@link #clientId()}, the first
 * half of every owner id it writes to Redis.
 *
 * <p>{@link #close()} stops lease renewal (held leases then expire on their own), drops
 * subscriptions and closes the connections Baton opened. A Lettuce client passed in by the
 * application is never shut down by Baton.
 *
 * <p>Opening waits for Redis at most the command timeout, except that until a client of this JVM
 * has opened, the wait is at least {@link BatonOptions#DEFAULT_COMMAND_TIMEOUT} (3 s): Lettuce's
 * first connection in a JVM spends up to about a second loading and starting its pipeline, which
 * is not Redis failing to answer.
 */
public interface Baton extends AutoCloseable {

    /**
     * Opens a client on the Redis given in {@code options}; Baton owns the Lettuce client it
     * creates and shuts it down on {@link #close()}.
     *
     * @throws IllegalArgumentException  if the options name no Redis URI
     * @throws RedisUnavailableException if Redis cannot be reached within the command timeout (the
     *                                   first client of a JVM: at least 3 s)
     * @throws BatonException            if Redis refused the credentials (WRONGPASS, NOAUTH): not
     *                                   an outage, calling again will not help
     */
    static Baton create(BatonOptions options) {
        Objects.requireNonNull(options, "options");
        return DefaultBaton.open(options);
    }

    /**
     * Opens a client on one Redis URI with default options.
     *
     * @throws RedisUnavailableException if Redis cannot be reached within the command timeout (the
     *                                   first client of a JVM: at least 3 s)
     */
    static Baton create(String redisUri) {
        return create(BatonOptions.create(redisUri));
    }

    /**
     * Opens a client on a Lettuce {@link RedisClient} the application already has (standalone
     * or Sentinel). Baton opens its own connections from it and closes only those; the URIs in
     * {@code options} are ignored.
     *
     * @throws IllegalArgumentException  if {@code client} was created without a URI (Lettuce's
     *                                   static master/replica clients are), so it cannot connect
     * @throws RedisUnavailableException if Redis cannot be reached within the command timeout (the
     *                                   first client of a JVM: at least 3 s)
     */
    static Baton create(RedisClient client, BatonOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(options, "options");
        return DefaultBaton.open(client, options);
    }

    /**
     * Opens a client on a Lettuce {@link RedisClusterClient} the application already has. Baton
     * opens its own connections from it and closes only those.
     */
    static Baton create(RedisClusterClient client, BatonOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(options, "options");
        return DefaultBaton.open(client, options);
    }

    /**
     * A new owner id for the {@code *Async} methods, unique in this JVM and never the id of a
     * thread: thread ids are positive and these are negative, so work given one of them never
     * re-enters (or releases) a hold that a thread took with the blocking methods. Any
     * {@code long} is accepted as an owner id; a hand-picked one such as {@code 42} is also the id
     * of some thread, whose blocking holds it would share.
     */
    static long newOwnerId() {
        return DefaultBaton.newOwnerId();
    }

    /**
     * A multi-lock over {@code locks}: taken all or nothing, in one canonical order, released in
     * reverse. The locks may come from several clients and be of any lock kind.
     *
     * @throws NullPointerException     if {@code locks} or an element is null
     * @throws IllegalArgumentException if {@code locks} is empty or names one name twice (of any
     *                                  kind, on any Redis: for one name on several Redis
     *                                  deployments use {@link #redLock(String, List)})
     */
    static BatonMultiLock multiLock(List<? extends BatonLock> locks) {
        return DefaultBaton.multiLock(locks);
    }

    /** A multi-lock over {@code locks}; see {@link #multiLock(List)}. */
    static BatonMultiLock multiLock(BatonLock... locks) {
        return multiLock(List.of(locks));
    }

    /**
     * A RedLock named {@code name} over {@code masters} (each a Baton client on an independent
     * Redis master; at least one), with the default per-node timeout
     * ({@link BatonRedLock#DEFAULT_NODE_TIMEOUT}).
     *
     * @throws NullPointerException     if an argument or an element is null
     * @throws IllegalArgumentException if {@code name} is blank or {@code masters} is empty
     */
    static BatonRedLock redLock(String name, List<Baton> masters) {
        return redLock(name, masters, BatonRedLock.DEFAULT_NODE_TIMEOUT);
    }

    /**
     * A RedLock with a per-node timeout: how long one master may take to answer one attempt.
     *
     * @throws NullPointerException     if an argument or an element is null
     * @throws IllegalArgumentException if {@code name} is blank, {@code masters} is empty or the
     *                                  timeout is not positive
     */
    static BatonRedLock redLock(String name, List<Baton> masters, Duration nodeTimeout) {
        return DefaultBaton.redLock(name, masters, nodeTimeout);
    }

    /**
     * The reentrant lock with this name (also its Redis key), Redisson-compatible.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonLock lock(String name);

    /**
     * The fair lock with this name: granted in arrival order, handed directly to the next live
     * waiter on release. Same API as {@link #lock(String)}; its own Redis layout (the lock hash
     * at the name plus {@code baton_fair_*:{name}} keys), not shared with Redisson's fair lock.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonLock fairLock(String name);

    /**
     * The read-write lock with this name (also its Redis key), Redisson-compatible.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonReadWriteLock readWriteLock(String name);

    /**
     * The fenced lock with this name: a reentrant lock whose grants carry rising fencing
     * tokens. Shares Redisson's {@code RFencedLock} layout.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonFencedLock fencedLock(String name);

    /**
     * The semaphore with this name (also its Redis key), Redisson-compatible.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonSemaphore semaphore(String name);

    /**
     * The permit-expirable semaphore with this name: taken permits have ids and leases and
     * return by themselves when a lease runs out. Redisson-compatible layout.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonPermitExpirableSemaphore permitExpirableSemaphore(String name);

    /**
     * The rate limiter with this name, admitting at most {@code limit} across every client that
     * uses the name (on Redis's clock). Baton's own layout, {@code baton_rate:{name}}: Redisson's
     * {@code RRateLimiter} of the same name is a separate budget (see the rate limiter's guide).
     * While the limiter exists in Redis the limit stored there applies; see
     * {@link BatonRateLimiter} ("The limit, and two clients that disagree").
     *
     * @throws NullPointerException     if {@code name} or {@code limit} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonRateLimiter rateLimiter(String name, RateLimit limit);

    /**
     * The leader election with this name: candidates that {@link BatonLeaderElection#join join}
     * it lead one at a time, in the order they joined, each running its work while it leads.
     * Baton's own layout ({@code baton_leader:{name}} and its helper keys); Redisson has no
     * leader election. Candidates that stop calling are dropped from the line after the fair
     * lock's waiter timeout ({@link BatonOptions.Builder#fairLockWaiterTimeout}).
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonLeaderElection leaderElection(String name);

    /**
     * The count-down latch with this name (also its Redis key), Redisson-compatible.
     *
     * @throws NullPointerException     if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank
     * @throws IllegalStateException    if this client is closed
     */
    BatonCountDownLatch countDownLatch(String name);

    /**
     * How many leases this client holds now: one per lock and owner, for locks of every kind
     * (semaphore permits are not leases). Read from the client's own table, no round trip; for
     * health checks and metrics.
     */
    int leasesHeld();

    /**
     * The leases this client holds now, the ones {@link #leasesHeld()} counts, sorted by name and
     * owner. A snapshot of the client's own table, no round trip: what this client believes it
     * holds (a lease lost in Redis since the last renewal or release is still listed).
     */
    List<HeldLease> heldLeases();

    /** This client's id: a random UUID, the first half of every owner id it writes. */
    String clientId();

    /** The options this client was opened with. */
    BatonOptions options();

    /**
     * Stops lease renewal, unsubscribes, fails calls still waiting with
     * {@link IllegalStateException}, and closes what Baton opened. Idempotent.
     */
    @Override
    void close();
}
