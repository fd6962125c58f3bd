package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad arguments to the public API: each is refused with IllegalArgumentException or
 * NullPointerException naming the argument, before any Redis command is sent (counted by Redis).
 * (A wait time of zero or less and a negative lease are not bad input: TimesAndLeasesTest.)
 * Huge but meaningful values (a wait of Long.MAX_VALUE) behave as "forever", not as overflow; a
 * huge lease is refused (Redis would reject its expiry inside the script, after the grant).
 */
@ExtendWith(RedisExtension.class)
class BadInputTest {
    private final RedisServer redis;
    private Baton baton;

    BadInputTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        baton = Baton.create(redis.uri());
    }

    @AfterEach
    void close() {
        baton.close();
    }

    private long commandsSoFar() {
        String stats = (String) redis.command("INFO", "stats");
        return Long.parseLong(stats.replaceAll("(?s).*total_commands_processed:(\\d+).*", "$1"));
    }

    @Test
    void everyBadArgumentIsRefusedByNameWithoutTouchingRedis() {
        BatonLock lock = baton.lock("x");
        BatonLock fair = baton.fairLock("x");
        BatonLock write = baton.readWriteLock("x").writeLock();
        BatonFencedLock fenced = baton.fencedLock("x");
        BatonSemaphore semaphore = baton.semaphore("x");
        BatonPermitExpirableSemaphore expirable = baton.permitExpirableSemaphore("x");
        BatonCountDownLatch latch = baton.countDownLatch("x");
        Map<String, Executable> illegal = new LinkedHashMap<>();
        for (BatonLock l : List.of(lock, fair, write, fenced)) {
            illegal.put(l + " lock(0)", () -> l.lock(0, TimeUnit.SECONDS));
            illegal.put(l + " lock(Long.MAX days)", () -> l.lock(Long.MAX_VALUE, TimeUnit.DAYS));
            illegal.put(l + " tryLock(1, 0)", () -> l.tryLock(1, 0, TimeUnit.SECONDS));
            illegal.put(l + " tryLockAsync(1, 0)", () -> l.tryLockAsync(1, 0, TimeUnit.SECONDS, 1));
        }
        illegal.put("semaphore acquire(0)", () -> semaphore.acquire(0));
        illegal.put("semaphore acquire(-1)", () -> semaphore.acquire(-1));
        illegal.put("semaphore release(0)", () -> semaphore.release(0));
        illegal.put("semaphore trySetPermits(-1)", () -> semaphore.trySetPermits(-1));
        illegal.put("expirable acquire(0)", () -> expirable.acquire(0, TimeUnit.SECONDS));
        illegal.put("expirable acquire(Long.MAX days)", () -> expirable.acquire(Long.MAX_VALUE, TimeUnit.DAYS));
        illegal.put("expirable release(not an id)", () -> expirable.release("nope"));
        illegal.put("expirable setPermits(-1)", () -> expirable.setPermits(-1));
        illegal.put("latch trySetCount(0)", () -> latch.trySetCount(0));
        illegal.put("blank name", () -> baton.lock(" "));
        illegal.put("options commandTimeout(0)", () -> BatonOptions.builder().commandTimeout(Duration.ZERO));
        illegal.put("options watchdogTimeout(1 ms)", () -> BatonOptions.builder().watchdogTimeout(Duration.ofMillis(1)));
        illegal.put("options renewalBatchSize(0)", () -> BatonOptions.builder().renewalBatchSize(0));
        illegal.put("options replicaSync(-1)", () -> BatonOptions.builder().replicaSync(-1, Duration.ofSeconds(1),
                BatonOptions.ReplicaSyncFailure.FAIL));
        illegal.put("options redisUri(\"\")", () -> BatonOptions.builder().redisUri(""));

        Map<String, Executable> nulls = new LinkedHashMap<>();
        nulls.put("lock(null)", () -> baton.lock(null));
        nulls.put("semaphore(null)", () -> baton.semaphore(null));
        nulls.put("countDownLatch(null)", () -> baton.countDownLatch(null));
        nulls.put("tryLock(1, null unit)", () -> lock.tryLock(1, null));
        nulls.put("expirable release(null)", () -> expirable.release(null));
        nulls.put("options redisUri(null)", () -> BatonOptions.builder().redisUri(null));
        nulls.put("multiLock(null)", () -> Baton.multiLock((List<BatonLock>) null));

        long before = commandsSoFar();
        for (Map.Entry<String, Executable> call : illegal.entrySet()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call.getValue(), call.getKey());
            assertTrue(e.getMessage() != null && e.getMessage().matches(".*\\b(leaseTime|waitTime|timeout|permits|permitId|count|name|"
                    + "commandTimeout|watchdogTimeout|renewalBatchSize|replicas|redisUri)\\b.*"),
                    call.getKey() + " does not name the argument: " + e.getMessage());
        }
        for (Map.Entry<String, Executable> call : nulls.entrySet()) {
            NullPointerException e = assertThrows(NullPointerException.class, call.getValue(), call.getKey());
            assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), call.getKey() + " names nothing");
        }
        assertEquals(before + 1, commandsSoFar(), "no command reached Redis (only this probe's INFO)");
    }

    /** A wait of Long.MAX_VALUE must mean "forever" for a waiter that really waits, not overflow. */
    @Test
    void aWaitOfLongMaxValueMeansForeverNotOverflow() throws Exception {
        BatonLock held = baton.lock("forever");
        held.lock();
        java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newSingleThreadExecutor();
        try (Baton other = Baton.create(redis.uri())) {
            java.util.concurrent.Future<Boolean> waiter = threads.submit(() -> other.lock("forever").tryLock(Long.MAX_VALUE, TimeUnit.SECONDS));
            redis.awaitSubscribers("redisson_lock__channel:{forever}", 1);
            assertTrue(!waiter.isDone(), "still waiting, not refused by an overflowed deadline");
            held.unlock();
            assertTrue(waiter.get(10, TimeUnit.SECONDS));
        } finally {
            threads.shutdownNow();
        }
        BatonCountDownLatch latch = baton.countDownLatch("forever-latch");
        assertTrue(latch.await(Long.MAX_VALUE, TimeUnit.DAYS), "an absent latch is open");
        assertTrue(baton.semaphore("forever-sem").trySetPermits(1));
        assertTrue(baton.semaphore("forever-sem").tryAcquire(1, Long.MAX_VALUE, TimeUnit.NANOSECONDS));
    }
}
