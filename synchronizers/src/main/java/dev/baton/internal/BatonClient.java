package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonFencedLock;
import dev.baton.BatonLock;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonReadWriteLock;
import dev.baton.BatonSemaphore;
import dev.baton.BatonOptions;
import dev.baton.RedisUnavailableException;
import dev.baton.lua.Script;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

/**
 * The one implementation of {@link Baton}: it owns the client's runtime services (command
 * executor, pub/sub service, acquire engine, lease table and renewal registry) and hands them
 * to the recipes it creates. Not API: obtain instances through {@link Baton#create}.
 */
public final class BatonClient implements Baton {
    private static final Logger log = LoggerFactory.getLogger(BatonClient.class);

    private final String clientId = UUID.randomUUID().toString();
    private final BatonOptions options;
    private final AbstractRedisClient ownedClient;
    private final StatefulConnection<String, String> connection;
    private final StatefulRedisPubSubConnection<String, String> pubSubConnection;
    private final NettyScheduler scheduler;
    private final CommandExecutor executor;
    private final PubSubService pubSub;
    private final AcquireEngine engine;
    private final Leases leases;
    private final RenewalRegistry renewals;
    private final Requests requests;
    private volatile boolean closed;
    /** The cluster's slot-map refresh (null outside a cluster). */
    private TopologyRefresh topologyRefresh;

    private BatonClient(BatonOptions options, AbstractRedisClient ownedClient,
                        StatefulConnection<String, String> connection,
                        java.util.function.Supplier<io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands<String, String>> commands,
                        StatefulRedisPubSubConnection<String, String> pubSubConnection, boolean cluster,
                        java.util.function.Function<CommandExecutor, PubSubService.Subscriber> sharded) {
        this.options = options;
        this.ownedClient = ownedClient;
        this.connection = connection;
        this.pubSubConnection = pubSubConnection;
        this.scheduler = new NettyScheduler();
        CommandExecutor.ReplicaSync sync = CommandExecutor.ReplicaSync.OFF;
        if (options.replicaSyncReplicas() > 0) {
            sync = new CommandExecutor.ReplicaSync(options.replicaSyncReplicas(), options.replicaSyncTimeout(),
                    options.replicaSyncFailure() == BatonOptions.ReplicaSyncFailure.FAIL);
        }
        this.executor = new CommandExecutor(connection, commands, scheduler, options.commandTimeout(), sync);
        PubSubService.Subscriber subscriber = sharded == null ? PubSubService.classic(pubSubConnection) : sharded.apply(executor);
        if (sharded != null) {
            executor.useShardedPublish();
        }
        this.pubSub = new PubSubService(pubSubConnection, subscriber, executor);
        this.engine = new AcquireEngine(pubSub, scheduler);
        this.requests = new Requests(executor, scheduler, options.commandTimeout());
        this.leases = new Leases(scheduler, options.leaseLostListener());
        ToIntFunction<String> slotOf = cluster ? SlotHash::getSlot : key -> 0;
        this.renewals = new RenewalRegistry(this::renew, leases::lost, scheduler, slotOf,
                options.watchdogTimeout().toMillis(), options.renewalBatchSize());
        leases.attach(renewals);
        renewals.start();
    }

    /** Opens a client that owns the Lettuce client it creates from {@code options}. */
    public static Baton open(BatonOptions options) {
        if (options.redisUris().isEmpty()) {
            throw new IllegalArgumentException("BatonOptions names no Redis URI: set redisUri(...) or pass a Lettuce client");
        }
        List<RedisURI> uris = new ArrayList<>();
        for (String uri : options.redisUris()) {
            uris.add(parse(uri));
        }
        SocketOptions socket = SocketOptions.builder().connectTimeout(options.commandTimeout()).build();
        ClientResources resources = ownedResources();
        if (options.cluster()) {
            RedisClusterClient client = RedisClusterClient.create(resources, uris);
            client.setOptions(ClusterClientOptions.builder()
                    .socketOptions(socket)
                    // A command for a master that is down fails at once instead of waiting in the
                    // dead node's queue for the command timeout: waits retry (asking for a topology
                    // refresh each time) and reach the promoted replica soon after its promotion.
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enableAllAdaptiveRefreshTriggers()
                            // A MOVED after a migration refreshes within a second, not after 30 s.
                            .adaptiveRefreshTriggersTimeout(Duration.ofSeconds(1))
                            .build())
                    .build());
            return openCluster(client, options, client);
        }
        if (uris.size() != 1) {
            throw new IllegalArgumentException("several Redis URIs given without cluster(true); give one URI, "
                    + "or a redis-sentinel:// URI listing the sentinels");
        }
        RedisClient client = RedisClient.create(resources, uris.get(0));
        client.setOptions(ClientOptions.builder().socketOptions(socket).build());
        return openStandalone(client, options, client);
    }

    /**
     * Lettuce resources for a client Baton owns: Lettuce's defaults, except that reconnect
     * attempts back off to at most one second apart (Lettuce's default grows to 30 s), so after a
     * failover or a restart the connections, and the waiters on them, are back within about a
     * second of Redis answering again. Shut down with the client.
     */
    private static ClientResources ownedResources() {
        return DefaultClientResources.builder()
                .reconnectDelay(Delay.exponential(Duration.ofMillis(1), MAX_RECONNECT_DELAY, 2, TimeUnit.MILLISECONDS))
                .build();
    }

    /** The longest pause between two reconnect attempts of a client Baton owns. */
    static final Duration MAX_RECONNECT_DELAY = Duration.ofSeconds(1);

    /** Opens a client on an application-owned standalone or Sentinel client. */
    public static Baton open(RedisClient client, BatonOptions options) {
        return openStandalone(client, options, null);
    }

    /** Opens a client on an application-owned cluster client. */
    public static Baton open(RedisClusterClient client, BatonOptions options) {
        return openCluster(client, options, null);
    }

    private static Baton openStandalone(RedisClient client, BatonOptions options, AbstractRedisClient owned) {
        StatefulRedisConnection<String, String> connection = null;
        try {
            connection = client.connect(StringCodec.UTF8);
            StatefulRedisPubSubConnection<String, String> pubSub = client.connectPubSub(StringCodec.UTF8);
            StatefulRedisConnection<String, String> c = connection;
            return new BatonClient(options, owned, connection, c::async, pubSub, false, null);
        } catch (RuntimeException e) {
            closeQuietly(connection, owned);
            throw connectFailed(e, options);
        }
    }

    private static Baton openCluster(RedisClusterClient client, BatonOptions options, AbstractRedisClient owned) {
        StatefulRedisClusterConnection<String, String> connection = null;
        TopologyRefresh refresh = null;
        try {
            connection = client.connect(StringCodec.UTF8);
            io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection<String, String> pubSub =
                    client.connectPubSub(StringCodec.UTF8);
            StatefulRedisClusterConnection<String, String> c = connection;
            // Redis 7+ clusters: sharded pub/sub, as Redisson picks it there (interop needs the same).
            boolean sharded = majorVersion(connection.sync().info("server")) >= 7;
            refresh = new TopologyRefresh(client);
            TopologyRefresh r = refresh;
            BatonClient baton = new BatonClient(options, owned, connection, c::async, pubSub, true, sharded ? executor -> {
                ShardedSubscriber subscriber = new ShardedSubscriber(c, pubSub, r, executor.scheduler());
                r.onChange(subscriber::follow);
                return subscriber;
            } : null);
            baton.executor.onUnreachable(refresh);
            // WAIT counts the acknowledgements of its own connection's writes: it must run on the
            // connection the script went to, Lettuce's write connection to the slot's master,
            // which Lettuce keys by host and port.
            baton.executor.routeWait(key -> {
                io.lettuce.core.cluster.models.partitions.RedisClusterNode owner =
                        c.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
                if (owner == null) {
                    return CompletableFuture.failedFuture(new io.lettuce.core.RedisConnectionException(
                            "no master serves the slot of " + key));
                }
                return c.getConnectionAsync(owner.getUri().getHost(), owner.getUri().getPort(),
                        io.lettuce.core.protocol.ConnectionIntent.WRITE).<io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands<String, String>>thenApply(
                                StatefulRedisConnection::async);
            });
            baton.topologyRefresh = refresh;
            return baton;
        } catch (RuntimeException e) {
            if (refresh != null) {
                refresh.close();
            }
            closeQuietly(connection, owned);
            throw connectFailed(e, options);
        }
    }

    /** The major version from an INFO server reply (0 if it cannot tell). */
    static int majorVersion(String info) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("redis_version:(\\d+)").matcher(info);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    private static RedisURI parse(String uri) {
        try {
            return RedisURI.create(uri);
        } catch (RuntimeException e) {
            // Lettuce's message may echo the URI, password included: do not pass it on.
            throw new IllegalArgumentException("not a valid Redis URI (expected redis://, rediss:// or redis-sentinel://): "
                    + redact(uri));
        }
    }

    /** The URI without any user info, safe for messages and logs. */
    static String redact(String uri) {
        int at = uri.lastIndexOf('@');
        int scheme = uri.indexOf("://");
        return at > 0 && scheme >= 0 && at > scheme ? uri.substring(0, scheme + 3) + "***@" + uri.substring(at + 1) : uri;
    }

    private static RuntimeException connectFailed(RuntimeException e, BatonOptions options) {
        if (e instanceof IllegalArgumentException) {
            return e;
        }
        List<String> safe = new ArrayList<>();
        options.redisUris().forEach(u -> safe.add(redact(u)));
        return new RedisUnavailableException("cannot connect to Redis " + (safe.isEmpty() ? "(application's client)" : safe)
                + ": " + CommandExecutor.unwrap(e).getMessage(), e);
    }

    private static void closeQuietly(StatefulConnection<?, ?> connection, AbstractRedisClient owned) {
        try {
            if (connection != null) {
                connection.close();
            }
        } finally {
            if (owned != null) {
                owned.shutdown();
                owned.getResources().shutdown();
            }
        }
    }

    // ---- Baton ----------------------------------------------------------------------------

    @Override
    public BatonLock lock(String name) {
        checkOpen();
        return new RedisLock(this, name, n -> new ReentrantRecipe(executor, n));
    }

    @Override
    public BatonLock fairLock(String name) {
        checkOpen();
        long waiterLeaseMs = options.fairLockWaiterTimeout().toMillis();
        return new RedisLock(this, name, n -> new FairRecipe(executor, n, waiterLeaseMs));
    }

    @Override
    public BatonReadWriteLock readWriteLock(String name) {
        checkOpen();
        Names.requireName(name);
        BatonLock read = new RedisLock(this, name, n -> new ReadLockRecipe(executor, n));
        BatonLock write = new RedisLock(this, name, n -> new WriteLockRecipe(executor, n));
        return new BatonReadWriteLock() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public BatonLock readLock() {
                return read;
            }

            @Override
            public BatonLock writeLock() {
                return write;
            }

            @Override
            public String toString() {
                return "BatonReadWriteLock{" + name + "}";
            }
        };
    }

    @Override
    public BatonFencedLock fencedLock(String name) {
        checkOpen();
        return new RedisFencedLock(this, name);
    }

    @Override
    public BatonSemaphore semaphore(String name) {
        checkOpen();
        return new RedisSemaphore(this, name);
    }

    @Override
    public BatonPermitExpirableSemaphore permitExpirableSemaphore(String name) {
        checkOpen();
        return new RedisPermitExpirableSemaphore(this, name);
    }

    @Override
    public BatonCountDownLatch countDownLatch(String name) {
        checkOpen();
        return new RedisCountDownLatch(this, name);
    }

    @Override
    public String clientId() {
        return clientId;
    }

    @Override
    public BatonOptions options() {
        return options;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (topologyRefresh != null) {
            topologyRefresh.close();
        }
        executor.close();
        renewals.close();
        pubSub.close();
        leases.clear();
        try {
            pubSubConnection.close();
            connection.close();
        } catch (RuntimeException e) {
            log.debug("closing connections failed", e);
        } finally {
            scheduler.close();
            if (ownedClient != null) {
                ownedClient.shutdown();
                ownedClient.getResources().shutdown();
            }
        }
    }

    @Override
    public String toString() {
        return "Baton{clientId=" + clientId + ", " + options + "}";
    }

    /** Builds a multi-lock; the factory behind {@link dev.baton.BatonMultiLock#of}. */
    public static dev.baton.BatonMultiLock multiLock(List<? extends BatonLock> locks) {
        return new MultiLock(locks);
    }

    /** Builds a RedLock; the factory behind {@link dev.baton.BatonRedLock#of}. */
    public static dev.baton.BatonRedLock redLock(String name, List<Baton> masters, java.time.Duration nodeTimeout) {
        return new RedLock(name, masters, nodeTimeout);
    }

    // ---- services for recipes --------------------------------------------------------------

    /** Where this client's Redis is, for ordering locks canonically (no credentials). */
    String target() {
        List<String> safe = new ArrayList<>();
        options.redisUris().forEach(u -> safe.add(redact(u)));
        return String.join(",", safe);
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this Baton client is closed");
        }
    }

    CommandExecutor executor() {
        checkOpen();
        return executor;
    }

    /**
     * How long an interrupted wait may take to stop: the attempt in flight (one command timeout)
     * and a little for dispatching its clean-up.
     */
    long cleanupNanos() {
        return options.commandTimeout().toNanos() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(250);
    }

    AcquireEngine engine() {
        return engine;
    }

    Leases leases() {
        return leases;
    }

    Requests requests() {
        return requests;
    }

    long watchdogMs() {
        return options.watchdogTimeout().toMillis();
    }

    /** The shared pub/sub service (for tests). */
    PubSubService pubSub() {
        return pubSub;
    }

    /** How many pub/sub channels this client is subscribed to (for tests). */
    int subscribedChannels() {
        return pubSub.channelCount();
    }

    /** How many leases the watchdog renews (for tests). */
    int renewedLeases() {
        return renewals.size();
    }

    /** Renews one lease at once (a fair lock's claim); whether it is still held. */
    CompletableFuture<Boolean> renewNow(Lease lease) {
        return renew(List.of(lease), lease.leaseMs).thenApply(renewed -> renewed.get(0));
    }

    private CompletableFuture<List<Boolean>> renew(List<Lease> batch, long leaseMs) {
        // One script call per renewal kind in the batch; the flags go back in the batch's order.
        List<Lease> fields = new ArrayList<>();
        List<Lease> reads = new ArrayList<>();
        for (Lease lease : batch) {
            (lease.renewal == LockRecipe.Renewal.READ_HOLDS ? reads : fields).add(lease);
        }
        CompletableFuture<List<Boolean>> fieldFlags = fields.isEmpty()
                ? CompletableFuture.completedFuture(List.of()) : renewCall(Script.LOCK_RENEW, fields, leaseMs, false);
        CompletableFuture<List<Boolean>> readFlags = reads.isEmpty()
                ? CompletableFuture.completedFuture(List.of()) : renewCall(Script.RWLOCK_READ_RENEW, reads, leaseMs, true);
        return fieldFlags.thenCombine(readFlags, (f, r) -> {
            List<Boolean> flags = new ArrayList<>(batch.size());
            int fi = 0;
            int ri = 0;
            for (Lease lease : batch) {
                flags.add(lease.renewal == LockRecipe.Renewal.READ_HOLDS ? r.get(ri++) : f.get(fi++));
            }
            return flags;
        });
    }

    private CompletableFuture<List<Boolean>> renewCall(Script script, List<Lease> leases, long leaseMs, boolean withPrefixes) {
        List<String> keys = new ArrayList<>();
        List<String> args = new ArrayList<>(leases.size() + 1);
        args.add(Long.toString(leaseMs));
        for (Lease lease : leases) {
            keys.add(lease.key);
            if (withPrefixes) {
                keys.add(Names.readHoldPrefix(lease.key, lease.owner));
            }
            args.add(lease.owner);
        }
        return executor.<List<Object>>evalRenewal(script, CommandExecutor.Reply.ARRAY, keys, args)
                .thenApply(reply -> {
                    List<Boolean> renewed = new ArrayList<>(reply.size());
                    for (Object flag : reply) {
                        renewed.add(Long.valueOf(1L).equals(flag));
                    }
                    return renewed;
                });
    }
}
