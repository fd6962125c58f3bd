package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonSemaphore;
import dev.baton.lua.Script;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lost replies, injected for real: a TCP proxy between Baton and Redis lets a script reach
 * Redis and run, then drops its reply and cuts the connection. Lettuce reconnects and sends
 * the command again, so the script runs twice for one call. The hold counts in Redis must come
 * out as if it had run once, and no call may report a false error.
 *
 * <p>Every script is loaded before each test, so the dropped reply is the script's own (not a
 * NOSCRIPT that would make the client send EVAL instead), and each test checks that Redis ran
 * the script twice: the re-sent copy really reached the script.
 */
@ExtendWith(RedisExtension.class)
class LostReplyTest {
    private final RedisServer redis;
    private TcpProxy proxy;
    private Baton baton;

    LostReplyTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        for (Script script : Script.values()) {
            redis.command("SCRIPT", "LOAD", script.text());
        }
        proxy = TcpProxy.start(redis.host(), redis.port());
        baton = Baton.create(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(Duration.ofSeconds(5)).build());
    }

    @AfterEach
    void close() {
        baton.close();
        proxy.close();
    }

    /** Drops the reply of the next command and counts how often Redis runs EVALSHA meanwhile. */
    private void dropNextReply() {
        redis.command("CONFIG", "RESETSTAT");
        proxy.dropNextReplyAndCut();
    }

    private void assertRanTwice() {
        assertEquals(2L, redis.calls("evalsha"), "the script ran, its reply was lost, and the copy ran again");
        assertEquals(0L, redis.calls("eval"), "no NOSCRIPT detour");
    }

    /** Every lock kind, and the hash field its holds are counted in. */
    enum Kind {
        REENTRANT, FAIR, FENCED, WRITE, READ;

        BatonLock lock(Baton baton, String name) {
            return switch (this) {
                case REENTRANT -> baton.lock(name);
                case FAIR -> baton.fairLock(name);
                case FENCED -> baton.fencedLock(name);
                case WRITE -> baton.readWriteLock(name).writeLock();
                case READ -> baton.readWriteLock(name).readLock();
            };
        }

        String field(String owner) {
            return this == WRITE ? owner + ":write" : owner;
        }
    }

    private String hold(Kind kind, BatonLock lock) {
        return (String) redis.command("HGET", lock.getName(),
                kind.field(baton.clientId() + ":" + Thread.currentThread().getId()));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aResentAcquireAddsNoPhantomHold(Kind kind) {
        BatonLock lock = kind.lock(baton, "acquire-twice");
        lock.lock();
        dropNextReply();
        lock.lock(); // runs twice in Redis: 1 -> 2, then the copy finds 2 and leaves it
        assertRanTwice();
        assertEquals("2", hold(kind, lock));
        lock.unlock();
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "acquire-twice"));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aResentFirstAcquireHoldsOnce(Kind kind) {
        BatonLock lock = kind.lock(baton, "first-twice");
        dropNextReply();
        lock.lock();
        assertRanTwice();
        assertEquals("1", hold(kind, lock));
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "first-twice"));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aResentReentrantReleaseTakesOneHoldNotTwo(Kind kind) {
        BatonLock lock = kind.lock(baton, "release-twice");
        lock.lock();
        lock.lock();
        dropNextReply();
        lock.unlock(); // runs twice: 2 -> 1, then the copy finds 1 and leaves it
        assertRanTwice();
        assertEquals("1", hold(kind, lock));
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "release-twice"));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aResentFinalReleaseReportsNoFalseIllegalMonitorState(Kind kind) {
        BatonLock lock = kind.lock(baton, "final-twice");
        lock.lock();
        dropNextReply();
        lock.unlock(); // returns normally: the copy finds nothing held, which is our own first copy's work
        assertRanTwice();
        assertNull(hold(kind, lock));
        assertEquals(0L, redis.command("EXISTS", "final-twice"));
        assertTrue(proxy.connectionsAccepted() > 2, "the proxy really cut the connection");
    }

    /**
     * The copy Lettuce re-sends meets a server that lost its script cache meanwhile (a restart
     * with AOF, a failover): NOSCRIPT, so Baton sends the script as EVAL, a new command whose
     * "nothing held" must still be read as the first copy's work (found by the nemesis soak).
     */
    private void afterReconnectTheScriptCacheIsEmpty(Runnable release) throws Exception {
        proxy.setRefuse(true); // the connection in use lives on; the reconnect after the cut waits
        dropNextReply();
        java.util.concurrent.ExecutorService thread = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            // Once the release has run and its connection is cut, the cache goes, then the reconnect.
            java.util.concurrent.Future<?> nemesis = thread.submit(() -> {
                dev.baton.testkit.Await.until(Duration.ofSeconds(5), () -> "the release ran once",
                        () -> redis.calls("evalsha") == 1L);
                redis.command("SCRIPT", "FLUSH");
                proxy.setRefuse(false);
                return null;
            });
            release.run(); // on the holder's thread; returns normally
            nemesis.get(10, java.util.concurrent.TimeUnit.SECONDS);
        } finally {
            thread.shutdownNow();
        }
        assertEquals(1L, redis.calls("eval"), "the re-sent copy met NOSCRIPT and went out as EVAL");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void aResentReleaseThatMeetsAnEmptyScriptCacheReportsNoFalseIllegalMonitorState(Kind kind) throws Exception {
        BatonLock lock = kind.lock(baton, "flushed-twice");
        lock.lock();
        afterReconnectTheScriptCacheIsEmpty(lock::unlock);
        assertNull(hold(kind, lock));
        assertFalse(lock.isHeldByCurrentThread());
    }

    @Test
    void aResentExpirableReleaseThatMeetsAnEmptyScriptCacheIsNotRefused() throws Exception {
        baton.permitExpirableSemaphore("flushed-x").trySetPermits(2);
        String id = baton.permitExpirableSemaphore("flushed-x").acquire(30, java.util.concurrent.TimeUnit.SECONDS);
        afterReconnectTheScriptCacheIsEmpty(() -> baton.permitExpirableSemaphore("flushed-x").release(id));
        assertEquals("2", redis.command("GET", "flushed-x"));
    }

    @Test
    void aResentSemaphoreAcquireCountsOnce() throws Exception {
        baton.semaphore("permits-twice").trySetPermits(3);
        dropNextReply();
        assertTrue(baton.semaphore("permits-twice").tryAcquire(2));
        assertRanTwice();
        assertEquals("1", redis.command("GET", "permits-twice"), "two permits taken, not four");
    }

    // One dropped reply per test: the cut drops every connection of the client, and a second drop
    // armed while one of them is still reconnecting would hit that connection's handshake.
    @Test
    void aResentSemaphoreReleaseCountsOnce() throws Exception {
        baton.semaphore("permits-twice").trySetPermits(3);
        assertTrue(baton.semaphore("permits-twice").tryAcquire(2));
        dropNextReply();
        baton.semaphore("permits-twice").release(2);
        assertRanTwice();
        assertEquals("3", redis.command("GET", "permits-twice"), "two permits back, not four");
    }

    /**
     * A request written twice keeps its key for the whole request memory: a copy left on the
     * dropped connection may still reach Redis later, and must find its key. Requests written
     * once are forgotten by the client's later calls, eight at a time.
     */
    @Test
    void theKeyOfAResentRequestOutlivesTheForgettingOfAnsweredOnes() throws Exception {
        BatonSemaphore semaphore = baton.semaphore("kept-keys");
        semaphore.trySetPermits(3);
        assertTrue(semaphore.tryAcquire(2));
        java.util.Set<Object> before = new java.util.HashSet<>((List<?>) redis.command("KEYS", "baton_request:{kept-keys}:*"));
        dropNextReply();
        semaphore.release(2);
        assertRanTwice();
        java.util.Set<Object> resent = new java.util.HashSet<>((List<?>) redis.command("KEYS", "baton_request:{kept-keys}:*"));
        resent.removeAll(before);
        assertEquals(1, resent.size(), "the re-sent release's key: " + resent);
        for (int i = 0; i < 40; i++) {
            assertTrue(semaphore.tryAcquire());
            semaphore.release();
        }
        List<?> left = (List<?>) redis.command("KEYS", "baton_request:{kept-keys}:*");
        assertTrue(left.containsAll(resent), "the re-sent request's key was deleted early: " + left);
        assertTrue(left.size() < 40, "requests written once are still forgotten: " + left.size() + " keys left");
    }

    /**
     * An unlock whose first copy ran but lost its reply, and whose next copy ran with too few
     * replicas acknowledging: the copy that answered found nothing held, the first copy's work.
     * That is a release to finish (DoNotRetryException, the replica shortfall as its cause; or a
     * plain release where the server's WAIT counts only the answering connection's own writes,
     * as Valkey 8's does), never a lost lease. Here Lettuce writes the copy again after the cut; a copy Baton sends itself
     * after a failed one carries the same mark through the shortfall (CommandExecutor.sendCopy).
     */
    @Test
    void aResentUnlockThatMeetsAReplicaShortfallIsAReleaseNotALoss() throws Exception {
        try (RedisServer replica = RedisServer.start("replicaof " + redis.host() + " " + redis.port())) {
            dev.baton.testkit.Await.until(Duration.ofSeconds(10), () -> "the replica in sync",
                    () -> String.valueOf(redis.command("INFO", "replication")).contains("state=online"));
            // "online" is the master's view; the replica may still be loading what it was sent. The
            // lock below must meet no shortfall, so wait until a WAIT is acknowledged.
            dev.baton.testkit.Await.until(Duration.ofSeconds(10), () -> "the replica acknowledging WAIT",
                    () -> redis.writeAndWaitForReplicas("lost-reply-replicated", 1, 200) == 1);
            java.util.List<String> reported = new java.util.concurrent.CopyOnWriteArrayList<>();
            try (Baton synced = Baton.create(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(Duration.ofSeconds(5))
                    .replicaSync(1, Duration.ofSeconds(1), BatonOptions.ReplicaSyncFailure.FAIL)
                    .leaseLostListener((name, owner, reason) -> reported.add(name + ": " + reason)).build())) {
                BatonLock lock = synced.lock("resent-short");
                lock.lock();
                replica.pause();
                try {
                    dropNextReply();
                    try {
                        lock.unlock();
                        // Valkey 8 waits only for this connection's own writes: the copy that answered,
                        // on the new connection, wrote nothing, so WAIT is satisfied at once.
                        System.out.println("[lost-reply] the re-sent unlock met no shortfall on this server (its WAIT"
                                + " counts the connection's own writes only)");
                    } catch (dev.baton.DoNotRetryException e) {
                        assertTrue(e.getCause() instanceof dev.baton.ReplicaSyncException, "the shortfall is the cause: " + e);
                    }
                } finally {
                    replica.resume();
                }
                assertEquals(0L, redis.command("EXISTS", "resent-short"), "released");
                assertEquals(List.of(), reported, "no lease reported lost");
                assertFalse(lock.isHeldByCurrentThread());
            }
        } finally {
            redis.command("REPLICAOF", "NO", "ONE");
        }
    }

    /** The same for the latch: a re-sent countDown's key outlives the forgetting of the ones answered once. */
    @Test
    void theKeyOfAResentCountDownOutlivesTheForgettingOfAnsweredOnes() {
        BatonCountDownLatch latch = baton.countDownLatch("kept-counts");
        latch.trySetCount(100);
        latch.countDown();
        java.util.Set<Object> before = new java.util.HashSet<>((List<?>) redis.command("KEYS", "baton_request:{kept-counts}:*"));
        dropNextReply();
        latch.countDown();
        assertRanTwice();
        java.util.Set<Object> resent = new java.util.HashSet<>((List<?>) redis.command("KEYS", "baton_request:{kept-counts}:*"));
        resent.removeAll(before);
        assertEquals(1, resent.size(), "the re-sent countDown's key: " + resent);
        for (int i = 0; i < 40; i++) {
            latch.countDown();
        }
        List<?> left = (List<?>) redis.command("KEYS", "baton_request:{kept-counts}:*");
        assertTrue(left.containsAll(resent), "the re-sent request's key was deleted early: " + left);
        assertTrue(left.size() < 40, "requests written once are still forgotten: " + left.size() + " keys left");
        assertEquals("58", redis.command("GET", "kept-counts"), "each countDown counted once");
    }

    @Test
    void aResentCountDownCountsOnce() {
        baton.countDownLatch("count-twice").trySetCount(3);
        dropNextReply();
        baton.countDownLatch("count-twice").countDown();
        assertRanTwice();
        assertEquals("2", redis.command("GET", "count-twice"), "counted once");
    }

    @Test
    void aResentExpirableAcquireTakesOnePermit() throws Exception {
        baton.permitExpirableSemaphore("once").trySetPermits(3);
        dropNextReply();
        String id = baton.permitExpirableSemaphore("once").acquire(30, java.util.concurrent.TimeUnit.SECONDS);
        assertRanTwice();
        assertEquals("2", redis.command("GET", "once"), "one permit, not two");
        assertEquals(1L, redis.command("ZCARD", "{once}:timeout"));
        baton.permitExpirableSemaphore("once").release(id);
        assertEquals("3", redis.command("GET", "once"));
    }
}
