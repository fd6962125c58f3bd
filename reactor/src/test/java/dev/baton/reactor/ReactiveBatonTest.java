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
            assertEquals(1L, redis.command("EXISTS", "one-thread"));

            // On a free lock, so that the answers depend on the owner each pipeline gets: the
            // outer pipeline takes it; one nested with its own contextWrite(newOwner()) is another
            // owner and is refused; one nested without a contextWrite of its own shares the
            // outer's owner (the operators above its contextWrite) and re-enters.
            ReactiveLock free = reactive.lock("nested");
            long outerOwner = Baton.newOwnerId();
            List<Boolean> answers = free.tryLock(Duration.ZERO)
                    .flatMap(outer -> free.tryLock(Duration.ZERO).contextWrite(ReactiveBaton.newOwner())
                            .flatMap(ownOwner -> free.tryLock(Duration.ZERO)
                                    .map(sharedOwner -> List.of(outer, ownOwner, sharedOwner))))
                    .contextWrite(reactor.util.context.Context.of(ReactiveBaton.OWNER, outerOwner))
                    .subscribeOn(one).block(Duration.ofSeconds(5));
            assertEquals(List.of(true, false, true), answers,
                    "[outer takes it, nested with its own owner refused, nested under the outer's owner re-enters]");
            BatonLock inRedis = baton.lock("nested");
            assertTrue(inRedis.isHeldByThread(outerOwner), "held by the outer pipeline's owner");
            assertEquals(2, inRedis.getHoldCount(outerOwner), "the re-entry is a second hold of that owner");
            assertEquals(List.of("2"), redis.command("HVALS", "nested"), "one owner in Redis, with two holds");
            free.unlock().then(free.unlock()).contextWrite(reactor.util.context.Context.of(ReactiveBaton.OWNER, outerOwner))
                    .subscribeOn(one).block(Duration.ofSeconds(5));
            assertEquals(0L, redis.command("EXISTS", "nested"), "both holds were the outer owner's");

            // A retry() above contextWrite(newOwner()) re-enters as the same owner.
            java.util.concurrent.atomic.AtomicInteger attempts = new java.util.concurrent.atomic.AtomicInteger();
            Boolean retried = free.tryLock(Duration.ZERO)
                    .flatMap(got -> attempts.incrementAndGet() == 1 ? Mono.<Boolean>error(new IllegalStateException("once more"))
                            : Mono.just(got))
                    .retry(1)
                    .flatMap(got -> redis.command("HVALS", "nested").equals(List.of("2"))
                            ? free.unlock().then(free.unlock()).thenReturn(got) : Mono.just(false))
                    .contextWrite(ReactiveBaton.newOwner()).subscribeOn(one).block(Duration.ofSeconds(5));
            assertTrue(retried, "the retry re-entered (two holds of one owner) and that owner released both");
            assertEquals(2, attempts.get());
            assertEquals(0L, redis.command("EXISTS", "nested"));
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

    /**
     * A subscription to lead() is a candidacy: elected, its work's publisher runs; when it
     * completes the candidate queues again and leads again (alone); disposing the subscription
     * cancels the running work and leaves the election, with nobody leading.
     */
    @Test
    void aLeaderElectionSubscriptionIsACandidacyWhoseWorkRunsWhileItLeads() {
        ReactiveLeaderElection election = reactive.leaderElection("reactive-election");
        java.util.concurrent.atomic.AtomicInteger terms = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean cancelled = new java.util.concurrent.atomic.AtomicBoolean();
        Disposable candidacy = election.lead("reactive@host", leadership -> terms.incrementAndGet() < 3
                ? Mono.delay(Duration.ofMillis(20))
                : Mono.never().doOnCancel(() -> cancelled.set(true))).subscribe();
        Await.until(Duration.ofSeconds(10), () -> "three terms (two works that completed, one that runs)", () -> terms.get() >= 3);
        assertEquals("reactive@host", election.state().block(Duration.ofSeconds(5)).leader().orElseThrow().identity());
        candidacy.dispose();
        Await.until(Duration.ofSeconds(5), () -> "the running work cancelled and nobody leading",
                () -> cancelled.get() && election.state().block(Duration.ofSeconds(5)).leader().isEmpty());
    }

    @Test
    void aRateLimiterAsPublishersSignalsOnReactorsSchedulerAndACancelUndoesTheReservation() {
        ReactiveRateLimiter rate = reactive.rateLimiter("reactive-rate", dev.baton.RateLimit.of(1, Duration.ofSeconds(10)));
        assertTrue(rate.tryAcquire(1).block(Duration.ofSeconds(5)));
        assertFalse(rate.tryAcquire(1).block(Duration.ofSeconds(5)), "the next permit is 10 s away");
        String[] thread = new String[1];
        assertFalse(rate.tryAcquire(1, Duration.ofMillis(100)).doOnNext(v -> thread[0] = Thread.currentThread().getName())
                .block(Duration.ofSeconds(5)), "its slot is beyond 100 ms: false at once");
        assertTrue(thread[0].startsWith("parallel-"), "signalled on " + thread[0]);
        Disposable waiting = rate.acquire(1).subscribe();
        Await.until(Duration.ofSeconds(5), () -> "the subscription reserved its slot",
                () -> rate.state().block(Duration.ofSeconds(5)).reservedAhead().toSeconds() >= 15);
        waiting.dispose();
        Await.until(Bounds.CLEAN_UP, () -> "the cancelled reservation undone",
                () -> rate.state().block(Duration.ofSeconds(5)).reservedAhead().toSeconds() < 11);
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
        long reads = redis.calls("get");
        java.util.concurrent.CompletableFuture<Void> awaited = latch.await().toFuture();
        redis.awaitAnySubscriber("redisson_countdownlatch__channel__{deleted-latch}");
        // Parked: its reads before and after SUBSCRIBE have run (a latch deleted before the await
        // has seen its count while subscribed is taken as having reached zero, see guarantees.md).
        redis.awaitCalls("get", reads + 2);
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

    /**
     * Baton's own threads: Lettuce's I/O and computation threads ({@code lettuce-nioEventLoop-*},
     * {@code lettuce-epollEventLoop-*}, {@code lettuce-eventExecutorLoop-*}) and Baton's timers
     * ({@code baton-timer-*}, {@code baton-system-timer}).
     */
    private static boolean isBatonThread(String thread) {
        return thread.startsWith("lettuce-") || thread.startsWith("baton-");
    }

    /** The signals a subscriber got, each with the thread it came on, and the end of the subscription. */
    private record Signals(String what, List<String> seen, java.util.concurrent.CompletableFuture<Void> ended) {
        /** Waits (bounded) for the end; asserts every signal came on Reactor's parallel scheduler, none on Baton's threads. */
        void assertOnReactorsScheduler() throws Exception {
            ended.get(5, java.util.concurrent.TimeUnit.SECONDS);
            System.out.println(what + ": " + seen);
            assertFalse(seen.isEmpty(), what + ": no signal");
            for (String signal : seen) {
                String thread = signal.substring(signal.indexOf(" on ") + 4);
                assertFalse(isBatonThread(thread), what + ": a signal on Baton's thread: " + seen);
                assertTrue(thread.startsWith("parallel-"), what + ": a signal off Reactor's parallel scheduler: " + seen);
            }
        }
    }

    /** Subscribes to {@code publisher}, recording the thread of each onNext, onError and onComplete. */
    private static Signals record(String what, org.reactivestreams.Publisher<?> publisher) {
        List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.CompletableFuture<Void> ended = new java.util.concurrent.CompletableFuture<>();
        Flux.from(publisher).subscribe(
                value -> seen.add("onNext(" + value + ") on " + Thread.currentThread().getName()),
                error -> {
                    seen.add("onError(" + error.getClass().getSimpleName() + ") on " + Thread.currentThread().getName());
                    ended.complete(null);
                },
                () -> {
                    seen.add("onComplete on " + Thread.currentThread().getName());
                    ended.complete(null);
                });
        return new Signals(what, seen, ended);
    }

    @Test
    void publishersSignalOnReactorsSchedulerNeverOnBatonsThreads() throws Exception {
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            ReactiveLock lock = reactive.lock("signals");
            long owner = Baton.newOwnerId();
            reactor.util.context.Context mine = reactor.util.context.Context.of(ReactiveBaton.OWNER, owner);
            record("lock()", lock.lock().contextWrite(mine)).assertOnReactorsScheduler();
            record("tryLock(0) re-entering", lock.tryLock(Duration.ZERO).contextWrite(mine)).assertOnReactorsScheduler();
            record("unlock()", lock.unlock().contextWrite(mine)).assertOnReactorsScheduler();
            record("unlock() of the last hold", lock.unlock().contextWrite(mine)).assertOnReactorsScheduler();
            record("unlock() refused (onError)", lock.unlock().contextWrite(mine)).assertOnReactorsScheduler();
            record("withLock value", lock.withLock(scope -> Mono.just("v"))).assertOnReactorsScheduler();
            record("withLock error", lock.withLock(scope -> Mono.error(new IllegalStateException("x"))))
                    .assertOnReactorsScheduler();
            record("withLockMany", lock.withLockMany(scope -> Flux.just(1, 2, 3))).assertOnReactorsScheduler();
            BatonLock theirs = other.lock("signals");
            theirs.lock();
            try {
                // Ended by Baton's timer: the wait runs out while another client holds the lock.
                record("tryLock(100 ms) timing out", lock.tryLock(Duration.ofMillis(100)).contextWrite(ReactiveBaton.newOwner()))
                        .assertOnReactorsScheduler();
            } finally {
                theirs.unlock();
            }

            ReactiveSemaphore permits = reactive.semaphore("signals-sem");
            record("trySetPermits", permits.trySetPermits(1)).assertOnReactorsScheduler();
            record("acquire", permits.acquire(1)).assertOnReactorsScheduler();
            record("tryAcquire(100 ms) timing out", permits.tryAcquire(1, Duration.ofMillis(100))).assertOnReactorsScheduler();
            record("release", permits.release(1)).assertOnReactorsScheduler();
            record("withPermits", permits.withPermits(1, () -> Mono.just("w"))).assertOnReactorsScheduler();
            record("availablePermits", permits.availablePermits()).assertOnReactorsScheduler();

            ReactiveCountDownLatch latch = reactive.countDownLatch("signals-latch");
            record("trySetCount", latch.trySetCount(1)).assertOnReactorsScheduler();
            record("await(100 ms) timing out", latch.await(Duration.ofMillis(100))).assertOnReactorsScheduler();
            record("countDown", latch.countDown()).assertOnReactorsScheduler();
            record("await() at zero", latch.await()).assertOnReactorsScheduler();
        } finally {
            other.close();
        }
    }

    /**
     * The signals caused by a pub/sub wake-up: another client's release, release of permits,
     * count-down or delete arrives on Lettuce's I/O thread, and Baton's future completes there;
     * the publisher must still signal on Reactor's parallel scheduler.
     */
    @Test
    void publishersWokenByAnotherClientSignalOnReactorsSchedulerNeverOnBatonsThreads() throws Exception {
        Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        try {
            // The raw future a wake-up completes, for the record: where a publisher without publishOn would signal.
            BatonLock theirs = other.lock("woken");
            theirs.lock();
            AtomicReference<String> rawThread = new AtomicReference<>();
            long rawOwner = Baton.newOwnerId();
            java.util.concurrent.CompletableFuture<Void> raw = baton.lock("woken").lockAsync(rawOwner)
                    .thenRun(() -> rawThread.set(Thread.currentThread().getName())).toCompletableFuture();
            redis.awaitAnySubscriber("redisson_lock__channel:{woken}");
            theirs.unlock();
            raw.get(5, java.util.concurrent.TimeUnit.SECONDS);
            System.out.println("a raw lockAsync woken by another client's release completed on " + rawThread.get());
            baton.lock("woken").unlockAsync(rawOwner).toCompletableFuture().get(5, java.util.concurrent.TimeUnit.SECONDS);

            ReactiveLock lock = reactive.lock("woken");
            long owner = Baton.newOwnerId();
            reactor.util.context.Context mine = reactor.util.context.Context.of(ReactiveBaton.OWNER, owner);
            theirs.lock();
            Signals locked = record("lock() woken by a release", lock.lock().contextWrite(mine));
            redis.awaitAnySubscriber("redisson_lock__channel:{woken}");
            assertFalse(locked.ended().isDone(), "waiting while the other client holds it");
            theirs.unlock();
            locked.assertOnReactorsScheduler();
            record("unlock() after a wake-up", lock.unlock().contextWrite(mine)).assertOnReactorsScheduler();

            theirs.lock();
            Signals tried = record("tryLock(5 s) woken by a release", lock.tryLock(Duration.ofSeconds(5)).contextWrite(mine));
            redis.awaitAnySubscriber("redisson_lock__channel:{woken}");
            theirs.unlock();
            tried.assertOnReactorsScheduler();
            assertTrue(tried.seen().get(0).startsWith("onNext(true)"), tried.seen().toString());
            lock.unlock().contextWrite(mine).block(Duration.ofSeconds(5));

            theirs.lock();
            Signals scoped = record("withLock woken by a release", lock.withLock(scope -> Mono.just("w")));
            redis.awaitAnySubscriber("redisson_lock__channel:{woken}");
            theirs.unlock();
            scoped.assertOnReactorsScheduler();

            ReactiveSemaphore permits = reactive.semaphore("woken-sem");
            assertTrue(permits.trySetPermits(1).block(Duration.ofSeconds(5)));
            other.semaphore("woken-sem").acquire(1);
            Signals acquired = record("acquire woken by another client's release", permits.acquire(1));
            redis.awaitAnySubscriber("redisson_sc:{woken-sem}");
            other.semaphore("woken-sem").release(1);
            acquired.assertOnReactorsScheduler();
            permits.release(1).block(Duration.ofSeconds(5));
            other.semaphore("woken-sem").acquire(1);
            Signals scopedPermits = record("withPermits woken by another client's release",
                    permits.withPermits(1, () -> Mono.just("p")));
            redis.awaitAnySubscriber("redisson_sc:{woken-sem}");
            other.semaphore("woken-sem").release(1);
            scopedPermits.assertOnReactorsScheduler();

            ReactiveCountDownLatch latch = reactive.countDownLatch("woken-latch");
            assertTrue(latch.trySetCount(1).block(Duration.ofSeconds(5)));
            Signals opened = record("await() woken by another client's countDown", latch.await());
            redis.awaitAnySubscriber("redisson_countdownlatch__channel__{woken-latch}");
            other.countDownLatch("woken-latch").countDown();
            opened.assertOnReactorsScheduler();
            assertTrue(opened.seen().get(0).startsWith("onComplete"), opened.seen().toString());

            ReactiveCountDownLatch deleted = reactive.countDownLatch("woken-deleted");
            assertTrue(deleted.trySetCount(1).block(Duration.ofSeconds(5)));
            long reads = redis.calls("get");
            Signals failed = record("await() ended by another client's delete", deleted.await());
            redis.awaitAnySubscriber("redisson_countdownlatch__channel__{woken-deleted}");
            redis.awaitCalls("get", reads + 2); // parked: both its reads ran, see above
            other.countDownLatch("woken-deleted").delete();
            failed.assertOnReactorsScheduler();
            assertTrue(failed.seen().get(0).startsWith("onError(SynchronizerDeletedException)"), failed.seen().toString());
        } finally {
            other.close();
        }
    }

    @Test
    void aFluxIsCancelledWithLeaseLostWithinAThirdOfTheWatchdogTimeoutOfTheDelete() throws Exception {
        java.util.concurrent.CountDownLatch itemsPassedOn = new java.util.concurrent.CountDownLatch(3);
        AtomicLong cancelledAt = new AtomicLong();
        List<Long> items = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.CompletableFuture<Throwable> ended = new java.util.concurrent.CompletableFuture<>();
        AtomicLong endedAt = new AtomicLong();
        Disposable subscription = reactive.lock("lost-flux-bound").withLockMany(scope -> Flux.interval(Duration.ofMillis(20))
                        .doOnCancel(() -> cancelledAt.compareAndSet(0, System.nanoTime())))
                .subscribe(item -> {
                    items.add(item);
                    itemsPassedOn.countDown();
                }, error -> {
                    endedAt.set(System.nanoTime());
                    ended.complete(error);
                }, () -> ended.complete(null));
        try {
            assertTrue(itemsPassedOn.await(5, java.util.concurrent.TimeUnit.SECONDS), "items passed on under the lock");
            long deleted = System.nanoTime();
            assertEquals(1L, redis.command("DEL", "lost-flux-bound"));
            Throwable error = ended.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertInstanceOf(LeaseLostException.class, error, String.valueOf(error));
            assertTrue(cancelledAt.get() != 0, "the inner flux was cancelled");
            Duration cancelled = Duration.ofNanos(cancelledAt.get() - deleted);
            Duration failed = Duration.ofNanos(endedAt.get() - deleted);
            Duration bound = Bounds.within(WATCHDOG.dividedBy(3));
            System.out.println("withLockMany: inner flux cancelled " + cancelled.toMillis() + " ms, LeaseLostException "
                    + failed.toMillis() + " ms after the delete; bound " + bound.toMillis() + " ms; " + items.size()
                    + " items passed on");
            assertTrue(cancelled.compareTo(bound) <= 0, "cancelled " + cancelled.toMillis() + " ms after the delete, bound "
                    + bound.toMillis() + " ms");
            assertTrue(failed.compareTo(bound) <= 0, "LeaseLostException " + failed.toMillis() + " ms after the delete, bound "
                    + bound.toMillis() + " ms");
            Await.until(Bounds.CLEAN_UP, () -> "nothing held", () -> baton.leasesHeld() == 0);
        } finally {
            subscription.dispose();
        }
    }
}
