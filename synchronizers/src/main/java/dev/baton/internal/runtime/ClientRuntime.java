package dev.baton.internal.runtime;

import dev.baton.BatonCountDownLatch;
import dev.baton.BatonFencedLock;
import dev.baton.BatonLock;
import dev.baton.BatonMultiLock;
import dev.baton.BatonObserver;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonReadWriteLock;
import dev.baton.BatonRedLock;
import dev.baton.BatonRateLimiter;
import dev.baton.BatonSemaphore;
import dev.baton.RateLimit;
import dev.baton.HeldLease;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.ReplicaSyncer;
import dev.baton.internal.composite.MultiLock;
import dev.baton.internal.composite.RedLock;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Observer;
import dev.baton.internal.latch.RedisCountDownLatch;
import dev.baton.internal.lease.Leases;
import dev.baton.internal.lease.RenewalRegistry;
import dev.baton.internal.lease.ScriptRenewer;
import dev.baton.internal.lock.FairRecipe;
import dev.baton.internal.election.RedisLeaderElection;
import dev.baton.BatonLeaderElection;
import dev.baton.internal.lock.ReadLockRecipe;
import dev.baton.internal.lock.RedisFencedLock;
import dev.baton.internal.lock.RedisLock;
import dev.baton.internal.lock.RedisReadWriteLock;
import dev.baton.internal.lock.ReentrantRecipe;
import dev.baton.internal.lock.WriteLockRecipe;
import dev.baton.internal.pubsub.PubSubService;
import dev.baton.internal.ratelimit.RedisRateLimiter;
import dev.baton.internal.semaphore.PermitHandOff;
import dev.baton.internal.semaphore.RedisPermitExpirableSemaphore;
import dev.baton.internal.semaphore.RedisSemaphore;
import dev.baton.internal.support.Args;
import dev.baton.internal.time.NettyScheduler;
import dev.baton.internal.time.Scheduler;
import dev.baton.internal.time.SystemScheduler;
import dev.baton.internal.unconfirmed.Requests;
import dev.baton.lua.Layout;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * One client's runtime: it wires the services every synchronizer shares (command executor,
 * pub/sub service, acquire engine, lease table, renewal registry, request memory) on the
 * connections {@link LettuceConnections} opened, hands them to each synchronizer it makes as one
 * {@link Services} value, and closes them in order. The public entry point wraps one of these;
 * this class knows nothing of it.
 */
public final class ClientRuntime implements AutoCloseable {
    private final BatonOptions options;
    private final LettuceConnections connections;
    private final Scheduler scheduler;
    private final CommandExecutor executor;
    private final PubSubService pubSub;
    private final RenewalRegistry renewals;
    private final Services services;
    /** The semaphore's in-client hand-off: the one piece of per-kind state a client keeps. */
    private final PermitHandOff permitHandOff = new PermitHandOff();
    /** Whether the client is on a Redis Cluster, where every key of a synchronizer must share one slot. */
    private final boolean cluster;

    private ClientRuntime(BatonOptions options, LettuceConnections connections) {
        this(options, connections, new NettyScheduler(), UUID.randomUUID().toString());
    }

    /**
     * A runtime on given connections and time: the one way in for the deterministic simulation,
     * which passes connections to its simulated Redis, its virtual-time scheduler and a client id
     * of its own, so a seed decides everything. The scheduler is closed with the runtime if it
     * is {@link AutoCloseable}.
     */
    public ClientRuntime(BatonOptions options, LettuceConnections connections, Scheduler scheduler, String clientId) {
        this.options = options;
        this.connections = connections;
        this.scheduler = scheduler;
        ReplicaSyncer.Config sync = ReplicaSyncer.Config.OFF;
        if (options.replicaSyncReplicas() > 0) {
            sync = new ReplicaSyncer.Config(options.replicaSyncReplicas(), options.replicaSyncTimeout(),
                    options.replicaSyncFailure() == BatonOptions.ReplicaSyncFailure.FAIL);
        }
        this.executor = new CommandExecutor(connections.commands(), connections.async(), scheduler,
                options.commandTimeout(), sync, connections.topology());
        this.pubSub = new PubSubService(connections.pubSub(), connections.subscriber().apply(scheduler), executor);
        Observer observer = observer(options);
        Leases leases = new Leases(scheduler, options.leaseLostListener(), observer);
        leases.clockDriftAllowance(options.clockDriftAllowance());
        ScriptRenewer renewer = new ScriptRenewer(executor);
        ToIntFunction<String> slotOf = connections.cluster() ? SlotHash::getSlot : key -> 0;
        this.cluster = connections.cluster();
        this.renewals = new RenewalRegistry(renewer, leases::lost, scheduler, slotOf,
                options.watchdogTimeout().toMillis(), options.renewalBatchSize(), observer);
        leases.attach(renewals);
        this.services = new Services(executor, new AcquireEngine(pubSub, scheduler, observer), leases, renewer,
                new Requests(executor, scheduler, options.commandTimeout()), clientId,
                options.commandTimeout(), options.watchdogTimeout(), connections.target(), new Services.Lifecycle());
        renewals.start();
    }

    /** The semaphore's in-client hand-off (for tests and the simulation). */
    public PermitHandOff permitHandOff() {
        return permitHandOff;
    }

    /** How many semaphore acquisitions this client granted by handing released permits over (for tests and inspection). */
    public long semaphoreHandOffs() {
        return permitHandOff.handed();
    }

    /** How many acquisitions of semaphore {@code name} are parked on this client, open to a hand-off (for tests). */
    public int semaphoreWaitersParked(String name) {
        return permitHandOff.parkedCount(name);
    }

    private static Observer observer(BatonOptions options) {
        return options.observer() == null ? Observer.NONE : new Observer(options.observer());
    }

    /** How many leases this client holds now: one per lock and owner, every kind. */
    public int leasesHeld() {
        return services.leases().size();
    }

    /** The leases this client holds now, sorted by name and owner. */
    public List<HeldLease> heldLeases() {
        return services.leases().snapshot().stream()
                .map(l -> new HeldLease(l.key, l.owner, l.holds, l.watchdog,
                        l.watchdog ? options.watchdogTimeout().toMillis() : l.leaseMs))
                .sorted(Comparator.comparing(HeldLease::name).thenComparing(HeldLease::ownerId))
                .toList();
    }

    /** A runtime on a Lettuce client made from {@code options}, which it shuts down on close. */
    public static ClientRuntime open(BatonOptions options) {
        LettuceVersion.check();
        return new ClientRuntime(options, LettuceConnections.open(options));
    }

    /** A runtime on the application's standalone or Sentinel client, never shut down here. */
    public static ClientRuntime open(RedisClient client, BatonOptions options) {
        LettuceVersion.check();
        return new ClientRuntime(options, LettuceConnections.open(client, options));
    }

    /** A runtime on the application's cluster client, never shut down here. */
    public static ClientRuntime open(RedisClusterClient client, BatonOptions options) {
        LettuceVersion.check();
        return new ClientRuntime(options, LettuceConnections.open(client, options));
    }

    // ---- synchronizers ---------------------------------------------------------------------

    public BatonLock lock(String name) {
        services.checkOpen();
        inOneSlot(name, false);
        return new RedisLock(services, name, n -> new ReentrantRecipe(services.executor(), n));
    }

    public BatonLock fairLock(String name) {
        services.checkOpen();
        inOneSlot(name, false);
        long waiterLeaseMs = options.fairLockWaiterTimeout().toMillis();
        return new RedisLock(services, name, n -> new FairRecipe(services, n, waiterLeaseMs));
    }

    public BatonReadWriteLock readWriteLock(String name) {
        services.checkOpen();
        inOneSlot(name, false);
        return new RedisReadWriteLock(name,
                new RedisLock(services, name, n -> new ReadLockRecipe(services.executor(), n)),
                new RedisLock(services, name, n -> new WriteLockRecipe(services.executor(), n,
                        reader -> services.leases().holds(n, reader) > 0)));
    }

    public BatonFencedLock fencedLock(String name) {
        services.checkOpen();
        inOneSlot(name, false);
        return new RedisFencedLock(services, name);
    }

    public BatonSemaphore semaphore(String name) {
        services.checkOpen();
        inOneSlot(name, false);
        return new RedisSemaphore(services, permitHandOff, name);
    }

    public BatonPermitExpirableSemaphore permitExpirableSemaphore(String name) {
        services.checkOpen();
        inOneSlot(name, false);
        return new RedisPermitExpirableSemaphore(services, name);
    }

    public BatonRateLimiter rateLimiter(String name, RateLimit limit) {
        services.checkOpen();
        java.util.Objects.requireNonNull(limit, "limit");
        inOneSlot(name, false);
        return new RedisRateLimiter(services, name, limit);
    }

    /**
     * The owner ids of this client's candidates' turns: one counter per client (so a seed of the
     * simulation replays byte for byte), far below the JVM-wide ids of Baton.newOwnerId(); only
     * an election's own lock ever sees them.
     */
    private final java.util.concurrent.atomic.AtomicLong candidateOwners = new java.util.concurrent.atomic.AtomicLong(Long.MIN_VALUE / 2);

    public BatonLeaderElection leaderElection(String name) {
        services.checkOpen();
        inOneSlot(Layout.leader(java.util.Objects.requireNonNull(name, "name")), false);
        return new RedisLeaderElection(services, name, options.fairLockWaiterTimeout().toMillis(), candidateOwners::decrementAndGet);
    }

    public BatonCountDownLatch countDownLatch(String name) {
        services.checkOpen();
        inOneSlot(name, true);
        return new RedisCountDownLatch(services, name);
    }

    /**
     * On a Redis Cluster, refuses a name whose keys and channels would not share the name's slot
     * (a script over keys of two slots fails with CROSSSLOT, on every call): a name with a
     * malformed hash tag ({@code a{b}, {@code x{}y}, {@code a}b}), whose helper keys
     * ({@code prefix:name}) then hash whole, and for the count-down latch any name with braces,
     * since Redisson's latch channel puts the name in braces of its own. Elsewhere every name
     * works, Redisson's included.
     */
    private void inOneSlot(String name, boolean latch) {
        Args.name(name);
        if (!cluster) {
            return;
        }
        int slot = SlotHash.getSlot(name);
        String helper = Layout.lockChannel(name);
        if (SlotHash.getSlot(helper) != slot) {
            throw new IllegalArgumentException("name '" + name + "' cannot be used on a Redis Cluster: its helper keys "
                    + "and channels (such as '" + helper + "') hash to slot " + SlotHash.getSlot(helper)
                    + ", the name itself to slot " + slot + ", and Redis refuses a script over two slots (CROSSSLOT). "
                    + "Use a name without braces, or one with a well-formed hash tag such as '{orders}:daily'");
        }
        if (latch && (name.indexOf('{') >= 0 || name.indexOf('}') >= 0)) {
            String channel = Layout.latchChannel(name);
            throw new IllegalArgumentException("count-down latch name '" + name + "' cannot be used on a Redis Cluster: "
                    + "the latch's channel, as Redisson names it ('" + channel + "'), puts the name in braces of its own, "
                    + "so a name with braces hashes the channel to slot " + SlotHash.getSlot(channel) + " and the latch to slot "
                    + slot + " (CROSSSLOT). Use a name without braces");
        }
    }

    /** A multi-lock over locks of any clients. */
    public static BatonMultiLock multiLock(List<? extends BatonLock> locks) {
        return new MultiLock(locks, SystemScheduler.INSTANCE);
    }

    /**
     * A RedLock over one lock of this name per independent master.
     *
     * @param masters one function per master that gives its lock of a name
     */
    public static BatonRedLock redLock(String name, List<Function<String, BatonLock>> masters, Duration nodeTimeout,
                                       BatonObserver observer) {
        Args.name(name);
        Objects.requireNonNull(masters, "masters");
        Objects.requireNonNull(nodeTimeout, "nodeTimeout");
        if (masters.isEmpty()) {
            throw new IllegalArgumentException("masters must not be empty");
        }
        if (nodeTimeout.isNegative() || nodeTimeout.isZero()) {
            throw new IllegalArgumentException("nodeTimeout must be positive, was " + nodeTimeout);
        }
        List<BatonLock> nodes = new ArrayList<>(masters.size());
        for (Function<String, BatonLock> master : masters) {
            nodes.add(Objects.requireNonNull(master, "masters element").apply(name));
        }
        return new RedLock(name, nodes, nodeTimeout, new AcquireEngine(null, SystemScheduler.INSTANCE,
                observer == null ? Observer.NONE : new Observer(observer)), SystemScheduler.INSTANCE);
    }

    // ---- the client ------------------------------------------------------------------------

    /** This client's id: a random UUID, the first half of every owner id it writes. */
    public String clientId() {
        return services.clientId();
    }

    /**
     * Stops renewal, fails waits still in flight, unsubscribes and closes the connections (and a
     * Lettuce client Baton made). Idempotent.
     */
    @Override
    public void close() {
        // A leader election's candidacies hand leadership on first, within the command timeout + 1 s.
        if (!services.lifecycle().close(services.commandTimeout().plusSeconds(1))) {
            return;
        }
        if (connections.refresh() != null) {
            connections.refresh().close();
        }
        executor.close();
        renewals.close();
        pubSub.close();
        services.leases().clear();
        try {
            connections.close();
        } finally {
            if (scheduler instanceof AutoCloseable closeable) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    throw new IllegalStateException("closing the scheduler failed", e);
                }
            }
        }
    }

    // ---- for tests --------------------------------------------------------------------------

    /** The shared pub/sub service. */
    public PubSubService pubSub() {
        return pubSub;
    }

    /** How many pub/sub channels this client is subscribed to now. */
    public int subscribedChannels() {
        return pubSub.channelCount();
    }

    /** How many leases the watchdog renews now. */
    public int renewedLeases() {
        return renewals.size();
    }
}
