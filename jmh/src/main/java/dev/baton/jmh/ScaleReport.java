package dev.baton.jmh;


import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;

/**
 * Counts, not timings, for Baton and Redisson on one redis-server in one run: Redis commands
 * per second spent renewing 10,000 held watchdog locks; commands and keys per lock+unlock pair;
 * pub/sub connections and failures with 1,000 threads waiting on 100 locks. Run with
 * {@code java -cp jmh/target/benchmarks.jar dev.baton.jmh.ScaleReport}.
 */
public final class ScaleReport {
    private static final int HELD_LOCKS = 10_000;
    private static final int PAIRS = 1_000;
    private static final int WAITERS = 1_000;
    private static final int CONTENDED_LOCKS = 100;

    private ScaleReport() {
    }

    /** What one implementation cost, counted by the server. */
    record Counts(Impl impl, Renewal renewal, Pair pair, Waiters waiters) {
    }

    /** Redis commands per second spent keeping {@value #HELD_LOCKS} watchdog locks alive. */
    record Renewal(double scriptsPerSecond, double pexpirePerSecond) {
    }

    /** Per uncontended lock+unlock pair: commands run, and keys left right after {@value #PAIRS} pairs. */
    record Pair(double scripts, double del, double set, long keysLeft) {
    }

    /** {@value #WAITERS} threads waiting on {@value #CONTENDED_LOCKS} locks of one client. */
    record Waiters(int channels, int pubSubConnections, int acquired, int failed, boolean finished) {
        /** Waits that failed, timed out or had not finished when the report gave up on them. */
        int notAcquired() {
            return WAITERS - acquired;
        }
    }

    public static void main(String[] args) throws Exception {
        RedisForBenchmarks.Target redis = RedisForBenchmarks.get();
        System.out.println("redis-server " + redis.command("INFO", "server").toString()
                .replaceAll("(?s).*redis_version:([^\\r\\n]*).*", "$1") + " on " + redis.uri());
        for (Impl impl : Impl.values()) {
            measure(redis, impl);
        }
        System.exit(0);
    }

    /** Measures every count for one implementation, printing each line as it is known. */
    static Counts measure(RedisForBenchmarks.Target redis, Impl impl) throws Exception {
        return new Counts(impl, renewalCost(redis, impl), perPair(redis, impl), manyWaiters(redis, impl));
    }

    private static Renewal renewalCost(RedisForBenchmarks.Target redis, Impl impl) throws Exception {
        redis.command("FLUSHALL");
        try (Impl.Client client = impl.connect(redis.uri())) {
            List<Lock> held = new ArrayList<>();
            for (int i = 0; i < HELD_LOCKS; i++) {
                Lock lock = client.lock("held-" + i);
                lock.lock();
                held.add(lock);
            }
            redis.command("CONFIG", "RESETSTAT");
            long seconds = 21; // two renewal periods of the 30 s watchdog
            Thread.sleep(TimeUnit.SECONDS.toMillis(seconds)); // measuring a rate over wall time
            Map<String, Long> calls = calls(redis);
            long scripts = calls.getOrDefault("evalsha", 0L) + calls.getOrDefault("eval", 0L);
            double scriptRate = scripts / (double) seconds;
            double pexpireRate = calls.getOrDefault("pexpire", 0L) / (double) seconds;
            System.out.printf("%-9s renewal of %d watchdog locks: %.1f script calls/s, %.1f PEXPIRE/s%n", impl, HELD_LOCKS,
                    scriptRate, pexpireRate);
            for (Lock lock : held) {
                lock.unlock();
            }
            return new Renewal(scriptRate, pexpireRate);
        }
    }

    private static Pair perPair(RedisForBenchmarks.Target redis, Impl impl) {
        redis.command("FLUSHALL");
        try (Impl.Client client = impl.connect(redis.uri())) {
            Lock lock = client.lock("pair");
            lock.lock();
            lock.unlock();
            redis.command("CONFIG", "RESETSTAT");
            for (int i = 0; i < PAIRS; i++) {
                lock.lock();
                lock.unlock();
            }
            long keysRightAfter = (Long) redis.command("DBSIZE");
            Map<String, Long> calls = calls(redis);
            long scripts = calls.getOrDefault("evalsha", 0L) + calls.getOrDefault("eval", 0L);
            System.out.printf("%-9s per lock+unlock pair: %.2f script calls, %.2f DEL (inside scripts or not), "
                    + "%.2f SET; keys in Redis right after %d pairs: %d%n", impl, scripts / (double) PAIRS,
                    calls.getOrDefault("del", 0L) / (double) PAIRS, calls.getOrDefault("set", 0L) / (double) PAIRS,
                    PAIRS, keysRightAfter);
            return new Pair(scripts / (double) PAIRS, calls.getOrDefault("del", 0L) / (double) PAIRS,
                    calls.getOrDefault("set", 0L) / (double) PAIRS, keysRightAfter);
        }
    }

    private static Waiters manyWaiters(RedisForBenchmarks.Target redis, Impl impl) throws Exception {
        redis.command("FLUSHALL");
        try (Impl.Client holder = impl.connect(redis.uri()); Impl.Client waiting = impl.connect(redis.uri())) {
            List<Lock> held = new ArrayList<>();
            for (int i = 0; i < CONTENDED_LOCKS; i++) {
                Lock lock = holder.lock("hot-" + i);
                lock.lock();
                held.add(lock);
            }
            ExecutorService threads = Executors.newFixedThreadPool(WAITERS);
            AtomicInteger got = new AtomicInteger();
            AtomicInteger failed = new AtomicInteger();
            CountDownLatch done = new CountDownLatch(WAITERS);
            for (int t = 0; t < WAITERS; t++) {
                Lock lock = waiting.lock("hot-" + (t % CONTENDED_LOCKS));
                threads.submit(() -> {
                    try {
                        if (lock.tryLock(60, TimeUnit.SECONDS)) {
                            got.incrementAndGet();
                            lock.unlock();
                        } else {
                            failed.incrementAndGet();
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                    return null;
                });
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (subscribedChannels(redis) < CONTENDED_LOCKS && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            int channels = subscribedChannels(redis);
            int pubSubConnections = pubSubConnections(redis);
            for (Lock lock : held) {
                lock.unlock();
            }
            boolean finished = done.await(90, TimeUnit.SECONDS);
            threads.shutdownNow();
            System.out.printf("%-9s %d threads waiting on %d locks: %d channels on %d pub/sub connection(s); "
                    + "%d acquired, %d failed%s%n", impl, WAITERS, CONTENDED_LOCKS, channels, pubSubConnections,
                    got.get(), failed.get(), finished ? "" : ", NOT FINISHED within 90 s");
            return new Waiters(channels, pubSubConnections, got.get(), failed.get(), finished);
        }
    }

    private static int subscribedChannels(RedisForBenchmarks.Target redis) {
        return ((List<?>) redis.command("PUBSUB", "CHANNELS", "redisson_lock__channel:{hot-*")).size();
    }

    private static int pubSubConnections(RedisForBenchmarks.Target redis) {
        int n = 0;
        for (String line : ((String) redis.command("CLIENT", "LIST")).split("\n")) {
            if (line.matches(".* sub=[1-9].*")) {
                n++;
            }
        }
        return n;
    }

    private static Map<String, Long> calls(RedisForBenchmarks.Target redis) {
        Map<String, Long> calls = new HashMap<>();
        for (String line : ((String) redis.command("INFO", "commandstats")).split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                calls.put(line.substring(8, line.indexOf(':')).split("\\|")[0],
                        Long.parseLong(line.replaceAll("^[^:]*:calls=(\\d+),.*", "$1")));
            }
        }
        return calls;
    }
}
