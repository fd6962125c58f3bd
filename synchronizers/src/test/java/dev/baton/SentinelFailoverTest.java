package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisSentinelGroup;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton through Sentinel (Lettuce's redis-sentinel:// URIs): a master, one replica, three
 * sentinels. With replica sync on, a lock taken right before the master is SIGKILLed is still
 * held on the promoted replica, and the client carries on against the new master.
 */
class SentinelFailoverTest {

    /**
     * Retries a release as the retry rule says (RedisUnavailableException: call again), while the
     * client finds the new master. A DoNotRetryException means it was applied on the master but
     * no replica is left to acknowledge it (its cause is the ReplicaSyncException): released.
     */
    private static void releaseThroughTheFailover(String what, Runnable release) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                release.run();
                return;
            } catch (DoNotRetryException e) {
                assertTrue(e.getCause() instanceof ReplicaSyncException, "landed, too few replicas: " + e);
                return;
            } catch (RedisUnavailableException e) {
                System.out.println("[sentinel] " + what + ": called again after " + e);
                if (System.nanoTime() > deadline) {
                    throw new AssertionError(what + " never went through after the failover", e);
                }
            }
        }
    }

    @Test
    void aFailoverWithWaitersAndWatchdogLocksLosesNothingSilently() throws Exception {
        // Longer than the failover takes (about 3 s), so the synced lock's lease, as the replica has
        // it, outlives the promotion; a shorter one would expire there first and be reported lost.
        Duration watchdog = Duration.ofSeconds(10);
        Duration link = Duration.ofMillis(500);
        ExecutorService threads = Executors.newCachedThreadPool();
        Map<String, Long> lostAt = new ConcurrentHashMap<>();
        try (RedisSentinelGroup group = RedisSentinelGroup.start(1, 3, link)) {
            BatonOptions.Builder common = BatonOptions.builder().redisUri(group.sentinelUri()).watchdogTimeout(watchdog)
                    .leaseLostListener((name, owner, reason) -> lostAt.putIfAbsent(name, System.nanoTime()));
            Duration syncTimeout = Duration.ofSeconds(2);
            try (Baton synced = Baton.create(common.replicaSync(1, syncTimeout, BatonOptions.ReplicaSyncFailure.FAIL).build());
                 Baton plain = Baton.create(common.replicaSync(0, Duration.ofSeconds(1), BatonOptions.ReplicaSyncFailure.FAIL).build());
                 Baton waiting = Baton.create(BatonOptions.builder().redisUri(group.sentinelUri()).build())) {
                // Replicated before the failover (WAIT through the 500 ms link): a watchdog lock kept
                // for good, a lock, permits and a latch the waiters wait for.
                synced.lock("kept").lock();
                BatonLock busy = synced.lock("busy");
                busy.lock(60, TimeUnit.SECONDS);
                synced.semaphore("permits").trySetPermits(0);
                synced.countDownLatch("gate").trySetCount(1);
                String keptOwner = synced.clientId() + ":" + Thread.currentThread().getId();

                Future<Long> lockWaiter = threads.submit(() -> {
                    assertTrue(waiting.lock("busy").tryLock(60, TimeUnit.SECONDS), "the lock waiter got the lock");
                    return System.nanoTime();
                });
                Future<Long> permitWaiter = threads.submit(() -> {
                    assertTrue(waiting.semaphore("permits").tryAcquire(60, TimeUnit.SECONDS), "the semaphore waiter got a permit");
                    return System.nanoTime();
                });
                Future<Long> latchWaiter = threads.submit(() -> {
                    assertTrue(waiting.countDownLatch("gate").await(60, TimeUnit.SECONDS), "the latch waiter saw zero");
                    return System.nanoTime();
                });
                group.master().awaitSubscribers("redisson_lock__channel:{busy}", 1);
                group.master().awaitSubscribers("redisson_sc:{permits}", 1);
                group.master().awaitSubscribers("redisson_countdownlatch__channel__{gate}", 1);

                // Taken without WAIT right before the master dies: the replica, 500 ms behind, never sees it.
                plain.lock("unsynced").lock();
                group.crashMaster();
                RedisServer promoted = group.awaitPromotion(Duration.ofSeconds(60));
                long promotedAt = System.nanoTime();
                assertEquals("1", promoted.command("HGET", "kept", keptOwner), "the lock taken with WAIT survived the failover");
                assertEquals(0L, promoted.command("EXISTS", "unsynced"), "the lock taken without it did not (500 ms link)");

                // The holder releases on the new master; every waiter goes on.
                releaseThroughTheFailover("the lock", busy::unlock);
                long lockReleased = System.nanoTime();
                // A release and a countDown are never repeated (their javadoc): one that Redis did
                // not confirm is finished by Baton in the background.
                doOnce(() -> synced.semaphore("permits").release());
                doOnce(() -> synced.countDownLatch("gate").countDown());
                long released = System.nanoTime();
                // The per-fault table's number: the holder's release goes through within 1 s (the
                // client's reconnects to the Sentinels' new master are at most 1 s apart) + the
                // command timeout + 150 ms of the promotion, + the replica-sync timeout, since the
                // holder's client syncs and its release's WAIT finds no replica left to acknowledge.
                Duration releaseBound = Bounds.failure(BatonOptions.DEFAULT_COMMAND_TIMEOUT.plusSeconds(1).plus(syncTimeout));
                assertTrue(lockReleased - promotedAt <= releaseBound.toNanos(), "the holder's release went through "
                        + (lockReleased - promotedAt) / 1_000_000 + " ms after the promotion, bound " + releaseBound.toMillis() + " ms");
                Duration afterRelease = Bounds.within(Bounds.WAKE);
                for (Future<Long> waiter : List.of(lockWaiter, permitWaiter, latchWaiter)) {
                    long wokenAfter = waiter.get(60, TimeUnit.SECONDS) - released;
                    assertTrue(wokenAfter <= afterRelease.toNanos(), "a waiter went on " + wokenAfter / 1_000_000
                            + " ms after the release on the new master (released " + (released - promotedAt) / 1_000_000
                            + " ms after the promotion)");
                }

                // The unsynced watchdog lock is reported lost at its next renewal on the new master;
                // the synced one keeps being renewed there and is never reported.
                Long lostUnsynced = awaitKey(lostAt, "unsynced", Duration.ofSeconds(20));
                long reportedAfter = lostUnsynced - promotedAt;
                System.out.println("[sentinel] the lock released " + (lockReleased - promotedAt) / 1_000_000 + " ms after the promotion, "
                        + "the permit and the count " + (released - promotedAt) / 1_000_000 + " ms after it; "
                        + "the unsynced lock reported lost " + reportedAfter / 1_000_000 + " ms after it");
                // At its next renewal: a third of the watchdog timeout, once the client is back (its
                // reconnect attempts are at most 1 s apart).
                Duration promised = watchdog.dividedBy(3).plusSeconds(1);
                assertTrue(reportedAfter <= Bounds.within(promised).toNanos(),
                        "the lost lock reported within a third of the watchdog timeout + 1 s of the promotion");
                // A whole lease on the new master: the lease the replica had for "kept" was set before
                // the promotion, so past the promotion + the watchdog timeout only renewal keeps it.
                long wholeLeaseAfterPromotion = promotedAt + watchdog.plusMillis(500).toNanos() - System.nanoTime();
                if (wholeLeaseAfterPromotion > 0) {
                    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(wholeLeaseAfterPromotion));
                }
                assertEquals("1", promoted.command("HGET", "kept", keptOwner), "renewed on the new master");
                assertTrue(synced.lock("kept").isHeldByCurrentThread());
                assertFalse(lostAt.containsKey("kept"), "never reported lost: " + lostAt);
                assertThrows(LeaseLostException.class, () -> plain.lock("unsynced").unlock());
                releaseThroughTheFailover("the kept lock", () -> synced.lock("kept").unlock());
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private static void doOnce(Runnable change) {
        long start = System.nanoTime();
        try {
            change.run();
        } catch (DoNotRetryException e) {
            // Landed on the new master with no replica left to acknowledge it, or not confirmed at
            // once and finished by Baton in the background: either way not to be called again.
            System.out.println("[sentinel] not to be repeated (" + (System.nanoTime() - start) / 1_000_000 + " ms): "
                    + e.getMessage());
        }
    }

    private static Long awaitKey(Map<String, Long> map, String key, Duration timeout) {
        dev.baton.testkit.Await.until(timeout, () -> key + " reported", () -> map.containsKey(key));
        return map.get(key);
    }

    @Test
    void tooFewReplicasFailTheAcquireAndUndoIt() {
        try (RedisServer lonely = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(lonely.uri())
                     .replicaSync(1, Duration.ofMillis(200), BatonOptions.ReplicaSyncFailure.FAIL).build());
             Baton accepting = Baton.create(BatonOptions.builder().redisUri(lonely.uri())
                     .replicaSync(1, Duration.ofMillis(200), BatonOptions.ReplicaSyncFailure.ACCEPT).build())) {
            ReplicaSyncException e = assertThrows(ReplicaSyncException.class, () -> baton.lock("alone").tryLock());
            assertEquals(0, e.acknowledged());
            assertEquals(1, e.required());
            // The undo is sent before the call returns and answered in the background.
            dev.baton.testkit.Await.until(Bounds.CLEAN_UP, () -> "the acquire undone",
                    () -> lonely.command("EXISTS", "alone").equals(0L));
            assertTrue(accepting.lock("alone").tryLock(), "ACCEPT takes the master's word");
        }
    }
}
