package dev.baton.internal.runtime;

// Over 300 lines on purpose: every way a client connects (standalone, Sentinel, cluster; a
// client Baton owns or the application's; what a refused connection means) is here, so no other
// class opens a Lettuce connection.

import dev.baton.BatonException;
import dev.baton.BatonOptions;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.Failures;
import dev.baton.internal.pubsub.PubSubService;
import dev.baton.internal.pubsub.ShardedSubscriber;
import dev.baton.internal.support.Durations;
import dev.baton.internal.time.Scheduler;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ConnectionIntent;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Lettuce side of a client, for each topology: the command connection, the subscription
 * connection, how SUBSCRIBE is sent (classic, or sharded to the slot's master on a Redis 7+
 * cluster), what the executor needs to know about a cluster (ask for a slot-map refresh when a
 * master does not answer; run WAIT on the slot master's connection), and what to shut down.
 * This is the only class that opens Lettuce connections.
 *
 * @param commands   the connection commands are written to
 * @param async      its asynchronous command API
 * @param pubSub     the subscription connection
 * @param cluster    whether Redis is a cluster (renewals are batched per slot)
 * @param subscriber how SUBSCRIBE and UNSUBSCRIBE are sent, given the client's scheduler
 * @param topology   what the executor needs of the topology
 * @param refresh    the cluster's slot-map refresh, or null
 * @param owned      the Lettuce client Baton made and shuts down, or null for the application's
 * @param target     where Redis is, without credentials
 */
public record LettuceConnections(StatefulConnection<String, String> commands,
                                 Supplier<RedisClusterAsyncCommands<String, String>> async,
                                 StatefulRedisPubSubConnection<String, String> pubSub, boolean cluster,
                                 Function<Scheduler, PubSubService.Subscriber> subscriber,
                                 CommandExecutor.Topology topology, TopologyRefresh refresh, AbstractRedisClient owned,
                                 String target) {
    private static final Logger log = LoggerFactory.getLogger(LettuceConnections.class);

    /** The longest pause between two reconnect attempts of a client Baton owns. */
    static final Duration MAX_RECONNECT_DELAY = Duration.ofSeconds(1);

    /** Opens connections on a Lettuce client made from {@code options}, which Baton owns. */
    static LettuceConnections open(BatonOptions options) {
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
            return cluster(client, options, client);
        }
        if (uris.size() != 1) {
            throw new IllegalArgumentException("several Redis URIs given without cluster(true); give one URI, "
                    + "or a redis-sentinel:// URI listing the sentinels");
        }
        RedisClient client = RedisClient.create(resources, uris.get(0));
        client.setOptions(ClientOptions.builder().socketOptions(socket).build());
        return withinCommandTimeout(() -> standalone(client, options, client), options);
    }

    /** Opens connections on an application's standalone or Sentinel client (never shut down here). */
    static LettuceConnections open(RedisClient client, BatonOptions options) {
        return withinCommandTimeout(() -> standalone(client, options, null), options);
    }

    /** Opens connections on an application's cluster client (never shut down here). */
    static LettuceConnections open(RedisClusterClient client, BatonOptions options) {
        return withinCommandTimeout(() -> cluster(client, options, null), options);
    }

    /**
     * The least time the first connection of this JVM is given. Lettuce's first connection loads
     * and initialises its Netty pipeline and handshake (measured on 2 cores: about 0.6 s with
     * Lettuce 6.8 and 0.9-1.1 s with 7.7, against 5-12 ms for the next one). That is the JVM
     * starting up, not Redis failing to answer, so it must not turn a short command timeout into
     * a false "Redis unavailable" on a healthy server.
     */
    static final Duration FIRST_OPEN_AT_LEAST = BatonOptions.DEFAULT_COMMAND_TIMEOUT;

    /** Whether a client of this JVM has opened its connections (then the command timeout alone applies). */
    private static volatile boolean warm;

    /** How long opening waits: the command timeout, and at least {@link #FIRST_OPEN_AT_LEAST} until a first open succeeded. */
    static Duration openTimeout(Duration commandTimeout) {
        return warm || commandTimeout.compareTo(FIRST_OPEN_AT_LEAST) >= 0 ? commandTimeout : FIRST_OPEN_AT_LEAST;
    }

    /** For tests: as if no client of this JVM had opened yet. */
    static void forgetWarmUp() {
        warm = false;
    }

    /**
     * Runs {@code open} and waits for it at most the command timeout (see {@link #openTimeout}). Lettuce's own connect waits
     * as long as the client's settings say: a TCP connect within the socket's connect timeout, then
     * a handshake within the URI's timeout (60 s in a Spring Boot application), so a Redis that
     * accepts connections but does not answer (paused, overloaded) would hold the caller far past
     * Baton's promise. On timeout the connections, if they open later, are closed.
     */
    private static LettuceConnections withinCommandTimeout(Supplier<LettuceConnections> open, BatonOptions options) {
        CompletableFuture<LettuceConnections> opening = new CompletableFuture<>();
        Duration timeout = openTimeout(options.commandTimeout());
        Thread opener = new Thread(() -> {
            try {
                opening.complete(open.get());
                warm = true;
            } catch (Throwable e) {
                opening.completeExceptionally(e);
            }
        }, "baton-connect");
        opener.setDaemon(true);
        opener.start();
        String where = redacted(options).isEmpty() ? "(application's client)" : redacted(options).toString();
        try {
            return opening.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw new RedisUnavailableException("cannot connect to Redis " + where + ": " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            opening.thenAccept(LettuceConnections::close);
            throw new RedisUnavailableException("cannot connect to Redis " + where + ": no answer within "
                    + (timeout.equals(options.commandTimeout()) ? "the command timeout (" : "the first connection's wait (")
                    + Durations.readableNanos(timeout.toNanos()) + ")", null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            opening.thenAccept(LettuceConnections::close);
            throw new RedisUnavailableException("interrupted while connecting to Redis " + where, e);
        }
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

    private static LettuceConnections standalone(RedisClient client, BatonOptions options, AbstractRedisClient owned) {
        StatefulRedisConnection<String, String> connection = null;
        try {
            connection = client.connect(StringCodec.UTF8);
            StatefulRedisPubSubConnection<String, String> pubSub = client.connectPubSub(StringCodec.UTF8);
            StatefulRedisConnection<String, String> c = connection;
            return new LettuceConnections(connection, c::async, pubSub, false,
                    scheduler -> PubSubService.classic(pubSub), CommandExecutor.Topology.SINGLE, null, owned, target(options));
        } catch (RuntimeException e) {
            closeQuietly(connection, owned);
            throw connectFailed(e, options);
        }
    }

    private static LettuceConnections cluster(RedisClusterClient client, BatonOptions options, AbstractRedisClient owned) {
        StatefulRedisClusterConnection<String, String> connection = null;
        TopologyRefresh refresh = null;
        try {
            connection = client.connect(StringCodec.UTF8);
            StatefulRedisClusterPubSubConnection<String, String> pubSub = client.connectPubSub(StringCodec.UTF8);
            StatefulRedisClusterConnection<String, String> c = connection;
            // Redis 7+ clusters: sharded pub/sub, as Redisson picks it there (interop needs the same).
            boolean sharded = majorVersion(connection.sync().info("server")) >= 7;
            TopologyRefresh r = refresh = new TopologyRefresh(client);
            Function<Scheduler, PubSubService.Subscriber> subscriber = sharded ? scheduler -> {
                ShardedSubscriber s = new ShardedSubscriber(c, pubSub, r, scheduler);
                r.onChange(s::follow);
                return s;
            } : scheduler -> PubSubService.classic(pubSub, false); // messages over the bus: no PING is in order with them
            // WAIT counts the acknowledgements of its own connection's writes: it must run on the
            // connection the script went to, Lettuce's write connection to the slot's master,
            // which Lettuce keys by host and port.
            CommandExecutor.Topology topology = new CommandExecutor.Topology(sharded, r,
                    channel -> sharded ? shardSubscribers(c, channel) : subscribersOnEveryNode(c, channel),
                    key -> {
                        RedisClusterNode owner = c.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
                        if (owner == null) {
                            return CompletableFuture.failedFuture(new RedisConnectionException("no master serves the slot of " + key));
                        }
                        return c.getConnectionAsync(owner.getUri().getHost(), owner.getUri().getPort(), ConnectionIntent.WRITE)
                                .<RedisClusterAsyncCommands<String, String>>thenApply(StatefulRedisConnection::async);
                    });
            return new LettuceConnections(connection, c::async, pubSub, true, subscriber, topology, refresh, owned,
                    target(options));
        } catch (RuntimeException e) {
            if (refresh != null) {
                refresh.close();
            }
            closeQuietly(connection, owned);
            throw connectFailed(e, options);
        }
    }

    /** Subscribers of a sharded channel: SHARDNUMSUB on the master that serves its slot. */
    private static CompletableFuture<Long> shardSubscribers(StatefulRedisClusterConnection<String, String> c, String channel) {
        RedisClusterNode owner = c.getPartitions().getMasterBySlot(SlotHash.getSlot(channel));
        if (owner == null) {
            return CompletableFuture.failedFuture(new RedisConnectionException("no master serves the slot of " + channel));
        }
        return c.getConnectionAsync(owner.getNodeId()).thenCompose(node -> node.async().dispatch(CommandType.PUBSUB,
                new NestedMultiOutput<>(StringCodec.UTF8), new CommandArgs<>(StringCodec.UTF8).add("SHARDNUMSUB").add(channel)))
                .thenApply(reply -> reply.size() == 2 ? ((Number) reply.get(1)).longValue() : 0L);
    }

    /** Subscribers of a classic channel in a cluster: they may be on any node, so every node is asked. */
    private static CompletableFuture<Long> subscribersOnEveryNode(StatefulRedisClusterConnection<String, String> c, String channel) {
        CompletableFuture<Long> total = CompletableFuture.completedFuture(0L);
        for (RedisClusterNode node : c.getPartitions()) {
            CompletableFuture<Long> one = c.getConnectionAsync(node.getNodeId())
                    .thenCompose(n -> n.async().pubsubNumsub(channel))
                    .thenApply(counts -> counts.getOrDefault(channel, 0L));
            total = total.thenCombine(one, Long::sum);
        }
        return total;
    }

    /** Closes both connections and the slot-map refresh, and shuts down a Lettuce client Baton owns. */
    void close() {
        if (refresh != null) {
            refresh.close();
        }
        try {
            pubSub.close();
            commands.close();
        } catch (RuntimeException e) {
            log.debug("closing connections failed", e);
        } finally {
            shutdown(owned);
        }
    }

    /** The major version from an INFO server reply (0 if it cannot tell). */
    static int majorVersion(String info) {
        Matcher m = Pattern.compile("redis_version:(\\d+)").matcher(info);
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

    /** Where the options' Redis is, without credentials. */
    private static String target(BatonOptions options) {
        return String.join(",", redacted(options));
    }

    private static List<String> redacted(BatonOptions options) {
        List<String> safe = new ArrayList<>();
        options.redisUris().forEach(u -> safe.add(redact(u)));
        return safe;
    }

    private static RuntimeException connectFailed(RuntimeException e, BatonOptions options) {
        if (e instanceof IllegalArgumentException) {
            return e;
        }
        if (e instanceof IllegalStateException && String.valueOf(e.getMessage()).contains("RedisURI")) {
            // Lettuce's answer for a client made without a URI (Spring Data Redis makes one for
            // a static master/replica setup): not an outage, and it will not pass by itself.
            return new IllegalArgumentException("the application's RedisClient has no RedisURI of its own (a static "
                    + "master/replica setup makes such a client), so Baton cannot connect with it; give Baton a client "
                    + "created with a URI (standalone or Sentinel) or a RedisClusterClient", e);
        }
        List<String> safe = redacted(options);
        String where = safe.isEmpty() ? "(application's client)" : safe.toString();
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            String message = String.valueOf(cause.getMessage());
            if (message.contains("WRONGPASS") || message.contains("NOAUTH") || message.contains("invalid password")) {
                // Not an outage: calling again will not pass until the credentials change.
                return new BatonException("Redis " + where + " refused Baton's credentials: "
                        + message.substring(Math.max(0, Math.max(message.indexOf("WRONGPASS"), message.indexOf("NOAUTH"))))
                        + "; check the username and password", e);
            }
        }
        return new RedisUnavailableException("cannot connect to Redis " + where + ": " + Failures.unwrap(e).getMessage(), e);
    }

    private static void closeQuietly(StatefulConnection<?, ?> connection, AbstractRedisClient owned) {
        try {
            if (connection != null) {
                connection.close();
            }
        } finally {
            shutdown(owned);
        }
    }

    private static void shutdown(AbstractRedisClient owned) {
        if (owned != null) {
            owned.shutdown();
            owned.getResources().shutdown();
        }
    }
}
