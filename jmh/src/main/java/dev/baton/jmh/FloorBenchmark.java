package dev.baton.jmh;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The round-trip floor every other result is read against: a Lettuce PING and an EVALSHA of a
 * trivial script, on the same redis-server as the Baton and Redisson scenarios.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@Warmup(iterations = 6, time = 2) // Baton and Redisson were still speeding up in the 5th 2 s iteration
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class FloorBenchmark {
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private RedisCommands<String, String> redis;
    private String sha;

    @Setup(Level.Trial)
    public void start() {
        client = RedisClient.create(RedisForBenchmarks.get().uri());
        connection = client.connect();
        redis = connection.sync();
        sha = redis.scriptLoad("return 1");
    }

    @TearDown(Level.Trial)
    public void stop() {
        connection.close();
        client.shutdown();
    }

    /** One PING round trip. */
    @Benchmark
    public String ping() {
        return redis.ping();
    }

    /** One EVALSHA round trip of a script that does nothing. */
    @Benchmark
    public Long evalsha() {
        return redis.evalsha(sha, ScriptOutputType.INTEGER);
    }
}
