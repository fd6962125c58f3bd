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

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One semaphore of 4 permits contended by 2 clients × 8 threads each (16 threads): acquire +
 * release pairs per second, each client's releases meeting the other client's waiters as well
 * as its own.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 6, time = 2)
@Measurement(iterations = 5, time = 3)
@Fork(1)
@Threads(16)
public class SemaphoreTwoClientsBenchmark {
    @Param({"BATON", "REDISSON"})
    public Impl impl;

    Impl.Client[] clients;
    String name;
    private final AtomicInteger threadIds = new AtomicInteger();

    @Setup(Level.Trial)
    public void connect() {
        String uri = RedisForBenchmarks.get().uri();
        clients = new Impl.Client[] {impl.connect(uri), impl.connect(uri)};
        name = "bench-sem2-" + UUID.randomUUID().toString().substring(0, 8);
        clients[0].semaphore(name).trySetPermits(4);
    }

    @TearDown(Level.Trial)
    public void close() {
        for (Impl.Client c : clients) {
            c.close();
        }
    }

    /** The thread's view of the shared semaphore, through one of the two clients. */
    @State(Scope.Thread)
    public static class Shared {
        Impl.Permits semaphore;

        @Setup(Level.Trial)
        public void pick(SemaphoreTwoClientsBenchmark bench) {
            semaphore = bench.clients[bench.threadIds.incrementAndGet() % 2].semaphore(bench.name);
        }
    }

    /** Acquire + release of one permit of 4, by 16 threads on two clients. */
    @Benchmark
    public void semaphore4Permits2Clients8Threads(Shared shared) throws InterruptedException {
        shared.semaphore.acquire();
        shared.semaphore.release();
    }
}
