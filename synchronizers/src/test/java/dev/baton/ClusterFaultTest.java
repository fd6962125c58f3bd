package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisClusterGroup;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Redis Cluster faults with work in flight, on 3 masters with one replica each: a master fails
 * over to its replica while its slots hold locks, waiters, a semaphore and a latch; and a slot is
 * migrated live, key by key, while a lock in it is held and renewed, waited on, and its
 * neighbours are used. Every waiter goes on within 1 s of the release that concerns it, because
 * sharded subscriptions follow their slot to its new owner; no call fails during a migration.
 */
class ClusterFaultTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    private RedisClusterGroup cluster;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final Map<String, Long> lostAt = new ConcurrentHashMap<>();

    @BeforeEach
    void start() {
        cluster = RedisClusterGroup.start(3, 1);
        RedisServer node = cluster.nodes().get(0);
        System.out.println("[cluster-faults] " + node.binary().product() + " " + node.binary().version() + ": "
                + (node.binary().majorVersion() >= 7 ? "sharded pub/sub under test"
                : "no sharded pub/sub before Redis 7: classic pub/sub under test, the sharded path is NOT tested in this lane"));
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        cluster.close();
    }

    private Baton open(Duration watchdog) {
        return clients.open(BatonOptions.builder().redisUris(cluster.uris()).cluster(true).commandTimeout(TIMEOUT)
                .watchdogTimeout(watchdog).leaseLostListener((name, owner, reason) -> lostAt.putIfAbsent(name, System.nanoTime()))
                .build());
    }

    /** The first name {@code prefix-<i>} whose key is in {@code slot}. */
    private static String nameIn(int slot, String prefix) {
        for (int i = 0; ; i++) {
            String name = prefix + "-" + i;
            if (SlotHash.getSlot(name) == slot) {
                return name;
            }
        }
    }

    /**
     * Waits until each channel has a subscriber: sharded ones on the master of the channel's slot
     * (Redis 7+), classic ones on any node.
     */
    private void awaitSubscribed(String... channels) {
        for (String channel : channels) {
            Await.until(Duration.ofSeconds(10), () -> "a subscriber on " + channel, () -> {
                if (cluster.nodes().get(0).binary().majorVersion() >= 7) {
                    List<?> reply = (List<?>) cluster.ownerOf(SlotHash.getSlot(channel)).command("PUBSUB", "SHARDNUMSUB", channel);
                    return (Long) reply.get(1) > 0;
                }
                return cluster.nodes().stream().filter(RedisServer::isRunning).mapToLong(n -> n.subscribers(channel)).sum() > 0;
            });
        }
    }

    /** Makes {@code change} and checks {@code waiter} returned within 1 s of it (with its margin). */
    private static void assertWokenBy(Future<Long> waiter, Runnable change, String what) throws Exception {
        long changed = System.nanoTime();
        change.run();
        long took = waiter.get(30, TimeUnit.SECONDS) - changed;
        assertTrue(took <= Bounds.within(Bounds.WAKE).toNanos(), what + ": woken " + took / 1_000_000 + " ms after the change");
    }

    @Test
    void aSlotMigratedLiveKeepsItsLocksWaitersAndRenewals() throws Exception {
        int slot = 42; // on the first master, as the fixture splits the slots
        String lockName = nameIn(slot, "mig-lock");
        String semName = nameIn(slot, "mig-sem");
        String latchName = nameIn(slot, "mig-latch");
        Duration watchdog = Duration.ofSeconds(3);
        Baton holder = open(watchdog);
        Baton waiting = open(watchdog);
        BatonLock held = holder.lock(lockName);
        held.lock();
        holder.semaphore(semName).trySetPermits(2);
        holder.countDownLatch(latchName).trySetCount(1);
        // Keys of the slot, so the migration has work to do in batches between which calls go on.
        for (int i = 0; i < 40; i++) {
            cluster.ownerOf(slot).command("SET", "{" + lockName + "}:filler-" + i, "x");
        }
        Future<Long> lockWaiter = threads.submit(() -> {
            assertTrue(waiting.lock(lockName).tryLock(60, TimeUnit.SECONDS));
            long got = System.nanoTime();
            waiting.lock(lockName).unlock();
            return got;
        });
        Future<Long> latchWaiter = threads.submit(() -> {
            assertTrue(waiting.countDownLatch(latchName).await(60, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        awaitSubscribed("redisson_lock__channel:{" + lockName + "}", "redisson_countdownlatch__channel__{" + latchName + "}");
        // Traffic on the slot during the migration: every call must succeed.
        AtomicBoolean migrating = new AtomicBoolean(true);
        List<String> failures = new CopyOnWriteArrayList<>();
        AtomicInteger passes = new AtomicInteger();
        Future<?> traffic = threads.submit(() -> {
            BatonSemaphore semaphore = waiting.semaphore(semName);
            for (int i = 0; i < 100_000 && migrating.get(); i++) {
                try {
                    // Calls that do not wait (no budget to retry in) and one that does.
                    if (semaphore.tryAcquire()) {
                        semaphore.release();
                        passes.incrementAndGet();
                    }
                    if (semaphore.tryAcquire(5, TimeUnit.SECONDS)) {
                        semaphore.release();
                        passes.incrementAndGet();
                    }
                } catch (RuntimeException | InterruptedException e) {
                    failures.add(e.toString());
                }
            }
            return null;
        });
        Await.until(Duration.ofSeconds(10), () -> "traffic under way", () -> passes.get() > 10);
        RedisServer target = cluster.masters().get(1);
        RedisServer source = cluster.ownerOf(slot);
        source.command("CONFIG", "RESETSTAT");
        target.command("CONFIG", "RESETSTAT");
        // The semaphore moves last: until then each of its operations (its key and a new request
        // key) is refused with TRYAGAIN, about a second, which Baton retries inside each call.
        cluster.migrateSlot(slot, target, () -> {
            try {
                Thread.sleep(200); // the slot stays half-migrated for a while: the fault under test
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, List.of(semName));
        Thread.sleep(watchdog.toMillis()); // a whole lease after the move: only renewal on the new owner keeps it
        migrating.set(false);
        traffic.get(30, TimeUnit.SECONDS);
        assertEquals(List.of(), failures, "no call failed during the migration");
        // The migration's refusals reached Baton's calls (and Baton answered them): the nodes
        // count every TRYAGAIN, ASK and MOVED they replied (INFO errorstats, Redis 6.2+).
        Map<String, Long> refusals = new java.util.TreeMap<>();
        for (RedisServer node : List.of(source, target)) {
            for (String line : ((String) node.command("INFO", "errorstats")).split("\r?\n")) {
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("errorstat_(TRYAGAIN|ASK|MOVED):count=(\\d+)").matcher(line);
                if (m.find()) {
                    refusals.merge(m.group(1), Long.parseLong(m.group(2)), Long::sum);
                }
            }
        }
        System.out.println("[cluster-faults] the migration's replies to Baton: " + refusals);
        assertTrue(refusals.getOrDefault("TRYAGAIN", 0L) + refusals.getOrDefault("ASK", 0L) > 0,
                "TRYAGAIN or ASK reached Baton during the migration: " + refusals);
        assertEquals(target, cluster.ownerOf(slot));
        assertEquals(1L, target.command("EXISTS", lockName), "the held lock moved with its slot");
        assertTrue(held.isHeldByCurrentThread(), "and is still held, renewed on its new owner");
        assertFalse(lostAt.containsKey(lockName), "never reported lost: " + lostAt);
        assertWokenBy(lockWaiter, held::unlock, "the lock waiter after the migration");
        assertWokenBy(latchWaiter, () -> holder.countDownLatch(latchName).countDown(), "the latch waiter after the migration");
        assertEquals(2, holder.semaphore(semName).availablePermits(), "permits exact after the migration");
    }

    /**
     * A migration that keeps a synchronizer's slot half-moved for longer than the command timeout
     * (many keys, moved slowly): its scripts get TRYAGAIN from the source the whole time (they
     * declare keys that do not exist yet, a request key, a channel). A call without a wait budget
     * sends again only within the command timeout and then reports RedisUnavailableException
     * naming TRYAGAIN, within the timeout + 150 ms; a wait with a budget rides TRYAGAIN past the
     * command timeout for as long as its budget lasts, and is granted once the slot has moved.
     */
    @Test
    void aMigrationLongerThanTheCommandTimeoutFailsCallsWithoutABudgetAndIsRiddenByWaitsWithOne() throws Exception {
        int slot = 43;
        String semName = nameIn(slot, "slow-sem");
        Baton baton = open(Duration.ofSeconds(30));
        BatonSemaphore semaphore = baton.semaphore(semName);
        assertTrue(semaphore.trySetPermits(1));
        for (int i = 0; i < 20; i++) {
            cluster.ownerOf(slot).command("SET", "{" + semName + "}:filler-" + i, "x");
        }
        RedisServer target = cluster.masters().get(1);
        AtomicBoolean checked = new AtomicBoolean();
        List<Future<Long>> budgeted = new ArrayList<>();
        List<String> seen = new CopyOnWriteArrayList<>();
        cluster.migrateSlot(slot, target, () -> {
            if (!checked.compareAndSet(false, true)) {
                return;
            }
            // The first batch has moved; the semaphore's key stays on the source until the end.
            budgeted.add(threads.submit(() -> {
                long started = System.nanoTime();
                assertTrue(semaphore.tryAcquire(1, 4 * TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), "granted once moved");
                return System.nanoTime() - started;
            }));
            RedisUnavailableException e = Bounds.assertThrowsWithin(RedisUnavailableException.class, Bounds.failure(TIMEOUT),
                    semaphore::tryAcquire, "tryAcquire() while the slot is half-moved");
            seen.add(e.getMessage());
            try {
                Thread.sleep(TIMEOUT.toMillis()); // the slot stays half-moved past one more command timeout
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
        }, List.of(semName));
        assertEquals(target, cluster.ownerOf(slot));
        assertTrue(seen.get(0).contains("TRYAGAIN"), "the failure names what Redis said: " + seen.get(0));
        long rodeNanos = budgeted.get(0).get(30, TimeUnit.SECONDS);
        assertTrue(rodeNanos > TIMEOUT.toNanos(), "the wait with a budget rode TRYAGAIN for "
                + rodeNanos / 1_000_000 + " ms, past the " + TIMEOUT.toMillis() + " ms command timeout");
        semaphore.release();
        assertEquals(1, semaphore.availablePermits(), "nothing taken twice or lost by the refused calls");
    }

    @Test
    void aMasterFailingOverToItsReplicaKeepsWaitersAndWatchdogLocks() throws Exception {
        RedisServer victim = cluster.masters().get(0);
        int slot = 100; // on the first master
        String keptName = nameIn(slot, "fo-kept");
        String busyName = nameIn(slot, "fo-busy");
        String semName = nameIn(slot, "fo-sem");
        String latchName = nameIn(slot, "fo-latch");
        Duration watchdog = Duration.ofSeconds(10);
        Baton holder = open(watchdog);
        Baton waiting = open(watchdog);
        BatonLock kept = holder.lock(keptName);
        kept.lock();
        BatonLock busy = holder.lock(busyName);
        busy.lock(60, TimeUnit.SECONDS);
        holder.semaphore(semName).trySetPermits(0);
        holder.countDownLatch(latchName).trySetCount(1);
        Future<Long> lockWaiter = threads.submit(() -> {
            assertTrue(waiting.lock(busyName).tryLock(60, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        Future<Long> permitWaiter = threads.submit(() -> {
            assertTrue(waiting.semaphore(semName).tryAcquire(60, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        Future<Long> latchWaiter = threads.submit(() -> {
            assertTrue(waiting.countDownLatch(latchName).await(60, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        awaitSubscribed("redisson_lock__channel:{" + busyName + "}", "redisson_sc:{" + semName + "}",
                "redisson_countdownlatch__channel__{" + latchName + "}");
        // Let the replica have everything before its master dies (asynchronous replication); on
        // a loaded machine the link can lag, so wait for it, and be sure it did (a lettuce-6.4
        // lane once went on after WAIT had timed out, and the promoted replica never had the lock).
        // (A write first, on the WAIT's own connection: a WAIT on a connection that wrote nothing
        // returns at once, which let a loaded run promote a replica without the semaphore.)
        assertEquals(1L, victim.writeAndWaitForReplicas(nameIn(slot, "fo-replicated"), 1, 15_000),
                "the replica acknowledged every write before the kill");
        long killed = System.nanoTime();
        RedisServer promoted = cluster.failOver(victim, Duration.ofSeconds(60));
        long promotedAt = System.nanoTime();
        System.out.println("[cluster-faults] promoted " + (promotedAt - killed) / 1_000_000 + " ms after the kill");
        assertEquals(promoted, cluster.ownerOf(slot));
        // Calls reach the promoted replica within 1 s of its promotion: commands for the dead
        // master fail at once, and each failure refreshes the slot map (at most every 500 ms).
        releaseAfterFailover(busy::unlock);
        long unlocked = System.nanoTime();
        System.out.println("[cluster-faults] the unlock went through " + (unlocked - promotedAt) / 1_000_000
                + " ms after the promotion");
        assertTrue(unlocked - promotedAt <= Bounds.within(Duration.ofSeconds(1)).toNanos(),
                "the unlock went through within 1 s of the promotion");
        long lockWoken = lockWaiter.get(30, TimeUnit.SECONDS);
        assertTrue(lockWoken - unlocked <= Bounds.within(Bounds.WAKE).toNanos(), "the lock waiter went on "
                + (lockWoken - unlocked) / 1_000_000 + " ms after the unlock returned");
        assertWokenBy(permitWaiter, () -> releaseOnce(() -> holder.semaphore(semName).release()), "the permit waiter");
        assertWokenBy(latchWaiter, () -> releaseOnce(() -> holder.countDownLatch(latchName).countDown()), "the latch waiter");
        // The watchdog lock was on the replica (WAIT above). Once a whole lease has passed since
        // the kill, only renewals on the promoted replica can have kept it.
        long leaseAfterKill = killed + watchdog.toNanos() + TimeUnit.MILLISECONDS.toNanos(500) - System.nanoTime();
        if (leaseAfterKill > 0) {
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(leaseAfterKill));
        }
        assertEquals(1L, promoted.command("EXISTS", keptName), "the watchdog lock is held on the promoted replica");
        assertTrue(kept.isHeldByCurrentThread());
        assertFalse(lostAt.containsKey(keptName), "never reported lost: " + lostAt);
        kept.unlock();
        assertEquals(0L, promoted.command("EXISTS", keptName));
    }

    @Test
    void replicaSyncWaitsForTheReplicasOfTheSlotsOwnMaster() {
        int slot = 200;
        String name = nameIn(slot, "synced");
        RedisServer master = cluster.ownerOf(slot);
        RedisServer replica = cluster.replicasOf(master).get(0);
        Baton synced = clients.open(BatonOptions.builder().redisUris(cluster.uris()).cluster(true).commandTimeout(TIMEOUT)
                .replicaSync(1, Duration.ofMillis(500), BatonOptions.ReplicaSyncFailure.FAIL).build());
        BatonLock lock = synced.lock(name);
        String owner = synced.clientId() + ":" + Thread.currentThread().getId();
        // With the slot master's own replica stopped, WAIT on that master's connection gets no
        // acknowledgement (WAIT on a connection that wrote nothing would count the replicas at once).
        replica.pause();
        try {
            assertThrows(ReplicaSyncException.class, lock::lock);
            Await.until(Bounds.CLEAN_UP, () -> "the acquire undone", () -> (Long) master.command("EXISTS", name) == 0L);
            assertFalse(lock.isHeldByCurrentThread());
        } finally {
            replica.resume();
        }
        Await.until(Duration.ofSeconds(10), () -> "the replica back in sync", () -> {
            String info = (String) master.command("INFO", "replication");
            return info.contains("state=online") && info.contains("lag=0");
        });
        // Once the replica is back (while replicas were short, one full wait a second finds out),
        // the lock is on the replica as soon as lock() returns.
        untilReplicasAcknowledge(lock::lock);
        try (RespClient onReplica = new RespClient(replica.host(), replica.port())) {
            onReplica.call("READONLY");
            assertEquals("1", onReplica.call("HGET", name, owner), "the replica has the lock when lock() returns");
        }
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    private static void untilReplicasAcknowledge(Runnable change) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            try {
                change.run();
                return;
            } catch (ReplicaSyncException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
        }
    }

    private static void releaseAfterFailover(Runnable unlock) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                unlock.run();
                return;
            } catch (DoNotRetryException e) {
                return; // landed on the master, too few replicas acknowledged it
            } catch (RedisUnavailableException e) {
                if (System.nanoTime() > deadline) {
                    throw e; // unlock keeps the hold on an unconfirmed release: call it again
                }
            }
        }
    }

    private static void releaseOnce(Runnable release) {
        try {
            release.run();
        } catch (DoNotRetryException e) {
            System.out.println("[cluster-faults] finished by Baton in the background: " + e.getMessage());
        }
    }
}
