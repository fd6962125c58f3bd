package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rate limiter on one real Redis with two clients: the rate across clients, a timed call
 * that refuses at once, a wait that ends at its slot, reservations undone by an interrupt and a
 * cancel, the stored limit, the key's expiry, bad input, and Redis not answering. The exact
 * count on Redis's clock is RateScriptsTest's (a server clock the test sets); here the callers'
 * own clocks see it, with what a reply's transit and a thread's wake-up add.
 */
class RateLimiterTest extends TwoClientsTest {
    /**
     * How late a call may start after its slot, as its caller sees it: a reply's transit and a
     * thread's wake-up (stated margin; the drift allowance of the wait, 1 %, is added apart).
     */
    private static final long LATE_MS = 20;

    RateLimiterTest(RedisServer redis) {
        super(redis);
    }

    /**
     * 8 threads on two clients take 300 permits of 100 per second (burst 5) with acquire(): in
     * every window of w of their start times at most 100 × (w + 20 ms) + 5 started, and the
     * limiter was used to at least 99 % (the span from the first start to the last at most
     * (300 − 5) / 100 s / 0.99).
     */
    @Test
    void acrossTwoClientsNoWindowPassesTheRateAndTheRateIsUsed() throws Exception {
        RateLimit limit = RateLimit.perSecond(100).withBurst(5);
        List<Long> starts = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger left = new AtomicInteger(300);
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            BatonRateLimiter limiter = (t % 2 == 0 ? a : b).rateLimiter("rate-two", limit);
            workers.add(threads.submit(() -> {
                while (left.getAndDecrement() > 0) {
                    limiter.acquire();
                    starts.add(System.nanoTime());
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(30, TimeUnit.SECONDS);
        }
        List<Long> sorted = new ArrayList<>(starts);
        Collections.sort(sorted);
        assertEquals(300, sorted.size());
        for (int i = 0; i < sorted.size(); i++) {
            for (int j = i; j < sorted.size(); j++) {
                double w = (sorted.get(j) - sorted.get(i)) / 1e9 + LATE_MS / 1e3;
                int count = j - i + 1;
                assertTrue(count <= 100 * w + 5, count + " starts within " + (sorted.get(j) - sorted.get(i)) / 1_000_000
                        + " ms: more than 100 per second × (w + " + LATE_MS + " ms) + 5");
            }
        }
        double span = (sorted.get(sorted.size() - 1) - sorted.get(0)) / 1e9;
        System.out.printf("[RateLimiterTest] 300 permits at 100/s, burst 5, on 8 threads of 2 clients: first to last %.3f s"
                + " (the bound allows no less than 2.950 s; 99 %% use is at most %.3f s)%n", span, 2.95 / 0.99);
        assertTrue(span <= 2.95 / 0.99, "the limiter was used to less than 99 %: " + span + " s for 295 permits at 100/s");
    }

    /** A timed call whose slot lies beyond its timeout returns false in one round trip and reserves nothing. */
    @Test
    void aTimedCallWhoseSlotIsTooFarRefusesAtOnceAndReservesNothing() throws Exception {
        BatonRateLimiter limiter = a.rateLimiter("rate-refuse", RateLimit.perSecond(1));
        assertTrue(limiter.tryAcquire());
        long t0 = System.nanoTime();
        assertFalse(limiter.tryAcquire(1, 500, TimeUnit.MILLISECONDS), "the slot is about 1 s away");
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(tookMs < 300, "refused in " + tookMs + " ms, not at once (bound: one round trip + 300 ms)");
        BatonRateLimiter.State state = limiter.state();
        assertEquals(0, state.availablePermits());
        assertTrue(state.reservedAhead().compareTo(Duration.ofSeconds(1)) <= 0, "nothing reserved: " + state);
        assertFalse(b.rateLimiter("rate-refuse", RateLimit.perSecond(1)).tryAcquire(), "another client: no permit now");
    }

    /** A timed call whose slot comes within its timeout starts at the slot: not before it, and within 20 % after (the margin rule). */
    @Test
    void aTimedCallStartsAtItsSlot() throws Exception {
        BatonRateLimiter limiter = a.rateLimiter("rate-slot", RateLimit.perSecond(5));
        long t0 = System.nanoTime();
        assertTrue(limiter.tryAcquire());
        long t1 = System.nanoTime();
        assertTrue(limiter.tryAcquire(1, 1, TimeUnit.SECONDS), "the slot is 200 ms after the first");
        long t2 = System.nanoTime();
        long afterFirstSent = TimeUnit.NANOSECONDS.toMillis(t2 - t0);
        long afterFirstHeard = TimeUnit.NANOSECONDS.toMillis(t2 - t1);
        assertTrue(afterFirstSent >= 199, "started " + afterFirstSent + " ms after the first call was sent, before its slot");
        // The margin rule: a time d checked at d + 20 % of d (40 ms here).
        assertTrue(afterFirstHeard <= 200 + 40, "started " + afterFirstHeard + " ms after the first was admitted,"
                + " later than its slot (200 ms) + 20 %");
    }

    /**
     * An interrupted acquire() undoes its reservation at once: at 1 permit per 10 s, the reserved
     * slot lies 10 s after the first, and within the clean-up bound (300 ms) after the interrupt
     * the next call's slot is back to about 10 s, not 20 s.
     */
    @Test
    void anInterruptUndoesTheReservation() throws Exception {
        RateLimit slow = RateLimit.of(1, Duration.ofSeconds(10));
        BatonRateLimiter limiter = a.rateLimiter("rate-interrupt", slow);
        assertTrue(limiter.tryAcquire());
        CompletableFuture<Throwable> ended = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                limiter.acquire();
                ended.complete(null);
            } catch (Throwable e) {
                ended.complete(e);
            }
        });
        waiter.start();
        Await.until(Duration.ofSeconds(5), () -> "the waiter reserved", () -> limiter.state().reservedAhead().toSeconds() >= 15);
        waiter.interrupt();
        assertTrue(ended.get(5, TimeUnit.SECONDS) instanceof InterruptedException, "ended with " + ended.getNow(null));
        Await.until(Bounds.CLEAN_UP, () -> "the reservation undone: " + limiter.state(),
                () -> limiter.state().reservedAhead().toSeconds() < 11);
        assertFalse(b.rateLimiter("rate-interrupt", slow).tryAcquire(1, 9, TimeUnit.SECONDS),
                "the next slot is still about 10 s after the first (nothing came back early)");
    }

    /** A cancelled acquireAsync (the stage Baton returned) undoes its reservation as an interrupt does. */
    @Test
    void aCancelledStageUndoesTheReservation() throws Exception {
        BatonRateLimiter limiter = a.rateLimiter("rate-cancel", RateLimit.of(1, Duration.ofSeconds(10)));
        assertTrue(limiter.tryAcquire());
        CompletableFuture<Void> waiting = limiter.acquireAsync(1).toCompletableFuture();
        Await.until(Duration.ofSeconds(5), () -> "the stage reserved", () -> limiter.state().reservedAhead().toSeconds() >= 15);
        assertTrue(waiting.cancel(false));
        assertThrows(CancellationException.class, waiting::join);
        Await.until(Bounds.CLEAN_UP, () -> "the reservation undone: " + limiter.state(),
                () -> limiter.state().reservedAhead().toSeconds() < 11);
        CompletableFuture<Boolean> timed = limiter.tryAcquireAsync(1, 30, TimeUnit.SECONDS).toCompletableFuture();
        Await.until(Duration.ofSeconds(5), () -> "the timed stage reserved", () -> limiter.state().reservedAhead().toSeconds() >= 15);
        timed.orTimeout(1, TimeUnit.MILLISECONDS);
        Await.until(Bounds.CLEAN_UP, () -> "the reservation ended by orTimeout undone: " + limiter.state(),
                () -> limiter.state().reservedAhead().toSeconds() < 11);
    }

    /** While the limiter exists, the stored limit applies to every handle; setLimit changes it for all. */
    @Test
    void theStoredLimitWinsUntilSetLimitChangesIt() throws InterruptedException {
        RateLimit slow = RateLimit.perSecond(1);
        RateLimit fast = RateLimit.perSecond(100).withBurst(5);
        BatonRateLimiter first = a.rateLimiter("rate-limits", slow);
        BatonRateLimiter second = b.rateLimiter("rate-limits", fast);
        assertTrue(first.tryAcquire());
        assertEquals(fast, second.getLimit());
        assertEquals(slow, second.state().limit(), "the limit in force is the stored one");
        assertFalse(second.tryAcquire(), "served under the stored limit: 1 per second, used");
        second.setLimit(fast);
        assertEquals(fast, first.state().limit());
        assertTrue(first.tryAcquire(1, 100, TimeUnit.MILLISECONDS), "the 1 s backlog of one permit costs 10 ms at 100/s");
        assertTrue(second.delete());
        assertFalse(second.delete());
        assertEquals(slow, first.state().limit(), "a limiter that does not exist shows the handle's own limit");
    }

    /** The key goes by itself once the limiter has refilled (its PTTL at most the refill time + 2 ms). */
    @Test
    void theKeyGoesOnceTheLimiterHasRefilled() {
        BatonRateLimiter limiter = a.rateLimiter("rate-ttl", RateLimit.perSecond(10).withBurst(3));
        assertTrue(limiter.tryAcquire(3));
        long pttl = (Long) redis.command("PTTL", "baton_rate:{rate-ttl}");
        assertTrue(pttl > 250 && pttl <= 302, "PTTL " + pttl + " ms: the 300 ms refill + 2 ms");
        Await.until(Duration.ofMillis(302 + 300), () -> "the key gone after the refill",
                () -> (Long) redis.command("EXISTS", "baton_rate:{rate-ttl}") == 0L);
        assertEquals(3, limiter.state().availablePermits());
    }

    @Test
    void badInputIsRefusedWithWhatWasWrong() {
        BatonRateLimiter limiter = a.rateLimiter("rate-bad", RateLimit.perSecond(10).withBurst(2));
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> limiter.tryAcquire(0));
        assertTrue(zero.getMessage().contains("at least 1") && zero.getMessage().contains("rate-bad"), zero.getMessage());
        IllegalArgumentException over = assertThrows(IllegalArgumentException.class, () -> limiter.acquire(3));
        assertTrue(over.getMessage().contains("burst of 2") && over.getMessage().contains("rate-bad"), over.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RateLimit.perSecond(0));
        assertThrows(IllegalArgumentException.class, () -> RateLimit.of(5, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> RateLimit.perSecond(5).withBurst(0));
        assertThrows(IllegalArgumentException.class, () -> RateLimit.of(5, Duration.ofDays(365)).withBurst(1_000_000));
        assertThrows(NullPointerException.class, () -> a.rateLimiter("rate-bad", null));
        assertThrows(IllegalArgumentException.class, () -> a.rateLimiter(" ", RateLimit.perSecond(1)));
        assertEquals("50 per 1 s, burst 1", RateLimit.perSecond(50).toString());
        assertEquals("3 per 250 ms, burst 2", RateLimit.of(3, Duration.ofMillis(250)).withBurst(2).toString());
    }

    /** Redis not answering: RedisUnavailableException within the command timeout + 150 ms, and nothing stays reserved. */
    @Test
    void redisNotAnsweringFailsWithinTheTimeoutAndReservesNothing() throws Exception {
        Baton shortTimeout = clients.open(Clients.defaults(redis).commandTimeout(Duration.ofMillis(500)).build());
        BatonRateLimiter limiter = shortTimeout.rateLimiter("rate-down", RateLimit.perSecond(1));
        assertTrue(limiter.tryAcquire());
        redis.pause();
        long t0 = System.nanoTime();
        try {
            assertThrows(RedisUnavailableException.class, () -> limiter.tryAcquire(1, 5, TimeUnit.SECONDS));
        } finally {
            redis.resume();
        }
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(tookMs <= 500 + 150, "failed after " + tookMs + " ms, beyond the 500 ms command timeout + 150 ms");
        // The unanswered request ran when Redis came back, and Baton's undo by its id after it.
        Await.until(Duration.ofSeconds(3), () -> "nothing left reserved: " + limiter.state(),
                () -> limiter.state().reservedAhead().toMillis() <= 1_000);
    }
}
