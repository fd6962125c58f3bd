package dev.baton.jmh;

import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Shared by the wake-up benchmarks: one client that causes the event, one whose waiter thread
 * is woken by it, and a way to wait (untimed, in setup) until that waiter is subscribed and
 * parked.
 */
@State(Scope.Thread)
public abstract class WakeUpBase {
    @Param({"BATON", "REDISSON"})
    public Impl impl;

    RedisForBenchmarks.Target redis;
    Impl.Client causing;
    Impl.Client waiting;
    final ExecutorService waiter = Executors.newSingleThreadExecutor();
    String run;
    int round;

    @Setup(Level.Trial)
    public void connect() {
        redis = RedisForBenchmarks.get();
        causing = impl.connect(redis.uri());
        waiting = impl.connect(redis.uri());
        run = UUID.randomUUID().toString().substring(0, 8);
    }

    @TearDown(Level.Trial)
    public void close() {
        waiter.shutdownNow();
        causing.close();
        waiting.close();
    }

    /** Until some channel matching the glob has a subscriber; then a pause for the waiter to park. */
    void awaitParked(String channelPattern) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (((List<?>) redis.command("PUBSUB", "CHANNELS", channelPattern)).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        Thread.sleep(3); // untimed setup: let the post-subscribe attempt finish and park
    }
}
