package dev.baton.jmh;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One library's semaphore in a JVM of its own, for as long as it takes to reach its steady state
 * and for a profiler to see it: 8 threads take and give back one permit of 4 for
 * {@code SECONDS}, then the pairs per second are printed. Run once per library, e.g.
 * {@code java -XX:StartFlightRecording=filename=baton.jfr -cp jmh/target/benchmarks.jar
 * dev.baton.jmh.SemaphoreSteady BATON 20} (with {@code redis-server} on the PATH, or
 * {@code -Dbaton.bench.redis=redis://...}).
 */
public final class SemaphoreSteady {
    private SemaphoreSteady() {
    }

    public static void main(String[] args) throws Exception {
        Impl impl = Impl.valueOf(args.length > 0 ? args[0] : "BATON");
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        RedisForBenchmarks.Target redis = RedisForBenchmarks.get();
        redis.command("FLUSHALL");
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (Impl.Client client = impl.connect(redis.uri())) {
            Impl.Permits permits = client.semaphore("steady-sem");
            permits.trySetPermits(4);
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            AtomicLong pairs = new AtomicLong();
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                workers.add(pool.submit(() -> {
                    while (System.nanoTime() - end < 0) {
                        permits.acquire();
                        permits.release();
                        pairs.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(seconds + 60L, TimeUnit.SECONDS);
            }
            System.out.printf("%-9s semaphore, 4 permits x 8 threads for %d s in a JVM of its own: %.0f acquire+release/s%n",
                    impl, seconds, pairs.get() / (double) seconds);
        } finally {
            pool.shutdownNow();
        }
        System.exit(0);
    }
}
