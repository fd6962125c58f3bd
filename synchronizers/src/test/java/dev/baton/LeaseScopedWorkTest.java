package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BatonLock#withLock(LeaseWork)}: the work runs with its lease's scope, the lock is
 * released however the work ends, and the work is stopped within the bounds of the javadoc when
 * the lease is lost (deleted by another client, Redis restarted empty) or its validity runs out
 * on the client's clock (Redis paused, so no renewal is confirmed). The watchdog timeout is
 * 900 ms: a renewal every 300 ms.
 */
@ExtendWith(RedisExtension.class)
class LeaseScopedWorkTest {
    private static final Duration WATCHDOG = Duration.ofMillis(900);
    private final RedisServer redis;
    private Baton baton;

    LeaseScopedWorkTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG)
                .commandTimeout(Duration.ofSeconds(1)).build());
    }

    @AfterEach
    void close() {
        baton.close();
    }

    @Test
    void theWorkRunsWithItsScopeAndTheLockIsReleasedHoweverItEnds() throws Exception {
        BatonLock lock = baton.lock("scoped");
        String result = lock.withLock(scope -> {
            assertEquals("scoped", scope.lockName());
            assertTrue(lock.isHeldByCurrentThread());
            assertTrue(scope.isValid());
            scope.checkValid();
            long remaining = scope.remaining().toMillis();
            long margin = WATCHDOG.toMillis() / 100 + 25; // LeaseScope: 1 % of the lease + 25 ms
            assertTrue(remaining > 600 && remaining <= WATCHDOG.toMillis() - margin,
                    "the watchdog lease less the margin of " + margin + " ms: " + remaining);
            assertTrue(scope.fencingToken().isEmpty(), "no tokens on a reentrant lock");
            return "done";
        });
        assertEquals("done", result);
        assertEquals(0L, redis.command("EXISTS", "scoped"), "released");

        IOException thrown = new IOException("the work failed");
        IOException caught = assertThrows(IOException.class, () -> lock.withLock(scope -> {
            throw thrown;
        }));
        assertSame(thrown, caught, "the work's own exception");
        assertEquals(0L, redis.command("EXISTS", "scoped"), "released after failing work");

        BatonFencedLock fenced = baton.fencedLock("fenced-scoped");
        long token = fenced.withLock(scope -> scope.fencingToken().orElseThrow());
        assertTrue(token > 0, "the hold's fencing token: " + token);
        assertTrue(fenced.withLock(scope -> scope.fencingToken().orElseThrow()) > token, "a later hold, a larger token");
    }

    @Test
    void renewalsKeepTheScopeValidPastTheWatchdogTimeout() throws Exception {
        BatonLock lock = baton.lock("long-work");
        boolean valid = lock.withLock(scope -> {
            Thread.sleep(WATCHDOG.toMillis() * 5 / 2); // two and a half leases: only confirmed renewals keep it valid
            return scope.isValid();
        });
        assertTrue(valid, "still known to be held after 2.5 watchdog timeouts of healthy renewal");
    }

    /** Runs work that sleeps until interrupted under {@code lock}; {@code fault} runs once the work has started. */
    private static Stop runUntilStopped(BatonLock lock, Runnable fault) throws Exception {
        return runUntilStopped(lock, fault, scope -> { });
    }

    /** Work done in the work's own thread before it sleeps. */
    private interface Before {
        void run(LeaseScope scope) throws Exception;
    }

    /**
     * As {@link #runUntilStopped(BatonLock, Runnable)}, with {@code before} run first in the
     * work; the stop is timed from the fault, or from the end of {@code before} without one.
     */
    private static Stop runUntilStopped(BatonLock lock, Runnable fault, Before before) throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        AtomicLong faultAt = new AtomicLong();
        AtomicLong stoppedAt = new AtomicLong();
        AtomicReference<LeaseScope> scopeSeen = new AtomicReference<>();
        Thread faulter = new Thread(() -> {
            try {
                started.await();
                faultAt.set(System.nanoTime());
                fault.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        faulter.start();
        LeaseLostException lost = assertThrows(LeaseLostException.class, () -> lock.withLock(scope -> {
            scopeSeen.set(scope);
            before.run(scope);
            started.countDown();
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                stoppedAt.set(System.nanoTime());
                throw e;
            }
            return null;
        }));
        faulter.join(10_000);
        assertInstanceOf(InterruptedException.class, lost.getCause(), "the work's own exception is the cause: " + lost);
        assertFalse(Thread.currentThread().isInterrupted(), "the stop's interrupt does not outlive the work");
        assertFalse(scopeSeen.get().isValid(), "the scope says so too");
        assertThrows(LeaseLostException.class, scopeSeen.get()::checkValid);
        return new Stop(lost, Duration.ofNanos(stoppedAt.get() - faultAt.get()));
    }

    private record Stop(LeaseLostException lost, Duration after) {
    }

    /**
     * Stopped by its validity's end, before Redis could let the lease expire: within the
     * watchdog timeout + 300 ms of the fault, not before half of it (the last confirmed
     * renewal's lease).
     */
    private static void assertStoppedByTheValidityEnd(Duration after, String fault) {
        Duration bound = Bounds.within(WATCHDOG);
        assertTrue(after.compareTo(bound) <= 0, "stopped " + after.toMillis() + " ms after " + fault + ", bound "
                + bound.toMillis() + " ms");
        assertTrue(after.compareTo(WATCHDOG.dividedBy(2)) >= 0, "not before the last confirmed renewal's lease could end: "
                + after.toMillis() + " ms");
    }

    @Test
    void workIsStoppedWithinAThirdOfTheWatchdogTimeoutAfterTheKeyIsDeleted() throws Exception {
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        Stop stop = runUntilStopped(baton.lock("deleted"), () -> redis.command("DEL", "deleted"));
        assertTrue(stop.after().compareTo(bound) <= 0, "stopped " + stop.after().toMillis() + " ms after the delete, bound "
                + bound.toMillis() + " ms");
        assertTrue(stop.lost().getMessage().contains("lost"), stop.lost().getMessage());
    }

    @Test
    void workIsStoppedWithinTheLeaseWhenRedisRestartsEmpty() throws Exception {
        // Renewals fail while Redis restarts, then find the lock gone: whichever comes first, the
        // validity's end (at most a lease after the restart began) or the loss, stops the work.
        Duration bound = Bounds.within(WATCHDOG);
        Stop stop = runUntilStopped(baton.lock("restarted"), redis::restartWithoutData);
        assertTrue(stop.after().compareTo(bound) <= 0, "stopped " + stop.after().toMillis()
                + " ms after the restart began, bound " + bound.toMillis() + " ms");
        assertEquals(0L, redis.command("EXISTS", "restarted"));
    }

    @Test
    void workIsStoppedWhenItsValidityRunsOutWhileRedisIsPaused() throws Exception {
        Stop stop;
        try {
            stop = runUntilStopped(baton.lock("paused"), redis::pause);
        } finally {
            redis.resume();
        }
        assertStoppedByTheValidityEnd(stop.after(), "the pause");
        // Its validity's end stops it; a loading machine may let the watchdog's own verdict (no
        // renewal for a whole lease) come first: either is a stop before Redis lets the lease go.
        assertTrue(stop.lost().getMessage().contains("not known to be held"), stop.lost().getMessage());
        assertEquals(0, baton.leasesHeld(), "a release that the paused Redis could not confirm is not kept: "
                + java.util.Arrays.toString(stop.lost().getSuppressed()));
    }

    @Test
    void workIsStoppedWhenTheWatchdogCannotRenewWithRedisDown() throws Exception {
        // Every renewal fails (connection refused): the validity's end stops the work.
        Stop stop;
        try {
            stop = runUntilStopped(baton.lock("down"), redis::kill);
        } finally {
            redis.restart();
        }
        assertStoppedByTheValidityEnd(stop.after(), "Redis went down");
        assertTrue(stop.lost().getMessage().contains("not known to be held"), stop.lost().getMessage());
    }

    @Test
    void closingTheClientStopsTheWork() throws Exception {
        Baton closing = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG).build());
        Stop stop = runUntilStopped(closing.lock("closing"), closing::close);
        Duration bound = Bounds.within(Duration.ZERO);
        assertTrue(stop.after().compareTo(bound) <= 0, "stopped " + stop.after().toMillis() + " ms after close began");
        assertTrue(stop.lost().getMessage().contains("closed"), stop.lost().getMessage());
    }

    @Test
    void nestedWorkIsStoppedByItsOwnLeaseAndLeavesTheOuterWorkStoppable() throws Exception {
        BatonLock outer = baton.lock("outer");
        BatonLock inner = baton.lock("inner");
        AtomicReference<Boolean> interruptedAfterInner = new AtomicReference<>();
        Stop stop = runUntilStopped(outer, () -> { }, scope -> {
            LeaseLostException innerLost = assertThrows(LeaseLostException.class, () -> inner.withLock(innerScope -> {
                redis.command("DEL", "inner");
                Thread.sleep(30_000);
                return null;
            }));
            assertInstanceOf(InterruptedException.class, innerLost.getCause());
            interruptedAfterInner.set(Thread.currentThread().isInterrupted());
            assertTrue(scope.isValid(), "the outer lease is untouched");
            redis.command("DEL", "outer");
        });
        assertEquals(false, interruptedAfterInner.get(), "the inner stop's interrupt ends with the inner work");
        assertTrue(stop.after().compareTo(Bounds.within(WATCHDOG.dividedBy(3))) <= 0,
                "the outer work is stopped by its own loss: " + stop.after().toMillis() + " ms");
    }

    @Test
    void workThatReleasesItsOwnHoldIsStoppedAndAShorterReEntryShortensTheScope() throws Exception {
        BatonLock lock = baton.lock("self-released");
        Stop stop = runUntilStopped(lock, () -> { }, scope -> lock.unlock());
        assertTrue(stop.after().compareTo(Bounds.within(Duration.ZERO)) <= 0, "stopped at once: " + stop.after().toMillis());

        BatonLock shorter = baton.lock("shorter");
        long remaining = shorter.withLock(scope -> {
            assertTrue(shorter.tryLock(0, 400, TimeUnit.MILLISECONDS));
            shorter.unlock();
            return scope.remaining().toMillis();
        });
        assertTrue(remaining <= 400, "a re-entry's shorter lease bounds the validity: " + remaining + " ms");
    }

    @Test
    void asyncWorkRunsForAnOwnerOfItsOwnAndTheLockIsReleasedHoweverItEnds() throws Exception {
        BatonLock lock = baton.lock("async-scoped");
        java.util.concurrent.CompletableFuture<String> done = lock.withLockAsync(scope -> {
            assertTrue(scope.isValid());
            assertFalse(lock.isHeldByCurrentThread(), "held for the call's own owner, not a thread");
            return java.util.concurrent.CompletableFuture.supplyAsync(() -> "done " + redis.command("EXISTS", "async-scoped"));
        }).toCompletableFuture();
        assertEquals("done 1", done.get(5, TimeUnit.SECONDS));
        assertEquals(0L, redis.command("EXISTS", "async-scoped"), "released before the stage completed");

        IllegalStateException failure = new IllegalStateException("the work failed");
        java.util.concurrent.ExecutionException failed = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> lock.withLockAsync(scope -> java.util.concurrent.CompletableFuture.failedFuture(failure))
                        .toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertSame(failure, failed.getCause());
        assertEquals(0L, redis.command("EXISTS", "async-scoped"), "released after failing work");
    }

    /** Async work under {@code lock} whose stage ({@code work}) never completes by itself, once it has started. */
    private record Pending(java.util.concurrent.CompletableFuture<String> work, java.util.concurrent.CompletableFuture<String> done) {
    }

    private static Pending pending(BatonLock lock) throws InterruptedException {
        java.util.concurrent.CompletableFuture<String> work = new java.util.concurrent.CompletableFuture<>();
        CountDownLatch started = new CountDownLatch(1);
        java.util.concurrent.CompletableFuture<String> done = lock.withLockAsync(scope -> {
            started.countDown();
            return work;
        }).toCompletableFuture();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        return new Pending(work, done);
    }

    @Test
    void asyncWorkIsCancelledWithinAThirdOfTheWatchdogTimeoutAfterTheKeyIsDeleted() throws Exception {
        BatonLock lock = baton.lock("async-deleted");
        Pending running = pending(lock);
        java.util.concurrent.CompletableFuture<String> pending = running.work();
        java.util.concurrent.CompletableFuture<String> done = running.done();
        long deleted = System.nanoTime();
        redis.command("DEL", "async-deleted");
        java.util.concurrent.ExecutionException failed = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> done.get(5, TimeUnit.SECONDS));
        Duration after = Duration.ofNanos(System.nanoTime() - deleted);
        assertInstanceOf(LeaseLostException.class, failed.getCause());
        assertTrue(pending.isCancelled(), "the work's stage was cancelled");
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        assertTrue(after.compareTo(bound) <= 0, "stopped " + after.toMillis() + " ms after the delete, bound " + bound.toMillis());
    }

    @Test
    void cancellingTheReturnedStageCancelsTheWorkAndReleasesTheLock() throws Exception {
        BatonLock lock = baton.lock("async-cancelled");
        Pending running = pending(lock);
        java.util.concurrent.CompletableFuture<String> pending = running.work();
        java.util.concurrent.CompletableFuture<String> done = running.done();
        assertEquals(1L, redis.command("EXISTS", "async-cancelled"));
        done.cancel(false);
        dev.baton.testkit.Await.until(Bounds.CLEAN_UP, () -> "the work cancelled with the caller's stage and the lock released",
                () -> pending.isCancelled() && (Long) redis.command("EXISTS", "async-cancelled") == 0L
                        && baton.leasesHeld() == 0);

        // Completed another way after the grant (orTimeout): the same.
        java.util.concurrent.CompletableFuture<String> never = new java.util.concurrent.CompletableFuture<>();
        java.util.concurrent.atomic.AtomicReference<LeaseScope> timedScope = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.CompletableFuture<String> timed = lock.withLockAsync(scope -> {
            timedScope.set(scope);
            return never;
        }).toCompletableFuture().orTimeout(300, TimeUnit.MILLISECONDS);
        assertThrows(java.util.concurrent.ExecutionException.class, () -> timed.get(5, TimeUnit.SECONDS));
        dev.baton.testkit.Await.until(Bounds.CLEAN_UP, () -> "orTimeout ended the work and released the lock",
                () -> never.isCancelled() && (Long) redis.command("EXISTS", "async-cancelled") == 0L
                        && baton.leasesHeld() == 0);
        assertFalse(timedScope.get().isValid(), "the work's scope says it is over");

        // Given up while another client holds it: the wait is abandoned, nothing stays held.
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            BatonLock theirs = other.lock("async-cancelled");
            theirs.lock();
            java.util.concurrent.atomic.AtomicBoolean ran = new java.util.concurrent.atomic.AtomicBoolean();
            java.util.concurrent.CompletableFuture<String> waiting = lock.withLockAsync(scope -> {
                ran.set(true);
                return java.util.concurrent.CompletableFuture.completedFuture("ran");
            }).toCompletableFuture();
            redis.awaitAnySubscriber("redisson_lock__channel:{async-cancelled}"); // waiting for the release
            waiting.cancel(false);
            theirs.unlock();
            dev.baton.testkit.Await.until(Bounds.CLEAN_UP, () -> "nothing held", () -> baton.leasesHeld() == 0
                    && (Long) redis.command("EXISTS", "async-cancelled") == 0L);
            assertFalse(ran.get(), "the work of an abandoned wait never runs");
        } finally {
            other.close();
        }
    }

    @Test
    void theSameOwnerAcquiringAgainFromTheCallersCallbackWaitsForTheReleaseOfTheHoldItGaveUp() throws Exception {
        BatonLock lock = baton.lock("same-owner");
        long owner = Baton.newOwnerId();
        CompletableFutureHolder running = new CompletableFutureHolder();
        CountDownLatch started = new CountDownLatch(1);
        java.util.concurrent.CompletableFuture<String> done = lock.withLockAsync(owner, scope -> {
            started.countDown();
            return running.work;
        }).toCompletableFuture();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        AtomicReference<Object> again = new AtomicReference<>();
        // The caller's own callback runs before Baton's; it acquires again for the same owner and
        // blocks until it has the lock: it must get a hold of its own once the given-up one is
        // released, never re-enter the one being given back, and never wait for Baton's own
        // callbacks (which run after it on this thread).
        done.whenComplete((v, e) -> {
            try {
                lock.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
                again.set(redis.command("HGET", "same-owner", ownerField(owner)));
            } catch (Exception failure) {
                again.set(failure);
            }
        });
        done.cancel(false);
        assertEquals("1", again.get(), "the new hold is the owner's only one in Redis, after the release: " + again.get());
        assertTrue(running.work.isCancelled(), "the given-up work's stage was cancelled");
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(0L, redis.command("EXISTS", "same-owner"), "released by the one unlock");
        dev.baton.testkit.Await.until(Bounds.CLEAN_UP, () -> "no lease counted", () -> baton.leasesHeld() == 0);
    }

    private static final class CompletableFutureHolder {
        final java.util.concurrent.CompletableFuture<String> work = new java.util.concurrent.CompletableFuture<>();
    }

    /** The lock hash's field of {@code owner} on this test's client. */
    private String ownerField(long owner) {
        Object fields = redis.command("HKEYS", "same-owner");
        String suffix = ":" + owner;
        for (Object field : (java.util.List<?>) fields) {
            if (field.toString().endsWith(suffix)) {
                return field.toString();
            }
        }
        return "none held for " + owner + " in " + fields;
    }

    @Test
    void closingTheClientEndsAsyncWork() throws Exception {
        Baton closing = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG).build());
        Pending running = pending(closing.lock("async-closing"));
        java.util.concurrent.CompletableFuture<String> pending = running.work();
        java.util.concurrent.CompletableFuture<String> done = running.done();
        closing.close();
        java.util.concurrent.ExecutionException failed = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> done.get(Bounds.CLEAN_UP.toMillis(), TimeUnit.MILLISECONDS), "the stage completes, never hangs");
        assertInstanceOf(LeaseLostException.class, failed.getCause());
        assertTrue(failed.getCause().getMessage().contains("closed"), failed.getCause().getMessage());
        assertTrue(pending.isCancelled());
    }

    @Test
    void asyncWorkIsCancelledWhenItsValidityRunsOutWhileRedisIsPaused() throws Exception {
        assertStoppedByTheValidityEnd(asyncCancelledAfter("async-paused", redis::pause, redis::resume), "the pause");
    }

    /** How long after {@code fault} began the async work's stage was cancelled; {@code heal} runs after. */
    private Duration asyncCancelledAfter(String name, Runnable fault, Runnable heal) throws Exception {
        Pending running = pending(baton.lock(name));
        AtomicLong cancelledAt = new AtomicLong();
        running.work().whenComplete((v, e) -> cancelledAt.set(System.nanoTime()));
        long faultAt = System.nanoTime();
        java.util.concurrent.ExecutionException failed;
        try {
            fault.run();
            failed = assertThrows(java.util.concurrent.ExecutionException.class, () -> running.done().get(10, TimeUnit.SECONDS));
        } finally {
            heal.run();
        }
        assertInstanceOf(LeaseLostException.class, failed.getCause());
        assertTrue(running.work().isCancelled(), "the work's stage was cancelled");
        return Duration.ofNanos(cancelledAt.get() - faultAt);
    }

    @Test
    void asyncWorkIsCancelledWithinTheLeaseWhenRedisRestartsEmpty() throws Exception {
        Duration after = asyncCancelledAfter("async-restarted", redis::restartWithoutData, () -> { });
        Duration bound = Bounds.within(WATCHDOG);
        assertTrue(after.compareTo(bound) <= 0, "cancelled " + after.toMillis() + " ms after the restart began, bound "
                + bound.toMillis() + " ms");
        assertEquals(0L, redis.command("EXISTS", "async-restarted"));
    }

    @Test
    void asyncWorkIsCancelledWhenTheWatchdogCannotRenewWithRedisDown() throws Exception {
        assertStoppedByTheValidityEnd(asyncCancelledAfter("async-down", redis::kill, redis::restart), "Redis went down");
    }

    @Test
    void nestedWorkStoppedTogetherLeavesTheThreadUninterrupted() throws Exception {
        Baton closing = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG).build());
        BatonLock outer = closing.lock("nest-outer");
        BatonLock inner = closing.lock("nest-inner");
        CountDownLatch started = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            try {
                started.await();
                closing.close(); // stops both scopes at once
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        closer.start();
        assertThrows(LeaseLostException.class, () -> outer.withLock(o -> {
            try {
                inner.withLock(i -> {
                    started.countDown();
                    Thread.sleep(30_000);
                    return null;
                });
            } catch (LeaseLostException innerLost) {
                // the inner work's loss; the outer one is stopped too
            }
            Thread.sleep(30_000);
            return null;
        }));
        closer.join(10_000);
        assertFalse(Thread.interrupted(), "no stop's interrupt outlives the work");
    }

    /**
     * Baton's own threads: Lettuce's I/O and computation threads ({@code lettuce-nioEventLoop-*},
     * {@code lettuce-epollEventLoop-*}, {@code lettuce-eventExecutorLoop-*}) and Baton's timers
     * ({@code baton-timer-*}, {@code baton-system-timer}).
     */
    static boolean isBatonThread(String thread) {
        return thread.startsWith("lettuce-") || thread.startsWith("baton-");
    }

    /** The thread {@code start} (a withLockAsync call given the work) calls its work on; the call must succeed. */
    private static String workThread(java.util.function.Function<java.util.function.Function<LeaseScope,
            java.util.concurrent.CompletionStage<String>>, java.util.concurrent.CompletionStage<String>> start) throws Exception {
        java.util.concurrent.CompletableFuture<String> calledOn = new java.util.concurrent.CompletableFuture<>();
        java.util.concurrent.CompletableFuture<String> done = start.apply(scope -> {
            calledOn.complete(Thread.currentThread().getName());
            return java.util.concurrent.CompletableFuture.completedFuture("done");
        }).toCompletableFuture();
        assertEquals("done", done.get(5, TimeUnit.SECONDS));
        return calledOn.get(5, TimeUnit.SECONDS);
    }

    @Test
    void asyncWorkIsCalledOffBatonsThreadsAlsoWhenTheGrantComesFromAWakeUp() throws Exception {
        java.util.List<String> seen = new java.util.ArrayList<>();
        BatonLock uncontended = baton.lock("off-threads");
        seen.add("uncontended on " + workThread(uncontended::withLockAsync));
        long owner = Baton.newOwnerId();
        uncontended.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        seen.add("re-entering its owner's hold on " + workThread(work -> uncontended.withLockAsync(owner, work)));
        uncontended.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);

        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            record Kind(String what, BatonLock theirs, BatonLock ours, String channel) {
            }
            for (Kind kind : java.util.List.of(
                    new Kind("reentrant", other.lock("w-lock"), baton.lock("w-lock"), "redisson_lock__channel:{w-lock}"),
                    new Kind("fair", other.fairLock("w-fair"), baton.fairLock("w-fair"), "baton_fair_lock:{w-fair}"),
                    new Kind("fenced", other.fencedLock("w-fenced"), baton.fencedLock("w-fenced"),
                            "redisson_lock__channel:{w-fenced}"),
                    new Kind("write", other.readWriteLock("w-rw").writeLock(), baton.readWriteLock("w-rw").writeLock(),
                            "redisson_rwlock:{w-rw}"),
                    new Kind("read", other.readWriteLock("w-rw").writeLock(), baton.readWriteLock("w-rw").readLock(),
                            "redisson_rwlock:{w-rw}"))) {
                kind.theirs().lock();
                redis.command("CONFIG", "RESETSTAT");
                java.util.concurrent.CompletableFuture<String> calledOn = new java.util.concurrent.CompletableFuture<>();
                java.util.concurrent.CompletableFuture<String> done = kind.ours().withLockAsync(scope -> {
                    calledOn.complete(Thread.currentThread().getName());
                    return java.util.concurrent.CompletableFuture.completedFuture("done");
                }).toCompletableFuture();
                // Parked: subscribed, and both its attempts (before and after SUBSCRIBE) refused.
                redis.awaitSubscribers(kind.channel(), 1);
                dev.baton.testkit.Await.until(Duration.ofSeconds(10), () -> kind.what() + ": two attempts",
                        () -> redis.calls("evalsha") >= 2);
                assertFalse(calledOn.isDone(), kind.what() + ": not called before the grant");
                kind.theirs().unlock(); // the grant comes from the release's pub/sub message, on Lettuce's I/O thread
                assertEquals("done", done.get(5, TimeUnit.SECONDS));
                seen.add(kind.what() + " woken by another client's release on " + calledOn.get());
            }
        } finally {
            other.close();
        }
        System.out.println("withLockAsync called its work: " + seen);
        for (String call : seen) {
            String thread = call.substring(call.lastIndexOf(" on ") + 4);
            assertFalse(isBatonThread(thread), "work called on Baton's thread: " + seen);
        }
    }

    /**
     * Read and write locks' scoped work is stopped as the reentrant lock's is: within a third of
     * the watchdog timeout (+ 300 ms) after the lock's key is deleted directly in Redis.
     */
    private void assertStoppedWithinAThirdOfTheWatchdogTimeoutOfTheDelete(BatonLock lock, String key, String what)
            throws Exception {
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        Stop stop = runUntilStopped(lock, () -> assertEquals(1L, redis.command("DEL", key), "the key deleted"));
        System.out.println(what + " lock's work stopped " + stop.after().toMillis() + " ms after the delete, bound "
                + bound.toMillis() + " ms");
        assertTrue(stop.after().compareTo(bound) <= 0, what + ": stopped " + stop.after().toMillis()
                + " ms after the delete, bound " + bound.toMillis() + " ms");
        assertTrue(stop.lost().getMessage().contains("lost"), stop.lost().getMessage());
        assertEquals(0, baton.leasesHeld(), "nothing kept held");
    }

    @Test
    void readLockWorkIsStoppedWithinAThirdOfTheWatchdogTimeoutAfterTheKeyIsDeleted() throws Exception {
        assertStoppedWithinAThirdOfTheWatchdogTimeoutOfTheDelete(baton.readWriteLock("rw-read").readLock(), "rw-read", "read");
    }

    @Test
    void writeLockWorkIsStoppedWithinAThirdOfTheWatchdogTimeoutAfterTheKeyIsDeleted() throws Exception {
        assertStoppedWithinAThirdOfTheWatchdogTimeoutOfTheDelete(baton.readWriteLock("rw-write").writeLock(), "rw-write", "write");
    }
}
