package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Executors;

/** One Baton client and one real Redisson 4.7 client on the same fresh Redis, per test. */
@ExtendWith(RedisExtension.class)
abstract class InteropTest {
    protected final RedisServer redis;
    protected final ExecutorService threads = Executors.newCachedThreadPool();
    protected RedissonClient redisson;
    protected Baton baton;

    InteropTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void openBoth() {
        redis.command("FLUSHALL");
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        redisson = Redisson.create(config);
        baton = Baton.create(BatonOptions.create(redis.uri()));
    }

    /** A change that may throw. */
    @FunctionalInterface
    protected interface Change {
        void run() throws Exception;
    }

    /**
     * Makes {@code change} and returns the waiter's result, checking that the waiter returned
     * within {@link Bounds#WAKE} (with its margin) of the change: woken by the change's message,
     * not by a lease or a 5 s re-check.
     */
    protected static <T> T wokenBy(Future<T> waiter, Change change) throws Exception {
        long changed = System.nanoTime();
        change.run();
        T value = waiter.get(15, TimeUnit.SECONDS);
        long took = System.nanoTime() - changed;
        assertTrue(took <= Bounds.within(Bounds.WAKE).toNanos(),
                "woken " + TimeUnit.NANOSECONDS.toMillis(took) + " ms after the change: by its message, not by a re-check");
        return value;
    }

    /**
     * Waits until {@code waiter} is parked on its Redisson lock entry's semaphore. Redisson 4.7
     * answers a write release's broadcast ("1") with {@code release(getQueueLength())}: a reader
     * that is between its attempt and that wait when the message comes gets no permit and sleeps
     * until its re-check at the lock's TTL, whoever released (the same with Redisson alone). A
     * test of the wake-up must therefore release only once the reader waits.
     */
    protected static void awaitParkedInRedisson(java.util.concurrent.atomic.AtomicReference<Thread> waiter) {
        dev.baton.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> "the Redisson waiter parked on its semaphore "
                + (waiter.get() == null ? "(not started)" : waiter.get().getState()), () -> {
            Thread t = waiter.get();
            return t != null && t.getState() == Thread.State.TIMED_WAITING
                    && java.util.Arrays.stream(t.getStackTrace()).anyMatch(frame ->
                    frame.getClassName().equals("java.util.concurrent.Semaphore") && frame.getMethodName().startsWith("tryAcquire"));
        });
    }

    @AfterEach
    void closeBoth() {
        threads.shutdownNow();
        baton.close();
        redisson.shutdown();
    }
}
