package dev.baton.jmh;

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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;

/**
 * Reentrant lock: uncontended lock+unlock (watchdog and fixed lease), and 8 threads each on a
 * lock of its own. Baton and Redisson on the same server, chosen by {@code impl}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 6, time = 2) // Baton and Redisson were still speeding up in the 5th 2 s iteration
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class LockBenchmark {
    @Param({"BATON", "REDISSON"})
    public Impl impl;

    Impl.Client client;
    private final AtomicInteger threadIds = new AtomicInteger();

    @Setup(Level.Trial)
    public void connect() {
        client = impl.connect(RedisForBenchmarks.get().uri());
    }

    @TearDown(Level.Trial)
    public void close() {
        client.close();
    }

    /** Each benchmark thread's own lock. */
    @State(Scope.Thread)
    public static class Own {
        Lock lock;

        @Setup(Level.Trial)
        public void pick(LockBenchmark bench) {
            lock = bench.client.lock("bench-own-" + bench.impl + "-" + bench.threadIds.incrementAndGet());
        }
    }

    /** lock() + unlock() of a free lock, watchdog mode: two round trips for Baton. */
    @Benchmark
    public void uncontendedWatchdog(Own own) {
        own.lock.lock();
        own.lock.unlock();
    }

    /** lock(lease) + unlock() of a free lock. */
    @Benchmark
    public void uncontendedLease(Own own) {
        client.lockWithLease(own.lock, 10_000);
        own.lock.unlock();
    }

    /** 8 threads, each on its own lock, one client. */
    @Benchmark
    @Threads(8)
    public void distinctLocks8Threads(Own own) {
        own.lock.lock();
        own.lock.unlock();
    }
}
