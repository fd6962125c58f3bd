package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BatonMultiLock#withLock(LeaseWork)} and its async form: the work runs once every lock
 * is held, with the set's scope; every lock is released however it ends; the loss of any one
 * lock stops it within the single lock's bound (a third of the watchdog timeout + 300 ms after
 * the delete). Watchdog timeout 900 ms.
 */
@ExtendWith(RedisExtension.class)
class MultiLockScopedWorkTest {
    private static final Duration WATCHDOG = Duration.ofMillis(900);
    private final RedisServer redis;
    private Baton baton;

    MultiLockScopedWorkTest(RedisServer redis) {
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

    private BatonMultiLock set() {
        return Baton.multiLock(baton.lock("m-c"), baton.fencedLock("m-a"), baton.fairLock("m-b"));
    }

    private long held() {
        return (Long) redis.command("EXISTS", "m-a", "m-b", "m-c");
    }

    @Test
    void theWorkRunsUnderEveryLockWithTheSetsScopeAndAllAreReleasedHoweverItEnds() throws Exception {
        BatonMultiLock multi = set();
        long token = multi.withLock(scope -> {
            assertEquals(3L, held(), "every lock held while the work runs");
            assertEquals("m-a, m-b, m-c", scope.lockName(), "the names in the order taken");
            assertEquals(3, scope.members().size());
            assertTrue(scope.isValid());
            scope.checkValid();
            long remaining = scope.remaining().toMillis();
            assertTrue(remaining > 600 && remaining <= 900, "the least of the leases less the margin: " + remaining);
            assertTrue(scope.fencingToken().isEmpty(), "the set has no token of its own");
            return scope.members().get(0).fencingToken().orElseThrow();
        });
        assertTrue(token > 0, "the fenced member's token, from its own scope: " + token);
        assertEquals(0L, held(), "all released");

        IOException thrown = new IOException("the work failed");
        assertSame(thrown, assertThrows(IOException.class, () -> multi.withLock(scope -> {
            throw thrown;
        })));
        assertEquals(0L, held(), "all released after failing work");
        assertEquals(0, baton.leasesHeld());
    }

    @Test
    void theLossOfAnyLockStopsTheWorkWithinAThirdOfTheWatchdogTimeout() throws Exception {
        BatonMultiLock multi = set();
        AtomicLong deleted = new AtomicLong();
        AtomicLong stopped = new AtomicLong();
        LeaseLostException lost = assertThrows(LeaseLostException.class, () -> multi.withLock(scope -> {
            deleted.set(System.nanoTime());
            redis.command("DEL", "m-b");
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                stopped.set(System.nanoTime());
                throw e;
            }
            return null;
        }));
        assertEquals("m-b", lost.lockName(), "the lost lock's own exception: " + lost);
        assertInstanceOf(InterruptedException.class, lost.getCause());
        assertFalse(Thread.currentThread().isInterrupted(), "the stop's interrupt does not outlive the work");
        Duration after = Duration.ofNanos(stopped.get() - deleted.get());
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        assertTrue(after.compareTo(bound) <= 0, "stopped " + after.toMillis() + " ms after the delete, bound " + bound.toMillis());
        assertEquals(0L, held(), "the others released");
        assertEquals(0, baton.leasesHeld());
    }

    @Test
    void asyncWorkRunsUnderEveryLockAndIsCancelledWhenOneIsLost() throws Exception {
        BatonMultiLock multi = set();
        assertEquals("3 held", multi.withLockAsync(scope -> CompletableFuture.supplyAsync(() -> held() + " held"))
                .toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertEquals(0L, held());

        CompletableFuture<String> work = new CompletableFuture<>();
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<String> done = multi.withLockAsync(scope -> {
            started.countDown();
            return work;
        }).toCompletableFuture();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        long deleted = System.nanoTime();
        redis.command("DEL", "m-c");
        ExecutionException failed = assertThrows(ExecutionException.class, () -> done.get(5, TimeUnit.SECONDS));
        Duration after = Duration.ofNanos(System.nanoTime() - deleted);
        assertInstanceOf(LeaseLostException.class, failed.getCause());
        assertTrue(work.isCancelled(), "the work's stage was cancelled");
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        assertTrue(after.compareTo(bound) <= 0, "ended " + after.toMillis() + " ms after the delete, bound " + bound.toMillis());
        Await.until(Bounds.CLEAN_UP, () -> "every lock released", () -> held() == 0L && baton.leasesHeld() == 0);
    }

    @Test
    void whenTheFirstLockIsLostTheStageCompletesOnlyAfterEveryLockIsReleased() throws Exception {
        CompletableFuture<String> work = new CompletableFuture<>();
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<String> done = set().withLockAsync(scope -> {
            started.countDown();
            return work;
        }).toCompletableFuture();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        CompletableFuture<Long> heldAtCompletion = done.handle((v, e) -> held());
        redis.command("DEL", "m-a"); // the first lock taken, the outermost
        ExecutionException failed = assertThrows(ExecutionException.class, () -> done.get(5, TimeUnit.SECONDS));
        assertInstanceOf(LeaseLostException.class, failed.getCause());
        assertEquals("m-a", ((LeaseLostException) failed.getCause()).lockName());
        assertTrue(work.isCancelled(), "the work's stage was cancelled");
        assertEquals(0L, heldAtCompletion.get(5, TimeUnit.SECONDS), "m-b and m-c released before the stage completed");
        assertEquals(0, baton.leasesHeld());
    }

    @Test
    void aCallGivenUpWhileALaterLockIsAwaitedGivesBackWhatItTookAndNeverRunsTheWork() throws Exception {
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            BatonLock theirs = other.lock("m-c");
            theirs.lock();
            AtomicBoolean ran = new AtomicBoolean();
            CompletableFuture<String> waiting = set().withLockAsync(scope -> {
                ran.set(true);
                return CompletableFuture.completedFuture("ran");
            }).toCompletableFuture();
            redis.awaitAnySubscriber("redisson_lock__channel:{m-c}"); // m-a and m-b held, m-c awaited
            assertEquals(3L, held());
            waiting.cancel(false);
            Await.until(Bounds.CLEAN_UP, () -> "m-a and m-b given back", () -> (Long) redis.command("EXISTS", "m-a", "m-b") == 0L
                    && baton.leasesHeld() == 0);
            theirs.unlock();
            assertFalse(ran.get(), "the work of an abandoned wait never runs");
            assertEquals(0L, held());
        } finally {
            other.close();
        }
    }

    @Test
    void aLockLostWhileALaterOneIsAwaitedEndsTheBlockingWaitWithItsLoss() throws Exception {
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            BatonLock theirs = other.lock("m-c");
            theirs.lock();
            AtomicBoolean ran = new AtomicBoolean();
            Thread deleter = new Thread(() -> {
                redis.awaitAnySubscriber("redisson_lock__channel:{m-c}");
                redis.command("DEL", "m-a");
            });
            deleter.start();
            LeaseLostException lost = assertThrows(LeaseLostException.class, () -> set().withLock(scope -> {
                ran.set(true);
                return null;
            }));
            deleter.join(10_000);
            assertEquals("m-a", lost.lockName());
            assertFalse(ran.get(), "the work never ran");
            assertFalse(Thread.currentThread().isInterrupted());
            theirs.unlock();
            Await.until(Bounds.CLEAN_UP, () -> "nothing held", () -> held() == 0L && baton.leasesHeld() == 0);
        } finally {
            other.close();
        }
    }

    @Test
    void aLockLostWhileALaterOneIsAwaitedEndsTheCallWithinAThirdOfTheWatchdogTimeout() throws Exception {
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            BatonLock theirs = other.lock("m-c");
            theirs.lock();
            // Blocking: m-a and m-b held, m-c awaited (another client holds it), then m-a deleted.
            AtomicBoolean ran = new AtomicBoolean();
            AtomicLong deletedAt = new AtomicLong();
            AtomicLong heldWhenDeleted = new AtomicLong();
            Thread deleter = new Thread(() -> {
                redis.awaitAnySubscriber("redisson_lock__channel:{m-c}");
                heldWhenDeleted.set(held());
                deletedAt.set(System.nanoTime());
                redis.command("DEL", "m-a");
            });
            deleter.start();
            LeaseLostException lost = assertThrows(LeaseLostException.class, () -> set().withLock(scope -> {
                ran.set(true);
                return null;
            }));
            long endedAt = System.nanoTime();
            deleter.join(10_000);
            assertEquals(3L, heldWhenDeleted.get(), "m-a and m-b ours, m-c theirs, when m-a was deleted");
            Duration blocking = Duration.ofNanos(endedAt - deletedAt.get());
            assertEquals("m-a", lost.lockName());
            assertFalse(ran.get(), "the work never ran");
            assertFalse(Thread.currentThread().isInterrupted());
            Await.until(Bounds.CLEAN_UP, () -> "m-b given back, the wait for m-c left", () ->
                    (Long) redis.command("EXISTS", "m-a", "m-b") == 0L && redis.subscribers("redisson_lock__channel:{m-c}") == 0L
                            && baton.leasesHeld() == 0);

            // Async: the same, the returned stage failing with m-a's loss.
            CompletableFuture<String> done = set().withLockAsync(scope -> {
                ran.set(true);
                return CompletableFuture.completedFuture("ran");
            }).toCompletableFuture();
            redis.awaitAnySubscriber("redisson_lock__channel:{m-c}");
            assertEquals(3L, held(), "m-a and m-b ours, m-c theirs");
            long deleted = System.nanoTime();
            redis.command("DEL", "m-a");
            ExecutionException failed = assertThrows(ExecutionException.class, () -> done.get(10, TimeUnit.SECONDS));
            Duration async = Duration.ofNanos(System.nanoTime() - deleted);
            assertInstanceOf(LeaseLostException.class, failed.getCause());
            assertEquals("m-a", ((LeaseLostException) failed.getCause()).lockName());
            assertFalse(ran.get(), "the work never ran");
            System.out.println("a multi-lock waiting for m-c ended with m-a's loss " + blocking.toMillis() + " ms (blocking), "
                    + async.toMillis() + " ms (async) after m-a's delete; bound " + bound.toMillis() + " ms");
            assertTrue(blocking.compareTo(bound) <= 0, "blocking: ended " + blocking.toMillis() + " ms after the delete, bound "
                    + bound.toMillis() + " ms");
            assertTrue(async.compareTo(bound) <= 0, "async: ended " + async.toMillis() + " ms after the delete, bound "
                    + bound.toMillis() + " ms");
            theirs.unlock();
            Await.until(Bounds.CLEAN_UP, () -> "nothing held", () -> held() == 0L && baton.leasesHeld() == 0);
        } finally {
            other.close();
        }
    }

    @Test
    void asyncWorkIsCalledOffBatonsThreadsAlsoWhenTheLastLockComesFromAWakeUp() throws Exception {
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            BatonLock theirs = other.lock("m-c");
            theirs.lock();
            CompletableFuture<String> calledOn = new CompletableFuture<>();
            CompletableFuture<String> done = set().withLockAsync(scope -> {
                calledOn.complete(Thread.currentThread().getName());
                return CompletableFuture.completedFuture("done");
            }).toCompletableFuture();
            redis.awaitAnySubscriber("redisson_lock__channel:{m-c}");
            assertFalse(calledOn.isDone(), "not called before every lock is held");
            theirs.unlock();
            assertEquals("done", done.get(5, TimeUnit.SECONDS));
            String thread = calledOn.get();
            System.out.println("multi-lock withLockAsync, m-c granted by a wake-up: work called on " + thread);
            assertFalse(LeaseScopedWorkTest.isBatonThread(thread), "work called on Baton's thread: " + thread);
            Await.until(Bounds.CLEAN_UP, () -> "nothing held", () -> held() == 0L && baton.leasesHeld() == 0);
        } finally {
            other.close();
        }
    }
}
