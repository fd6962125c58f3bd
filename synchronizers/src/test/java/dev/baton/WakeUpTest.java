package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How fast a waiter learns that it may go on, for every kind. A release, a countDown or new
 * permits are announced: the waiter returns within {@link Bounds#WAKE} (1 s) of the change,
 * far below any re-check, so a dead wake-up path fails here. A change made behind Baton's back
 * (a raw DEL, DECR or INCRBY, no message) is found by the waiter's re-check: at the holder's
 * lease for a lock, at {@value BatonSemaphore#RECHECK_SECONDS} s for semaphores and latches,
 * each checked within 1 s either side.
 */
class WakeUpTest extends TwoClientsTest {
    private static final long WAIT_SECONDS = 30;
    private static final Duration SLACK = Duration.ofSeconds(1);

    WakeUpTest(RedisServer redis) {
        super(redis);
    }

    /**
     * Starts {@code wait} on a thread and lets it park: subscribed to {@code channel}, and both its
     * attempts (before and after SUBSCRIBE) answered, counted by Redis as two {@code attempt}
     * commands. Then runs {@code change}; returns how long after it the wait returned true.
     */
    private Duration wokenAfter(String channel, String attempt, Callable<Boolean> wait, Runnable change) throws Exception {
        return parkThenChange(channel, attempt, wait, change).call();
    }

    /**
     * Starts {@code wait} on a thread and lets it park: subscribed to {@code channel}, and both its
     * attempts (before and after SUBSCRIBE) answered, counted by Redis as two {@code attempt}
     * commands. Then runs {@code change}; returns how long after it the wait returned true, once
     * it has. Parked waits that run no command of the same name may be waited for together.
     */
    private Callable<Duration> parkThenChange(String channel, String attempt, Callable<Boolean> wait, Runnable change) throws Exception {
        redis.command("CONFIG", "RESETSTAT");
        Future<Long> waiter = threads.submit(() -> {
            assertTrue(wait.call(), "the wait succeeded");
            return System.nanoTime();
        });
        redis.awaitSubscribers(channel, 1);
        Await.until(Duration.ofSeconds(10), () -> "two " + attempt + " attempts", () -> redis.calls(attempt) >= 2);
        long changed = System.nanoTime();
        change.run();
        return () -> Duration.ofNanos(waiter.get(WAIT_SECONDS + 5, TimeUnit.SECONDS) - changed);
    }

    private static void assertWoken(Duration took, String what) {
        assertTrue(took.compareTo(Bounds.WAKE) <= 0, what + " woke its waiter after " + took.toMillis() + " ms (bound "
                + Bounds.WAKE.toMillis() + " ms)");
    }

    private static void assertRechecked(Duration took, Duration recheck, String what) {
        assertTrue(took.compareTo(recheck.minus(SLACK)) >= 0 && took.compareTo(recheck.plus(SLACK)) <= 0,
                what + ": the re-check found it after " + took.toMillis() + " ms, expected " + recheck.toMillis() + " ms +- 1 s");
    }

    @Test
    void aReleaseWakesAWaiterOfEveryLockKind() throws Exception {
        BatonLock held = a.lock("w-lock");
        held.lock();
        assertWoken(wokenAfter("redisson_lock__channel:{w-lock}", "evalsha",
                () -> b.lock("w-lock").tryLock(WAIT_SECONDS, TimeUnit.SECONDS), held::unlock), "an unlock");
        BatonLock fair = a.fairLock("w-fair");
        fair.lock();
        assertWoken(wokenAfter("baton_fair_lock:{w-fair}", "evalsha",
                () -> b.fairLock("w-fair").tryLock(WAIT_SECONDS, TimeUnit.SECONDS), fair::unlock), "a fair unlock");
        BatonLock writer = a.readWriteLock("w-rw").writeLock();
        writer.lock();
        assertWoken(wokenAfter("redisson_rwlock:{w-rw}", "evalsha",
                () -> b.readWriteLock("w-rw").readLock().tryLock(WAIT_SECONDS, TimeUnit.SECONDS), writer::unlock), "a write unlock");
    }

    @Test
    void aReleaseOrCountDownWakesSemaphoreAndLatchWaiters() throws Exception {
        a.semaphore("w-sem").trySetPermits(0);
        assertWoken(wokenAfter("redisson_sc:{w-sem}", "evalsha",
                () -> b.semaphore("w-sem").tryAcquire(WAIT_SECONDS, TimeUnit.SECONDS), () -> a.semaphore("w-sem").release()),
                "a release");
        a.permitExpirableSemaphore("w-pes").trySetPermits(0);
        assertWoken(wokenAfter("redisson_sc:{w-pes}", "evalsha",
                () -> b.permitExpirableSemaphore("w-pes").tryAcquire(WAIT_SECONDS, 60, TimeUnit.SECONDS).isPresent(),
                () -> a.permitExpirableSemaphore("w-pes").addPermits(1)), "new expirable permits");
        a.countDownLatch("w-latch").trySetCount(1);
        assertWoken(wokenAfter("redisson_countdownlatch__channel__{w-latch}", "get",
                () -> b.countDownLatch("w-latch").await(WAIT_SECONDS, TimeUnit.SECONDS),
                () -> a.countDownLatch("w-latch").countDown()), "a countDown");
    }

    @Test
    void aChangeWithoutAMessageIsFoundByTheReCheck() throws Exception {
        // The three waits run side by side: each parks and its change is made before the next
        // starts, and none runs a command the next one's parking is counted by before its re-check
        // (the semaphore's and the lock's at 3 s and more, the latch's GET only at its own).
        Duration recheck = Duration.ofSeconds(BatonSemaphore.RECHECK_SECONDS);
        a.semaphore("r-sem").trySetPermits(0);
        a.countDownLatch("r-latch").trySetCount(2);
        Callable<Duration> semaphore = parkThenChange("redisson_sc:{r-sem}", "evalsha",
                () -> b.semaphore("r-sem").tryAcquire(WAIT_SECONDS, TimeUnit.SECONDS), () -> redis.command("INCRBY", "r-sem", "1"));
        Callable<Duration> latch = parkThenChange("redisson_countdownlatch__channel__{r-latch}", "get",
                () -> b.countDownLatch("r-latch").await(WAIT_SECONDS, TimeUnit.SECONDS), () -> redis.command("SET", "r-latch", "0"));

        Duration lease = Duration.ofSeconds(3);
        a.lock("r-lock").lock(lease.toMillis(), TimeUnit.MILLISECONDS);
        long taken = System.nanoTime();
        redis.command("CONFIG", "RESETSTAT");
        Future<Long> lockWaiter = threads.submit(() -> {
            assertTrue(b.lock("r-lock").tryLock(WAIT_SECONDS, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        redis.awaitSubscribers("redisson_lock__channel:{r-lock}", 1);
        Await.until(Duration.ofSeconds(10), () -> "the waiter parked", () -> redis.calls("evalsha") >= 2);
        redis.command("DEL", "r-lock"); // gone without a message: the waiter tries again at the lease it saw

        assertRechecked(semaphore.call(), recheck, "a silent INCRBY of a semaphore");
        assertRechecked(latch.call(), recheck, "a silent SET to zero of a latch");
        assertRechecked(Duration.ofNanos(lockWaiter.get(WAIT_SECONDS, TimeUnit.SECONDS) - taken), lease, "a silent DEL of a lock");
    }
}
