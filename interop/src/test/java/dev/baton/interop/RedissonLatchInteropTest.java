package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonOptions;
import dev.baton.SynchronizerDeletedException;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Baton and Redisson 4.7 count-down latches on the same names. */
@ExtendWith(RedisExtension.class)
class RedissonLatchInteropTest {
    private final RedisServer redis;
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private RedissonClient redisson;
    private Baton baton;

    RedissonLatchInteropTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        redisson = Redisson.create(config);
        baton = Baton.create(BatonOptions.create(redis.uri()));
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        baton.close();
        redisson.shutdown();
    }

    @Test
    void countsAgreeAndBatonCountDownsReleaseARedissonWaiter() throws Exception {
        RCountDownLatch theirs = redisson.getCountDownLatch("mixed-batch");
        assertTrue(theirs.trySetCount(2));
        BatonCountDownLatch ours = baton.countDownLatch("mixed-batch");
        assertEquals(2, ours.getCount());
        assertFalse(ours.trySetCount(7), "Redisson armed it");
        Future<Boolean> redissonWaiter = threads.submit(() -> theirs.await(15, TimeUnit.SECONDS));
        awaitSubscribers("redisson_countdownlatch__channel__{mixed-batch}", 1);
        ours.countDown();
        assertEquals(1, theirs.getCount());
        ours.countDown();
        assertTrue(redissonWaiter.get(12, TimeUnit.SECONDS));
    }

    @Test
    void redissonCountDownsReleaseABatonWaiter() throws Exception {
        BatonCountDownLatch ours = baton.countDownLatch("mixed-gate");
        assertTrue(ours.trySetCount(1));
        Future<Boolean> batonWaiter = threads.submit(() -> ours.await(15, TimeUnit.SECONDS));
        awaitSubscribers("redisson_countdownlatch__channel__{mixed-gate}", 1);
        redisson.getCountDownLatch("mixed-gate").countDown();
        assertTrue(batonWaiter.get(12, TimeUnit.SECONDS));
        assertEquals(0, redisson.getCountDownLatch("mixed-gate").getCount());
    }

    @Test
    void aRedissonDeleteReleasesBatonWaitersWithAnException() throws Exception {
        redisson.getCountDownLatch("mixed-doomed").trySetCount(2);
        Future<?> batonWaiter = threads.submit(() -> {
            baton.countDownLatch("mixed-doomed").await();
            return null;
        });
        awaitSubscribers("redisson_countdownlatch__channel__{mixed-doomed}", 1);
        assertTrue(redisson.getCountDownLatch("mixed-doomed").delete());
        ExecutionException e = assertThrows(ExecutionException.class, () -> batonWaiter.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof SynchronizerDeletedException, String.valueOf(e.getCause()));
    }

    private void awaitSubscribers(String channel, long expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((Long) ((List<?>) redis.command("PUBSUB", "NUMSUB", channel)).get(1) < expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("nobody subscribed to " + channel);
            }
            Thread.sleep(5);
        }
    }
}
