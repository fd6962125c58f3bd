package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisSentinelGroup;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton through Sentinel (Lettuce's redis-sentinel:// URIs): a master, one replica, three
 * sentinels. With replica sync on, a lock taken right before the master is SIGKILLed is still
 * held on the promoted replica, and the client carries on against the new master.
 */
class SentinelFailoverTest {

    @Test
    void aLockTakenWithReplicaSyncSurvivesAFailover() {
        assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
            try (RedisSentinelGroup group = RedisSentinelGroup.start(1, 3)) {
                BatonOptions synced = BatonOptions.builder().redisUri(group.sentinelUri())
                        .replicaSync(1, Duration.ofSeconds(2), BatonOptions.ReplicaSyncFailure.FAIL).build();
                BatonOptions unsynced = BatonOptions.builder().redisUri(group.sentinelUri()).build();
                try (Baton baton = Baton.create(synced); Baton plain = Baton.create(unsynced)) {
                    BatonLock lock = baton.lock("payroll");
                    lock.lock(60, TimeUnit.SECONDS);
                    String owner = baton.clientId() + ":" + Thread.currentThread().getId();
                    plain.lock("payroll-unsynced").lock(60, TimeUnit.SECONDS);

                    group.master().kill(); // right after the grant, no time for anything else
                    group.awaitFailover(Duration.ofSeconds(60));
                    RedisServer promoted = group.replicas().get(0);
                    assertEquals(promoted.port(), group.currentMaster().port());
                    assertEquals("1", promoted.command("HGET", "payroll", owner), "the synced grant survived the failover");
                    boolean unsyncedSurvived = (Long) promoted.command("EXISTS", "payroll-unsynced") == 1L;
                    System.out.println("[sentinel] a lock taken without replica sync survived this failover: "
                            + unsyncedSurvived + " (asynchronous replication on loopback is usually, not always, fast enough)");

                    // The client follows the failover by itself: once the new master answers, the
                    // owner (this thread) releases its lock there.
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (true) {
                        long called = System.nanoTime();
                        try {
                            baton.lock("probe").isLocked();
                            break;
                        } catch (RedisUnavailableException e) {
                            // No master yet (or not yet found): each call still fails within its bound.
                            assertTrue(System.nanoTime() - called <= Bounds.failure(BatonOptions.DEFAULT_COMMAND_TIMEOUT).toNanos(),
                                    "a call during the failover failed within the command timeout");
                            if (System.nanoTime() > deadline) {
                                throw e;
                            }
                        }
                    }
                    // No replica is left after the failover, so WAIT cannot be satisfied: the release
                    // is applied on the new master and reported as not replicated (FAIL mode).
                    ReplicaSyncException notReplicated = assertThrows(ReplicaSyncException.class, lock::unlock);
                    assertEquals(0, notReplicated.acknowledged());
                    assertEquals(0L, promoted.command("EXISTS", "payroll"));
                    assertTrue(plain.lock("payroll").tryLock(5, 30, TimeUnit.SECONDS), "the lock is free on the new master");
                }
            }
        });
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
            assertEquals(0L, lonely.command("EXISTS", "alone"), "the acquire was undone");
            assertTrue(accepting.lock("alone").tryLock(), "ACCEPT takes the master's word");
        }
    }
}
