package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonSemaphore;
import dev.baton.Runtimes;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fast path is the floor: an uncontended lock() + unlock() of every lock kind is exactly
 * two commands (two EVALSHA) on the wire, with no subscription. Counted by Redis's MONITOR, which shows every
 * command a client sent (and, marked "lua", the ones scripts ran, which are not round trips),
 * so an extra read, subscribe or WAIT the client sent would be seen whatever its name.
 */
class RoundTripTest {
    private static final String DONE = "round-trip-test-done";

    @ParameterizedTest
    @EnumSource(LostReplyTest.Kind.class)
    void uncontendedLockAndUnlockAreTwoCommands(LostReplyTest.Kind kind) {
        try (RedisServer redis = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri())
                     .watchdogTimeout(Duration.ofMinutes(10)).build())) {
            BatonLock lock = kind.lock(baton, "fast");
            lock.lock(); // warm-up: loads the scripts after the first NOSCRIPT
            lock.unlock();
            Map<String, Integer> sent = sentBy(redis, () -> {
                for (int i = 0; i < 100; i++) {
                    lock.lock();
                    lock.unlock();
                }
            });
            assertEquals(Map.of("evalsha", 200), sent, "what the client sent for 100 lock+unlock pairs of a " + kind + " lock");
            assertEquals(0, Runtimes.of(baton).subscribedChannels());
        }
    }

    /** The costs the per-primitive guides (docs/guide/) state, uncontended, counted the same way. */
    @Test
    void uncontendedCostsOfTheOtherPrimitives() {
        try (RedisServer redis = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build())) {
            BatonSemaphore semaphore = baton.semaphore("s");
            semaphore.trySetPermits(10);
            BatonPermitExpirableSemaphore expirable = baton.permitExpirableSemaphore("x");
            expirable.trySetPermits(10);
            BatonCountDownLatch latch = baton.countDownLatch("l");
            BatonLock leased = baton.lock("leased");
            warmUp(semaphore, expirable, latch, leased);

            assertEquals(Map.of("evalsha", 2), sentBy(redis, () -> {
                assertTrue(semaphore.tryAcquire());
                semaphore.release();
            }), "semaphore acquire + release");
            assertEquals(Map.of("evalsha", 2), sentBy(redis, () -> {
                expirable.release(expirable.tryAcquire().orElseThrow());
            }), "permit-expirable semaphore acquire + release");
            assertEquals(Map.of("evalsha", 2), sentBy(redis, () -> {
                latch.trySetCount(1);
                latch.countDown();
            }), "latch trySetCount + countDown");
            assertEquals(Map.of("evalsha", 3), sentBy(redis, () -> {
                leased.lock(30, TimeUnit.SECONDS);
                leased.updateLease(Duration.ofMinutes(1));
                leased.unlock();
            }), "lock + updateLease + unlock");
            assertEquals(0, Runtimes.of(baton).subscribedChannels());
        }
    }

    private static void warmUp(BatonSemaphore semaphore, BatonPermitExpirableSemaphore expirable, BatonCountDownLatch latch,
                               BatonLock leased) {
        assertTrue(semaphore.tryAcquire());
        semaphore.release();
        expirable.release(expirable.tryAcquire().orElseThrow());
        latch.trySetCount(1);
        latch.countDown();
        leased.lock(30, TimeUnit.SECONDS);
        leased.updateLease(Duration.ofMinutes(1));
        leased.unlock();
    }

    /** Every command the clients sent while {@code ops} ran, by name, as MONITOR saw them. */
    private static Map<String, Integer> sentBy(RedisServer redis, Runnable ops) {
        try (RespClient monitor = new RespClient(redis.host(), redis.port())) {
            assertEquals("OK", monitor.call("MONITOR"));
            ops.run();
            redis.command("ECHO", DONE);
            Map<String, Integer> sent = new TreeMap<>();
            while (true) {
                String line = String.valueOf(monitor.readReply());
                if (line.contains(DONE)) {
                    return sent;
                }
                if (line.contains(" lua] ")) {
                    continue; // run by a script inside Redis, not sent by the client
                }
                String command = line.replaceAll("^[^\\]]*\\] \"([^\"]+)\".*$", "$1").toLowerCase();
                sent.merge(command, 1, Integer::sum);
            }
        }
    }
}
