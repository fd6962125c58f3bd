package dev.baton.jmh;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.BatonRateLimiter;
import dev.baton.RateLimit;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.redis.lettuce.cas.LettuceBasedProxyManager;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.redisson.Redisson;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The rate limiter (issue 48): {@code tryAcquire()} of one permit, at a rate far above what the
 * client can reach (so every call is admitted and the cost is the call's), by Baton, Bucket4j's
 * Lettuce module (compare-and-swap) and Redisson's {@code RRateLimiter}, on the same
 * redis-server, in the same run: one thread (against the EVALSHA floor, {@code floor} here) and
 * eight threads on one key. What each admits at a rate below what the client can reach is
 * {@link RateAccuracy}'s.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class RateLimiterBenchmark {
    @Param({"BATON", "BUCKET4J", "REDISSON"})
    public String impl;

    private Limiters.Opened opened;
    private BooleanSupplier tryAcquire;

    @Setup(Level.Trial)
    public void start() {
        opened = Limiters.open(impl, RedisForBenchmarks.get().uri(), "bench-rate", 1_000_000_000L, 1_000_000_000L);
        tryAcquire = opened.tryAcquire();
    }

    @TearDown(Level.Trial)
    public void stop() {
        opened.close();
    }

    /** One caller, one permit: admitted every time. */
    @Benchmark
    public boolean oneThread() {
        return tryAcquire.getAsBoolean();
    }

    /** Eight callers on one key. */
    @Benchmark
    @Threads(8)
    public boolean eightThreads() {
        return tryAcquire.getAsBoolean();
    }

    /** The three libraries' limiters behind one face. */
    static final class Limiters {
        private Limiters() {
        }

        /** A limiter of {@code permits} per second with {@code burst}, and what to close. */
        record Opened(BooleanSupplier tryAcquire, AutoCloseable closer) implements AutoCloseable {
            @Override
            public void close() {
                try {
                    closer.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }

        static Opened open(String impl, String uri, String name, long permitsPerSecond, long burst) {
            switch (impl) {
                case "BATON" -> {
                    Baton baton = Baton.create(BatonOptions.create(uri));
                    BatonRateLimiter limiter = baton.rateLimiter(name, RateLimit.of(permitsPerSecond, Duration.ofSeconds(1))
                            .withBurst(Math.min(burst, (1L << 50) / 1_000_000L - 1)));
                    limiter.delete();
                    return new Opened(limiter::tryAcquire, baton);
                }
                case "BUCKET4J" -> {
                    RedisClient client = RedisClient.create(uri);
                    StatefulRedisConnection<String, byte[]> connection = client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
                    LettuceBasedProxyManager<String> manager = LettuceBasedProxyManager.builderFor(connection)
                            .withExpirationStrategy(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
                            .build();
                    connection.sync().del("bucket4j:" + name);
                    BucketConfiguration config = BucketConfiguration.builder()
                            .addLimit(limit -> limit.capacity(burst).refillGreedy(permitsPerSecond, Duration.ofSeconds(1)))
                            .build();
                    BucketProxy bucket = manager.builder().build("bucket4j:" + name, () -> config);
                    return new Opened(() -> bucket.tryConsume(1), () -> {
                        connection.close();
                        client.shutdown();
                    });
                }
                case "REDISSON" -> {
                    Config config = new Config();
                    config.useSingleServer().setAddress(uri);
                    RedissonClient redisson = Redisson.create(config);
                    RRateLimiter limiter = redisson.getRateLimiter("redisson:" + name);
                    limiter.delete();
                    limiter.trySetRate(RateType.OVERALL, permitsPerSecond, Duration.ofSeconds(1));
                    return new Opened(limiter::tryAcquire, redisson::shutdown);
                }
                default -> throw new IllegalArgumentException(impl);
            }
        }
    }

    /** The EVALSHA floor, in this run: one EVALSHA of a script that does nothing. */
    @State(Scope.Benchmark)
    public static class Floor {
        RedisClient client;
        StatefulRedisConnection<String, String> connection;
        RedisCommands<String, String> redis;
        String sha;

        @Setup(Level.Trial)
        public void start() {
            client = RedisClient.create(RedisForBenchmarks.get().uri());
            connection = client.connect();
            redis = connection.sync();
            sha = redis.scriptLoad("return 1".getBytes(StandardCharsets.UTF_8));
        }

        @TearDown(Level.Trial)
        public void stop() {
            connection.close();
            client.shutdown();
        }
    }

    /** The floor (runs once per impl value; read one). */
    @Benchmark
    public Long floor(Floor f) {
        return f.redis.evalsha(f.sha, ScriptOutputType.INTEGER);
    }
}
