package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisClusterGroup;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton on a 3-master Redis Cluster started by the fixture. Names are chosen by the slot of the
 * key each synchronizer really uses (its name), so every kind is exercised on every master.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    /** The master (0, 1, 2) that owns a key, as the fixture splits the slots into thirds. */
    private static int masterOf(String key) {
        return Math.min(2, io.lettuce.core.cluster.SlotHash.getSlot(key) * 3 / 16_384);
    }

    /** The first name {@code prefix-<i>} whose key lives on {@code master}. */
    private static String nameOn(int master, String prefix) {
        for (int i = 0; ; i++) {
            String name = prefix + "-" + i;
            if (masterOf(name) == master) {
                return name;
            }
        }
    }

    private RedisClusterGroup cluster;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private Baton a;
    private Baton b;

    @BeforeAll
    void start() {
        cluster = RedisClusterGroup.start(3, 0);
        RedisServer node = cluster.nodes().get(0);
        System.out.println("[cluster] " + node.binary().product() + " " + node.binary().version() + ": "
                + (node.binary().majorVersion() >= 7 ? "sharded pub/sub (SSUBSCRIBE/SPUBLISH) under test"
                : "no sharded pub/sub before Redis 7; classic SUBSCRIBE/PUBLISH under test, the sharded path is NOT "
                + "tested in this lane"));
        BatonOptions options = BatonOptions.builder().redisUris(cluster.uris()).cluster(true)
                .commandTimeout(Duration.ofSeconds(2)).build();
        a = clients.open(options);
        b = clients.open(options);
    }

    @AfterAll
    void stop() {
        threads.shutdownNow();
        clients.close();
        cluster.close();
    }

    /**
     * Names whose keys would span two slots are refused when the synchronizer is made, with a
     * message that says why (data-layout.md, "Hash tags"); a well-formed hash tag works for every
     * kind but the latch, whose Redisson channel puts braces of its own around the name.
     */
    @Test
    void namesWhoseKeysWouldSpanTwoSlotsAreRefusedWhenMadeAndWellFormedTagsWork() throws Exception {
        for (String bad : List.of("a{b", "x{}y", "a}b")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.lock(bad), bad);
            assertTrue(e.getMessage().contains("CROSSSLOT") && e.getMessage().contains(bad), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> a.semaphore(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> a.permitExpirableSemaphore(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> a.readWriteLock(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> a.fairLock(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> a.fencedLock(bad), bad);
            assertThrows(IllegalArgumentException.class, () -> a.rateLimiter(bad, RateLimit.perSecond(1)), bad);
        }
        for (String tagged : List.of("{orders}", "x{t}")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.countDownLatch(tagged));
            assertTrue(e.getMessage().contains("braces"), e.getMessage());
        }
        String tagged = "{orders}:daily";
        BatonLock lock = a.lock(tagged);
        assertTrue(lock.tryLock());
        lock.unlock();
        BatonFencedLock fenced = a.fencedLock(tagged + "-f");
        assertTrue(fenced.tryLockAndGetToken().isPresent());
        fenced.unlock();
        BatonLock fair = a.fairLock(tagged + "-fair");
        assertTrue(fair.tryLock(1, TimeUnit.SECONDS));
        fair.unlock();
        BatonLock write = a.readWriteLock(tagged + "-rw").writeLock();
        assertTrue(write.tryLock(1, TimeUnit.SECONDS));
        write.unlock();
        BatonSemaphore semaphore = a.semaphore(tagged + "-s");
        assertTrue(semaphore.trySetPermits(1));
        assertTrue(semaphore.tryAcquire(1, TimeUnit.SECONDS));
        semaphore.release();
        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore(tagged + "-x");
        assertTrue(expirable.trySetPermits(1));
        expirable.release(expirable.acquire(10, TimeUnit.SECONDS));
        BatonCountDownLatch latch = a.countDownLatch("orders-latch");
        assertTrue(latch.trySetCount(1));
        latch.countDown();
        assertTrue(latch.await(1, TimeUnit.SECONDS));
        // The rate limiter's hash and request keys share the name's slot; a wait, an undo and a
        // read run there on each master.
        for (int master = 0; master < 3; master++) {
            String name = nameOn(master, "rate");
            BatonRateLimiter rate = a.rateLimiter(name, RateLimit.of(1, Duration.ofSeconds(10)));
            assertTrue(rate.tryAcquire(), "master " + master);
            assertFalse(b.rateLimiter(name, RateLimit.of(1, Duration.ofSeconds(10))).tryAcquire(1, 100, TimeUnit.MILLISECONDS));
            java.util.concurrent.CompletableFuture<Void> waiting = rate.acquireAsync(1).toCompletableFuture();
            dev.baton.testkit.Await.until(Duration.ofSeconds(5), () -> "reserved on master", () -> rate.state().reservedAhead().toSeconds() >= 15);
            waiting.cancel(false);
            dev.baton.testkit.Await.until(Bounds.CLEAN_UP, () -> "undone on master", () -> rate.state().reservedAhead().toSeconds() < 11);
        }
    }

    @Test
    void everyKindWorksAndWakesOnEveryMaster() throws Exception {
        Set<Integer> owners = new HashSet<>();
        for (int master = 0; master < 3; master++) {
            String name = nameOn(master, "job");
            owners.add(ownerOf((Long) cluster.nodes().get(0).command("CLUSTER", "KEYSLOT", name)));
            BatonLock lock = a.lock(name);
            lock.lock();
            assertFalse(threads.submit(() -> b.lock(name).tryLock()).get());
            Future<Long> waiter = threads.submit(() -> {
                BatonLock theirs = b.lock(name);
                assertTrue(theirs.tryLock(15, TimeUnit.SECONDS));
                long got = System.nanoTime();
                theirs.unlock();
                return got;
            });
            awaitSubscribed("redisson_lock__channel:{" + name + "}");
            long released = System.nanoTime();
            lock.unlock();
            assertTrue(waiter.get(15, TimeUnit.SECONDS) - released <= Bounds.within(Bounds.WAKE).toNanos(),
                    "woken by the release (sharded pub/sub on Redis 7+) on master " + master);

            String permits = nameOn(master, "permits");
            a.semaphore(permits).trySetPermits(0);
            Future<Long> permitWaiter = threads.submit(() -> {
                assertTrue(b.semaphore(permits).tryAcquire(15, TimeUnit.SECONDS));
                return System.nanoTime();
            });
            awaitSubscribed("redisson_sc:{" + permits + "}");
            long added = System.nanoTime();
            a.semaphore(permits).release();
            assertTrue(permitWaiter.get(15, TimeUnit.SECONDS) - added <= Bounds.within(Bounds.WAKE).toNanos(),
                    "a semaphore waiter woken on master " + master);
            assertEquals(0, a.semaphore(permits).availablePermits());

            String done = nameOn(master, "done");
            BatonCountDownLatch latch = a.countDownLatch(done);
            latch.trySetCount(1);
            Future<Long> awaiting = threads.submit(() -> {
                assertTrue(b.countDownLatch(done).await(15, TimeUnit.SECONDS));
                return System.nanoTime();
            });
            awaitSubscribed("redisson_countdownlatch__channel__{" + done + "}");
            long counted = System.nanoTime();
            latch.countDown();
            assertTrue(awaiting.get(15, TimeUnit.SECONDS) - counted <= Bounds.within(Bounds.WAKE).toNanos(),
                    "a latch waiter woken on master " + master);
        }
        assertEquals(3, owners.size(), "the names cover all three masters");
    }

    @Test
    void waiterCountsAreReadWhereTheWaitersSubscribed() throws Exception {
        for (int master = 0; master < 3; master++) {
            String name = nameOn(master, "counted");
            BatonLock lock = a.lock(name);
            lock.lock();
            assertEquals(0, lock.waiterCount(), "nobody waits yet on master " + master);
            Future<Boolean> waiter = threads.submit(() -> {
                BatonLock theirs = b.lock(name);
                boolean got = theirs.tryLock(15, TimeUnit.SECONDS);
                theirs.unlock();
                return got;
            });
            int m = master;
            dev.baton.testkit.Await.until(Bounds.WAKE, () -> "client b counted as a waiter on master " + m,
                    () -> lock.waiterCount() == 1);
            lock.unlock();
            assertTrue(waiter.get(15, TimeUnit.SECONDS));

            String fair = nameOn(master, "fair-counted");
            BatonLock fairLock = a.fairLock(fair);
            fairLock.lock();
            Future<Boolean> queued = threads.submit(() -> {
                BatonLock theirs = b.fairLock(fair);
                boolean got = theirs.tryLock(15, TimeUnit.SECONDS);
                theirs.unlock();
                return got;
            });
            dev.baton.testkit.Await.until(Duration.ofSeconds(5), () -> "one queued fair waiter on master " + m,
                    () -> fairLock.waiterCount() == 1);
            fairLock.unlock();
            assertTrue(queued.get(15, TimeUnit.SECONDS));
        }
    }

    @Test
    void noLostUpdateOnLocksSpreadOverTheCluster() throws Exception {
        AtomicInteger overlaps = new AtomicInteger();
        long[] counters = new long[3];
        AtomicInteger[] inside = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Baton client = t % 2 == 0 ? a : b;
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 150; i++) {
                    int k = i % 3;
                    BatonLock lock = client.lock(nameOn(k, "rmw"));
                    lock.lock();
                    try {
                        if (inside[k].incrementAndGet() > 1) {
                            overlaps.incrementAndGet();
                        }
                        long read = counters[k];
                        Thread.yield();
                        counters[k] = read + 1;
                        inside[k].decrementAndGet();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(3, TimeUnit.MINUTES);
        }
        assertEquals(0, overlaps.get());
        assertEquals(1_200L, counters[0] + counters[1] + counters[2]);
    }

    @Test
    void aMasterRestartedEmptyDuringTheRunFailsOnlyItsOwnNamesAndEveryCallEndsInItsBound() throws Exception {
        int victimIndex = 1;
        RedisServer victim = cluster.masters().get(victimIndex);
        // With Redis's default (cluster-require-full-coverage yes) a master down without a
        // replica makes the whole cluster answer CLUSTERDOWN, which Baton reports as
        // RedisUnavailableException for every name (docs/topologies.md). Without it, only the
        // down master's slots fail, which is what this test pins down.
        for (RedisServer node : cluster.nodes()) {
            node.command("CONFIG", "SET", "cluster-require-full-coverage", "no");
        }
        Duration wait = Duration.ofSeconds(2);
        long budgeted = Bounds.failure(TIMEOUT, wait).toNanos();
        long single = Bounds.failure(TIMEOUT).toNanos();
        AtomicInteger healthyPasses = new AtomicInteger();
        AtomicInteger victimPasses = new AtomicInteger();
        java.util.Map<String, Integer> failures = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.List<String> wrong = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Future<?>> workers = new ArrayList<>();
        long stopAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(6);
        for (int t = 0; t < 6; t++) {
            Baton client = t % 2 == 0 ? a : b;
            int master = t % 3;
            boolean onVictim = master == victimIndex;
            String lockName = nameOn(master, "restart-lock");
            String semName = nameOn(master, "restart-sem");
            String latchName = nameOn(master, "restart-latch");
            client.semaphore(semName).trySetPermits(2);
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 10_000 && System.nanoTime() < stopAt; i++) {
                    try {
                        BatonLock lock = client.lock(lockName);
                        if (timed(wrong, "tryLock", budgeted, () -> lock.tryLock(wait.toMillis(), 10_000, TimeUnit.MILLISECONDS))) {
                            timed(wrong, "unlock", single, () -> {
                                lock.unlock();
                                return true;
                            });
                        }
                        BatonSemaphore semaphore = client.semaphore(semName);
                        if (timed(wrong, "tryAcquire", budgeted, () -> semaphore.tryAcquire(wait.toMillis(), TimeUnit.MILLISECONDS))) {
                            timed(wrong, "release", single, () -> {
                                semaphore.release();
                                return true;
                            });
                        }
                        timed(wrong, "trySetCount", single, () -> client.countDownLatch(latchName).trySetCount(1));
                        timed(wrong, "countDown", single, () -> {
                            client.countDownLatch(latchName).countDown();
                            return true;
                        });
                        (onVictim ? victimPasses : healthyPasses).incrementAndGet();
                    } catch (RedisUnavailableException | DoNotRetryException | LeaseLostException | SynchronizerDeletedException e) {
                        // Documented outcomes while a master restarts empty: unreachable, its
                        // leases lost, its semaphores gone. Only for names on that master.
                        failures.merge(e.getClass().getSimpleName(), 1, Integer::sum);
                        if (!onVictim) {
                            wrong.add("a name on healthy master " + master + " failed: " + e);
                        }
                    }
                }
                return null;
            }));
        }
        Thread.sleep(500);
        int healthyBefore = healthyPasses.get();
        victim.restart();
        for (Future<?> w : workers) {
            w.get(60, TimeUnit.SECONDS);
        }
        System.out.println("[cluster] passes on healthy masters " + healthyPasses.get() + ", on the restarted one "
                + victimPasses.get() + "; failures " + failures);
        assertEquals(List.of(), wrong);
        assertTrue(healthyPasses.get() > healthyBefore, "work went on on the other masters");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!((String) victim.command("CLUSTER", "INFO")).contains("cluster_state:ok") && System.nanoTime() < deadline) {
            Thread.sleep(50); // polling the node's own view; no signal exists for it
        }
        String probe = nameOn(victimIndex, "after-restart");
        assertTrue(b.lock(probe).tryLock(10, 10, TimeUnit.SECONDS), "the restarted master serves again");
        b.lock(probe).unlock();
    }

    /** Runs one call; whether it returns or throws, it must end within {@code boundNanos}. */
    private static boolean timed(java.util.List<String> wrong, String what, long boundNanos,
                                 java.util.concurrent.Callable<Boolean> call) throws Exception {
        long begun = System.nanoTime();
        try {
            return call.call();
        } finally {
            long took = System.nanoTime() - begun;
            if (took > boundNanos) {
                wrong.add(what + " took " + TimeUnit.NANOSECONDS.toMillis(took) + " ms, bound "
                        + TimeUnit.NANOSECONDS.toMillis(boundNanos) + " ms");
            }
        }
    }

    /**
     * Sharded pub/sub on Redis 7+ (the channel's slot owner), classic before (any node): sum
     * every node's count of the kind in use.
     */
    private void awaitSubscribed(String channel) throws InterruptedException {
        String count = cluster.nodes().get(0).binary().majorVersion() >= 7 ? "SHARDNUMSUB" : "NUMSUB";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            long total = 0;
            for (RedisServer node : cluster.nodes()) {
                total += (Long) ((List<?>) node.command("PUBSUB", count, channel)).get(1);
            }
            if (total > 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("nobody subscribed to " + channel);
            }
            Thread.sleep(5);
        }
    }

    private int ownerOf(long slot) {
        List<?> shards = (List<?>) cluster.nodes().get(0).command("CLUSTER", "SLOTS");
        for (Object shard : shards) {
            List<?> s = (List<?>) shard;
            if ((Long) s.get(0) <= slot && slot <= (Long) s.get(1)) {
                return ((Long) ((List<?>) s.get(2)).get(1)).intValue();
            }
        }
        throw new AssertionError("no owner for slot " + slot);
    }
}
