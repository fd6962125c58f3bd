package dev.baton.lua;

import dev.baton.testkit.RedisErrorReply;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs each reentrant-lock script directly against a real Redis with raw KEYS and ARGV, and
 * checks its reply and the state it leaves, including what a re-delivered copy does.
 */
@ExtendWith(RedisExtension.class)
class LockScriptsTest {
    private static final String LOCK = "orders";
    private static final String CHANNEL = "redisson_lock__channel:{orders}";
    private static final String A = "client-a:1";
    private static final String B = "client-b:7";

    private final RedisServer redis;

    LockScriptsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
        redis.command("SCRIPT", "FLUSH");
    }

    private Object run(Script script, List<String> keys, String... args) {
        return ScriptRunner.run(redis::command, script, keys, args);
    }

    private Object acquire(String owner, int heldBefore, long leaseMs) {
        return run(Script.LOCK_ACQUIRE, List.of(LOCK), Long.toString(leaseMs), owner, Integer.toString(heldBefore));
    }

    private Object release(String owner, int heldBefore) {
        return run(Script.LOCK_RELEASE, List.of(LOCK, CHANNEL), "30000", owner, Integer.toString(heldBefore), "0");
    }

    @Test
    void catalogDigestsAreTheOnesRedisComputes() {
        for (Script script : Script.values()) {
            assertEquals(script.sha1(), redis.command("SCRIPT", "LOAD", script.text()), script.fileName());
        }
    }

    @Test
    void acquireOnAFreeLockGrantsOneHoldWithTheLease() {
        assertEquals(List.of(1L, 1L), acquire(A, 0, 10_000));
        assertEquals("1", redis.command("HGET", LOCK, A));
        long pttl = (Long) redis.command("PTTL", LOCK);
        assertTrue(pttl > 0 && pttl <= 10_000, "pttl " + pttl);
    }

    @Test
    void reentrantAcquireCountsAndARedeliveredCopyDoesNot() {
        assertEquals(List.of(1L, 1L), acquire(A, 0, 10_000));
        assertEquals(List.of(1L, 1L), acquire(A, 0, 10_000), "re-delivered first acquire");
        assertEquals("1", redis.command("HGET", LOCK, A));
        assertEquals(List.of(1L, 2L), acquire(A, 1, 10_000));
        assertEquals(List.of(1L, 2L), acquire(A, 1, 10_000), "re-delivered reentrant acquire");
        assertEquals("2", redis.command("HGET", LOCK, A));
    }

    @Test
    void anotherOwnerIsRefusedWithTheHoldersTtl() {
        acquire(A, 0, 10_000);
        @SuppressWarnings("unchecked")
        List<Long> reply = (List<Long>) acquire(B, 0, 10_000);
        assertEquals(0L, reply.get(0));
        assertTrue(reply.get(1) > 0 && reply.get(1) <= 10_000, "ttl " + reply.get(1));
        assertNull(redis.command("HGET", LOCK, B));
    }

    @Test
    void releaseCountsDownAndTheLastOneDeletesAndPublishes() {
        acquire(A, 0, 10_000);
        acquire(A, 1, 10_000);
        long published = redis.calls("publish");
        assertEquals(1L, release(A, 2));
        assertEquals(1L, release(A, 2), "re-delivered release changes nothing");
        assertEquals("1", redis.command("HGET", LOCK, A));
        assertEquals(published, redis.calls("publish"), "no message while holds remain");
        assertEquals(0L, release(A, 1));
        assertEquals(0L, redis.command("EXISTS", LOCK));
        assertEquals(published + 1, redis.calls("publish"), "the last release publishes once");
        assertEquals(-1L, release(A, 1), "a re-delivered final release finds nothing held");
        assertEquals(published + 1, redis.calls("publish"));
    }

    @Test
    void releaseByANonHolderTouchesNothing() {
        acquire(A, 0, 10_000);
        assertEquals(-1L, release(B, 1));
        assertEquals("1", redis.command("HGET", LOCK, A));
    }

    @Test
    void undoOfAnAcquireThatNeverRanChangesNothing() {
        acquire(A, 0, 10_000);
        // A second acquire (expected 1 -> 2) timed out and never ran; its undo expects 2 holds.
        assertEquals(1L, release(A, 2));
        assertEquals("1", redis.command("HGET", LOCK, A));
    }

    @Test
    void renewalExtendsHeldLocksAndReportsTheOthers() {
        acquire(A, 0, 1_000);
        redis.command("SET", "not-a-lock", "x");
        Object reply = run(Script.LOCK_RENEW, List.of(LOCK, "missing", "not-a-lock"), "60000", A, A, A);
        assertEquals(List.of(1L, 0L, 0L), reply);
        assertTrue((Long) redis.command("PTTL", LOCK) > 1_000);
        assertEquals(-2L, redis.command("PTTL", "missing"));
    }

    @Test
    void renewalOfAnotherOwnersLockIsALoss() {
        acquire(B, 0, 1_000);
        assertEquals(List.of(0L), run(Script.LOCK_RENEW, List.of(LOCK), "60000", A));
        assertTrue((Long) redis.command("PTTL", LOCK) <= 1_000);
    }

    @Test
    void forceUnlockDeletesAndPublishesOnlyWhenHeld() {
        acquire(A, 0, 10_000);
        long published = redis.calls("publish");
        assertEquals(1L, run(Script.LOCK_FORCE_UNLOCK, List.of(LOCK, CHANNEL), "0"));
        assertEquals(0L, redis.command("EXISTS", LOCK));
        assertEquals(published + 1, redis.calls("publish"));
        assertEquals(0L, run(Script.LOCK_FORCE_UNLOCK, List.of(LOCK, CHANNEL), "0"));
        assertEquals(published + 1, redis.calls("publish"));
    }

    @Test
    void scriptsRefuseANameHoldingAnotherTypeAndLeaveItAlone() {
        redis.command("SET", LOCK, "payload");
        RedisErrorReply acquireError = assertThrows(RedisErrorReply.class, () -> acquire(A, 0, 10_000));
        assertTrue(acquireError.getMessage().contains("WRONGTYPE"), acquireError.getMessage());
        RedisErrorReply forceError = assertThrows(RedisErrorReply.class,
                () -> run(Script.LOCK_FORCE_UNLOCK, List.of(LOCK, CHANNEL), "0"));
        assertTrue(forceError.getMessage().contains("WRONGTYPE") && forceError.getMessage().contains(LOCK),
                forceError.getMessage());
        assertEquals("payload", redis.command("GET", LOCK));
    }

    private java.util.Map<String, String> hash() {
        List<?> flat = (List<?>) redis.command("HGETALL", LOCK);
        java.util.Map<String, String> map = new java.util.TreeMap<>();
        for (int i = 0; i < flat.size(); i += 2) {
            map.put((String) flat.get(i), (String) flat.get(i + 1));
        }
        return map;
    }
}
