package dev.baton.reactor;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ReactiveBaton} on a real Redis: holders per subscription, never per thread; the scoped
 * forms release however the inner publisher ends and cancel it when the lease is lost; a
 * cancelled subscription leaves no hold, subscription or queue entry. The watchdog timeout is
 * 900 ms.
 */
@ExtendWith(RedisExtension.class)
class ReactiveBatonTest {
    private static final Duration WATCHDOG = Duration.ofMillis(900);
    private final RedisServer redis;
    private Baton baton;
    private ReactiveBaton reactive;

    ReactiveBatonTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG)
                .commandTimeout(Duration.ofSeconds(1)).build());
        reactive = ReactiveBaton.of(baton);
    }

    @AfterEach
    void close() {
        baton.close();
    }

    @Test
    void withLockHoldsForTheSubscriptionAndReleasesHoweverTheWorkEnds() {
        // snippet reactor-with-lock begins
        ReactiveLock lock = reactive.lock("orders:42");
        Mono<String> posted = lock.withLock(scope -> Mono.fromCallable(() -> "posted under " + scope.lockName())
                .subscribeOn(Schedulers.boundedElastic()));      // the work may run on any thread
        // snippet reactor-with-lock ends
        assertEquals("posted under orders:42", posted.block(Duration.ofSeconds(5)));
        assertEquals(0L, redis.command("EXISTS", "orders:42"), "released");

        IllegalStateException failure = new IllegalStateException("the work failed");
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> lock.withLock(scope -> Mono.<String>error(failure)).block(Duration.ofSeconds(5)));
        assertEquals(failure, thrown);
        assertEquals(0L, redis.command("EXISTS", "orders:42"), "released after an error");

        List<Integer> items = lock.withLockMany(scope -> Flux.range(1, 5).delayElements(Duration.ofMillis(10)))
                .collectList().block(Duration.ofSeconds(5));
        assertEquals(List.of(1, 2, 3, 4, 5), items);
        assertEquals(0L, redis.command("EXISTS", "orders:42"), "released after the flux completed");
        long token = reactive.fencedLock("fenced").withLock(scope -> Mono.just(scope.fencingToken().orElseThrow()))
                .block(Duration.ofSeconds(5));
        assertTrue(token > 0);
    }

    @Test
    void aPipelineThatLocksOnOneThreadUnlocksOnAnother() {
        ReactiveLock lock = reactive.lock("hopping");
        AtomicReference<String> workedOn = new AtomicReference<>();
        AtomicReference<String> unlockedFrom = new AtomicReference<>();
        // snippet reactor-lock-unlock begins
        Mono<Void> pipeline = lock.lock()
                .publishOn(Schedulers.boundedElastic())
                .then(Mono.fromRunnable(() -> workedOn.set(Thread.currentThread().getName())))
                .publishOn(Schedulers.parallel())
                .then(Mono.fromRunnable(() -> unlockedFrom.set(Thread.currentThread().getName())))
                .then(lock.unlock())                          // another thread, the same owner: this subscription's
                .contextWrite(ReactiveBaton.newOwner());
        // snippet reactor-lock-unlock ends
        pipeline.block(Duration.ofSeconds(5));
        assertEquals(0L, redis.command("EXISTS", "hopping"), "unlocked by the owner that locked, on another thread");
        assertTrue(workedOn.get().startsWith("boundedElastic") && unlockedFrom.get().startsWith("parallel"),
                "two threads: " + workedOn.get() + ", " + unlockedFrom.get());
        IllegalMonitorStateException notHeld = assertThrows(IllegalMonitorStateException.class,
                () -> lock.unlock().contextWrite(ReactiveBaton.newOwner()).block(Duration.ofSeconds(5)));
        assertTrue(notHeld.getMessage().contains("hopping"), notHeld.getMessage());

        IllegalStateException noOwner = assertThrows(IllegalStateException.class,
                () -> lock.lock().block(Duration.ofSeconds(5)));
        assertTrue(noOwner.getMessage().contains("newOwner"), noOwner.getMessage());
    }

    @Test
    void twoPipelinesOnOneThreadExcludeEachOther() throws Exception {
        Scheduler one = Schedulers.newSingle("one-event-loop");
        try {
            ReactiveLock lock = reactive.lock("one-thread");
            lock.lock().contextWrite(ReactiveBaton.newOwner()).subscribeOn(one).block(Duration.ofSeconds(5));
            Boolean second = lock.tryLock(Duration.ZERO).contextWrite(ReactiveBaton.newOwner()).subscribeOn(one)
                    .block(Duration.ofSeconds(5));
            assertFalse(second, "another subscription on the same thread is another owner: it does not re-enter");
            // A pipeline nested in another gets an owner of its own too.
            Boolean nested = lock.tryLock(Duration.ZERO).contextWrite(ReactiveBaton.newOwner())
                    .flatMap(ignored -> lock.tryLock(Duration.ZERO).contextWrite(ReactiveBaton.newOwner()))
                    .contextWrite(ReactiveBaton.newOwner()).subscribeOn(one).block(Duration.ofSeconds(5));
            assertFalse(nested);
            assertEquals(1L, redis.command("EXISTS", "one-thread"));
        } finally {
            one.dispose();
        }
    }

    @Test
    void aCancelledSubscriptionLeavesNoHoldSubscriptionOrQueueEntry() throws Exception {
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            BatonLock theirs = other.fairLock("queued");
            theirs.lock();
            AtomicBoolean ran = new AtomicBoolean();
            Disposable waiting = reactive.fairLock("queued").withLock(scope -> Mono.fromRunnable(() -> ran.set(true)))
                    .subscribe();
            Await.until(Duration.ofSeconds(5), () -> "the subscription queued", () ->
                    (Long) redis.command("ZCARD", "baton_fair_queue:{queued}") == 1L);
            waiting.dispose();
            Await.until(Bounds.CLEAN_UP, () -> "its queue entry and subscription gone", () ->
                    (Long) redis.command("ZCARD", "baton_fair_queue:{queued}") == 0L
                            && redis.subscribers("baton_fair_lock:{queued}") == 0L);
            theirs.unlock();
            assertEquals(0L, redis.command("EXISTS", "queued"), "nothing held after the holder left");
            assertFalse(ran.get(), "the work of a cancelled wait never runs");
            assertEquals(0, baton.leasesHeld());

            // Cancelled while the work runs: the work is cancelled and the lock released.
            AtomicBoolean cancelled = new AtomicBoolean();
            AtomicBoolean started = new AtomicBoolean();
            Disposable working = reactive.lock("working").withLock(scope -> Mono.never()
                    .doOnSubscribe(s -> started.set(true)).doOnCancel(() -> cancelled.set(true))).subscribe();
            Await.until(Duration.ofSeconds(5), () -> "the work running", started::get);
            working.dispose();
            Await.until(Bounds.CLEAN_UP, () -> "the work cancelled (" + cancelled.get() + ") and the lock released ("
                    + redis.command("EXISTS", "working") + ", " + baton.leasesHeld() + ")", () -> cancelled.get()
                    && (Long) redis.command("EXISTS", "working") == 0L && baton.leasesHeld() == 0);
        } finally {
            other.close();
        }
    }

    @Test
    void theInnerPublisherIsCancelledWithLeaseLostWhenTheLeaseIsLost() {
        AtomicBoolean cancelled = new AtomicBoolean();
        AtomicLong deleted = new AtomicLong();
        Mono<Object> work = reactive.lock("lost").withLock(scope -> Mono.never().doOnSubscribe(s -> {
            deleted.set(System.nanoTime());
            redis.command("DEL", "lost");
        }).doOnCancel(() -> cancelled.set(true)));
        Throwable error = assertThrows(RuntimeException.class, () -> work.block(Duration.ofSeconds(5)));
        Duration after = Duration.ofNanos(System.nanoTime() - deleted.get());
        assertInstanceOf(LeaseLostException.class, error, String.valueOf(error));
        assertTrue(cancelled.get(), "the inner publisher was cancelled");
        Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
        assertTrue(after.compareTo(bound) <= 0, "within " + bound.toMillis() + " ms of the delete: " + after.toMillis());
    }

    @Test
    void semaphoresAndLatchesAsPublishers() {
        ReactiveSemaphore permits = reactive.semaphore("partner");
        assertTrue(permits.trySetPermits(2).block(Duration.ofSeconds(5)));
        AtomicLong inside = new AtomicLong();
        AtomicLong most = new AtomicLong();
        Flux.range(0, 8).flatMap(i -> permits.withPermits(1, () -> Mono.fromRunnable(() -> {
            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
        }).then(Mono.delay(Duration.ofMillis(20))).then(Mono.fromRunnable(inside::decrementAndGet)))).blockLast(Duration.ofSeconds(10));
        assertTrue(most.get() <= 2 && most.get() >= 1, "at most the 2 permits at once: " + most.get());
        assertEquals(2, permits.availablePermits().block(Duration.ofSeconds(5)), "every permit back");

        ReactiveCountDownLatch latch = reactive.countDownLatch("workers");
        assertTrue(latch.trySetCount(2).block(Duration.ofSeconds(5)));
        java.util.concurrent.CompletableFuture<Void> awaited = latch.await().toFuture();
        latch.countDown().block(Duration.ofSeconds(5));
        assertFalse(awaited.isDone(), "one count left");
        latch.countDown().block(Duration.ofSeconds(5));
        awaited.join();
        assertEquals(0L, latch.count().block(Duration.ofSeconds(5)));
        assertFalse(reactive.countDownLatch("never").trySetCount(1).then(reactive.countDownLatch("never")
                .await(Duration.ofMillis(100))).block(Duration.ofSeconds(5)));
    }

    @Test
    void aCancelledPermitWaitTakesNoPermitAndADeletedLatchEndsItsWait() throws Exception {
        ReactiveSemaphore permits = reactive.semaphore("scarce");
        assertTrue(permits.trySetPermits(1).block(Duration.ofSeconds(5)));
        baton.semaphore("scarce").acquire(1);
        AtomicBoolean ran = new AtomicBoolean();
        Disposable waiting = permits.withPermits(1, () -> Mono.fromRunnable(() -> ran.set(true))).subscribe();
        redis.awaitAnySubscriber("redisson_sc:{scarce}");
        waiting.dispose();
        baton.semaphore("scarce").release(1);
        Await.until(Bounds.CLEAN_UP, () -> "the permit back and no waiter left", () -> "1".equals(redis.command("GET", "scarce"))
                && redis.subscribers("redisson_sc:{scarce}") == 0L);
        assertFalse(ran.get(), "the work of a cancelled wait never runs");

        ReactiveCountDownLatch latch = reactive.countDownLatch("deleted-latch");
        assertTrue(latch.trySetCount(1).block(Duration.ofSeconds(5)));
        java.util.concurrent.CompletableFuture<Void> awaited = latch.await().toFuture();
        redis.awaitAnySubscriber("redisson_countdownlatch__channel__{deleted-latch}");
        baton.countDownLatch("deleted-latch").delete();
        java.util.concurrent.ExecutionException ended = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> awaited.get(5, java.util.concurrent.TimeUnit.SECONDS));
        assertInstanceOf(dev.baton.SynchronizerDeletedException.class, ended.getCause());
    }

    @Test
    void aFluxUnderALostLeaseEndsWithLeaseLostAfterItsItems() {
        AtomicBoolean cancelled = new AtomicBoolean();
        List<Long> items = new java.util.concurrent.CopyOnWriteArrayList<>();
        Flux<Long> flux = reactive.lock("lost-flux").withLockMany(scope -> Flux.interval(Duration.ofMillis(20))
                .doOnNext(i -> {
                    if (i == 2) {
                        redis.command("DEL", "lost-flux");
                    }
                }).doOnCancel(() -> cancelled.set(true)));
        Throwable error = assertThrows(RuntimeException.class, () -> flux.doOnNext(items::add).blockLast(Duration.ofSeconds(5)));
        assertInstanceOf(LeaseLostException.class, error, String.valueOf(error));
        assertTrue(items.size() >= 3, "the items before the loss passed on: " + items);
        assertTrue(cancelled.get(), "the inner flux cancelled");
        assertEquals(0, baton.leasesHeld());
    }

    @Test
    void theInnerPublisherIsCancelledWithinTheLeaseWhenRedisRestartsEmpty() {
        AtomicBoolean cancelled = new AtomicBoolean();
        AtomicLong restartBegan = new AtomicLong();
        AtomicLong cancelledAt = new AtomicLong();
        Mono<Object> work = reactive.lock("restarted").withLock(scope -> Mono.never().doOnSubscribe(s -> {
            restartBegan.set(System.nanoTime());
            redis.restartWithoutData();
        }).doOnCancel(() -> {
            cancelledAt.set(System.nanoTime());
            cancelled.set(true);
        }));
        Throwable error = assertThrows(RuntimeException.class, () -> work.block(Duration.ofSeconds(10)));
        assertInstanceOf(LeaseLostException.class, error, String.valueOf(error));
        assertTrue(cancelled.get(), "the inner publisher was cancelled");
        Duration after = Duration.ofNanos(cancelledAt.get() - restartBegan.get());
        Duration bound = Bounds.within(WATCHDOG);
        assertTrue(after.compareTo(bound) <= 0, "cancelled " + after.toMillis() + " ms after the restart began, bound "
                + bound.toMillis() + " ms");
        assertEquals(0, baton.leasesHeld());
    }

    /**
     * Runs a never-ending inner publisher under {@code name} with {@code fault} done once it is
     * subscribed, and {@code heal} after it ended; how long after the fault began the publisher
     * was cancelled, which must have ended the whole with {@link LeaseLostException}.
     */
    private Duration cancelledAfter(String name, Runnable fault, Runnable heal) {
        AtomicLong faultAt = new AtomicLong();
        AtomicLong cancelledAt = new AtomicLong();
        Mono<Object> work = reactive.lock(name).withLock(scope -> Mono.never().doOnSubscribe(s -> {
            faultAt.set(System.nanoTime());
            fault.run();
        }).doOnCancel(() -> cancelledAt.set(System.nanoTime())));
        Throwable error;
        try {
            error = assertThrows(RuntimeException.class, () -> work.block(Duration.ofSeconds(10)));
        } finally {
            heal.run();
        }
        assertInstanceOf(LeaseLostException.class, error, String.valueOf(error));
        assertTrue(cancelledAt.get() != 0, "the inner publisher was cancelled");
        return Duration.ofNanos(cancelledAt.get() - faultAt.get());
    }

    /** Cancelled by its validity's end: within the watchdog timeout + 300 ms of the fault, not before half of it; nothing kept. */
    private void assertCancelledByTheValidityEnd(Duration after, String fault) {
        Duration bound = Bounds.within(WATCHDOG);
        assertTrue(after.compareTo(bound) <= 0, "cancelled " + after.toMillis() + " ms after " + fault + ", bound "
                + bound.toMillis() + " ms");
        assertTrue(after.compareTo(WATCHDOG.dividedBy(2)) >= 0, "not before the last renewal's lease could end: "
                + after.toMillis() + " ms");
        Await.until(Bounds.CLEAN_UP, () -> "nothing kept held", () -> baton.leasesHeld() == 0);
    }

    @Test
    void theInnerPublisherIsCancelledWhenItsValidityRunsOutWhileRedisIsPaused() {
        assertCancelledByTheValidityEnd(cancelledAfter("paused", redis::pause, redis::resume), "the pause");
    }

    @Test
    void theInnerPublisherIsCancelledWhenTheWatchdogCannotRenewWithRedisDown() {
        assertCancelledByTheValidityEnd(cancelledAfter("down", redis::kill, redis::restart), "Redis went down");
    }
}
