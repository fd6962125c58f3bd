package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The lock contract every kind of Baton lock keeps, with two clients on one real Redis. Each
 * kind runs it through a subclass that says how to obtain the lock and what its channel is.
 */
abstract class LockContractTest extends TwoClientsTest {
    LockContractTest(RedisServer redis) {
        super(redis);
    }

    /** The lock of the kind under test. */
    abstract BatonLock lock(Baton baton, String name);

    /** The pub/sub channel waiters of this kind subscribe to. */
    abstract String channel(String name);

    /** The lock hash field an owner's holds are stored under (the write side adds ":write"). */
    String field(String owner) {
        return owner;
    }

    private String owner(Baton baton, long threadId) {
        return field(baton.clientId() + ":" + threadId);
    }

    @Test
    void lockIsExclusiveAcrossClientsAndStoredRedissonStyle() throws Exception {
        BatonLock lock = lock(a, "orders");
        lock.lock();
        assertEquals("1", redis.command("HGET", "orders", owner(a, Thread.currentThread().getId())));
        long ttl = (Long) redis.command("PTTL", "orders");
        assertTrue(ttl > 20_000 && ttl <= 30_000, "watchdog lease, ttl " + ttl);
        assertFalse(threads.submit(() -> lock(b, "orders").tryLock()).get());
        assertTrue(lock.isLocked());
        assertTrue(lock(b, "orders").isLocked());
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(threads.submit(() -> lock(a, "orders").isHeldByCurrentThread()).get());
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "orders"));
        assertTrue(threads.submit(() -> lock(b, "orders").tryLock()).get());
    }

    /**
     * A holder whose lock was taken away (here by another client's forceUnlock, and held by that
     * client meanwhile) and that re-enters is told of the loss, not granted a fresh hold as if it
     * had held throughout: the re-entry throws LeaseLostException, holds nothing afterwards, and
     * its outer unlock reports the loss too. Found by the interleaving fuzzer's forceUnlock storms.
     */
    @Test
    void aReEntryAfterTheLeaseWasLostReportsTheLossAndHoldsNothing() throws Exception {
        BatonLock lock = lock(a, "re-entered");
        lock.lock();
        assertTrue(lock(b, "re-entered").forceUnlock());
        assertTrue(threads.submit(() -> {
            BatonLock theirs = lock(b, "re-entered");
            boolean got = theirs.tryLock();
            if (got) {
                theirs.unlock();
            }
            return got;
        }).get(10, TimeUnit.SECONDS), "another client held it in between");
        LeaseLostException lost = assertThrows(LeaseLostException.class, lock::lock);
        assertTrue(lost.getMessage().contains("re-entry"), lost.getMessage());
        assertFalse(lock.isHeldByCurrentThread(), "the fresh hold was given back");
        assertEquals(0, a.leasesHeld());
        assertThrows(LeaseLostException.class, lock::unlock, "the outer hold's unlock reports the loss");
        assertThrows(IllegalMonitorStateException.class, lock::unlock, "and nothing is held after it");
        assertTrue(threads.submit(() -> lock(b, "re-entered").tryLock(5, TimeUnit.SECONDS)).get(10, TimeUnit.SECONDS),
                "the lock is free for others");

        // The same while the other client still holds it: the re-entry is refused, which for an
        // owner that holds can only mean its holds are gone. It fails at once, instead of
        // waiting (and, on the fair lock, being handed a fresh hold it takes for its old one).
        BatonLock again = lock(a, "re-entered-2");
        again.lock();
        assertTrue(lock(b, "re-entered-2").forceUnlock());
        Future<?> other = threads.submit(() -> {
            lock(b, "re-entered-2").lock(); // held by b's pool thread until the end of the test
            return null;
        });
        other.get(10, TimeUnit.SECONDS);
        long started = System.nanoTime();
        assertThrows(LeaseLostException.class, () -> again.tryLock(5, TimeUnit.SECONDS));
        assertTrue(System.nanoTime() - started < Bounds.failure(Duration.ofSeconds(2)).toNanos(),
                "refused at once, not after waiting");
        assertFalse(again.isHeldByCurrentThread());
        assertThrows(LeaseLostException.class, again::unlock);
    }

    /**
     * A caller that bounds an async wait the usual way (orTimeout, completeOnTimeout) or completes
     * its future by hand has given up: the wait is abandoned and holds nothing when the lock is
     * released, instead of taking it for nobody (held and renewed until the client closed).
     */
    @Test
    void aWaitWhoseFutureTheCallerCompletesIsAbandonedAndHoldsNothing() throws Exception {
        BatonLock held = lock(a, "given-up");
        held.lock();
        BatonLock waiting = lock(b, "given-up");
        List<CompletableFuture<?>> givenUp = List.of(
                waiting.lockAsync(9_000_000_001L).toCompletableFuture().orTimeout(200, TimeUnit.MILLISECONDS),
                waiting.lockAsync(9_000_000_002L).toCompletableFuture().completeOnTimeout(null, 200, TimeUnit.MILLISECONDS),
                waiting.tryLockAsync(10, TimeUnit.SECONDS, 9_000_000_003L).toCompletableFuture()
                        .orTimeout(200, TimeUnit.MILLISECONDS),
                byHand(waiting.lockAsync(9_000_000_004L).toCompletableFuture(), null),
                byHand(waiting.tryLockAsync(10, TimeUnit.SECONDS, 9_000_000_005L).toCompletableFuture(), false));
        for (CompletableFuture<?> f : givenUp) {
            try {
                f.get(5, TimeUnit.SECONDS);
            } catch (ExecutionException timedOut) {
                assertTrue(timedOut.getCause() instanceof java.util.concurrent.TimeoutException, timedOut.toString());
            }
        }
        held.unlock();
        // Nothing to wait for but the absence of a grant: watch for the wake-up bound, in which
        // a waiter that was still waiting would have taken the lock.
        Thread.sleep(Bounds.within(Bounds.WAKE).toMillis());
        assertEquals(0L, redis.command("EXISTS", "given-up"), "an abandoned wait took the lock for nobody");
        assertEquals(0, b.leasesHeld());
        assertTrue(threads.submit(() -> lock(a, "given-up").tryLock()).get(), "the lock is free for others");
    }

    /** The caller completes the future itself while the acquisition is still under way. */
    private static <T> CompletableFuture<T> byHand(CompletableFuture<T> future, T value) {
        assertTrue(future.complete(value), "the wait had not ended yet");
        return future;
    }

    @Test
    void reentrantHoldsAreCountedAndReleasedOneByOne() {
        BatonLock lock = lock(a, "reentrant");
        lock.lock();
        lock.lock();
        assertTrue(lock.tryLock());
        assertEquals(3, lock.getHoldCount());
        lock.unlock();
        lock.unlock();
        assertEquals(1, lock.getHoldCount());
        assertTrue(lock.isLocked());
        lock.unlock();
        assertEquals(0, lock.getHoldCount());
        assertFalse(lock.isLocked());
    }

    @Test
    void aWaiterIsWokenByTheReleaseNotByTheLease() throws Exception {
        BatonLock held = lock(a, "handoff");
        held.lock(); // watchdog lease: 30 s, far beyond this test's bound
        Future<Long> waiter = threads.submit(() -> {
            assertTrue(lock(b, "handoff").tryLock(15, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        redis.awaitSubscribers(channel("handoff"), 1);
        long released = System.nanoTime();
        held.unlock();
        long wokenAfter = waiter.get(15, TimeUnit.SECONDS) - released;
        assertTrue(wokenAfter <= Bounds.within(Bounds.WAKE).toNanos(), "woken " + wokenAfter / 1_000_000 + " ms after the release");
    }

    @Test
    void tryLockTimesOutAtItsWaitTimeWithoutLeavingASubscription() throws Exception {
        lock(a, "busy").lock();
        Duration wait = Duration.ofMillis(400);
        long started = System.nanoTime();
        assertFalse(threads.submit(() -> lock(b, "busy").tryLock(wait.toMillis(), TimeUnit.MILLISECONDS)).get());
        long took = System.nanoTime() - started;
        assertTrue(took >= wait.toNanos() && took <= Bounds.within(wait).toNanos(),
                "false after its wait time, not before and not much after: " + took / 1_000_000 + " ms");
        redis.awaitSubscribers(channel("busy"), 0, Bounds.CLEAN_UP);
    }

    @Test
    void aLeaseExpiresWithoutRenewal() throws Exception {
        BatonLock lock = lock(a, "leased");
        Duration lease = Duration.ofMillis(300);
        lock.lock(lease.toMillis(), TimeUnit.MILLISECONDS);
        long taken = System.nanoTime();
        long ttl = (Long) redis.command("PTTL", "leased");
        assertTrue(ttl > 0 && ttl <= 300, "ttl " + ttl);
        assertTrue(threads.submit(() -> lock(b, "leased").tryLock(10, TimeUnit.SECONDS)).get());
        long freedAfter = System.nanoTime() - taken;
        assertTrue(freedAfter <= Bounds.within(lease).toNanos(), "a fixed lease ends at its end, never renewed: "
                + freedAfter / 1_000_000 + " ms");
        LeaseLostException lost = assertThrows(LeaseLostException.class, lock::unlock);
        assertEquals("leased", lost.lockName());
    }

    /**
     * A fixed lease that runs out without a release is not held any more: the client stops
     * counting it (and keeps no entry for it, however many there were), and its owner's unlock
     * still reports the loss once. A ShedLock task's lock kept for lockAtLeastFor ends this way
     * on every run.
     */
    @Test
    void fixedLeasesThatRanOutAreForgottenAndTheirUnlockStillReportsTheLoss() throws Exception {
        BatonLock lock = lock(a, "ranout");
        lock.lock(200, TimeUnit.MILLISECONDS);
        BatonLock updated = lock(a, "updated");
        updated.lock(30, TimeUnit.SECONDS);
        updated.updateLease(Duration.ofMillis(200));
        for (int i = 0; i < 50; i++) {
            assertTrue(lock(a, "many-" + i).tryLock(0, 200, TimeUnit.MILLISECONDS));
        }
        assertEquals(52, a.leasesHeld());
        dev.baton.testkit.Await.until(Bounds.within(Duration.ofMillis(200)), () -> "the fixed leases forgotten: "
                + a.leasesHeld() + " held", () -> a.leasesHeld() == 0);
        assertEquals(0L, redis.command("EXISTS", "ranout"), "Redis let it expire too");
        LeaseLostException lost = assertThrows(LeaseLostException.class, lock::unlock);
        assertTrue(lost.getMessage().contains("ran out"), lost.getMessage());
        assertThrows(LeaseLostException.class, updated::unlock);
        IllegalMonitorStateException again = assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertFalse(again instanceof LeaseLostException, "the loss is reported once");
        assertTrue(lock.tryLock(0, 30_000, TimeUnit.MILLISECONDS), "taken again afresh");
        lock.unlock();
    }

    @Test
    void unlockWithoutHoldingIsIllegalMonitorState() {
        BatonLock lock = lock(a, "never");
        IllegalMonitorStateException e = assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertFalse(e instanceof LeaseLostException, "never held is not a lost lease");
        assertTrue(e.getMessage().contains("never"), e.getMessage());
    }

    @Test
    void forceUnlockFreesTheLockAndTheFormerHolderLearnsItLostTheLease() throws Exception {
        BatonLock lock = lock(a, "forced");
        lock.lock();
        assertTrue(lock(b, "forced").forceUnlock());
        assertFalse(lock(b, "forced").forceUnlock());
        assertTrue(threads.submit(() -> lock(b, "forced").tryLock()).get());
        assertThrows(LeaseLostException.class, lock::unlock);
    }

    @Test
    void tryWithResourcesReleases() {
        BatonLock lock = lock(a, "scoped");
        try (LockHold held = lock.acquire()) {
            assertEquals("scoped", held.lockName());
            assertTrue(lock.isHeldByCurrentThread());
        }
        assertFalse(lock.isLocked());
    }

    @Test
    void asyncOwnerMayLockOnOneThreadAndUnlockOnAnother() throws Exception {
        BatonLock lock = lock(a, "async");
        long ownerId = 4242;
        lock.lockAsync(ownerId).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertTrue(lock.isHeldByThread(ownerId));
        assertFalse(lock.tryLockAsync(99).toCompletableFuture().get(5, TimeUnit.SECONDS));
        threads.submit(() -> lock.unlockAsync(ownerId).toCompletableFuture().join()).get(5, TimeUnit.SECONDS);
        assertFalse(lock.isLocked());
        assertTrue(lock.tryLockAsync(1, 60, TimeUnit.SECONDS, 99).toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertTrue(lock.remainTimeToLive() > 50_000);
    }

    @Test
    void cancellingAnAsyncWaitLeavesNothingBehind() throws Exception {
        lock(a, "cancel").lock();
        BatonLock lock = lock(b, "cancel");
        CompletableFuture<Void> wait = lock.lockAsync(7).toCompletableFuture();
        redis.awaitSubscribers(channel("cancel"), 1);
        wait.cancel(true);
        redis.awaitSubscribers(channel("cancel"), 0, Bounds.CLEAN_UP);
        assertNull(redis.command("HGET", "cancel", owner(b, 7)));
    }

    @Test
    void interruptWhileWaitingThrowsAndLeavesNoHoldOrSubscription() throws Exception {
        lock(a, "interrupt").lock();
        BatonLock lock = lock(b, "interrupt");
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                lock.lockInterruptibly();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        redis.awaitSubscribers(channel("interrupt"), 1);
        waiter.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        redis.awaitSubscribers(channel("interrupt"), 0, Bounds.CLEAN_UP);
        assertNull(redis.command("HGET", "interrupt", owner(b, waiter.getId())));
    }

    @Test
    void uninterruptibleLockKeepsWaitingAndRestoresTheFlag() throws Exception {
        BatonLock held = lock(a, "uninterruptible");
        held.lock();
        CompletableFuture<Boolean> flagAfter = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            lock(b, "uninterruptible").lock();
            flagAfter.complete(Thread.currentThread().isInterrupted());
        });
        waiter.start();
        redis.awaitSubscribers(channel("uninterruptible"), 1);
        waiter.interrupt();
        held.unlock();
        assertTrue(flagAfter.get(10, TimeUnit.SECONDS));
    }

    @Test
    void badArgumentsAreRefusedWithTheirNames() {
        assertEquals("name", assertThrows(NullPointerException.class, () -> lock(a, null)).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> lock(a, "  ")).getMessage().contains("name"));
        BatonLock lock = lock(a, "args");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> lock.lock(0, TimeUnit.SECONDS))
                .getMessage().contains("leaseTime"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> lock.tryLock(1, 0, TimeUnit.SECONDS))
                .getMessage().contains("leaseTime"));
        assertThrows(NullPointerException.class, () -> lock.tryLock(1, null));
        assertThrows(UnsupportedOperationException.class, lock::newCondition);
        assertEquals(0L, redis.command("EXISTS", "args"));
    }

    @Test
    void aNameHoldingAnotherTypeIsReportedByKey() {
        redis.command("RPUSH", "a-list", "x");
        WrongTypeException e = assertThrows(WrongTypeException.class, () -> lock(a, "a-list").tryLock());
        assertEquals("a-list", e.key());
        assertTrue(e.getMessage().contains("a-list"), e.getMessage());
        assertTrue(e.getMessage().contains("holds a list"), "says what it found: " + e.getMessage());
        assertTrue(e.getMessage().contains("another Redisson object"), "and who may use the name: " + e.getMessage());
        assertThrows(WrongTypeException.class, () -> lock(a, "a-list").forceUnlock());
        assertEquals(1L, redis.command("LLEN", "a-list"));
    }

    @Test
    void aClosedClientRefusesWork() {
        Baton closed = clients.open(redis);
        BatonLock lock = lock(closed, "closed");
        closed.close();
        closed.close();
        assertThrows(IllegalStateException.class, lock::tryLock);
        assertThrows(IllegalStateException.class, () -> lock(closed, "other"));
    }

    @Test
    void closingTheClientReleasesWaitersWithAnException() throws Exception {
        lock(a, "closing").lock();
        Baton closing = clients.open(redis);
        Future<?> waiter = threads.submit(() -> lock(closing, "closing").lock());
        redis.awaitSubscribers(channel("closing"), 1);
        closing.close();
        Exception e = assertThrows(Exception.class, () -> waiter.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException, String.valueOf(e.getCause()));
    }

    @Test
    void closingTheClientAtAnyStageOfAWaitReportsTheClosedClient() throws Exception {
        // The close lands before the waiter starts, while its first attempt or its SUBSCRIBE is
        // on the wire, or while it is parked: every one must end in the closed-client exception,
        // never in a Redis outage the application would retry.
        lock(a, "closing").lock();
        for (int round = 0; round < 30; round++) {
            Baton closing = clients.open(redis);
            CountDownLatch started = new CountDownLatch(1);
            Future<?> waiter = threads.submit(() -> {
                started.countDown();
                lock(closing, "closing").lock();
                return null;
            });
            if (round % 3 > 0) {
                started.await();
            }
            if (round % 3 == 2) {
                redis.awaitSubscribers(channel("closing"), 1);
            }
            closing.close();
            ExecutionException e = assertThrows(ExecutionException.class, () -> waiter.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof IllegalStateException, "round " + round + ": " + e.getCause());
        }
    }

    @Test
    void redisUnreachableFailsWithinTheTimeoutInsteadOfHanging() {
        Duration timeout = Duration.ofMillis(500);
        long started = System.nanoTime();
        RedisUnavailableException e = assertThrows(RedisUnavailableException.class,
                () -> Baton.create(BatonOptions.builder().redisUri("redis://:secret@127.0.0.1:1")
                        .commandTimeout(timeout).build()));
        assertTrue(System.nanoTime() - started <= Bounds.failure(timeout).toNanos(), "refused within the timeout");
        assertFalse(e.getMessage().contains("secret"), "password leaked: " + e.getMessage());
    }

    @Test
    void aCallWhileRedisIsDownFailsWithinTheTimeout() {
        Duration timeout = Duration.ofMillis(500);
        try (RedisServer doomed = RedisServer.start()) {
            Baton baton = clients.open(BatonOptions.builder().redisUri(doomed.uri()).commandTimeout(timeout).build());
            BatonLock lock = lock(baton, "down");
            doomed.kill();
            long started = System.nanoTime();
            assertThrows(RedisUnavailableException.class, lock::tryLock);
            assertTrue(System.nanoTime() - started <= Bounds.failure(timeout).toNanos(), "tryLock() within the timeout");
            started = System.nanoTime();
            assertThrows(RedisUnavailableException.class, () -> lock.tryLock(1, TimeUnit.SECONDS));
            assertTrue(System.nanoTime() - started <= Bounds.failure(timeout, Duration.ofSeconds(1)).toNanos(),
                    "tryLock(1 s) within its budget and the timeout");
        }
    }
}
