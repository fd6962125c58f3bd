package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.RedisUnavailableException;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import picocli.CommandLine.Option;

import java.time.Duration;

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
        if (!plain.sync().info("cluster").contains("cluster_enabled:1")) {
            return new Connection(client, plain, plain.sync(), false);
        }
        plain.close();
        client.shutdown();
        RedisClusterClient cluster = RedisClusterClient.create(redisUri);
        try {
            StatefulRedisClusterConnection<String, String> c = cluster.connect();
            return new Connection(cluster, c, c.sync(), true);
        } catch (RedisConnectionException e) {
            cluster.shutdown();
            throw new RedisUnavailableException("cannot connect to the Redis cluster: " + e.getMessage(), e);
        }
    }

    /** Options for a Baton client on the same Redis (a cluster when the connection found one). */
    BatonOptions batonOptions(Connection connection) {
        return BatonOptions.builder().redisUri(uri).cluster(connection.cluster()).build();
    }

    /**
     * A connection and the commands to read with, and (made on first use, on the same Lettuce
     * client) a Baton client for what the library itself reports: who waits for a synchronizer.
     */
    static final class Connection implements AutoCloseable {
        private final AbstractRedisClient client;
        private final StatefulConnection<String, String> connection;
        private final RedisClusterCommands<String, String> sync;
        private final boolean cluster;
        private Baton baton;

        Connection(AbstractRedisClient client, StatefulConnection<String, String> connection,
                   RedisClusterCommands<String, String> sync, boolean cluster) {
            this.client = client;
            this.connection = connection;
            this.sync = sync;
            this.cluster = cluster;
        }

        /** The commands to read with. */
        RedisClusterCommands<String, String> sync() {
            return sync;
        }

        /** Whether Redis is a cluster. */
        boolean cluster() {
            return cluster;
        }

        /** A Baton client on this connection's Lettuce client, for the library's own inspection. */
        synchronized Baton baton() {
            if (baton == null) {
                BatonOptions options = BatonOptions.builder().build();
                baton = client instanceof RedisClusterClient c ? Baton.create(c, options) : Baton.create((RedisClient) client, options);
            }
            return baton;
        }

        @Override
        public synchronized void close() {
            if (baton != null) {
                baton.close();
            }
            connection.close();
            client.shutdown();
        }
    }
}
