package dev.baton.jmh;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * The fair lock's hand-off gap: from {@code unlock()} in one client until the queued waiter in
 * another client holds the lock. The waiter reports "holding" before it unlocks, and its unlock
 * finishes in the next invocation's (untimed) setup, so only the gap itself is timed.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class FairHandOffBenchmark extends WakeUpBase {
    private Lock held;
    private CompletableFuture<Void> holding;
    private Future<?> done;

    @Setup(Level.Invocation)
    public void holdAndQueue() throws Exception {
        if (done != null) {
            done.get(10, TimeUnit.SECONDS); // the previous waiter's unlock
        }
        String name = "wake-fair-" + run + "-" + (round++);
        held = causing.fairLock(name);
        held.lock();
        Lock theirs = waiting.fairLock(name);
        CompletableFuture<Void> nowHolding = new CompletableFuture<>();
        holding = nowHolding;
        done = waiter.submit(() -> {
            theirs.lock();
            nowHolding.complete(null);
            theirs.unlock();
            return null;
        });
        // Redisson's fair-lock waiters listen on a channel of their own (...:{name}:<thread id>).
        awaitParked(impl == Impl.BATON ? "baton_fair_lock:{" + name + "}" : "redisson_lock__channel:{" + name + "}*");
    }

    @Benchmark
    public void releaseToNextHolder() throws Exception {
        held.unlock();
        holding.get(10, TimeUnit.SECONDS);
    }
}
