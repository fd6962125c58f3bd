package dev.baton.jmh;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * What each library admits at a rate below what the client can reach (issue 48): eight threads
 * call {@code tryAcquire()} as fast as they can for {@code seconds} on a limiter of
 * {@code rate} per second with a burst of {@code burst}; prints the permits admitted against
 * what the limit allows over the run (rate × time + burst: above it is over-admission, below it
 * under-admission) and the most admitted in any one-second window against rate + burst.
 * <pre>java -cp jmh/target/benchmarks.jar dev.baton.jmh.RateAccuracy [rate] [burst] [seconds]</pre>
 */
public final class RateAccuracy {
    private RateAccuracy() {
    }

    /** Eight threads calling for {@code seconds}; how many were admitted. */
    private static long run(BooleanSupplier tryAcquire, int seconds) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        java.util.concurrent.atomic.AtomicLong admitted = new java.util.concurrent.atomic.AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Thread thread = new Thread(() -> {
                while (System.nanoTime() < end) {
                    if (tryAcquire.getAsBoolean()) {
                        admitted.incrementAndGet();
                    }
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        return admitted.get();
    }

    public static void main(String[] args) throws Exception {
        long rate = args.length > 0 ? Long.parseLong(args[0]) : 1_000;
        long burst = args.length > 1 ? Long.parseLong(args[1]) : 10;
        int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        String uri = RedisForBenchmarks.get().uri();
        System.out.printf("rate %d/s, burst %d, 8 threads, %d s, on %s%n", rate, burst, seconds, uri);
        for (String impl : List.of("BATON", "BUCKET4J", "REDISSON")) {
            // Warm-up: the same calls for 2 s on another name (class loading, JIT, scripts loaded).
            try (RateLimiterBenchmark.Limiters.Opened warm = RateLimiterBenchmark.Limiters.open(impl, uri, "warm-" + impl.toLowerCase(),
                    rate, burst)) {
                run(warm.tryAcquire(), 2);
            }
            try (RateLimiterBenchmark.Limiters.Opened opened = RateLimiterBenchmark.Limiters.open(impl, uri, "accuracy-" + impl.toLowerCase(),
                    rate, burst)) {
                BooleanSupplier tryAcquire = opened.tryAcquire();
                List<Long> admitted = Collections.synchronizedList(new ArrayList<>());
                long[] calls = new long[8];
                long start = System.nanoTime();
                long end = start + TimeUnit.SECONDS.toNanos(seconds);
                List<Thread> threads = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    int index = t;
                    Thread thread = new Thread(() -> {
                        while (System.nanoTime() < end) {
                            calls[index]++;
                            if (tryAcquire.getAsBoolean()) {
                                admitted.add(System.nanoTime());
                            }
                        }
                    });
                    threads.add(thread);
                    thread.start();
                }
                for (Thread t : threads) {
                    t.join();
                }
                double took = (System.nanoTime() - start) / 1e9;
                List<Long> sorted = new ArrayList<>(admitted);
                Collections.sort(sorted);
                int most = 0;
                for (int i = 0, j = 0; i < sorted.size(); i++) {
                    while (sorted.get(i) - sorted.get(j) >= TimeUnit.SECONDS.toNanos(1)) {
                        j++;
                    }
                    most = Math.max(most, i - j + 1);
                }
                double allowed = rate * took + burst;
                long total = 0;
                for (long c : calls) {
                    total += c;
                }
                System.out.printf("%-9s %8d calls, %7d admitted of %9.1f allowed (%+.2f %%), most in any 1 s window %d (rate + burst %d)%n",
                        impl, total, sorted.size(), allowed, (sorted.size() - allowed) * 100 / allowed, most, rate + burst);
            }
        }
    }
}
