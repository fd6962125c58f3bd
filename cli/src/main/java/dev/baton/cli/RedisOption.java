package dev.baton.cli;

import dev.baton.RedisUnavailableException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import picocli.CommandLine.Option;

import java.time.Duration;

/** The {@code --redis} option the operator commands share, and a plain connection for reading. */
final class RedisOption {
    @Option(names = "--redis", required = true, paramLabel = "URI",
            description = "Redis to work on, e.g. redis://localhost:6379 (rediss:// for TLS, redis-sentinel://...#master).")
    String uri;

    /** A plain Lettuce connection for inspecting keys; closing it shuts the client down. */
    Connection connect() {
        RedisURI redisUri = RedisURI.create(uri);
        redisUri.setTimeout(Duration.ofSeconds(3));
        RedisClient client = RedisClient.create(redisUri);
        try {
            return new Connection(client, client.connect());
        } catch (RedisConnectionException e) {
            client.shutdown();
            throw new RedisUnavailableException("cannot connect to Redis: " + e.getMessage(), e);
        }
    }

    record Connection(RedisClient client, StatefulRedisConnection<String, String> connection) implements AutoCloseable {
        @Override
        public void close() {
            connection.close();
            client.shutdown();
        }
    }
}
