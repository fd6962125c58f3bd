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

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Latch wake-up latency: countDown to zero in one client until the waiter in another returns. */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1, time = 3)
@Measurement(iterations = 3, time = 3)
@Fork(1)
public class LatchWakeUpBenchmark extends WakeUpBase {
    private Impl.Latch latch;
    private Future<?> woken;

    @Setup(Level.Invocation)
    public void armAndPark() throws InterruptedException {
        String name = "wake-latch-" + run + "-" + (round++);
        latch = causing.latch(name);
        latch.arm();
        Impl.Latch theirs = waiting.latch(name);
        woken = waiter.submit(() -> {
            theirs.await();
            return null;
        });
        awaitParked("redisson_countdownlatch__channel__{" + name + "}");
    }

    @Benchmark
    public void countDownToWaiterReturn() throws Exception {
        latch.countDown();
        woken.get(10, TimeUnit.SECONDS);
    }
}
