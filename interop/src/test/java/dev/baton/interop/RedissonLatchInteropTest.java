package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.SynchronizerDeletedException;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Baton and Redisson 4.7 count-down latches on the same names. */
class RedissonLatchInteropTest extends InteropTest {

    RedissonLatchInteropTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void countsAgreeAndBatonCountDownsReleaseARedissonWaiter() throws Exception {
        RCountDownLatch theirs = redisson.getCountDownLatch("mixed-batch");
        assertTrue(theirs.trySetCount(2));
        BatonCountDownLatch ours = baton.countDownLatch("mixed-batch");
        assertEquals(2, ours.getCount());
        assertFalse(ours.trySetCount(7), "Redisson armed it");
        Future<Boolean> redissonWaiter = threads.submit(() -> theirs.await(15, TimeUnit.SECONDS));
        redis.awaitAnySubscriber("redisson_countdownlatch__channel__{mixed-batch}");
        ours.countDown();
        assertEquals(1, theirs.getCount());
        assertTrue(wokenBy(redissonWaiter, () -> ours.countDown()));
    }

    @Test
    void redissonCountDownsReleaseABatonWaiter() throws Exception {
        BatonCountDownLatch ours = baton.countDownLatch("mixed-gate");
        assertTrue(ours.trySetCount(1));
        Future<Boolean> batonWaiter = threads.submit(() -> ours.await(15, TimeUnit.SECONDS));
        redis.awaitAnySubscriber("redisson_countdownlatch__channel__{mixed-gate}");
        assertTrue(wokenBy(batonWaiter, () -> redisson.getCountDownLatch("mixed-gate").countDown()));
        assertEquals(0, redisson.getCountDownLatch("mixed-gate").getCount());
    }

    @Test
    void aRedissonDeleteReleasesBatonWaitersWithAnException() throws Exception {
        redisson.getCountDownLatch("mixed-doomed").trySetCount(2);
        long reads = redis.calls("get");
        Future<?> batonWaiter = threads.submit(() -> {
            baton.countDownLatch("mixed-doomed").await();
            return null;
        });
        redis.awaitAnySubscriber("redisson_countdownlatch__channel__{mixed-doomed}");
        // Parked: its reads before and after SUBSCRIBE ran (deleted before it saw the count while
        // subscribed, the latch would count as having reached zero, see guarantees.md).
        redis.awaitCalls("get", reads + 2);
        assertTrue(redisson.getCountDownLatch("mixed-doomed").delete());
        ExecutionException e = assertThrows(ExecutionException.class, () -> batonWaiter.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof SynchronizerDeletedException, String.valueOf(e.getCause()));
    }
}
