package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 45, item 5: a client that learns by itself that a lock it held is gone from Redis wakes
 * its own waiters for that lock at once, instead of leaving them asleep until the timers they set
 * from the TTL they saw (Redis announces nothing when a key is deleted by hand or expires). On
 * f73c560 the first of three waiters got the lock 9.2 s after its holder's unlock reported the
 * loss.
 */
class OwnWaitersWokenTest {
    private static final String NAME = "r45-own-waiters";
    private static final String CHANNEL = "redisson_lock__channel:{" + NAME + "}";
    private static final long HOLDER = 4_500_000_501L;

    private RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void start() {
        redis = RedisServer.start();
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        redis.close();
    }

    /** Three threads of the holder's client wait (10 s each); the lock is deleted without a message. */
    private List<Future<Long>> threeWaitersAfterASilentDelete(Baton baton) throws Exception {
        List<Future<Long>> waiters = new ArrayList<>();
        long attemptsBefore = redis.calls("evalsha");
        for (int i = 0; i < 3; i++) {
            waiters.add(threads.submit(() -> {
                BatonLock lock = baton.lock(NAME);
                if (!lock.tryLock(10, TimeUnit.SECONDS)) {
                    return -1L;
                }
                long at = System.nanoTime();
                lock.unlock();
                return at;
            }));
        }
        redis.awaitSubscribers(CHANNEL, 1);
        // Each waiter is refused twice before it parks: once before it subscribes, once after.
        Await.until(Bounds.WAKE, () -> "the three waiters to be refused twice each",
                () -> redis.calls("evalsha") >= attemptsBefore + 6);
        // Each has read the TTL (its timer is at most the lease away) and parked; the key goes
        // without a message, as an operator's DEL or an expiry does.
        assertEquals(1L, redis.command("DEL", NAME));
        return waiters;
    }

    @Test
    void theHoldersUnlockThatReportsTheLossWakesTheClientsOwnWaitersAtOnce() throws Exception {
        Baton baton = clients.open(Clients.defaults(redis).build()); // watchdog 30 s
        BatonLock held = baton.lock(NAME);
        held.lockAsync(HOLDER).toCompletableFuture().get(5, TimeUnit.SECONDS);
        List<Future<Long>> waiters = threeWaitersAfterASilentDelete(baton);
        java.util.concurrent.ExecutionException lost = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> held.unlockAsync(HOLDER).toCompletableFuture().get(5, TimeUnit.SECONDS));
        long reported = System.nanoTime();
        assertTrue(lost.getCause() instanceof LeaseLostException, String.valueOf(lost.getCause()));
        assertAllGrantedWithin(waiters, reported, Bounds.within(Duration.ZERO), "its unlock reported the loss");
    }

    @Test
    void theWatchdogsFindingWakesTheClientsOwnWaitersAtOnce() throws Exception {
        Duration watchdog = Duration.ofMillis(3000);
        Baton baton = clients.open(Clients.defaults(redis).watchdogTimeout(watchdog).build());
        baton.lock(NAME).lockAsync(HOLDER).toCompletableFuture().get(5, TimeUnit.SECONDS);
        List<Future<Long>> waiters = threeWaitersAfterASilentDelete(baton);
        long deleted = System.nanoTime();
        // The renewal finds it gone within a third of the watchdog timeout (+ its round trip);
        // the waiters' own timers would have them try up to the whole lease later.
        assertAllGrantedWithin(waiters, deleted, Bounds.within(watchdog.dividedBy(3)), "the lock was deleted");
    }

    private static void assertAllGrantedWithin(List<Future<Long>> waiters, long from, Duration bound, String what) throws Exception {
        long first = Long.MAX_VALUE;
        for (Future<Long> waiter : waiters) {
            long at = waiter.get(15, TimeUnit.SECONDS);
            assertTrue(at > 0, "a waiter timed out after its 10 s wait");
            first = Math.min(first, at);
        }
        long afterMs = TimeUnit.NANOSECONDS.toMillis(first - from);
        System.out.printf("[OwnWaitersWokenTest] the first waiter was granted %d ms after %s (bound %d ms)%n",
                afterMs, what, bound.toMillis());
        assertTrue(first - from <= bound.toNanos(), "the first waiter was granted " + afterMs + " ms after " + what
                + ", bound " + bound.toMillis() + " ms");
    }

}
