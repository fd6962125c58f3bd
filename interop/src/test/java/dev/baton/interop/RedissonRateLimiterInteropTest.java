package dev.baton.interop;

import dev.baton.BatonRateLimiter;
import dev.baton.RateLimit;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateType;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton's rate limiter and Redisson 4.7's {@code RRateLimiter} on the same name: what the guide
 * says ("Coming from Redisson's RRateLimiter"), that they keep apart keys and never share a
 * budget, so neither breaks the other (no WRONGTYPE) and each admits by its own limit.
 */
class RedissonRateLimiterInteropTest extends InteropTest {

    RedissonRateLimiterInteropTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void aRedissonLimiterOfTheSameNameIsASeparateBudget() {
        RRateLimiter theirs = redisson.getRateLimiter("partner-rate");
        assertTrue(theirs.trySetRate(RateType.OVERALL, 1, Duration.ofSeconds(10)));
        assertTrue(theirs.tryAcquire(), "Redisson's one permit of its 10 s");
        BatonRateLimiter ours = baton.rateLimiter("partner-rate", RateLimit.of(1, Duration.ofSeconds(10)));
        assertTrue(ours.tryAcquire(), "Baton's own budget: Redisson's permit taken does not count");
        assertFalse(ours.tryAcquire());
        assertFalse(theirs.tryAcquire(), "and Baton's does not give Redisson another");
        List<Object> keys = redis.command("KEYS", "*partner-rate*") instanceof List<?> l ? List.copyOf(l) : List.of();
        assertTrue(keys.contains("baton_rate:{partner-rate}"), "Baton's hash: " + keys);
        assertTrue(keys.contains("partner-rate"), "Redisson's configuration at the bare name: " + keys);
        assertTrue(ours.delete());
        assertEquals(1L, redis.command("EXISTS", "partner-rate"), "deleting Baton's limiter leaves Redisson's");
    }
}
