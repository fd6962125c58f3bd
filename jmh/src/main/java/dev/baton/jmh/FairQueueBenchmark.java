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
import org.openjdk.jmh.annotations.Warmup;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Lock;

/**
 * Does a fair lock's hand-off get dearer as its queue grows? {@code queued} threads of a second
 * client sit in the lock's queue and cycle (acquire, release, queue again), so the queue keeps
 * about that length; the benchmark thread in the first client takes its turn among them. The
 * figure to compare is {@code grants}: hand-offs per second among all of them, with 1 and with
 * 1,000 waiters queued. The primary score (the benchmark thread's own turns) falls with the queue
 * length by design, since it waits for everybody ahead of it.
 *
 * <p>Every wait is a {@code tryLock} of at most 30 s, so a stalled queue shows up as
 * {@code timeouts} rather than hanging the run; {@code failures} counts exceptions (for example a
 * client's subscribe timeout).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1, time = 5)
@Measurement(iterations = 3, time = 5)
@Fork(1)
public class FairQueueBenchmark {
    private static final long WAIT_SECONDS = 30;

    @Param({"BATON", "REDISSON"})
    public Impl impl;

    @Param({"1", "1000"})
    public int queued;

    Impl.Client mine;
    Impl.Client theirs;
    Lock lock;
    final LongAdder grants = new LongAdder();
    final LongAdder timeouts = new LongAdder();
    final LongAdder failures = new LongAdder();
    private final Set<String> failureKinds = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Thread> waiters = new ArrayList<>();

    @Setup(Level.Trial)
    public void queueUp() {
        String uri = RedisForBenchmarks.get().uri();
        mine = impl.connect(uri);
        theirs = impl.connect(uri);
        String name = "bench-fair-queue-" + queued + "-" + UUID.randomUUID().toString().substring(0, 8);
        lock = mine.fairLock(name);
        for (int i = 0; i < queued; i++) {
            Lock theirLock = theirs.fairLock(name);
            Thread t = new Thread(() -> {
                while (!stop.get()) {
                    turn(theirLock);
                }
            }, "fair-queue-waiter-" + i);
            t.setDaemon(true);
            waiters.add(t);
            t.start();
        }
    }

    @TearDown(Level.Trial)
    public void leave() throws InterruptedException {
        stop.set(true);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS + 10);
        for (Thread t : waiters) {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        }
        for (Thread t : waiters) {
            t.interrupt(); // only reached if a wait outlived its own 30 s bound
        }
        mine.close();
        theirs.close();
    }

    private void turn(Lock l) {
        try {
            if (l.tryLock(WAIT_SECONDS, TimeUnit.SECONDS)) {
                grants.increment();
                l.unlock();
            } else {
                timeouts.increment();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop.set(true);
        } catch (RuntimeException e) {
            failures.increment();
            if (failureKinds.add(e.getClass().getName() + ": " + e.getMessage())) {
                System.err.println("[fair-queue] " + impl + " wait failed: " + e); // each distinct failure once
            }
        }
    }

    /** Hand-offs among all threads, and the waits that ended without one. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Counters {
        private FairQueueBenchmark bench;
        private long grantsAtStart;
        private long timeoutsAtStart;
        private long failuresAtStart;

        @Setup(Level.Iteration)
        public void mark(FairQueueBenchmark b) {
            bench = b;
            grantsAtStart = b.grants.sum();
            timeoutsAtStart = b.timeouts.sum();
            failuresAtStart = b.failures.sum();
        }

        public long grants() {
            return bench.grants.sum() - grantsAtStart;
        }

        public long timeouts() {
            return bench.timeouts.sum() - timeoutsAtStart;
        }

        public long failures() {
            return bench.failures.sum() - failuresAtStart;
        }
    }

    /** The benchmark thread's own turn in the queue. */
    @Benchmark
    public void takeTurn(Counters counters) {
        turn(lock);
    }
}
