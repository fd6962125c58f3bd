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
import java.util.concurrent.locks.Lock;

/**
 * Shared synchronizers under 8 threads of one client: the read side of one read-write lock,
 * and one semaphore of 4 permits. Six warm-up iterations and five measured: with two and three,
 * both libraries were still speeding up through the measured ones (Baton 7,403, 13,072 and
 * 15,149 ops/s on the semaphore), so the ratio said more about the JIT than about the library.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 6, time = 2)
@Measurement(iterations = 5, time = 3)
@Fork(1)
@Threads(8)
public class SharedBenchmark {
    @Param({"BATON", "REDISSON"})
    public Impl impl;

    Impl.Client client;
    Lock readLock;
    Impl.Permits semaphore;

    @Setup(Level.Trial)
    public void connect() {
        client = impl.connect(RedisForBenchmarks.get().uri());
        String run = UUID.randomUUID().toString().substring(0, 8);
        readLock = client.readLock("bench-rw-" + run);
        semaphore = client.semaphore("bench-sem-" + run);
        semaphore.trySetPermits(4);
    }

    @TearDown(Level.Trial)
    public void close() {
        client.close();
    }

    /** Read lock + unlock: readers share, so this measures the path, not waiting. */
    @Benchmark
    public void readLock8Threads() {
        readLock.lock();
        readLock.unlock();
    }

    /**
     * Acquire, hold 200 µs, release: one permit of 4, by 8 threads, the shape of calls throttled
     * by the semaphore, where waiters park while permits are held.
     */
    @Benchmark
    public void semaphore4Permits8ThreadsHeld200us() throws InterruptedException {
        semaphore.acquire();
        java.util.concurrent.locks.LockSupport.parkNanos(200_000);
        semaphore.release();
    }

    /** Acquire + release of one permit of 4, by 8 threads. */
    @Benchmark
    public void semaphore4Permits8Threads() throws InterruptedException {
        semaphore.acquire();
        semaphore.release();
    }
}
