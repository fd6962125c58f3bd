package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plain semaphore and the count-down latch stay exact under the faults every deployment
 * has: two pauses of 1.5 times the command timeout and ten connection kills (command and
 * pub/sub connections) while two clients acquire and release permits and count a latch down.
 * Callers follow the javadoc: a failed handle close is called again, a failed anonymous
 * release or countDown is not (Baton finishes it). At the end the permits are back to N, there
 * were never more than N holders, and the latch is short of zero by exactly the one countDown
 * the test holds back, so it opens exactly when that one lands.
 *
 * <p>Before request ids, the same run ended with permits leaked and released twice (more than
 * N holders at once) and the latch counted below the countDowns sent.
 */
class ExactUnderFaultsTest {
    private static final Duration TIMEOUT = Duration.ofMillis(500);
    private static final int PERMITS = 3;

    private RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final List<TcpProxy> proxies = new ArrayList<>();

    @BeforeEach
    void start() {
        redis = RedisServer.start();
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        proxies.forEach(TcpProxy::close);
        redis.close();
    }

    @Test
    void permitsAndCountsStayExactUnderPausesAndConnectionKills() throws Exception {
        // Each client reaches Redis through a proxy adding 3 ms each way, so commands are on the
        // wire when a kill comes: some ran and lose their reply, which Lettuce then re-sends.
        List<Baton> batons = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            TcpProxy proxy = TcpProxy.start(redis.host(), redis.port());
            proxies.add(proxy);
            proxy.setLatency(Duration.ofMillis(3));
            batons.add(clients.open(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(TIMEOUT).build()));
        }
        batons.get(0).semaphore("exact-sem").trySetPermits(PERMITS);
        int latchWorkers = 4;
        int countDownsEach = 60;
        long armed = (long) latchWorkers * countDownsEach + 1;
        assertTrue(batons.get(0).countDownLatch("exact-latch").trySetCount(armed));
        CompletableFuture<Long> opened = new CompletableFuture<>();
        threads.submit(() -> {
            try {
                if (batons.get(1).countDownLatch("exact-latch").await(2, TimeUnit.MINUTES)) {
                    opened.complete(System.nanoTime());
                }
            } catch (Exception e) {
                opened.completeExceptionally(e);
            }
            return null;
        });

        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger passes = new AtomicInteger();
        AtomicInteger failedReleases = new AtomicInteger();
        AtomicInteger failedCountDowns = new AtomicInteger();
        AtomicLong countDownsSent = new AtomicLong();
        List<Future<?>> workers = new ArrayList<>();
        long stopAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int w = 0; w < 8; w++) {
            BatonSemaphore semaphore = batons.get(w % 2).semaphore("exact-sem");
            boolean handles = w < 4;
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 100_000 && running.get() && System.nanoTime() < stopAt; i++) {
                    SemaphorePermits held = null;
                    try {
                        if (handles) {
                            held = semaphore.acquirePermits(1);
                        } else if (!semaphore.tryAcquire(1, TimeUnit.SECONDS)) {
                            continue;
                        }
                    } catch (RedisUnavailableException e) {
                        continue; // the acquire failed and was undone
                    }
                    most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    Thread.sleep(2); // hold the permit: overlapping holders are seen
                    inside.decrementAndGet();
                    passes.incrementAndGet();
                    if (handles) {
                        for (int tries = 0; ; tries++) {
                            try {
                                held.close();
                                break;
                            } catch (RedisUnavailableException e) {
                                failedReleases.incrementAndGet();
                                if (tries >= 20) {
                                    throw e;
                                }
                                // the javadoc's answer: close the handle again; it counts once
                            }
                        }
                    } else {
                        try {
                            semaphore.release();
                        } catch (DoNotRetryException e) {
                            failedReleases.incrementAndGet(); // Baton finishes it; not repeated
                        }
                    }
                }
                return null;
            }));
        }
        for (int w = 0; w < latchWorkers; w++) {
            BatonCountDownLatch latch = batons.get(w % 2).countDownLatch("exact-latch");
            workers.add(threads.submit(() -> {
                for (int i = 0; i < countDownsEach; i++) {
                    try {
                        latch.countDown();
                    } catch (DoNotRetryException e) {
                        failedCountDowns.incrementAndGet(); // Baton finishes it; not repeated
                    }
                    countDownsSent.incrementAndGet();
                    Thread.sleep(40);
                }
                return null;
            }));
        }

        // The faults: a pause of 1.5x the timeout, five command-connection kills, another pause,
        // five pub/sub-connection kills, 400 ms apart.
        Duration pause = TIMEOUT.multipliedBy(3).dividedBy(2);
        Thread.sleep(400);
        pauseFor(pause);
        for (int k = 0; k < 5; k++) {
            Thread.sleep(400);
            redis.command("CLIENT", "KILL", "TYPE", "normal");
        }
        Thread.sleep(400);
        pauseFor(pause);
        for (int k = 0; k < 5; k++) {
            Thread.sleep(400);
            redis.command("CLIENT", "KILL", "TYPE", "pubsub");
        }
        Thread.sleep(400);
        running.set(false);
        for (Future<?> worker : workers) {
            worker.get(60, TimeUnit.SECONDS);
        }
        System.out.printf("[exact] %d passes, %d failed releases, %d failed countDowns, at most %d holders%n",
                passes.get(), failedReleases.get(), failedCountDowns.get(), most.get());

        assertTrue(most.get() <= PERMITS, "never more holders than permits: saw " + most.get());
        assertEquals(PERMITS, most.get(), "the run really had every permit in use at once");
        assertTrue(failedReleases.get() + failedCountDowns.get() > 0, "the faults really failed some releases");
        // What Baton finishes in the background lands once the faults are over.
        BatonSemaphore semaphore = batons.get(0).semaphore("exact-sem");
        BatonCountDownLatch latch = batons.get(0).countDownLatch("exact-latch");
        Await.until(Duration.ofSeconds(10), () -> "permits back to " + PERMITS + " (now " + semaphore.availablePermits() + ")",
                () -> semaphore.availablePermits() == PERMITS);
        Await.until(Duration.ofSeconds(10), () -> "latch at 1 (now " + latch.getCount() + ")", () -> latch.getCount() == 1);
        assertEquals((long) latchWorkers * countDownsEach, countDownsSent.get());
        assertFalse(opened.isDone(), "the latch did not open before its last countDown");
        Thread.sleep(TIMEOUT.toMillis()); // nothing late may land: the counts stay exact
        assertEquals(PERMITS, semaphore.availablePermits());
        assertEquals(1, latch.getCount());
        long last = System.nanoTime();
        latch.countDown();
        long openedAt = opened.get(Bounds.within(Bounds.WAKE).toMillis(), TimeUnit.MILLISECONDS);
        assertTrue(openedAt >= last, "opened by the last countDown, not before it");
        assertTrue(openedAt - last <= Bounds.within(Bounds.WAKE).toNanos(), "opened " + (openedAt - last) / 1_000_000
                + " ms after the last countDown, bound " + Bounds.within(Bounds.WAKE).toMillis() + " ms");
    }

    private void pauseFor(Duration pause) throws InterruptedException {
        redis.pause();
        try {
            Thread.sleep(pause.toMillis()); // the pause is the fault
        } finally {
            redis.resume();
        }
    }
}
