package dev.baton.cli;

import dev.baton.BatonOptions;
import dev.baton.RedisUnavailableException;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code --redis} option the operator commands share, and a plain connection for reading:
 * to a standalone or Sentinel-managed Redis, or, when the node named answers that it is part of a
 * cluster, to the whole cluster (keys are read where their slot lives, SCAN walks every master).
 */
final class RedisOption {
    @Option(names = "--redis", required = true, paramLabel = "URI",
            description = "Redis to work on, e.g. redis://localhost:6379 (rediss:// for TLS, redis-sentinel://...#master, "
                    + "or any node of a cluster).")
    String uri;

    /** A connection for inspecting keys; closing it shuts its client down. */
    Connection connect() {
        RedisURI redisUri = RedisURI.create(uri);
        redisUri.setTimeout(Duration.ofSeconds(3));
        RedisClient client = RedisClient.create(redisUri);
        StatefulRedisConnection<String, String> plain;
        try {
            plain = client.connect();
        } catch (RedisConnectionException e) {
            client.shutdown();
            throw new RedisUnavailableException("cannot connect to Redis: " + e.getMessage(), e);
        }
        String info = plain.sync().info("server") + plain.sync().info("cluster");
        int major = majorVersion(info);
        if (!info.contains("cluster_enabled:1")) {
            return new Connection(client, plain, plain.sync(), false, major);
        }
        plain.close();
        client.shutdown();
        RedisClusterClient cluster = RedisClusterClient.create(redisUri);
        try {
            StatefulRedisClusterConnection<String, String> c = cluster.connect();
            return new Connection(cluster, c, c.sync(), true, major);
        } catch (RedisConnectionException e) {
            cluster.shutdown();
            throw new RedisUnavailableException("cannot connect to the Redis cluster: " + e.getMessage(), e);
        }
    }

    /** Options for a Baton client on the same Redis (a cluster when the connection found one). */
    BatonOptions batonOptions(Connection connection) {
        return BatonOptions.builder().redisUri(uri).cluster(connection.cluster()).build();
    }

    private static int majorVersion(String info) {
        Matcher m = Pattern.compile("(?:redis|valkey)_version:(\\d+)").matcher(info);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    /**
     * A connection and the commands to read with.
     *
     * @param cluster whether Redis is a cluster
     * @param major   the server's major version
     */
    record Connection(AbstractRedisClient client, StatefulConnection<String, String> connection,
                      RedisClusterCommands<String, String> sync, boolean cluster, int major) implements AutoCloseable {

        /**
         * How many connections are subscribed to {@code channel}, where Baton subscribes: the
         * server's channel outside a cluster; in a Redis 7+ cluster the slot owner's sharded
         * channel (SHARDNUMSUB); in an older cluster, the sum over every node.
         */
        long subscribers(String channel) {
            if (!cluster) {
                return numsub(sync.pubsubNumsub(channel), channel);
            }
            @SuppressWarnings("unchecked")
            StatefulRedisClusterConnection<String, String> c = (StatefulRedisClusterConnection<String, String>) connection;
            if (major >= 7) {
                RedisClusterNode owner = c.getPartitions().getMasterBySlot(SlotHash.getSlot(channel));
                List<Object> reply = c.getConnection(owner.getNodeId()).sync().dispatch(CommandType.PUBSUB,
                        new NestedMultiOutput<>(StringCodec.UTF8), new CommandArgs<>(StringCodec.UTF8).add("SHARDNUMSUB").add(channel));
                return reply.size() == 2 ? ((Number) reply.get(1)).longValue() : 0;
            }
            long total = 0;
            for (RedisClusterNode node : c.getPartitions()) {
                total += numsub(c.getConnection(node.getNodeId()).sync().pubsubNumsub(channel), channel);
            }
            return total;
        }

        private static long numsub(Map<String, Long> counts, String channel) {
            Long n = counts.get(channel);
            return n == null ? 0 : n;
        }

        @Override
        public void close() {
            connection.close();
            client.shutdown();
        }
    }
}
