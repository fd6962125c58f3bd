package dev.baton.jmh.report;


import dev.baton.jmh.Impl;
import dev.baton.jmh.RedisForBenchmarks;
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
 * {@code java -cp jmh/target/benchmarks.jar dev.baton.jmh.report.ScaleReport} ({@code --contention}: only
 * the contended scenarios, with the CPU they cost per acquisition; {@code --semaphore}: only the
 * semaphore's, with its commands by name).
 */
public final class ScaleReport {
    private static final int HELD_LOCKS = 10_000;
    private static final int PAIRS = 1_000;
    private static final int WAITERS = 1_000;
    private static final int CONTENDED_LOCKS = 100;

    private ScaleReport() {
    }

    /** What one implementation cost, counted by the server. */
    record Counts(Impl impl, Renewal renewal, Pair pair, PairCost pairCost, Waiters waiters, List<Contention> contention,
                  SemaphoreCounts semaphore, SemaphoreCounts semaphoreHeld, List<Heap> heap) {
    }

    /**
     * {@code clients} x {@code threads} on one lock of {@code kind}, each thread taking and
     * releasing it {@code perThread} times: acquisitions per second, p99 of one lock+unlock,
     * every Redis command per acquisition (scripts and the commands they run, pub/sub included),
     * and the most channel subscriptions seen at once, per client. Fairness between the clients:
     * {@code largestShare}, the largest fraction of the grants one client took while every client
     * still had acquisitions to make (the grants before the first client made its last one), and
     * {@code longestWaitMs}, the longest a single {@code tryLock} of any thread waited.
     */
    record Contention(String kind, int clients, int threads, double perSecond, double p99Ms, double commandsPerAcquisition,
                      double subscriptionsPerClient, int failed, double redisCpuMicros, double clientCpuMicros,
                      double largestShare, double longestWaitMs) {
    }

    /**
     * 8 threads of one client on a semaphore of 4 permits: acquire+release per second and commands
     * per pair, each permit released at once or held {@value #HOLD_MICROS} µs (a throttled call's shape).
     */
    record SemaphoreCounts(double perSecond, double commandsPerOp) {
    }

    /** {@code waiters} asynchronous waits parked on held locks: client heap and threads they cost. */
    record Heap(int waiters, int locks, double bytesPerWaiter, int threadsAdded, int failed) {
    }

    /** Redis commands per second spent keeping {@value #HELD_LOCKS} watchdog locks alive. */
    record Renewal(double scriptsPerSecond, double pexpirePerSecond) {
    }

    /**
     * An uncontended lock+unlock pair in the steady state ({@value #STEADY_PAIRS} pairs after as
     * many unmeasured, three rounds, the median round) against the floor measured the same way
     * between its rounds (two EVALSHA of {@code return 1} on a plain Lettuce connection): wall time
     * per pair, and the redis-server CPU each pair cost ({@code INFO cpu}: the whole process, its
     * network reads and writes included), and the CPU of this JVM per pair.
     */
    record PairCost(double wallMicros, double floorWallMicros, double redisMicros, double floorRedisMicros,
                    double clientMicros, double floorClientMicros) {
        double fractionOfFloor() {
            return floorWallMicros / wallMicros;
        }
    }

    private static final int STEADY_PAIRS = 20_000;

    /** Per uncontended lock+unlock pair: commands run, and keys left right after {@value #PAIRS} pairs. */
    record Pair(double scripts, double del, double set, long keysLeft, double commands) {
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
        boolean contentionOnly = java.util.Arrays.asList(args).contains("--contention");
        boolean semaphoreOnly = java.util.Arrays.asList(args).contains("--semaphore");
        boolean pairCostOnly = java.util.Arrays.asList(args).contains("--pair-cost");
        for (Impl impl : Impl.values()) {
            if (pairCostOnly) {
                pairCost(redis, impl);
            } else if (semaphoreOnly) {
                semaphoreCounts(redis, impl, 0); // warm-up
                semaphoreCounts(redis, impl, 0);
                semaphoreCounts(redis, impl, HOLD_MICROS);
            } else if (contentionOnly) {
                for (String kind : List.of("lock", "fair")) {
                    contention(redis, impl, kind, 4, 64, 20);
                    contention(redis, impl, kind, 2, 4, 250);
                }
            } else {
                measure(redis, impl);
            }
        }
        System.exit(0);
    }

    /** Measures every count for one implementation, printing each line as it is known. */
    static Counts measure(RedisForBenchmarks.Target redis, Impl impl) throws Exception {
        Renewal renewal = renewalCost(redis, impl);
        Pair pair = perPair(redis, impl);
        PairCost pairCost = pairCost(redis, impl);
        Waiters waiters = manyWaiters(redis, impl);
        List<Contention> contention = new ArrayList<>();
        for (String kind : List.of("lock", "fair")) {
            contention.add(contention(redis, impl, kind, 4, 64, 20));
            contention.add(contention(redis, impl, kind, 2, 4, 250)); // for its CPU per acquisition
        }
        semaphoreCounts(redis, impl, 0); // warm-up: a cold JVM made the first count's rate Redisson's
        SemaphoreCounts semaphore = semaphoreCounts(redis, impl, 0);
        SemaphoreCounts semaphoreHeld = semaphoreCounts(redis, impl, HOLD_MICROS);
        List<Heap> heap = new ArrayList<>();
        for (int n : List.of(100, 1_000, 10_000)) {
            heap.add(heapPerWaiter(redis, impl, n, Math.min(n, 1_000)));
        }
        return new Counts(impl, renewal, pair, pairCost, waiters, contention, semaphore, semaphoreHeld, heap);
    }

    private static Contention contention(RedisForBenchmarks.Target redis, Impl impl, String kind, int clientCount,
                                         int threadsPerClient, int perThread) throws Exception {
        contentionOnce(redis, impl, kind, clientCount, threadsPerClient, perThread, false); // warm-up: JIT, connections
        return contentionOnce(redis, impl, kind, clientCount, threadsPerClient, perThread, true);
    }

    private static Contention contentionOnce(RedisForBenchmarks.Target redis, Impl impl, String kind, int clientCount,
                                             int threadsPerClient, int perThread, boolean print) throws Exception {
        redis.command("FLUSHALL");
        List<Impl.Client> clients = new ArrayList<>();
        try {
            String name = "wide-" + kind;
            for (int c = 0; c < clientCount; c++) {
                Impl.Client client = impl.connect(redis.uri());
                clients.add(client);
                Lock warm = kind.equals("fair") ? client.fairLock(name) : client.lock(name);
                warm.lock();
                warm.unlock();
            }
            int threads = clientCount * threadsPerClient;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            long[][] took = new long[threads][perThread];
            long[] longestWait = new long[threads];
            // The client of every grant, in the order the lock was granted (written while held).
            int[] grantedTo = new int[threads * perThread];
            AtomicInteger grants = new AtomicInteger();
            AtomicInteger failed = new AtomicInteger();
            CountDownLatch ready = new CountDownLatch(threads);
            CountDownLatch go = new CountDownLatch(1);
            CountDownLatch done = new CountDownLatch(threads);
            for (int t = 0; t < threads; t++) {
                Impl.Client client = clients.get(t % clientCount);
                Lock lock = kind.equals("fair") ? client.fairLock(name) : client.lock(name);
                int me = t;
                int clientIndex = t % clientCount;
                pool.submit(() -> {
                    try {
                        ready.countDown();
                        go.await();
                        for (int i = 0; i < perThread; i++) {
                            long start = System.nanoTime();
                            if (lock.tryLock(60, TimeUnit.SECONDS)) {
                                longestWait[me] = Math.max(longestWait[me], System.nanoTime() - start);
                                grantedTo[grants.getAndIncrement()] = clientIndex;
                                lock.unlock();
                            } else {
                                failed.incrementAndGet();
                            }
                            took[me][i] = System.nanoTime() - start;
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                    return null;
                });
            }
            ready.await();
            redis.command("CONFIG", "RESETSTAT");
            double redisCpuBefore = redisCpuSeconds(redis);
            long clientCpuBefore = clientCpuNanos();
            long started = System.nanoTime();
            go.countDown();
            int mostSubscriptions = 0;
            while (!done.await(20, TimeUnit.MILLISECONDS)) {
                mostSubscriptions = Math.max(mostSubscriptions, subscriptions(redis));
                if (System.nanoTime() - started > TimeUnit.SECONDS.toNanos(240)) {
                    break;
                }
            }
            long elapsed = System.nanoTime() - started;
            double redisCpu = redisCpuSeconds(redis) - redisCpuBefore;
            long clientCpu = clientCpuNanos() - clientCpuBefore;
            boolean finished = done.getCount() == 0;
            pool.shutdownNow();
            Map<String, Long> calls = calls(redis);
            long commands = 0;
            for (Map.Entry<String, Long> e : calls.entrySet()) {
                if (!List.of("client", "config", "info").contains(e.getKey())) {
                    commands += e.getValue();
                }
            }
            long[] all = java.util.Arrays.stream(took).flatMapToLong(java.util.Arrays::stream).sorted().toArray();
            double p99 = all[(int) Math.min(all.length - 1, Math.ceil(all.length * 0.99) - 1)] / 1e6;
            int acquisitions = threads * perThread - failed.get();
            Contention result = new Contention(kind, clientCount, threadsPerClient, acquisitions / (elapsed / 1e9), p99,
                    commands / (double) Math.max(1, acquisitions), mostSubscriptions / (double) clientCount,
                    failed.get() + (finished ? 0 : 1_000_000), redisCpu * 1e6 / Math.max(1, acquisitions),
                    clientCpu / 1e3 / Math.max(1, acquisitions),
                    largestShare(grantedTo, Math.min(grants.get(), grantedTo.length), clientCount, threadsPerClient * perThread),
                    java.util.Arrays.stream(longestWait).max().orElse(0) / 1e6);
            if (!print) {
                return result;
            }
            System.out.printf("%-9s %s, %d clients x %d threads: %.0f acquisitions/s, p99 %.2f ms, %.2f commands per "
                            + "acquisition, at most %.1f subscriptions per client, %d failed%s%n", impl, kind, clientCount,
                    threadsPerClient, result.perSecond(), p99, result.commandsPerAcquisition(),
                    result.subscriptionsPerClient(), failed.get(), finished ? "" : ", NOT FINISHED within 240 s");
            System.out.printf("%-9s %s, %d clients x %d threads: CPU per acquisition: redis-server %.0f us, this JVM "
                            + "(all clients, the harness included) %.0f us; wall time per acquisition %.0f us on %d cores%n",
                    impl, kind, clientCount, threadsPerClient, result.redisCpuMicros(), result.clientCpuMicros(),
                    1e6 / result.perSecond(), Runtime.getRuntime().availableProcessors());
            System.out.printf("%-9s %s, %d clients x %d threads: largest share of one client while all still asked %.0f %% "
                            + "(even: %.0f %%), longest wait of one thread %.1f ms%n", impl, kind, clientCount,
                    threadsPerClient, result.largestShare() * 100, 100.0 / clientCount, result.longestWaitMs());
            return result;
        } finally {
            for (Impl.Client c : clients) {
                c.close();
            }
        }
    }

    /**
     * The largest fraction of the grants one client took among the first {@code granted} grants
     * (client index per grant, in grant order), counted until the first client made its last
     * acquisition ({@code perClient}): after that the others contend without it, so their grants
     * say nothing about fairness. Even sharing gives {@code 1 / clients}; a client that starves
     * the others gives close to 1.
     */
    static double largestShare(int[] grantedTo, int granted, int clients, int perClient) {
        int[] taken = new int[clients];
        int counted = 0;
        for (int i = 0; i < granted; i++) {
            counted++;
            if (++taken[grantedTo[i]] == perClient) {
                break;
            }
        }
        int most = java.util.Arrays.stream(taken).max().orElse(0);
        return counted == 0 ? 0 : most / (double) counted;
    }

    /** CPU the redis-server process has used, user and system ({@code INFO cpu}). */
    private static double redisCpuSeconds(RedisForBenchmarks.Target redis) {
        String info = (String) redis.command("INFO", "cpu");
        return Double.parseDouble(info.replaceAll("(?s).*\\bused_cpu_sys:([0-9.]+).*", "$1"))
                + Double.parseDouble(info.replaceAll("(?s).*\\bused_cpu_user:([0-9.]+).*", "$1"));
    }

    /** CPU this JVM has used, every thread. */
    private static long clientCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Channel subscriptions the server counts right now, over every connection. */
    private static int subscriptions(RedisForBenchmarks.Target redis) {
        int n = 0;
        for (String line : ((String) redis.command("CLIENT", "LIST")).split("\n")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile(" sub=(\\d+)").matcher(line);
            if (m.find()) {
                n += Integer.parseInt(m.group(1));
            }
        }
        return n;
    }

    /** How long the held semaphore scenario keeps each permit. */
    static final int HOLD_MICROS = 200;

    private static SemaphoreCounts semaphoreCounts(RedisForBenchmarks.Target redis, Impl impl, long holdMicros) throws Exception {
        redis.command("FLUSHALL");
        int threads = 8;
        int perThread = 2_500;
        try (Impl.Client client = impl.connect(redis.uri())) {
            Impl.Permits permits = client.semaphore("counted-sem");
            permits.trySetPermits(4);
            permits.acquire();
            permits.release();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch done = new CountDownLatch(threads);
            redis.command("CONFIG", "RESETSTAT");
            double redisCpuBefore = redisCpuSeconds(redis);
            long clientCpuBefore = clientCpuNanos();
            long started = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                pool.submit(() -> {
                    try {
                        for (int i = 0; i < perThread; i++) {
                            permits.acquire();
                            if (holdMicros > 0) {
                                java.util.concurrent.locks.LockSupport.parkNanos(holdMicros * 1_000);
                            }
                            permits.release();
                        }
                    } finally {
                        done.countDown();
                    }
                    return null;
                });
            }
            boolean finished = done.await(240, TimeUnit.SECONDS);
            long elapsed = System.nanoTime() - started;
            double redisCpu = redisCpuSeconds(redis) - redisCpuBefore;
            long clientCpu = clientCpuNanos() - clientCpuBefore;
            pool.shutdownNow();
            long commands = 0;
            for (Map.Entry<String, Long> e : calls(redis).entrySet()) {
                if (!List.of("client", "config", "info").contains(e.getKey())) {
                    commands += e.getValue();
                }
            }
            int ops = threads * perThread;
            StringBuilder breakdown = new StringBuilder();
            new java.util.TreeMap<>(calls(redis)).forEach((command, n) -> {
                if (!List.of("client", "config", "info").contains(command)) {
                    breakdown.append(String.format(" %s %.2f", command, n / (double) ops));
                }
            });
            String held = holdMicros > 0 ? ", each permit held " + holdMicros + " us" : "";
            System.out.printf("%-9s semaphore%s: commands per acquire+release by name:%s%n", impl, held, breakdown);
            SemaphoreCounts result = new SemaphoreCounts(ops / (elapsed / 1e9), commands / (double) ops);
            System.out.printf("%-9s semaphore, 4 permits x 8 threads%s: %.0f acquire+release/s, %.2f commands each%s%n",
                    impl, held, result.perSecond(), result.commandsPerOp(), finished ? "" : ", NOT FINISHED within 240 s");
            System.out.printf("%-9s semaphore%s: CPU per acquire+release: redis-server %.0f us, this JVM %.0f us; wall %.0f us%n",
                    impl, held, redisCpu * 1e6 / ops, clientCpu / 1e3 / ops, elapsed / 1e3 / ops);
            return result;
        }
    }

    private static Heap heapPerWaiter(RedisForBenchmarks.Target redis, Impl impl, int waiters, int locks) throws Exception {
        redis.command("FLUSHALL");
        try (Impl.Client holder = impl.connect(redis.uri()); Impl.Client waiting = impl.connect(redis.uri())) {
            for (int i = 0; i < locks; i++) {
                holder.lockAsync("parked-" + i, 1).get(30, TimeUnit.SECONDS);
            }
            waiting.lockAsync("parked-warm", 1).get(30, TimeUnit.SECONDS);
            waiting.unlockAsync("parked-warm", 1).get(30, TimeUnit.SECONDS);
            java.lang.management.ThreadMXBean threadBean = java.lang.management.ManagementFactory.getThreadMXBean();
            long heapBefore = usedHeapAfterGc();
            int threadsBefore = threadBean.getThreadCount();
            List<java.util.concurrent.CompletableFuture<Void>> parked = new ArrayList<>();
            for (int w = 0; w < waiters; w++) {
                String name = "parked-" + (w % locks);
                long owner = 1_000 + w;
                parked.add(waiting.lockAsync(name, owner).thenCompose(ok -> waiting.unlockAsync(name, owner)));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (subscribedLockChannels(redis, "parked-") < locks && System.nanoTime() < deadline) {
                Thread.sleep(20); // polling the server for the subscriptions it counts
            }
            Thread.sleep(1_000); // let every wait reach its parked state before the heap is measured
            long heapWith = usedHeapAfterGc();
            int threadsWith = threadBean.getThreadCount();
            for (int i = 0; i < locks; i++) {
                holder.unlockAsync("parked-" + i, 1).get(30, TimeUnit.SECONDS);
            }
            int failed = 0;
            String firstFailure = null;
            for (java.util.concurrent.CompletableFuture<Void> p : parked) {
                try {
                    p.get(Math.max(1, deadline + TimeUnit.SECONDS.toNanos(120) - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (Exception e) {
                    failed++;
                    if (firstFailure == null) {
                        Throwable cause = e.getCause() != null ? e.getCause() : e;
                        firstFailure = cause.getClass().getSimpleName() + ": " + cause.getMessage();
                    }
                }
            }
            if (firstFailure != null) {
                System.out.println(impl + " first failed wait: " + firstFailure);
            }
            Heap result = new Heap(waiters, locks, (heapWith - heapBefore) / (double) waiters, threadsWith - threadsBefore, failed);
            System.out.printf("%-9s %d parked async waiters on %d locks: %.0f heap bytes per waiter, %d threads added, "
                    + "%d failed%n", impl, waiters, locks, result.bytesPerWaiter(), result.threadsAdded(), failed);
            return result;
        }
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
            used = Math.min(used, rt.totalMemory() - rt.freeMemory());
        }
        return used;
    }

    private static int subscribedLockChannels(RedisForBenchmarks.Target redis, String prefix) {
        return ((List<?>) redis.command("PUBSUB", "CHANNELS", "redisson_lock__channel:{" + prefix + "*")).size();
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

    /** See {@link PairCost}. */
    static PairCost pairCost(RedisForBenchmarks.Target redis, Impl impl) throws Exception {
        redis.command("FLUSHALL");
        io.lettuce.core.RedisClient raw = io.lettuce.core.RedisClient.create(redis.uri());
        try (Impl.Client client = impl.connect(redis.uri());
             io.lettuce.core.api.StatefulRedisConnection<String, String> connection = raw.connect()) {
            io.lettuce.core.api.sync.RedisCommands<String, String> floor = connection.sync();
            String sha = floor.scriptLoad("return 1");
            Lock lock = client.lock("steady");
            Runnable pairs = () -> {
                for (int i = 0; i < STEADY_PAIRS; i++) {
                    lock.lock();
                    lock.unlock();
                }
            };
            Runnable floorPairs = () -> {
                for (int i = 0; i < STEADY_PAIRS; i++) {
                    floor.evalsha(sha, io.lettuce.core.ScriptOutputType.INTEGER);
                    floor.evalsha(sha, io.lettuce.core.ScriptOutputType.INTEGER);
                }
            };
            pairs.run(); // unmeasured: JIT, connections, scripts loaded
            floorPairs.run();
            List<double[]> rounds = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                double[] lockCost = roundCost(redis, pairs);
                double[] floorCost = roundCost(redis, floorPairs);
                rounds.add(new double[] {lockCost[0], floorCost[0], lockCost[1], floorCost[1], lockCost[2], floorCost[2]});
            }
            rounds.sort(java.util.Comparator.comparingDouble(r -> r[1] / r[0]));
            double[] median = rounds.get(1);
            PairCost cost = new PairCost(median[0], median[1], median[2], median[3], median[4], median[5]);
            System.out.printf("%-9s uncontended pair, steady state (median of 3 rounds of %,d): %.1f us wall, floor %.1f us "
                            + "(%.0f %% of the floor); CPU per pair: redis-server %.1f us (floor's %.1f), this JVM %.1f us "
                            + "(floor's %.1f)%n", impl, STEADY_PAIRS,
                    cost.wallMicros(), cost.floorWallMicros(), cost.fractionOfFloor() * 100, cost.redisMicros(),
                    cost.floorRedisMicros(), cost.clientMicros(), cost.floorClientMicros());
            return cost;
        } finally {
            raw.shutdown();
        }
    }

    /** Runs {@code pairs}: wall time, redis-server CPU (user and system, INFO cpu) and this JVM's CPU per pair, in µs. */
    private static double[] roundCost(RedisForBenchmarks.Target redis, Runnable pairs) {
        double cpuBefore = redisCpuSeconds(redis);
        long clientBefore = clientCpuNanos();
        long start = System.nanoTime();
        pairs.run();
        long wall = System.nanoTime() - start;
        long client = clientCpuNanos() - clientBefore;
        double cpu = redisCpuSeconds(redis) - cpuBefore;
        return new double[] {wall / 1e3 / STEADY_PAIRS, cpu * 1e6 / STEADY_PAIRS, client / 1e3 / STEADY_PAIRS};
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
            long commands = 0;
            for (Map.Entry<String, Long> e : calls.entrySet()) {
                if (!List.of("client", "config", "info", "dbsize").contains(e.getKey())) {
                    commands += e.getValue();
                }
            }
            return new Pair(scripts / (double) PAIRS, calls.getOrDefault("del", 0L) / (double) PAIRS,
                    calls.getOrDefault("set", 0L) / (double) PAIRS, keysRightAfter, commands / (double) PAIRS);
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
