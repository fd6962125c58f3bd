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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
        Set<String> threads = ConcurrentHashMap.newKeySet();
        // snippet reactor-lock-unlock begins
        Mono<Void> pipeline = lock.lock()
                .publishOn(Schedulers.boundedElastic())
                .doOnNext(ignored -> { })
                .then(Mono.fromRunnable(() -> threads.add(Thread.currentThread().getName())))
                .publishOn(Schedulers.parallel())
                .then(lock.unlock())                          // the same owner: this subscription's
                .contextWrite(ReactiveBaton.newOwner());
        // snippet reactor-lock-unlock ends
        pipeline.block(Duration.ofSeconds(5));
        assertEquals(0L, redis.command("EXISTS", "hopping"), "unlocked by the owner that locked, on another thread");
        assertEquals(1, threads.size());

        IllegalStateException noOwner = assertThrows(IllegalStateException.class,
                () -> lock.lock().block(Duration.ofSeconds(5)));
        assertTrue(noOwner.getMessage().contains("newOwner"), noOwner.getMessage());
    }

    @Test
    void twoPipelinesOnOneThreadExcludeEachOther() throws Exception {
        Scheduler one = Schedulers.newSingle("one-event-loop");
        try {
            ReactiveLock lock = reactive.lock("one-thread");
            AtomicReference<String> firstThread = new AtomicReference<>();
            Mono<Void> first = lock.lock().doOnSuccess(v -> firstThread.set(Thread.currentThread().getName()))
                    .contextWrite(ReactiveBaton.newOwner()).subscribeOn(one);
            first.block(Duration.ofSeconds(5));
            Boolean second = lock.tryLock(Duration.ZERO).contextWrite(ReactiveBaton.newOwner()).subscribeOn(one)
                    .block(Duration.ofSeconds(5));
            assertFalse(second, "another subscription on the same thread is another owner: it does not re-enter");
            BatonLock plain = baton.lock("one-thread");
            assertFalse(plain.isHeldByCurrentThread(), "and no thread holds it");
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
        Mono<Void> awaited = latch.await().cache();
        awaited.subscribe();
        latch.countDown().then(latch.countDown()).block(Duration.ofSeconds(5));
        awaited.block(Duration.ofSeconds(5));
        assertEquals(0L, latch.count().block(Duration.ofSeconds(5)));
        assertFalse(reactive.countDownLatch("never").trySetCount(1).then(reactive.countDownLatch("never")
                .await(Duration.ofMillis(100))).block(Duration.ofSeconds(5)));
    }
}
