package dev.baton.lua;

import dev.baton.testkit.RedisErrorReply;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each count-down-latch script run raw against Redis: replies, state, and what it publishes. */
@ExtendWith(RedisExtension.class)
class LatchScriptsTest {
    private static final String LATCH = "batch";
    private static final String CHANNEL = "redisson_countdownlatch__channel__{batch}";
    private static final String MEMORY = "60000";
    private int ids;

    private final RedisServer redis;

    LatchScriptsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
        redis.command("CONFIG", "RESETSTAT");
    }

    private Object run(Script script, String... args) {
        return run(script, List.of(LATCH, CHANNEL), args);
    }

    private Object run(Script script, List<String> keys, String... args) {
        return ScriptRunner.run(redis::command, script, keys, args);
    }

    /** A fresh request id, as the client makes one per call. */
    private String id() {
        return String.format("%016x", ++ids);
    }

    private static String key(String id) {
        return "baton_request:{batch}:" + id;
    }

    private Object arm(String count) {
        return arm(count, id());
    }

    private Object arm(String count, String id) {
        return run(Script.LATCH_TRY_SET_COUNT, List.of(LATCH, CHANNEL, key(id)), count, "1", MEMORY);
    }

    private Object countDown() {
        return countDown(id());
    }

    private Object countDown(String id, String... forget) {
        List<String> keys = new ArrayList<>(List.of(LATCH, CHANNEL, key(id)));
        for (String f : forget) {
            keys.add(key(f));
        }
        return run(Script.LATCH_COUNT_DOWN, keys, "0", MEMORY);
    }

    @Test
    void trySetCountArmsOnlyAnUnarmedLatch() {
        assertEquals(1L, arm("3"));
        assertEquals("3", redis.command("GET", LATCH));
        assertEquals(0L, arm("5"), "armed already");
        assertEquals("3", redis.command("GET", LATCH));
        assertEquals(1L, redis.calls("publish"));
    }

    @Test
    void countDownDeletesAndAnnouncesExactlyAtZero() {
        arm("2");
        assertEquals(1L, countDown());
        assertEquals(1L, redis.calls("publish"), "only the arming so far");
        assertEquals(0L, countDown());
        assertNull(redis.command("GET", LATCH));
        assertEquals(2L, redis.calls("publish"));
        assertEquals(-1L, countDown(), "absent latch: no-op");
        assertNull(redis.command("GET", LATCH));
        assertEquals(2L, redis.calls("publish"));
        assertEquals(1L, arm("4"), "a second round");
    }

    @Test
    void deleteAnnouncesOnlyWhenTheLatchExisted() {
        assertEquals(0L, run(Script.LATCH_DELETE, "1"));
        assertEquals(0L, redis.calls("publish"));
        arm("2");
        countDown();
        assertEquals(1L, run(Script.LATCH_DELETE, "1"));
        assertEquals(0L, redis.command("EXISTS", LATCH));
        assertEquals(2L, redis.calls("publish"));
    }

    @Test
    void everyCopyOfOneCountDownCountsOnceEvenAcrossRounds() {
        arm("3");
        String once = id();
        assertEquals(2L, countDown(once));
        assertEquals(-2L, countDown(once), "a re-sent copy: counted already");
        assertEquals("2", redis.command("GET", LATCH));
        countDown();
        String late = id();
        assertEquals(0L, countDown(late));
        assertEquals(1L, arm("2"), "the next round");
        assertEquals(-2L, countDown(late), "a copy of the last round's countDown leaves the new round alone");
        assertEquals("2", redis.command("GET", LATCH));
        String absent = id();
        run(Script.LATCH_DELETE, "1");
        assertEquals(-1L, countDown(absent), "absent: nothing to count, but the id is remembered");
        arm("1");
        assertEquals(-2L, countDown(absent), "so its copy cannot count the latch armed later");
        assertEquals("1", redis.command("GET", LATCH));
    }

    @Test
    void aReSentArmingRepliesAsTheFirstCopyDid() {
        String arming = id();
        assertEquals(1L, arm("1", arming));
        countDown();
        assertEquals(1L, arm("1", arming), "set by this request");
        assertEquals(0L, redis.command("EXISTS", LATCH), "and it does not arm the latch a second time");
    }

    @Test
    void answeredRequestsAreForgottenAndTheMemoryExpires() {
        arm("5");
        String first = id();
        String second = id();
        countDown(first);
        countDown(second);
        String third = id();
        countDown(third, first, second);
        assertEquals(0L, redis.command("EXISTS", key(first), key(second)), "the two answered ones forgotten");
        long ttl = (Long) redis.command("PTTL", key(third));
        assertTrue(ttl > 50_000 && ttl <= 60_000, "a request key lives for the memory: " + ttl);
    }

    @Test
    void aNameHoldingAnotherTypeIsRefusedAndLeftAlone() {
        redis.command("HSET", LATCH, "f", "v");
        for (Script script : List.of(Script.LATCH_TRY_SET_COUNT, Script.LATCH_COUNT_DOWN, Script.LATCH_DELETE)) {
            RedisErrorReply e = assertThrows(RedisErrorReply.class,
                    () -> run(script, List.of(LATCH, CHANNEL, key(id())), "1", "1", MEMORY));
            // The script's own check names the key; countDown leaves it to GET's WRONGTYPE, and the
            // client names the key in WrongTypeException (CountDownLatchTest.badInputIsRefusedByName).
            assertTrue(e.getMessage().contains("WRONGTYPE"), e.getMessage());
        }
        assertEquals("v", redis.command("HGET", LATCH, "f"));
    }
}
