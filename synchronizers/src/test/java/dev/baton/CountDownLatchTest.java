package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The count-down latch, the way users coordinate batch workers, on one real Redis. */
@ExtendWith(RedisExtension.class)
class CountDownLatchTest {
    private final RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private Baton coordinator;
    private List<Baton> workers;

    CountDownLatchTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        coordinator = clients.open(redis);
        workers = List.of(clients.open(redis), clients.open(redis));
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        clients.close();
    }

    @Test
    void aCoordinatorAwaitsABatchOfWorkersInTwoClients() throws Exception {
        int workerCount = 6;
        BatonCountDownLatch done = coordinator.countDownLatch("batch-done");
        assertTrue(done.trySetCount(workerCount));
        Future<Long> coordinatorWait = threads.submit(() -> {
            assertTrue(done.await(30, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        redis.awaitSubscribers("redisson_countdownlatch__channel__{batch-done}", 1);
        Set<Integer> results = ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicLong lastCountDown = new java.util.concurrent.atomic.AtomicLong();
        List<Future<?>> working = new ArrayList<>();
        for (int w = 0; w < workerCount; w++) {
            int id = w;
            Baton client = workers.get(w % 2);
            working.add(threads.submit(() -> {
                results.add(id * id); // the work
                long before = System.nanoTime();
                client.countDownLatch("batch-done").countDown();
                lastCountDown.accumulateAndGet(before, Math::max);
                return null;
            }));
        }
        for (Future<?> w : working) {
            w.get(10, TimeUnit.SECONDS);
        }
        long woken = coordinatorWait.get(30, TimeUnit.SECONDS);
        assertTrue(woken - lastCountDown.get() <= Bounds.within(Bounds.WAKE).toNanos(),
                "the coordinator is woken by the last countDown's message, not by its 5 s re-check");
        assertEquals(Set.of(0, 1, 4, 9, 16, 25), results);
        assertEquals(0, done.getCount());
        assertEquals(0L, redis.command("EXISTS", "batch-done"));
    }

    @Test
    void aStartGateReleasesEveryWorkerTogether() throws Exception {
        BatonCountDownLatch gate = coordinator.countDownLatch("start-gate");
        assertTrue(gate.trySetCount(1));
        AtomicInteger started = new AtomicInteger();
        List<Future<Long>> running = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            Baton client = workers.get(w % 2);
            running.add(threads.submit(() -> {
                client.countDownLatch("start-gate").await();
                started.incrementAndGet();
                return System.nanoTime();
            }));
        }
        redis.awaitSubscribers("redisson_countdownlatch__channel__{start-gate}", 2); // one per worker client
        assertEquals(0, started.get(), "nobody starts before the gate opens");
        long opened = System.nanoTime();
        gate.countDown();
        for (Future<Long> f : running) {
            assertTrue(f.get(10, TimeUnit.SECONDS) - opened <= Bounds.within(Bounds.WAKE).toNanos(),
                    "every worker released by the one message");
        }
        assertEquals(4, started.get());
        redis.awaitSubscribers("redisson_countdownlatch__channel__{start-gate}", 0, Bounds.CLEAN_UP);
    }

    @Test
    void awaitTimesOutAndLeavesNoSubscription() throws Exception {
        coordinator.countDownLatch("slow").trySetCount(1);
        assertFalse(workers.get(0).countDownLatch("slow").await(200, TimeUnit.MILLISECONDS));
        redis.awaitSubscribers("redisson_countdownlatch__channel__{slow}", 0, Bounds.CLEAN_UP);
    }

    @Test
    void anInterruptedAwaitThrowsAndLeavesNoSubscription() throws Exception {
        coordinator.countDownLatch("interrupted").trySetCount(1);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                workers.get(0).countDownLatch("interrupted").await();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        redis.awaitSubscribers("redisson_countdownlatch__channel__{interrupted}", 1);
        waiter.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        redis.awaitSubscribers("redisson_countdownlatch__channel__{interrupted}", 0, Bounds.CLEAN_UP);
    }

    @Test
    void deletingTheLatchReleasesWaitersWithAnException() throws Exception {
        coordinator.countDownLatch("doomed").trySetCount(3);
        redis.command("CONFIG", "RESETSTAT");
        List<Future<?>> waiting = new ArrayList<>();
        for (Baton client : workers) {
            waiting.add(threads.submit(() -> {
                client.countDownLatch("doomed").await();
                return null;
            }));
        }
        CompletableFuture<Void> async = workers.get(0).countDownLatch("doomed").awaitAsync().toCompletableFuture();
        redis.awaitSubscribers("redisson_countdownlatch__channel__{doomed}", 2);
        // All three waiters parked: each read the count once, subscribed, and read it again.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (redis.calls("get") < 6 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertTrue(coordinator.countDownLatch("doomed").delete());
        for (Future<?> f : waiting) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof SynchronizerDeletedException, String.valueOf(e.getCause()));
            assertEquals("doomed", ((SynchronizerDeletedException) e.getCause()).name());
        }
        ExecutionException e = assertThrows(ExecutionException.class, () -> async.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof SynchronizerDeletedException, String.valueOf(e.getCause()));
        assertFalse(coordinator.countDownLatch("doomed").delete(), "gone already");
    }

    @Test
    void aLatchCanBeReusedForASecondRound() throws Exception {
        BatonCountDownLatch latch = coordinator.countDownLatch("rounds");
        for (int round = 1; round <= 2; round++) {
            assertTrue(latch.trySetCount(2), "round " + round);
            assertFalse(latch.trySetCount(5), "armed already");
            assertEquals(2, latch.getCount());
            Future<Boolean> waiter = threads.submit(() -> workers.get(0).countDownLatch("rounds").await(10, TimeUnit.SECONDS));
            latch.countDown();
            workers.get(1).countDownLatch("rounds").countDown();
            assertTrue(waiter.get(15, TimeUnit.SECONDS));
            assertEquals(0, latch.getCount());
        }
    }

    @Test
    void countDownOnAnAbsentLatchIsANoOpAndAwaitReturnsAtOnce() throws Exception {
        BatonCountDownLatch latch = coordinator.countDownLatch("never-armed");
        latch.countDown();
        assertEquals(0, latch.getCount());
        assertEquals(0L, redis.command("EXISTS", "never-armed"));
        assertTrue(latch.await(0, TimeUnit.SECONDS));
        latch.await();
        redis.awaitSubscribers("redisson_countdownlatch__channel__{never-armed}", 0, Bounds.CLEAN_UP);
    }

    @Test
    void asyncAwaitCompletesAtZeroAndCancellingUnsubscribes() throws Exception {
        BatonCountDownLatch latch = coordinator.countDownLatch("async");
        latch.trySetCount(1);
        CompletableFuture<Void> cancelled = workers.get(0).countDownLatch("async").awaitAsync().toCompletableFuture();
        redis.awaitSubscribers("redisson_countdownlatch__channel__{async}", 1);
        cancelled.cancel(true);
        redis.awaitSubscribers("redisson_countdownlatch__channel__{async}", 0, Bounds.CLEAN_UP);
        CompletableFuture<Void> waiting = workers.get(1).countDownLatch("async").awaitAsync().toCompletableFuture();
        redis.awaitSubscribers("redisson_countdownlatch__channel__{async}", 1);
        latch.countDownAsync().toCompletableFuture().get(5, TimeUnit.SECONDS);
        waiting.get(10, TimeUnit.SECONDS);
    }

    @Test
    void badInputIsRefusedByName() {
        BatonCountDownLatch latch = coordinator.countDownLatch("bad");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(0)).getMessage().contains("count"));
        assertThrows(NullPointerException.class, () -> coordinator.countDownLatch(null));
        redis.command("RPUSH", "a-list", "x");
        WrongTypeException e = assertThrows(WrongTypeException.class, () -> coordinator.countDownLatch("a-list").getCount());
        assertEquals("a-list", e.key());
        assertThrows(WrongTypeException.class, () -> coordinator.countDownLatch("a-list").countDown());
        assertThrows(WrongTypeException.class, () -> coordinator.countDownLatch("a-list").trySetCount(1));
        assertEquals(1L, redis.command("LLEN", "a-list"));
    }
}
