package dev.baton.jmh;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The floor under every wake-up latency: plain Lettuce, no synchronizer. One connection
 * PUBLISHes; a second (pub/sub) connection receives the message and completes a future that a
 * parked thread waits on; that thread then reports back. The same hops as a Baton or Redisson
 * waiter woken by a message, minus everything the libraries add, so the hand-off and latch
 * figures can be read against it ({@code quietMs=3} is the one comparable to them).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class WakeFloorBenchmark {
    private static final String CHANNEL = "bench-wake-floor";

    /**
     * How long everything stays quiet before the timed PUBLISH: 0 (back to back, every thread
     * hot) or 3 ms, the pause the wake-up benchmarks take to let their waiter park. On a VM an
     * idle vCPU halts, and waking it again is a cost of the machine that both libraries pay.
     */
    @Param({"0", "3"})
    public int quietMs;

    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;
    private RedisCommands<String, String> redis;
    private StatefulRedisPubSubConnection<String, String> pubSub;
    private final ExecutorService waiter = Executors.newSingleThreadExecutor();
    private volatile CompletableFuture<Void> delivered = new CompletableFuture<>();
    private CompletableFuture<Void> woken;
    private Future<?> done;

    @Setup(Level.Trial)
    public void connect() {
        client = RedisClient.create(RedisForBenchmarks.get().uri());
        connection = client.connect();
        redis = connection.sync();
        pubSub = client.connectPubSub();
        pubSub.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                delivered.complete(null);
            }
        });
        pubSub.sync().subscribe(CHANNEL);
    }

    @TearDown(Level.Trial)
    public void close() {
        waiter.shutdownNow();
        pubSub.close();
        connection.close();
        client.shutdown();
    }

    @Setup(Level.Invocation)
    public void park() throws Exception {
        if (done != null) {
            done.get(10, TimeUnit.SECONDS);
        }
        CompletableFuture<Void> message = new CompletableFuture<>();
        delivered = message;
        CompletableFuture<Void> report = new CompletableFuture<>();
        woken = report;
        done = waiter.submit(() -> {
            message.get(10, TimeUnit.SECONDS);
            report.complete(null);
            return null;
        });
        if (quietMs > 0) {
            Thread.sleep(quietMs); // as WakeUpBase does before every timed wake-up (untimed)
        }
    }

    /** PUBLISH, until the thread parked on the message has woken and said so. */
    @Benchmark
    public void publishToWokenThread() throws Exception {
        redis.publish(CHANNEL, "0");
        woken.get(10, TimeUnit.SECONDS);
    }
}
