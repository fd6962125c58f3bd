package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The two rules of times every kind keeps (guarantees.md, "Times and lease times"):
 * <ul>
 *   <li>a wait time of zero or less means "try once, do not wait", as the JDK's
 *       {@code Lock.tryLock}, {@code Semaphore.tryAcquire} and {@code CountDownLatch.await}
 *       say: answered from one attempt, never refused;</li>
 *   <li>a negative lease time means "no lease time", Redisson's {@code -1}: a watchdog-renewed
 *       lock, a permit that never expires, as the overload without a lease; zero is refused
 *       with one message everywhere, and the RedLock, which has no watchdog, refuses negative
 *       leases with its own.</li>
 * </ul>
 * Each call under a wait of zero or less on a taken synchronizer must answer within the
 * command timeout + 150 ms, the bound of a call that does not wait (a call that waited for
 * its (ignored) negative time, or treated it as "forever", fails that).
 */
class TimesAndLeasesTest extends TwoClientsTest {
    TimesAndLeasesTest(RedisServer redis) {
        super(redis);
    }

    /** The bound of one attempt: the command timeout (Clients' default) + 150 ms. */
    private long oneAttemptBoundMs() {
        return a.options().commandTimeout().toMillis() + 150;
    }

    private <T> T withinOneAttempt(String what, Callable<T> call) throws Exception {
        long started = System.nanoTime();
        T result = call.call();
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(tookMs <= oneAttemptBoundMs(), what + " took " + tookMs + " ms, over one attempt's bound "
                + oneAttemptBoundMs() + " ms");
        return result;
    }

    /** Locks of every kind: a time of zero or less tries once, on a free lock and on a held one. */
    @Test
    void aWaitTimeOfZeroOrLessTriesOnceOnEveryLockKind() throws Exception {
        Map<String, java.util.function.Function<Baton, BatonLock>> kinds = new LinkedHashMap<>();
        kinds.put("lock", x -> x.lock("t-lock"));
        kinds.put("fair", x -> x.fairLock("t-fair"));
        kinds.put("write", x -> x.readWriteLock("t-rw").writeLock());
        kinds.put("read (against a writer)", x -> x.readWriteLock("t-rw2").readLock());
        kinds.put("fenced", x -> x.fencedLock("t-fenced"));
        for (Map.Entry<String, java.util.function.Function<Baton, BatonLock>> kind : kinds.entrySet()) {
            String k = kind.getKey();
            BatonLock mine = kind.getValue().apply(a);
            assertTrue(withinOneAttempt(k + " tryLock(-1 ms) free", () -> mine.tryLock(-1, TimeUnit.MILLISECONDS)), k);
            mine.unlock();
            assertTrue(withinOneAttempt(k + " tryLock(0 s, lease) free", () -> mine.tryLock(0, 5, TimeUnit.SECONDS)), k);
            mine.unlock();
            assertTrue(withinOneAttempt(k + " tryLockAsync(-5 s) free",
                    () -> mine.tryLockAsync(-5, TimeUnit.SECONDS, 77).toCompletableFuture().get(5, TimeUnit.SECONDS)), k);
            mine.unlockAsync(77).toCompletableFuture().get(5, TimeUnit.SECONDS);

            // Held elsewhere (for the read side: a writer of the other client).
            BatonLock theirs = k.startsWith("read") ? b.readWriteLock("t-rw2").writeLock() : kind.getValue().apply(b);
            assertTrue(threads.submit(() -> theirs.tryLock()).get(5, TimeUnit.SECONDS), k);
            assertFalse(withinOneAttempt(k + " tryLock(-5 s) held", () -> mine.tryLock(-5, TimeUnit.SECONDS)), k);
            assertFalse(withinOneAttempt(k + " tryLock(-1 ms, lease) held", () -> mine.tryLock(-1, 5_000, TimeUnit.MILLISECONDS)), k);
            assertFalse(withinOneAttempt(k + " tryLockAsync(-1, lease) held",
                    () -> mine.tryLockAsync(-1, 5, TimeUnit.SECONDS, 78).toCompletableFuture().get(5, TimeUnit.SECONDS)), k);
            if (mine instanceof BatonFencedLock fenced) {
                assertEquals(OptionalLong.empty(), withinOneAttempt("fenced tryLockAndGetToken(-1) held",
                        () -> fenced.tryLockAndGetToken(-1, 5, TimeUnit.SECONDS)));
            }
            assertFalse(mine.isHeldByCurrentThread(), k + ": nothing held after the refusals");
        }
    }

    @Test
    void aWaitTimeOfZeroOrLessTriesOnceOnMultiLocksSemaphoresAndLatches() throws Exception {
        BatonMultiLock multi = Baton.multiLock(a.lock("t-m1"), a.lock("t-m2"));
        assertTrue(withinOneAttempt("multi tryLock(-1) free", () -> multi.tryLock(-1, TimeUnit.SECONDS)));
        multi.unlock();
        assertTrue(threads.submit(() -> b.lock("t-m2").tryLock()).get(5, TimeUnit.SECONDS));
        assertFalse(withinOneAttempt("multi tryLock(-1, lease) held", () -> multi.tryLock(-1, 5, TimeUnit.SECONDS)));
        assertFalse(a.lock("t-m1").isLocked(), "the first member was given back");

        BatonSemaphore semaphore = a.semaphore("t-sem");
        semaphore.trySetPermits(1);
        assertTrue(withinOneAttempt("semaphore tryAcquire(-1 ms) free", () -> semaphore.tryAcquire(-1, TimeUnit.MILLISECONDS)));
        assertFalse(withinOneAttempt("semaphore tryAcquire(-5 s) none left", () -> semaphore.tryAcquire(-5, TimeUnit.SECONDS)));
        assertFalse(withinOneAttempt("semaphore tryAcquireAsync(2, -1) none left",
                () -> semaphore.tryAcquireAsync(2, -1, TimeUnit.SECONDS).toCompletableFuture().get(5, TimeUnit.SECONDS)));
        semaphore.release();
        assertEquals(1, semaphore.availablePermits(), "no permit lost or added by the refusals");

        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore("t-exp");
        expirable.trySetPermits(1);
        Optional<String> id = withinOneAttempt("expirable tryAcquire(-1, lease) free",
                () -> expirable.tryAcquire(-1, 5, TimeUnit.SECONDS));
        assertTrue(id.isPresent());
        assertEquals(Optional.empty(), withinOneAttempt("expirable tryAcquire(-1, lease) none left",
                () -> expirable.tryAcquire(-1, 5, TimeUnit.SECONDS)));
        assertEquals(List.of(), withinOneAttempt("expirable tryAcquire(1, 0, lease) none left",
                () -> expirable.tryAcquire(1, 0, 5, TimeUnit.SECONDS)));
        expirable.release(id.get());
        assertEquals(1, expirable.availablePermits());

        BatonCountDownLatch latch = a.countDownLatch("t-latch");
        assertTrue(latch.trySetCount(1));
        assertFalse(withinOneAttempt("latch await(-1 s) closed", () -> latch.await(-1, TimeUnit.SECONDS)));
        assertFalse(withinOneAttempt("latch awaitAsync(-1 s) closed",
                () -> latch.awaitAsync(-1, TimeUnit.SECONDS).toCompletableFuture().get(5, TimeUnit.SECONDS)));
        latch.countDown();
        assertTrue(withinOneAttempt("latch await(-1 s) open", () -> latch.await(-1, TimeUnit.SECONDS)));
    }

    /** The PTTL of a watchdog hold: close to the watchdog timeout, where a fixed lease of 1 s is at most 1 s. */
    private void assertWatchdogHold(String what, String key) {
        long watchdogMs = a.options().watchdogTimeout().toMillis();
        long ttl = (Long) redis.command("PTTL", key);
        assertTrue(ttl > watchdogMs - 5_000 && ttl <= watchdogMs, what + ": a watchdog lease, PTTL " + ttl
                + " (watchdog timeout " + watchdogMs + " ms)");
    }

    @Test
    void aNegativeLeaseMeansTheWatchdogOnEveryLockKindAndTheMultiLock() throws Exception {
        BatonLock lock = a.lock("l-lock");
        lock.lock(-1, TimeUnit.SECONDS);
        assertWatchdogHold("lock(-1)", "l-lock");
        IllegalStateException renewed = assertThrows(IllegalStateException.class,
                () -> lock.updateLease(java.time.Duration.ofSeconds(1)));
        assertTrue(renewed.getMessage().contains("watchdog"), renewed.getMessage());
        lock.unlock();
        assertTrue(lock.tryLock(0, -1, TimeUnit.MILLISECONDS));
        assertWatchdogHold("tryLock(0, -1)", "l-lock");
        lock.unlock();
        lock.lockInterruptibly(-5, TimeUnit.SECONDS);
        assertWatchdogHold("lockInterruptibly(-5)", "l-lock");
        lock.unlock();
        try (LockHold hold = lock.acquire(-1, TimeUnit.SECONDS)) {
            assertWatchdogHold("acquire(-1)", "l-lock");
        }
        lock.lockAsync(-1, TimeUnit.SECONDS, 91).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertWatchdogHold("lockAsync(-1)", "l-lock");
        lock.unlockAsync(91).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertTrue(lock.tryLockAsync(1, -1, TimeUnit.SECONDS, 92).toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertWatchdogHold("tryLockAsync(1, -1)", "l-lock");
        lock.unlockAsync(92).toCompletableFuture().get(5, TimeUnit.SECONDS);

        BatonLock fair = a.fairLock("l-fair");
        assertTrue(fair.tryLock(1, -1, TimeUnit.SECONDS));
        assertWatchdogHold("fair tryLock(1, -1)", "l-fair");
        fair.unlock();
        BatonLock write = a.readWriteLock("l-rw").writeLock();
        write.lock(-1, TimeUnit.SECONDS);
        assertWatchdogHold("write lock(-1)", "l-rw");
        write.unlock();
        BatonLock read = a.readWriteLock("l-rw").readLock();
        read.lock(-1, TimeUnit.SECONDS);
        assertWatchdogHold("read lock(-1)", "l-rw");
        read.unlock();
        BatonFencedLock fenced = a.fencedLock("l-fenced");
        fenced.lockAndGetToken(-1, TimeUnit.SECONDS);
        assertWatchdogHold("fenced lockAndGetToken(-1)", "l-fenced");
        fenced.unlock();
        assertTrue(fenced.tryLockAndGetToken(0, -1, TimeUnit.SECONDS).isPresent());
        assertWatchdogHold("fenced tryLockAndGetToken(0, -1)", "l-fenced");
        fenced.unlock();

        BatonMultiLock multi = Baton.multiLock(a.lock("l-m1"), a.lock("l-m2"));
        multi.lock(-1, TimeUnit.SECONDS);
        assertWatchdogHold("multi lock(-1) first", "l-m1");
        assertWatchdogHold("multi lock(-1) second", "l-m2");
        multi.unlock();
        assertTrue(multi.tryLock(1, -1, TimeUnit.SECONDS));
        assertWatchdogHold("multi tryLock(1, -1)", "l-m2");
        multi.unlock();
        assertTrue(multi.tryLockAsync(1, -1, TimeUnit.SECONDS, 93).toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertWatchdogHold("multi tryLockAsync(1, -1)", "l-m1");
        multi.unlockAsync(93).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(0L, redis.command("EXISTS", "l-lock", "l-fair", "l-rw", "l-fenced", "l-m1", "l-m2"));
    }

    /** Redisson's score for "never": the permit's entry in {@code {name}:timeout}. */
    private static final String NEVER = "922337203685477";

    @Test
    void aNegativeLeaseMeansAPermitThatNeverExpires() throws Exception {
        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore("l-exp");
        expirable.trySetPermits(5);
        String one = expirable.acquire(-1, TimeUnit.SECONDS);
        String two = expirable.tryAcquire(0, -1, TimeUnit.SECONDS).orElseThrow();
        List<String> more = expirable.acquire(2, -1, TimeUnit.SECONDS);
        String last = expirable.tryAcquireAsync(0, -1, TimeUnit.SECONDS).toCompletableFuture().get(5, TimeUnit.SECONDS).orElseThrow();
        assertEquals(5L, redis.command("ZCARD", "{l-exp}:timeout"));
        assertEquals(5L, redis.command("ZCOUNT", "{l-exp}:timeout", NEVER, NEVER), "every permit's expiry is 'never'");
        assertEquals(0, expirable.availablePermits());
        for (String id : List.of(one, two, more.get(0), more.get(1), last)) {
            expirable.release(id);
        }
        assertEquals(5, expirable.availablePermits());
    }

    @Test
    void aZeroLeaseIsRefusedWithOneMessageAndTheRedLockRefusesNegativeOnes() {
        BatonLock lock = a.lock("z");
        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore("z-exp");
        BatonMultiLock multi = Baton.multiLock(a.lock("z1"), a.lock("z2"));
        Map<String, Executable> zeros = new LinkedHashMap<>();
        zeros.put("lock(0)", () -> lock.lock(0, TimeUnit.SECONDS));
        zeros.put("tryLock(1, 0)", () -> lock.tryLock(1, 0, TimeUnit.SECONDS));
        zeros.put("lockAsync(0)", () -> lock.lockAsync(0, TimeUnit.SECONDS, 1));
        zeros.put("fenced lockAndGetToken(0)", () -> a.fencedLock("z-f").lockAndGetToken(0, TimeUnit.SECONDS));
        zeros.put("multi lock(0)", () -> multi.lock(0, TimeUnit.SECONDS));
        zeros.put("multi tryLock(1, 0)", () -> multi.tryLock(1, 0, TimeUnit.SECONDS));
        zeros.put("multi tryLockAsync(1, 0)", () -> multi.tryLockAsync(1, 0, TimeUnit.SECONDS, 1));
        zeros.put("expirable acquire(0)", () -> expirable.acquire(0, TimeUnit.SECONDS));
        zeros.put("expirable tryAcquire(1, 0)", () -> expirable.tryAcquire(1, 0, TimeUnit.SECONDS));
        for (Map.Entry<String, Executable> call : zeros.entrySet()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call.getValue(), call.getKey());
            assertTrue(e.getMessage().startsWith("leaseTime must not be 0 SECONDS: give a positive lease, or a negative one"
                    + " (as Redisson's -1) for no lease time"), call.getKey() + ": " + e.getMessage());
        }
        assertEquals(0L, redis.command("EXISTS", "z", "z-exp", "z-f", "z1", "z2"), "nothing reached Redis");
    }
}
