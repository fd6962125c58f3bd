package dev.baton.jmh;

import org.openjdk.jmh.annotations.AuxCounters;
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
 * One lock contended by 2 clients x 4 threads, reentrant and fair: acquisitions per second
 * (throughput) and the distribution of one lock+unlock's time (sample time, with percentiles).
 */
@State(Scope.Benchmark)
@BenchmarkMode({Mode.Throughput, Mode.SampleTime})
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
@Threads(8)
public class ContendedLockBenchmark {
    @Param({"BATON", "REDISSON"})
    public Impl impl;

    @Param({"reentrant", "fair"})
    public String kind;

    Impl.Client[] clients;
    private final AtomicInteger threadIds = new AtomicInteger();

    @Setup(Level.Trial)
    public void connect() {
        String uri = RedisForBenchmarks.get().uri();
        clients = new Impl.Client[] {impl.connect(uri), impl.connect(uri)};
    }

    @TearDown(Level.Trial)
    public void close() {
        for (Impl.Client c : clients) {
            c.close();
        }
    }

    /** The thread's view of the shared lock, through one of the two clients. */
    @State(Scope.Thread)
    public static class Shared {
        Lock lock;

        @Setup(Level.Trial)
        public void pick(ContendedLockBenchmark bench) {
            Impl.Client client = bench.clients[bench.threadIds.incrementAndGet() % 2];
            String name = "bench-contended-" + bench.kind + "-" + bench.impl;
            lock = bench.kind.equals("fair") ? client.fairLock(name) : client.lock(name);
        }
    }

    /** The thread that took the lock last (both clients live in this JVM). */
    volatile Thread lastHolder;

    /**
     * How often a thread got the lock right back after releasing it while seven others were
     * waiting: the barging that a non-fair lock allows and that makes its tail.
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Retakes {
        public long retakes;
        public long acquisitions;

        @Setup(Level.Iteration)
        public void reset() {
            retakes = 0;
            acquisitions = 0;
        }
    }

    /** lock() + unlock() of the one shared lock. */
    @Benchmark
    public void lockUnlock(Shared shared, Retakes counts) {
        shared.lock.lock();
        Thread me = Thread.currentThread();
        if (lastHolder == me) {
            counts.retakes++;
        }
        lastHolder = me;
        counts.acquisitions++;
        shared.lock.unlock();
    }
}
