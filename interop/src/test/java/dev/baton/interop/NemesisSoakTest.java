package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonFencedLock;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonSemaphore;
import dev.baton.DoNotRetryException;
import dev.baton.LeaseLostException;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisSentinelGroup;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The nemesis soak: every kind at once (reentrant, fair, write and read, fenced, both
 * semaphores, latch), Baton and Redisson clients mixed on the wire-compatible kinds, against a
 * Sentinel group (master with AOF {@code appendfsync always} behind a fault proxy, one replica,
 * three Sentinels) while a nemesis injects faults on a random schedule drawn from a seed.
 *
 * <p>Each run has two phases. In the first, Redis keeps its data: SIGSTOP, kill -9 and restart
 * from the AOF, CLIENT KILL of normal and of pub/sub connections, proxy latency, a blackhole
 * (then the connections cut, as a dead network ends) and a connection reset. At its end the
 * workers stop and the run asserts: no two holders of an exclusive lock at once, never more
 * holders than permits, rising fencing tokens, permits and the latch's count exact. The second
 * phase, on fresh names, adds faults that lose data: kill -9 and restart without the AOF, and one
 * Sentinel failover (the master SIGKILLed). There every overlap of two holders must be explained
 * by a lost lease: one of the two held across the data loss and, if it was a Baton holder, Baton
 * reported the loss (Redisson reports nothing). In both phases every Baton call ends within its
 * bound (command timeout + 150 ms, plus its wait budget, with the margin of the bounds rule), and
 * at the end no Baton thread and no client connection is left.
 *
 * <p>Profiles: by default two runs of {@value #SHORT_SECONDS} s, one with a fixed seed and one
 * with a random seed printed for replay ({@code -Dbaton.soak.seed=...} replays one seed);
 * {@code -Dbaton.soak.minutes=30} runs one long run of that many minutes.
 */
class NemesisSoakTest {
    private static final int SHORT_SECONDS = 40;
    private static final long FIXED_SEED = 20261124L;
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final Duration WATCHDOG = Duration.ofSeconds(3);
    private static final Duration WAIT = Duration.ofMillis(500);
    private static final int PERMITS = 3;
    private static final int X_PERMITS = 2;
    private static final long LATCH_COUNT = 1_000_000;
    /** The Sentinels' down-after: far above any fault but FAILOVER, so only that one fails over. */
    private static final Duration DOWN_AFTER = Duration.ofSeconds(4);

    enum Fault { PAUSE, KILL_RESTART_AOF, CLIENT_KILL_NORMAL, CLIENT_KILL_PUBSUB, LATENCY, BLACKHOLE, RESET, KILL_RESTART_EMPTY, FAILOVER }

    private static final List<Fault> KEEPS_DATA = List.of(Fault.PAUSE, Fault.KILL_RESTART_AOF, Fault.CLIENT_KILL_NORMAL,
            Fault.CLIENT_KILL_PUBSUB, Fault.LATENCY, Fault.BLACKHOLE, Fault.RESET);

    /** What one run may take beyond its planned length: starting the group, settling, checking, closing. */
    private static final Duration RUN_OVERHEAD = Duration.ofSeconds(60);

    // The suite's default ceiling (120 s a test) fits neither two short runs with their overhead
    // nor a long run: the test sets its own ceiling from the runs it plans.
    @Test
    @Timeout(value = 3, unit = TimeUnit.HOURS)
    void everyKindUnderRandomFaults() {
        long minutes = Long.getLong("baton.soak.minutes", 0);
        String replay = System.getProperty("baton.soak.seed");
        Map<Long, Duration> runs = new LinkedHashMap<>();
        if (replay != null) {
            runs.put(Long.parseLong(replay), minutes > 0 ? Duration.ofMinutes(minutes) : Duration.ofSeconds(SHORT_SECONDS));
        } else if (minutes > 0) {
            runs.put(new Random().nextLong(), Duration.ofMinutes(minutes));
        } else {
            runs.put(FIXED_SEED, Duration.ofSeconds(SHORT_SECONDS));
            String server = System.getProperty("baton.redis.binary", "");
            if (server.isBlank()) {
                runs.put(new Random().nextLong(), Duration.ofSeconds(SHORT_SECONDS));
            } else {
                // CI's time budget: the other server lanes run the fixed seed only.
                System.out.println("[soak] the fixed seed only in this lane (-Dbaton.redis.binary=" + server
                        + "); the lane on the Redis from PATH also runs a random seed");
            }
        }
        Duration ceiling = Duration.ZERO;
        for (Duration length : runs.values()) {
            ceiling = ceiling.plus(length).plus(RUN_OVERHEAD);
        }
        assertTimeoutPreemptively(ceiling, () -> {
            for (Map.Entry<Long, Duration> run : runs.entrySet()) {
                run(run.getKey(), run.getValue());
            }
        }, "the soak overran its planned runs " + runs + " by more than " + RUN_OVERHEAD + " each");
    }

    /**
     * One critical section as observed by its holder: {@code owner} is Baton's owner id
     * ({@code <clientId>:<thread>}) or "redisson"; {@code lost}: the unlock reported the lease lost.
     */
    record Section(String resource, boolean write, long acquired, long start, long end, boolean baton, boolean lost,
                   long token, String owner) {
    }

    /** One data loss: it may begin at {@code from} (taken before the fault) and has ended by {@code to}. */
    record Loss(long from, long to) {
    }

    /** Everything one phase records. */
    static final class Record {
        final ConcurrentLinkedQueue<Section> sections = new ConcurrentLinkedQueue<>();
        final Map<String, AtomicInteger> inside = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> mostInside = new ConcurrentHashMap<>();
        final AtomicLong operations = new AtomicLong();
        final AtomicLong unavailable = new AtomicLong();
        final AtomicLong redissonErrors = new AtomicLong();
        final Map<String, AtomicInteger> redissonErrorKinds = new ConcurrentHashMap<>();

        void redissonError(RuntimeException e) {
            redissonErrors.incrementAndGet();
            redissonErrorKinds.computeIfAbsent(e.getClass().getSimpleName(), k -> new AtomicInteger()).incrementAndGet();
        }
        final AtomicLong redissonUnknown = new AtomicLong();
        final AtomicLong batonCountDowns = new AtomicLong();
        final AtomicInteger unplannedFailovers = new AtomicInteger();
        final List<String> overBound = new CopyOnWriteArrayList<>();
        final List<String> errors = new CopyOnWriteArrayList<>();
        final List<Long> dataLost = new CopyOnWriteArrayList<>();
        /** Each data loss as its two marks. */
        final List<Loss> losses = new CopyOnWriteArrayList<>();
        /** Grants per resource (sections of the locks, permits of the semaphores). */
        final Map<String, AtomicInteger> grants = new ConcurrentHashMap<>();

        void granted(String resource) {
            grants.computeIfAbsent(resource, k -> new AtomicInteger()).incrementAndGet();
        }

        /** Marks a data loss that may begin now; returns the mark for {@link #lossEnded}. */
        long lossBegins() {
            lossesInProgress.incrementAndGet();
            long from = System.nanoTime();
            dataLost.add(from);
            return from;
        }

        void lossEnded(long from) {
            long to = System.nanoTime();
            dataLost.add(to);
            losses.add(new Loss(from, to));
            lossesInProgress.decrementAndGet();
        }
        /** Losses whose first mark is set and whose second is not yet: the data may be going now. */
        final AtomicInteger lossesInProgress = new AtomicInteger();
        final Map<Fault, AtomicInteger> faults = new EnumMap<>(Fault.class);
        final List<String> faultLog = new CopyOnWriteArrayList<>();

        Record() {
            for (Fault f : Fault.values()) {
                faults.put(f, new AtomicInteger());
            }
        }

        final long born = System.nanoTime();

        /** A nano time as milliseconds since the phase began. */
        long ms(long nanos) {
            return (nanos - born) / 1_000_000;
        }

        void enter(String semaphore) {
            granted(semaphore);
            int now = inside.computeIfAbsent(semaphore, k -> new AtomicInteger()).incrementAndGet();
            mostInside.computeIfAbsent(semaphore, k -> new AtomicInteger()).accumulateAndGet(now, Math::max);
        }

        void leave(String semaphore) {
            inside.get(semaphore).decrementAndGet();
        }

        /** Checks a Baton call took no longer than its bound. */
        void bounded(String what, long startedNanos, Duration bound) {
            long took = System.nanoTime() - startedNanos;
            if (took > bound.toNanos()) {
                overBound.add(what + " took " + took / 1_000_000 + " ms, bound " + bound.toMillis() + " ms");
            }
        }
    }

    private void run(long seed, Duration length) throws Exception {
        System.out.println("[soak] seed " + seed + " (replay: -Dbaton.soak.seed=" + seed + "), " + length.toSeconds() + " s");
        Set<String> threadsBefore = batonThreads();
        try (RedisSentinelGroup group = RedisSentinelGroup.startBehindProxy(1, 3, DOWN_AFTER,
                "appendonly yes", "appendfsync always")) {
            Random random = new Random(seed);
            Record kept = new Record();
            Record lossy = new Record();
            Duration first = length.multipliedBy(6).dividedBy(10);
            Duration second = length.minus(first);
            Map<String, List<Long>> lostAt = new ConcurrentHashMap<>();
            BatonOptions.Builder options = BatonOptions.builder().redisUri(group.sentinelUri()).commandTimeout(TIMEOUT)
                    .watchdogTimeout(WATCHDOG).leaseLostListener((name, owner, reason) -> lostAt.computeIfAbsent(name + "|" + owner,
                            k -> new CopyOnWriteArrayList<>()).add(System.nanoTime()));
            Config config = new Config();
            config.setLockWatchdogTimeout(WATCHDOG.toMillis());
            config.useSentinelServers().setMasterName(group.masterName()).setReadMode(ReadMode.MASTER)
                    .setCheckSentinelsList(false).setTimeout((int) TIMEOUT.toMillis()).setRetryAttempts(0)
                    .addSentinelAddress(group.sentinels().stream().map(s -> "redis://" + s.host() + ":" + s.port())
                            .toArray(String[]::new));
            Baton b1 = Baton.create(options.build());
            Baton b2 = Baton.create(options.build());
            RedissonClient r = Redisson.create(config);
            try {
                phase("keeps-data", "k", group, random, first, KEEPS_DATA, kept, b1, b2, r, lostAt, false);
                checkKept(kept, b1, r, lostAt);
                List<Fault> all = new ArrayList<>(KEEPS_DATA);
                all.add(Fault.KILL_RESTART_EMPTY);
                phase("loses-data", "l", group, random, second, all, lossy, b1, b2, r, lostAt, true);
                checkLossy(lossy);
            } finally {
                b1.close();
                b2.close();
                r.shutdown();
            }
            Await.until(Duration.ofSeconds(10), () -> "no Baton thread left, found " + newThreads(threadsBefore),
                    () -> newThreads(threadsBefore).isEmpty());
            Await.until(Duration.ofSeconds(10), () -> "no client connection left on the master; left: "
                    + String.join(" | ", clientLinesLeft(group)), () -> clientLinesLeft(group).isEmpty());
            System.out.println("[soak] no Baton thread and no client connection left");
        }
    }

    private void phase(String label, String prefix, RedisSentinelGroup group, Random random, Duration length,
                       List<Fault> faults, Record rec, Baton b1, Baton b2, RedissonClient r, Map<String, List<Long>> lostAt,
                       boolean failover) throws Exception {
        String lock = prefix + "-lock";
        String fair = prefix + "-fair";
        String rw = prefix + "-rw";
        String fenced = prefix + "-fenced";
        String sem = prefix + "-sem";
        String xsem = prefix + "-xsem";
        String latch = prefix + "-latch";
        b1.semaphore(sem).trySetPermits(PERMITS);
        b1.permitExpirableSemaphore(xsem).trySetPermits(X_PERMITS);
        b1.countDownLatch(latch).trySetCount(LATCH_COUNT);

        AtomicBoolean stop = new AtomicBoolean();
        List<Runnable> steps = new ArrayList<>();
        for (Baton b : List.of(b1, b2)) {
            String owner = b.clientId();
            steps.add(() -> batonExclusive(rec, lock, true, b.lock(lock), owner, ""));
            steps.add(() -> batonExclusive(rec, fair, true, b.fairLock(fair), owner, ""));
            steps.add(() -> batonExclusive(rec, rw, true, b.readWriteLock(rw).writeLock(), owner, ":write"));
            steps.add(() -> batonExclusive(rec, rw, false, b.readWriteLock(rw).readLock(), owner, ""));
            steps.add(() -> batonFenced(rec, fenced, b.fencedLock(fenced), owner));
            // Two workers per client and Redisson's: five on three permits, so "never more than the
            // permits" can fail, and reaching them does not wait on all of three workers at once.
            steps.add(() -> batonSemaphore(rec, sem, b.semaphore(sem)));
            steps.add(() -> batonSemaphore(rec, sem, b.semaphore(sem)));
            steps.add(() -> batonExpirable(rec, xsem, b.permitExpirableSemaphore(xsem)));
        }
        steps.add(() -> batonCountDown(rec, b1.countDownLatch(latch)));
        steps.add(() -> redissonExclusive(rec, lock, true, r.getLock(lock)));
        steps.add(() -> redissonExclusive(rec, rw, true, r.getReadWriteLock(rw).writeLock()));
        steps.add(() -> redissonExclusive(rec, rw, false, r.getReadWriteLock(rw).readLock()));
        steps.add(() -> redissonSemaphore(rec, sem, r.getSemaphore(sem)));
        steps.add(() -> redissonExpirable(rec, xsem, r.getPermitExpirableSemaphore(xsem)));
        steps.add(() -> redissonAwait(rec, r.getCountDownLatch(latch)));

        ExecutorService pool = Executors.newFixedThreadPool(steps.size());
        List<Future<?>> workers = new ArrayList<>();
        for (Runnable step : steps) {
            workers.add(pool.submit(() -> {
                while (!stop.get()) {
                    try {
                        step.run();
                    } catch (dev.baton.SynchronizerDeletedException e) {
                        // A waiter is told its synchronizer vanished: right only if Redis just lost its data.
                        long now = System.nanoTime();
                        if (rec.dataLost.stream().noneMatch(at -> at < now && now - at < TimeUnit.SECONDS.toNanos(5))) {
                            rec.errors.add(e + " at " + rec.ms(now) + " ms, data lost at "
                                    + rec.dataLost.stream().map(rec::ms).toList());
                        }
                    } catch (RuntimeException e) {
                        rec.errors.add(e.toString());
                    }
                }
            }));
        }
        long end = System.nanoTime() + length.toNanos();
        long failoverAt = failover ? System.nanoTime() + length.toNanos() * 3 / 4 : Long.MAX_VALUE;
        boolean failedOver = false;
        try {
            while (System.nanoTime() < end) {
                Thread.sleep(300 + random.nextInt(900));
                if (!failedOver && System.nanoTime() >= failoverAt) {
                    failedOver = true;
                    rec.faults.get(Fault.FAILOVER).incrementAndGet();
                    long from = rec.lossBegins();
                    group.crashMaster();
                    group.awaitPromotion(Duration.ofSeconds(30));
                    rec.lossEnded(from); // the loss happened somewhere in between
                    continue;
                }
                Fault fault = faults.get(random.nextInt(faults.size()));
                if (failedOver && !List.of(Fault.PAUSE, Fault.CLIENT_KILL_NORMAL, Fault.CLIENT_KILL_PUBSUB,
                        Fault.KILL_RESTART_EMPTY).contains(fault)) {
                    continue; // the proxy and the AOF belonged to the old master
                }
                int before = group.currentMaster().port();
                long injected = System.nanoTime();
                inject(fault, group, random, rec, failedOver, b1, sem, xsem, latch);
                if (group.currentMaster().port() != before) {
                    // A fault outlasted the Sentinels' down-after on a loaded machine (a restart
                    // slow to answer): Redis failed over. The loss is judged as one (its window
                    // from the fault's start), and printed with the fault that caused it.
                    rec.unplannedFailovers.incrementAndGet();
                    rec.dataLost.add(System.nanoTime());
                    rec.losses.add(new Loss(injected, System.nanoTime()));
                    System.out.println("[soak] " + label + ": the Sentinels failed over after " + fault + " at "
                            + rec.ms(injected) + " ms (not planned; judged as a data loss from the fault's start)");
                }
            }
        } finally {
            stop.set(true);
            for (Future<?> w : workers) {
                w.get(60, TimeUnit.SECONDS);
            }
            pool.shutdownNow();
            TcpProxy proxy = group.masterProxy();
            proxy.setLatency(Duration.ZERO);
            proxy.setBlackhole(false);
        }
        System.out.println("[soak] " + label + ": " + rec.operations.get() + " operations, faults " + rec.faults.entrySet().stream()
                .filter(e -> e.getValue().get() > 0).map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" "))
                + ", " + rec.unavailable.get() + " Baton calls failed as unavailable (within their bounds), "
                + rec.redissonErrors.get() + " Redisson errors, " + rec.sections.size() + " critical sections");
        System.out.println("[soak]   Redisson's errors by type: " + new TreeMap<>(rec.redissonErrorKinds));
        // An unplanned failover is judged as a data loss above; one that every fault caused
        // would mean the faults no longer fit inside the down-after, and the phase tests nothing planned.
        assertTrue(rec.unplannedFailovers.get() <= 1, label + ": " + rec.unplannedFailovers.get() + " faults other than FAILOVER"
                + " made the Sentinels fail over (faults: " + rec.faultLog + ")");
        assertEquals(List.of(), rec.errors, label + ": unexpected exceptions; the faults: " + rec.faultLog);
        assertEquals(List.of(), rec.overBound, label + ": Baton calls over their bound");
        assertTrue(rec.operations.get() > 100, label + ": the workers got work done");
    }

    private static RedisServer master(RedisSentinelGroup group) {
        int port = group.currentMaster().port();
        if (port == group.masterProxy().port()) {
            return group.master();
        }
        return group.replicas().stream().filter(s -> s.port() == port).findFirst().orElseThrow();
    }

    private static void inject(Fault fault, RedisSentinelGroup group, Random random, Record rec, boolean failedOver,
                               Baton b1, String sem, String xsem, String latch) throws InterruptedException {
        RedisServer master = master(group);
        TcpProxy proxy = group.masterProxy();
        rec.faults.get(fault).incrementAndGet();
        rec.faultLog.add(rec.ms(System.nanoTime()) + " ms " + fault);
        // Every fault ends well inside the Sentinels' down-after: only FAILOVER fails over.
        switch (fault) {
            case PAUSE -> {
                master.pause();
                Thread.sleep(150 + random.nextInt(450));
                master.resume();
            }
            case KILL_RESTART_AOF -> master.restart();
            case KILL_RESTART_EMPTY -> {
                // The data is lost somewhere between these two times: a call started just before
                // the kill can still be answered by the dying server, and find its work gone after.
                long from = rec.lossBegins();
                master.restartWithoutData();
                rec.lossEnded(from);
                // The names start again from nothing: give them back their permits and count
                // (Redis may not serve writes yet: a restarted server loading, or a replica).
                untilServed(() -> b1.semaphore(sem).trySetPermits(PERMITS));
                untilServed(() -> b1.permitExpirableSemaphore(xsem).trySetPermits(X_PERMITS));
                untilServed(() -> b1.countDownLatch(latch).trySetCount(LATCH_COUNT));
            }
            case CLIENT_KILL_NORMAL -> clientKill(master, "normal");
            case CLIENT_KILL_PUBSUB -> clientKill(master, "pubsub");
            case LATENCY -> {
                proxy.setLatency(Duration.ofMillis(20 + random.nextInt(180)));
                Thread.sleep(500 + random.nextInt(1000));
                proxy.setLatency(Duration.ZERO);
            }
            case BLACKHOLE -> {
                proxy.setBlackhole(true);
                Thread.sleep(150 + random.nextInt(450));
                proxy.cutAll(); // a partition ends the connections it held; the proxy drops bytes, TCP never does
                proxy.setBlackhole(false);
            }
            case RESET -> proxy.resetAll();
            default -> throw new IllegalStateException(fault.toString());
        }
    }

    /** CLIENT KILL of one type, sparing the Sentinels' connections. */
    private static void clientKill(RedisServer master, String type) {
        String list = (String) master.command("CLIENT", "LIST", "TYPE", type);
        for (String line : list.split("\n")) {
            if (line.isBlank() || line.contains("name=sentinel-") || line.contains("cmd=client")) {
                continue;
            }
            String id = line.replaceAll(".*\\bid=(\\d+).*", "$1").trim();
            try {
                master.command("CLIENT", "KILL", "ID", id);
            } catch (RuntimeException e) {
                // gone already
            }
        }
    }

    // ---- the workers' steps -------------------------------------------------------------

    /** Runs a setup call until Redis serves it: at most 20 s, every failure a documented RedisUnavailableException. */
    private static void untilServed(Runnable call) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            try {
                call.run();
                return;
            } catch (RedisUnavailableException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100); // a pause between tries of a setup call, not synchronization
            }
        }
    }

    private static void hold() {
        try {
            Thread.sleep(1 + (System.nanoTime() & 3));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A Baton exclusive (or read) section. {@code field} is how the lock spells the owner in Redis
     * and in lease-loss reports ("" or ":write" after {@code <clientId>:<thread>}).
     */
    private static void batonExclusive(Record rec, String name, boolean write, BatonLock lock, String client, String field) {
        long t0 = System.nanoTime();
        boolean got;
        try {
            got = lock.tryLock(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RedisUnavailableException e) {
            rec.unavailable.incrementAndGet();
            got = false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        rec.bounded(name + " tryLock", t0, Bounds.failure(TIMEOUT, WAIT));
        rec.operations.incrementAndGet();
        if (!got) {
            return;
        }
        long acquired = System.nanoTime();
        long start = System.nanoTime();
        hold();
        long end = System.nanoTime();
        boolean lost = unlockUntilDone(rec, name, lock::unlock);
        String owner = client + ":" + Thread.currentThread().getId() + field;
        rec.granted(name);
        rec.sections.add(new Section(name, write, acquired, start, end, true, lost, 0, owner));
    }

    /** Unlocks, calling again while Redis does not confirm (the hold is kept); true if the lease was lost. */
    private static boolean unlockUntilDone(Record rec, String name, Runnable unlock) {
        return untilConfirmed(rec, name + " unlock", unlock);
    }

    /**
     * Calls {@code release} again while Redis does not confirm it, as the javadoc of every release
     * that must be completed says (an unlock, a permit's release by id); each call within its
     * bound. True if it reported the lease lost.
     */
    private static boolean untilConfirmed(Record rec, String what, Runnable release) {
        for (int i = 0; i < 100; i++) {
            long u0 = System.nanoTime();
            try {
                release.run();
                rec.bounded(what, u0, Bounds.failure(TIMEOUT));
                return false;
            } catch (LeaseLostException e) {
                return true;
            } catch (RedisUnavailableException e) {
                rec.unavailable.incrementAndGet();
                rec.bounded(what, u0, Bounds.failure(TIMEOUT));
            }
        }
        throw new IllegalStateException(what + " never went through in 100 calls");
    }

    private static void batonFenced(Record rec, String name, BatonFencedLock lock, String client) {
        long t0 = System.nanoTime();
        java.util.OptionalLong token;
        try {
            token = lock.tryLockAndGetToken(WAIT.toMillis(), 10_000, TimeUnit.MILLISECONDS);
        } catch (RedisUnavailableException e) {
            rec.unavailable.incrementAndGet();
            token = java.util.OptionalLong.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        rec.bounded(name + " tryLockAndGetToken", t0, Bounds.failure(TIMEOUT, WAIT));
        rec.operations.incrementAndGet();
        if (token.isEmpty()) {
            return;
        }
        long acquired = System.nanoTime();
        hold();
        long end = System.nanoTime();
        boolean lost = unlockUntilDone(rec, name, lock::unlock);
        String owner = client + ":" + Thread.currentThread().getId();
        rec.granted(name);
        rec.sections.add(new Section(name, true, acquired, acquired, end, true, lost, token.getAsLong(), owner));
    }

    private static void batonSemaphore(Record rec, String name, BatonSemaphore semaphore) {
        long t0 = System.nanoTime();
        boolean got;
        try {
            got = semaphore.tryAcquire(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RedisUnavailableException e) {
            rec.unavailable.incrementAndGet();
            got = false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        rec.bounded(name + " tryAcquire", t0, Bounds.failure(TIMEOUT, WAIT));
        rec.operations.incrementAndGet();
        if (!got) {
            return;
        }
        rec.enter(name);
        hold();
        rec.leave(name);
        long r0 = System.nanoTime();
        try {
            semaphore.release(); // never repeated: one Redis did not confirm is finished in the background
        } catch (DoNotRetryException e) {
            rec.unavailable.incrementAndGet();
        }
        rec.bounded(name + " release", r0, Bounds.failure(TIMEOUT));
    }

    private static void batonExpirable(Record rec, String name, BatonPermitExpirableSemaphore semaphore) {
        long t0 = System.nanoTime();
        java.util.Optional<String> id;
        try {
            id = semaphore.tryAcquire(WAIT.toMillis(), 30_000, TimeUnit.MILLISECONDS);
        } catch (RedisUnavailableException e) {
            rec.unavailable.incrementAndGet();
            id = java.util.Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        rec.bounded(name + " tryAcquire", t0, Bounds.failure(TIMEOUT, WAIT));
        rec.operations.incrementAndGet();
        if (id.isEmpty()) {
            return;
        }
        rec.enter(name);
        hold();
        rec.leave(name);
        long r0 = System.nanoTime();
        try {
            // Without calling again, the permit stayed taken until its 30 s lease ran out, and the
            // phase's end found the count one short (seen once in a 30-minute run).
            String permit = id.get();
            untilConfirmed(rec, name + " release", () -> semaphore.release(permit));
        } catch (IllegalArgumentException e) {
            // The permit is gone: allowed only when Redis lost its data since it was taken, or is
            // losing it now (a permit taken from the dying server after the loss's first mark,
            // released while the restart is still under way: seen once in the embedded lane).
            if (rec.lossesInProgress.get() == 0 && rec.dataLost.stream().noneMatch(at -> at > t0)) {
                rec.errors.add("release of an expirable permit refused: " + e.getMessage() + " (acquire at " + rec.ms(t0)
                        + " ms, release at " + rec.ms(r0) + " ms, data lost at " + rec.dataLost.stream().map(rec::ms).toList() + ")");
            }
        }
    }

    private static void batonCountDown(Record rec, BatonCountDownLatch latch) {
        long t0 = System.nanoTime();
        rec.batonCountDowns.incrementAndGet();
        try {
            latch.countDown(); // counts once, even when it throws (finished in the background)
        } catch (DoNotRetryException e) {
            rec.unavailable.incrementAndGet();
        }
        rec.bounded("countDown", t0, Bounds.failure(TIMEOUT));
        rec.operations.incrementAndGet();
        hold();
    }

    private static void redissonExclusive(Record rec, String name, boolean write, Lock lock) {
        boolean got;
        try {
            got = lock.tryLock(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (RuntimeException e) {
            rec.redissonError(e);
            return;
        }
        rec.operations.incrementAndGet();
        if (!got) {
            return;
        }
        long acquired = System.nanoTime();
        hold();
        long end = System.nanoTime();
        boolean lost = false;
        try {
            lock.unlock();
        } catch (IllegalMonitorStateException e) {
            lost = true;
        } catch (RuntimeException e) {
            rec.redissonError(e);
            forceRelease(lock);
        }
        rec.granted(name);
        rec.sections.add(new Section(name, write, acquired, acquired, end, false, lost, 0, "redisson"));
    }

    /** After a failed Redisson unlock, keep trying so the lock is not left held for its watchdog's life. */
    private static void forceRelease(Lock lock) {
        for (int i = 0; i < 5; i++) {
            try {
                if (!(lock instanceof RLock r) || !r.isHeldByCurrentThread()) {
                    return;
                }
                lock.unlock();
            } catch (RuntimeException e) {
                // try again
            }
        }
    }

    private static void redissonSemaphore(Record rec, String name, RSemaphore semaphore) {
        boolean got;
        try {
            got = semaphore.tryAcquire(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (RuntimeException e) {
            rec.redissonError(e);
            rec.redissonUnknown.incrementAndGet(); // it may have taken a permit nobody will give back
            return;
        }
        rec.operations.incrementAndGet();
        if (!got) {
            return;
        }
        rec.enter(name);
        hold();
        rec.leave(name);
        try {
            semaphore.release();
        } catch (RuntimeException e) {
            rec.redissonError(e);
            rec.redissonUnknown.incrementAndGet();
        }
    }

    private static void redissonExpirable(Record rec, String name, RPermitExpirableSemaphore semaphore) {
        String id;
        try {
            id = semaphore.tryAcquire(WAIT.toMillis(), 3_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (RuntimeException e) {
            rec.redissonError(e);
            return; // a permit it may have taken expires with its 3 s lease
        }
        rec.operations.incrementAndGet();
        if (id == null) {
            return;
        }
        rec.enter(name);
        hold();
        rec.leave(name);
        try {
            semaphore.release(id);
        } catch (RuntimeException e) {
            rec.redissonError(e);
        }
    }

    private static void redissonAwait(Record rec, RCountDownLatch latch) {
        try {
            latch.await(100, TimeUnit.MILLISECONDS);
            rec.operations.incrementAndGet();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            rec.redissonError(e);
        }
    }

    // ---- the checks -----------------------------------------------------------------------

    /** Pairs of sections on one resource that overlapped while at least one of them wrote. */
    static List<Section[]> overlaps(List<Section> all) {
        List<Section[]> found = new ArrayList<>();
        Map<String, List<Section>> byResource = new TreeMap<>();
        for (Section s : all) {
            byResource.computeIfAbsent(s.resource(), k -> new ArrayList<>()).add(s);
        }
        for (List<Section> sections : byResource.values()) {
            sections.sort(Comparator.comparingLong(Section::start));
            for (int i = 0; i < sections.size(); i++) {
                Section a = sections.get(i);
                for (int j = i + 1; j < sections.size() && sections.get(j).start() <= a.end(); j++) {
                    Section b = sections.get(j);
                    if (a.write() || b.write()) {
                        found.add(new Section[] {a, b});
                    }
                }
            }
        }
        return found;
    }

    /** The fewest grants each resource must see in a phase: a kind that never grants makes "no overlap" vacuous. */
    static final int MIN_GRANTS = 20;

    /**
     * Every overlap of a phase, each printed with the faults of the 3 s before it, so a failing
     * run says which fault preceded the double grant. (Until 2026-11-26 the fair lock's overlaps
     * were printed apart and not asserted, an open defect; its waiters now hold the lock only on
     * Redis's reply, never on a hand-off message alone.)
     */
    private static List<Section[]> overlapsWithFaults(Record rec, String label) {
        List<Section[]> all = overlaps(new ArrayList<>(rec.sections));
        for (Section[] pair : all) {
            long at = rec.ms(pair[0].acquired());
            System.out.println("[soak] !!! " + label + ": " + describe(List.<Section[]>of(pair)) + " at " + at
                    + " ms; the faults within 3 s before it: " + rec.faultLog.stream().filter(f -> {
                        long t = Long.parseLong(f.substring(0, f.indexOf(' ')));
                        return t <= at && t >= at - 3_000;
                    }).toList());
        }
        return all;
    }

    private static void checkKept(Record rec, Baton baton, RedissonClient r, Map<String, List<Long>> reports) {
        List<Section[]> overlaps = overlapsWithFaults(rec, "keeps-data");
        int most = rec.mostInside.getOrDefault("k-sem", new AtomicInteger()).get();
        int mostX = rec.mostInside.getOrDefault("k-xsem", new AtomicInteger()).get();
        List<Section> fenced = rec.sections.stream().filter(s -> s.resource().equals("k-fenced"))
                .sorted(Comparator.comparingLong(Section::start)).toList();
        int tokenFalls = 0;
        for (int i = 1; i < fenced.size(); i++) {
            if (fenced.get(i).token() <= fenced.get(i - 1).token()) {
                tokenFalls++;
            }
        }
        long lostLeases = rec.sections.stream().filter(Section::lost).count();
        List<String> reported = reports.keySet().stream().filter(k -> k.startsWith("k-")).sorted().toList();
        // Every Baton countDown counts once: those Redis did not confirm are finished in the background.
        long expectedCount = LATCH_COUNT - rec.batonCountDowns.get();
        Await.until(Duration.ofSeconds(15), () -> "the latch at " + expectedCount + ", at " + baton.countDownLatch("k-latch").getCount(),
                () -> baton.countDownLatch("k-latch").getCount() == expectedCount);
        long unknown = rec.redissonUnknown.get();
        // Redisson's calls of unknown outcome can only have kept permits (an acquire that took one, a
        // release that never ran); a Baton double release would push the count above PERMITS.
        Await.until(Duration.ofSeconds(15), () -> "the semaphore back at " + PERMITS + " (- " + unknown
                        + " Redisson calls of unknown outcome), at " + baton.semaphore("k-sem").availablePermits(),
                () -> permitsWithin(baton.semaphore("k-sem").availablePermits(), PERMITS, unknown));
        Await.until(Duration.ofSeconds(15), () -> "the expirable semaphore back at " + X_PERMITS + ", at "
                        + baton.permitExpirableSemaphore("k-xsem").availablePermits(),
                () -> baton.permitExpirableSemaphore("k-xsem").availablePermits() == X_PERMITS);
        Map<String, Integer> grants = new TreeMap<>();
        rec.grants.forEach((k, v) -> grants.put(k, v.get()));
        System.out.println("[soak] keeps-data: " + overlaps.size() + " exclusivity violations, most holders "
                + most + "/" + PERMITS + " and " + mostX + "/" + X_PERMITS + ", " + tokenFalls + " fencing tokens not rising, "
                + lostLeases + " leases lost at unlock, " + reported.size() + " reported to the listener, latch exact at "
                + expectedCount + ", permits exact at " + PERMITS + " and " + X_PERMITS + " (Redisson calls of unknown outcome: "
                + unknown + "), grants " + grants);
        assertEquals(0, overlaps.size(), "two holders at once while Redis kept its data: " + describe(overlaps));
        assertEquals(PERMITS, most, "the most semaphore holders seen: the permits, never more (and reached)");
        assertEquals(X_PERMITS, mostX, "the most expirable-semaphore holders seen: the permits, never more (and reached)");
        assertEquals(0, tokenFalls, "fencing tokens rise with every grant");
        assertEquals(0, lostLeases, "no lease lost while Redis kept its data (guarantees.md)");
        assertEquals(List.of(), reported, "no lease reported lost while Redis kept its data");
        for (String resource : List.of("k-lock", "k-fair", "k-rw", "k-fenced", "k-sem", "k-xsem")) {
            assertTrue(grants.getOrDefault(resource, 0) >= MIN_GRANTS, resource + " granted at least " + MIN_GRANTS
                    + " times: " + grants);
        }
        assertEquals(expectedCount, r.getCountDownLatch("k-latch").getCount(), "Redisson reads the same count");
    }

    /** {@code permits - unknown <= available <= permits}. */
    static boolean permitsWithin(int available, int permits, long unknown) {
        return available <= permits && available >= permits - unknown;
    }

    private static void checkLossy(Record rec) {
        List<Section[]> overlaps = overlapsWithFaults(rec, "loses-data");
        List<Section[]> unexcused = unexcused(overlaps, rec.losses);
        long lostLeases = rec.sections.stream().filter(Section::lost).count();
        System.out.println("[soak] loses-data: " + rec.losses.size() + " data losses, " + overlaps.size()
                + " exclusivity violations, each excused by a loss that began while the first holder held, with the"
                + " second granted after it began and (Baton) the first hold's unlock reporting the loss: "
                + (overlaps.size() - unexcused.size()) + ", " + lostLeases + " leases lost at unlock");
        assertEquals(0, unexcused.size(), "every violation excused by a data loss: " + describe(unexcused));
    }

    /**
     * The overlapping pairs no data loss excuses. A pair (first granted, second granted) is excused
     * only by a loss [from, to] that began while the first still held ({@code first.acquired < to}
     * and {@code first.end >= from}), with the second granted after the loss could begin
     * ({@code second.acquired > from}) and, for a Baton first holder, Baton's report of that very
     * hold: its own unlock threw LeaseLostException (at its end, so after {@code from}; a loss the
     * watchdog found first is thrown there too). Redisson reports nothing, so a Redisson first
     * holder needs only the loss. What the second holder was told excuses nothing, and neither
     * does a report of another hold of the same thread.
     */
    static List<Section[]> unexcused(List<Section[]> overlaps, List<Loss> losses) {
        List<Section[]> left = new ArrayList<>();
        for (Section[] pair : overlaps) {
            Section first = pair[0].acquired() <= pair[1].acquired() ? pair[0] : pair[1];
            Section second = first == pair[0] ? pair[1] : pair[0];
            boolean excused = false;
            for (Loss loss : losses) {
                boolean firstHeldAtTheLoss = first.acquired() < loss.to() && first.end() >= loss.from();
                boolean secondAfter = second.acquired() > loss.from();
                if (firstHeldAtTheLoss && secondAfter && (!first.baton() || first.lost())) {
                    excused = true;
                    break;
                }
            }
            if (!excused) {
                left.add(pair);
            }
        }
        return left;
    }

    private static String describe(List<Section[]> pairs) {
        return pairs.stream().limit(5).map(p -> p[0] + " / " + p[1]).collect(Collectors.joining("; "));
    }

    private static Set<String> batonThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.startsWith("lettuce-") || n.startsWith("baton-")).collect(Collectors.toSet());
    }

    private static Set<String> newThreads(Set<String> before) {
        Set<String> now = batonThreads();
        now.removeAll(before);
        return now;
    }

    /** The client connections left on the master (not Sentinels', not replicas', not this probe), as CLIENT LIST shows them. */
    private static List<String> clientLinesLeft(RedisSentinelGroup group) {
        String list = (String) master(group).command("CLIENT", "LIST");
        List<String> left = new ArrayList<>();
        for (String line : list.split("\n")) {
            if (line.isBlank() || line.contains("name=sentinel-") || line.contains("cmd=client") || line.matches(".*flags=\\S*S.*")) {
                continue;
            }
            left.add(line.strip());
        }
        return left;
    }
}
