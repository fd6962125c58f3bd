package dev.baton.sim;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The simulated Redis's own rules on virtual time, where the differential test cannot reach
 * them (it draws no TTL short enough to expire during a run): a key lives through the
 * millisecond it expires at and is gone after it; INCRBY keeps a TTL, SET drops it; TIME and
 * the expiry clock are two clocks.
 */
@Tag("no-redis")
class SimRedisTest {
    private final SimRedis redis = new SimRedis();

    @Test
    void aKeyLivesThroughItsExpiryMillisecondAndIsGoneAfterIt() {
        redis.setMicros(1_000_000_000L);
        redis.command("SET", "k", "1", "PX", "50");
        redis.setMicros(1_000_049_999L);
        assertEquals(1L, redis.command("PTTL", "k"));
        redis.setMicros(1_000_050_000L);
        assertEquals(0L, redis.command("PTTL", "k"), "alive, with no time left, at its expiry millisecond");
        assertEquals("1", redis.command("GET", "k"));
        redis.setMicros(1_000_051_000L);
        assertNull(redis.command("GET", "k"));
        assertEquals(-2L, redis.command("PTTL", "k"));
    }

    @Test
    void incrbyKeepsTheTtlAndSetDropsIt() {
        redis.setMicros(2_000_000_000L);
        redis.command("SET", "n", "5", "PX", "1000");
        assertEquals(7L, redis.command("INCRBY", "n", "2"));
        assertEquals(1000L, redis.command("PTTL", "n"));
        redis.command("SET", "n", "1");
        assertEquals(-1L, redis.command("PTTL", "n"));
        assertEquals(1L, redis.command("PEXPIRE", "n", "0"), "a PEXPIRE of 0 or less deletes");
        assertEquals(0L, redis.command("EXISTS", "n"));
    }

    @Test
    void timeAndTheExpiryClockAreTwoClocks() {
        redis.setClock(3_000_000_123_456L, 3_000_000_000L);
        assertEquals(List.of("3000000", "123456"), redis.command("TIME"));
        redis.command("SET", "k", "v", "PX", "100");
        assertEquals(100L, redis.command("PTTL", "k"), "the TTL counts from the expiry clock");
    }

    @Test
    void wrongTypesAndBadNumbersAreRefusedAsRedisRefusesThem() {
        redis.setMicros(1L);
        redis.command("HSET", "h", "f", "x");
        assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value",
                assertThrows(SimRedis.SimError.class, () -> redis.command("GET", "h")).getMessage());
        assertEquals("ERR hash value is not an integer",
                assertThrows(SimRedis.SimError.class, () -> redis.command("HINCRBY", "h", "f", "1")).getMessage());
        assertEquals("ERR value is not an integer or out of range",
                assertThrows(SimRedis.SimError.class, () -> redis.command("INCRBY", "s", "x")).getMessage());
    }
}
