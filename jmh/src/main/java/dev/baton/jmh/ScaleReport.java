package dev.baton.jmh;

import dev.baton.testkit.RedisServer;

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

    public static void main(String[] args) throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            System.out.println("redis-server " + redis.binary().version() + " on " + redis.uri());
            for (Impl impl : Impl.values()) {
                renewalCost(redis, impl);
                perPair(redis, impl);
                manyWaiters(redis, impl);
            }
        }
        System.exit(0);
    }

    private static void renewalCost(RedisServer redis, Impl impl) throws Exception {
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
            System.out.printf("%-9s renewal of %d watchdog locks: %.1f script calls/s, %.1f PEXPIRE/s%n", impl, HELD_LOCKS,
                    scripts / (double) seconds, calls.getOrDefault("pexpire", 0L) / (double) seconds);
            for (Lock lock : held) {
                lock.unlock();
            }
        }
    }

    private static void perPair(RedisServer redis, Impl impl) {
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
        }
    }

    private static void manyWaiters(RedisServer redis, Impl impl) throws Exception {
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
        }
    }

    private static int subscribedChannels(RedisServer redis) {
        return ((List<?>) redis.command("PUBSUB", "CHANNELS", "redisson_lock__channel:{hot-*")).size();
    }

    private static int pubSubConnections(RedisServer redis) {
        int n = 0;
        for (String line : ((String) redis.command("CLIENT", "LIST")).split("\n")) {
            if (line.matches(".* sub=[1-9].*")) {
                n++;
            }
        }
        return n;
    }

    private static Map<String, Long> calls(RedisServer redis) {
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
