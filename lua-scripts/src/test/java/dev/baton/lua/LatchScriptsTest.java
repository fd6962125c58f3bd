package dev.baton.lua;

import dev.baton.testkit.RedisErrorReply;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.Arrays;
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
        List<String> command = new ArrayList<>(List.of("EVAL", script.text(), "2", LATCH, CHANNEL));
        command.addAll(Arrays.asList(args));
        command.add("publish"); // the client adds the publish command as every script's last ARGV
        return redis.command(command.toArray(String[]::new));
    }

    @Test
    void trySetCountArmsOnlyAnUnarmedLatch() {
        assertEquals(1L, run(Script.LATCH_TRY_SET_COUNT, "3", "1"));
        assertEquals("3", redis.command("GET", LATCH));
        assertEquals(0L, run(Script.LATCH_TRY_SET_COUNT, "5", "1"), "armed already");
        assertEquals("3", redis.command("GET", LATCH));
        assertEquals(1L, redis.calls("publish"));
    }

    @Test
    void countDownDeletesAndAnnouncesExactlyAtZero() {
        run(Script.LATCH_TRY_SET_COUNT, "2", "1");
        assertEquals(1L, run(Script.LATCH_COUNT_DOWN, "0"));
        assertEquals(1L, redis.calls("publish"), "only the arming so far");
        assertEquals(0L, run(Script.LATCH_COUNT_DOWN, "0"));
        assertNull(redis.command("GET", LATCH));
        assertEquals(2L, redis.calls("publish"));
        assertEquals(-1L, run(Script.LATCH_COUNT_DOWN, "0"), "absent latch: no-op");
        assertNull(redis.command("GET", LATCH));
        assertEquals(2L, redis.calls("publish"));
        assertEquals(1L, run(Script.LATCH_TRY_SET_COUNT, "4", "1"), "a second round");
    }

    @Test
    void deleteAnnouncesOnlyWhenTheLatchExisted() {
        assertEquals(0L, run(Script.LATCH_DELETE, "1"));
        assertEquals(0L, redis.calls("publish"));
        run(Script.LATCH_TRY_SET_COUNT, "2", "1");
        assertEquals(1L, run(Script.LATCH_DELETE, "1"));
        assertEquals(0L, redis.command("EXISTS", LATCH));
        assertEquals(2L, redis.calls("publish"));
    }

    @Test
    void aNameHoldingAnotherTypeIsRefusedAndLeftAlone() {
        redis.command("HSET", LATCH, "f", "v");
        for (Script script : List.of(Script.LATCH_TRY_SET_COUNT, Script.LATCH_COUNT_DOWN, Script.LATCH_DELETE)) {
            RedisErrorReply e = assertThrows(RedisErrorReply.class, () -> run(script, "1", "1"));
            assertTrue(e.getMessage().contains("WRONGTYPE") && e.getMessage().contains(LATCH), e.getMessage());
        }
        assertEquals("v", redis.command("HGET", LATCH, "f"));
    }
}
