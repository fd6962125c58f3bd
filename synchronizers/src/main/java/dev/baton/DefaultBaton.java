package dev.baton;

import dev.baton.internal.runtime.ClientRuntime;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * The one implementation of {@link Baton}, and the one class of the API that reaches into the
 * runtime: every method forwards to this client's {@link ClientRuntime}. Not public: clients
 * come from {@link Baton#create}.
 */
final class DefaultBaton implements Baton {
    private final ClientRuntime runtime;
    private final BatonOptions options;

    private DefaultBaton(ClientRuntime runtime, BatonOptions options) {
        this.runtime = runtime;
        this.options = options;
    }

    static Baton open(BatonOptions options) {
        return new DefaultBaton(ClientRuntime.open(options), options);
    }

    static Baton open(RedisClient client, BatonOptions options) {
        return new DefaultBaton(ClientRuntime.open(client, options), options);
    }

    static Baton open(RedisClusterClient client, BatonOptions options) {
        return new DefaultBaton(ClientRuntime.open(client, options), options);
    }

    /** -1, -2, ...: below every thread id, which is positive. */
    static long newOwnerId() {
        return dev.baton.internal.lease.OwnerIds.next();
    }

    static BatonMultiLock multiLock(List<? extends BatonLock> locks) {
        return ClientRuntime.multiLock(locks);
    }

    static BatonRedLock redLock(String name, List<Baton> masters, Duration nodeTimeout) {
        List<Function<String, BatonLock>> lockOf = null;
        if (masters != null) {
            lockOf = new ArrayList<>(masters.size());
            for (Baton master : masters) {
                lockOf.add(master == null ? null : master::lock);
            }
        }
        Baton first = masters == null || masters.isEmpty() ? null : masters.get(0);
        return ClientRuntime.redLock(name, lockOf, nodeTimeout, first == null ? null : first.options().observer());
    }

    /** The runtime behind a client (for tests in this module). */
    static ClientRuntime runtime(Baton baton) {
        return ((DefaultBaton) Objects.requireNonNull(baton, "baton")).runtime;
    }

    @Override
    public BatonLock lock(String name) {
        return runtime.lock(name);
    }

    @Override
    public BatonLock fairLock(String name) {
        return runtime.fairLock(name);
    }

    @Override
    public BatonReadWriteLock readWriteLock(String name) {
        return runtime.readWriteLock(name);
    }

    @Override
    public BatonFencedLock fencedLock(String name) {
        return runtime.fencedLock(name);
    }

    @Override
    public BatonSemaphore semaphore(String name) {
        return runtime.semaphore(name);
    }

    @Override
    public BatonPermitExpirableSemaphore permitExpirableSemaphore(String name) {
        return runtime.permitExpirableSemaphore(name);
    }

    @Override
    public BatonRateLimiter rateLimiter(String name, RateLimit limit) {
        return runtime.rateLimiter(name, limit);
    }

    @Override
    public BatonLeaderElection leaderElection(String name) {
        return runtime.leaderElection(name);
    }

    @Override
    public BatonCountDownLatch countDownLatch(String name) {
        return runtime.countDownLatch(name);
    }

    @Override
    public int leasesHeld() {
        return runtime.leasesHeld();
    }

    @Override
    public List<HeldLease> heldLeases() {
        return runtime.heldLeases();
    }

    @Override
    public String clientId() {
        return runtime.clientId();
    }

    @Override
    public BatonOptions options() {
        return options;
    }

    @Override
    public void close() {
        runtime.close();
    }

    @Override
    public String toString() {
        return "Baton{clientId=" + runtime.clientId() + ", " + options + "}";
    }
}
