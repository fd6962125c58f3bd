package dev.baton;

import dev.baton.internal.runtime.ClientRuntime;
import dev.baton.testkit.Await;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plain semaphore's in-client hand-off (docs/guarantees.md, "Semaphore"): a release on a
 * client where a thread of the same client waits for the semaphore gives it the permits without
 * a command; the count in Redis and what callers hold add up as before; a client hands at most
 * eight releases in a row to its own waiters, so another client's waiter is not starved.
 */
class SemaphoreHandOffTest extends TwoClientsTest {
    SemaphoreHandOffTest(RedisServer redis) {
        super(redis);
    }

    private long scriptCalls() {
        return redis.calls("evalsha") + redis.calls("eval");
    }

    private void awaitParked(Baton client, String name) {
        awaitParked(client, name, 1);
    }

    private void awaitParked(Baton client, String name, int waiters) {
        ClientRuntime runtime = Runtimes.of(client);
        Await.until(Duration.ofSeconds(10), () -> waiters + " waiters of '" + name + "' parked",
                () -> runtime.semaphoreWaitersParked(name) >= waiters);
    }

    @Test
    void aReleaseGoesToAWaitingThreadOfTheSameClientWithoutACommand() throws Exception {
        BatonSemaphore semaphore = a.semaphore("handed");
        assertTrue(semaphore.trySetPermits(1));
        semaphore.acquire();
        Future<?> waiter = threads.submit(() -> {
            semaphore.acquire();
            return null;
        });
        awaitParked(a, "handed");
        long before = scriptCalls();
        semaphore.release();
        waiter.get(5, TimeUnit.SECONDS);
        assertEquals(0, scriptCalls() - before, "no script ran for the release and the waiter's grant");
        assertEquals(1, Runtimes.of(a).semaphoreHandOffs());
        assertEquals(0, semaphore.availablePermits(), "the permit is held by the waiter, as after a release and an acquire");
        semaphore.release(); // nobody waits: to Redis
        assertEquals(1, semaphore.availablePermits());
    }

    @Test
    void anAsyncWaitersCallbacksDoNotRunOnTheReleasingThread() throws Exception {
        BatonSemaphore semaphore = a.semaphore("async-handed");
        assertTrue(semaphore.trySetPermits(1));
        semaphore.acquire();
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        CompletableFuture<Void> granted = semaphore.acquireAsync(1).toCompletableFuture()
                .thenRun(() -> ranOn.set(Thread.currentThread()));
        awaitParked(a, "async-handed");
        semaphore.release();
        granted.get(5, TimeUnit.SECONDS);
        assertEquals(1, Runtimes.of(a).semaphoreHandOffs());
        assertNotSame(Thread.currentThread(), ranOn.get(), "the caller's callback ran inside release()");
        assertEquals(0, semaphore.availablePermits());
    }

    @Test
    void aReleaseTooSmallForTheWaiterGoesToRedisAndTheWaiterTakesItsPermitsThere() throws Exception {
        BatonSemaphore semaphore = a.semaphore("too-small");
        assertTrue(semaphore.trySetPermits(2));
        semaphore.acquire(2);
        Future<?> waiter = threads.submit(() -> {
            semaphore.acquire(2);
            return null;
        });
        awaitParked(a, "too-small");
        semaphore.release(1);
        assertEquals(1, semaphore.availablePermits(), "one permit cannot serve a wait for two: it went to Redis");
        assertFalse(waiter.isDone());
        semaphore.release(1);
        waiter.get(5, TimeUnit.SECONDS);
        assertEquals(0, Runtimes.of(a).semaphoreHandOffs());
        assertEquals(0, semaphore.availablePermits());
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0} threads")
    @org.junit.jupiter.params.provider.ValueSource(ints = {2, 4})
    void aWaiterOnAnotherClientIsNotStarvedByAClientHandingPermitsToItsOwnThreads(int churners) throws Exception {
        // Two threads: the one handed to is busy holding whenever the other parks, so nobody is
        // parked between hand-offs (a review found the turn count lost there, and b starved).
        BatonSemaphore mine = a.semaphore("turns");
        assertTrue(mine.trySetPermits(1));
        long holdMs = churners == 2 ? 20 : 2;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger pairs = new AtomicInteger();
        List<Future<?>> churn = new ArrayList<>();
        for (int t = 0; t < churners; t++) {
            churn.add(threads.submit(() -> {
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!stop.get() && System.nanoTime() < end) {
                    mine.acquire();
                    pairs.incrementAndGet();
                    Thread.sleep(holdMs); // a hold: the other threads are parked by the time it ends
                    mine.release();
                }
                return null;
            }));
        }
        Await.until(Duration.ofSeconds(10), () -> "a's threads handing permits to each other", () -> Runtimes.of(a).semaphoreHandOffs() > 20);
        long incrBefore = redis.calls("incrby");
        long handedBefore = Runtimes.of(a).semaphoreHandOffs();
        BatonSemaphore theirs = b.semaphore("turns");
        boolean got;
        try {
            // Without turns every release of a finds a thread of a parked, and b waits for ever.
            got = theirs.tryAcquire(1, 10, TimeUnit.SECONDS);
        } finally {
            stop.set(true);
        }
        if (got) {
            theirs.release();
        }
        for (Future<?> f : churn) {
            f.get(30, TimeUnit.SECONDS);
        }
        assertTrue(got, "client b's waiter never got the permit while client a handed it among its threads");
        long handed = Runtimes.of(a).semaphoreHandOffs() - handedBefore;
        long toRedis = redis.calls("incrby") - incrBefore;
        // Of a's releases since then, at most eight in a row were handed over: every run of hand-offs
        // ends with a release to Redis (one INCRBY each, b's own release among them).
        assertTrue(handed <= 8 * (toRedis + 1), handed + " hand-offs against " + toRedis + " releases to Redis");
        assertEquals(1, mine.availablePermits(), "every permit back in Redis after " + pairs.get() + " pairs");
    }

    @Test
    void aHandleClosedByTwoThreadsAtOnceReleasesItsPermitsOnce() throws Exception {
        BatonSemaphore semaphore = a.semaphore("closed-twice");
        assertTrue(semaphore.trySetPermits(1));
        for (int round = 0; round < 30; round++) {
            SemaphorePermits handle = semaphore.acquirePermits(1);
            List<Future<?>> waiters = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                waiters.add(threads.submit(() -> semaphore.tryAcquire(1, 20, TimeUnit.SECONDS) ? 1 : 0));
            }
            awaitParked(a, "closed-twice", 2);
            java.util.concurrent.CyclicBarrier together = new java.util.concurrent.CyclicBarrier(2);
            List<Future<?>> closers = new ArrayList<>();
            for (int c = 0; c < 2; c++) {
                closers.add(threads.submit(() -> {
                    together.await();
                    handle.close();
                    return null;
                }));
            }
            for (Future<?> f : closers) {
                f.get(10, TimeUnit.SECONDS);
            }
            // One permit came back: one waiter has it, the other still waits (or, had the permit
            // gone to Redis, took it there). Then it is released and the second waiter takes it.
            Await.until(Duration.ofSeconds(10), () -> "one waiter granted", () -> waiters.stream().filter(Future::isDone).count() >= 1);
            assertEquals(1, waiters.stream().filter(Future::isDone).count(), "round " + round + ": the permit of one handle went to two waiters");
            semaphore.release();
            int granted = 0;
            for (Future<?> f : waiters) {
                granted += (Integer) f.get(20, TimeUnit.SECONDS);
            }
            assertEquals(2, granted);
            semaphore.release();
            assertEquals(1, semaphore.availablePermits(), "round " + round);
        }
    }

    /**
     * A release's message rings the oldest waiters, whatever they ask for: one that cannot use
     * what is free passes its wake-up on to the next younger one, which can, instead of leaving
     * it to wait for its 5 s re-check.
     */
    @Test
    void aWaiterRungForPermitsItCannotUsePassesTheWakeUpToAYoungerOneThatCan() throws Exception {
        BatonSemaphore semaphore = a.semaphore("mixed");
        assertTrue(semaphore.trySetPermits(0));
        Future<?> wantsThree = threads.submit(() -> {
            semaphore.acquire(3);
            return null;
        });
        awaitParked(a, "mixed", 1);
        Future<?> wantsOne = threads.submit(() -> {
            semaphore.acquire(1);
            return null;
        });
        awaitParked(a, "mixed", 2);
        long released = System.nanoTime();
        b.semaphore("mixed").release(1); // another client: to Redis, announced as "1"
        wantsOne.get(10, TimeUnit.SECONDS);
        long took = System.nanoTime() - released;
        assertTrue(took <= dev.baton.testkit.Bounds.within(dev.baton.testkit.Bounds.WAKE).toNanos(),
                "the wait for one permit went on " + took / 1_000_000 + " ms after the release (1 s + margin)");
        assertFalse(wantsThree.isDone());
        b.semaphore("mixed").release(3);
        wantsThree.get(10, TimeUnit.SECONDS);
        semaphore.release(4);
        assertEquals(4, semaphore.availablePermits());
    }

    /**
     * The wake-up is passed only to a wait the free permits would serve: a release of one
     * permit with ten waits for two each parked costs the release and one refused attempt, not
     * a walk through the queue (a review found a pass to every younger waiter in turn).
     */
    @Test
    void aReleaseTooSmallForEveryWaiterWakesOneNotTheQueue() throws Exception {
        BatonSemaphore semaphore = a.semaphore("queue-of-twos");
        assertTrue(semaphore.trySetPermits(0));
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            waiters.add(threads.submit(() -> {
                semaphore.acquire(2);
                return null;
            }));
        }
        b.semaphore("warm-up").release(1); // the release script cached, so no NOSCRIPT and EVAL below
        awaitParked(a, "queue-of-twos", 10);
        awaitQuietScripts();
        redis.command("CONFIG", "RESETSTAT");
        b.semaphore("queue-of-twos").release(1); // to Redis, announced as "1": rings the oldest
        awaitQuietScripts();
        assertTrue(scriptCalls() <= 2, "the release and one refused attempt, not the queue's: " + scriptCalls());
        b.semaphore("queue-of-twos").release(19);
        for (Future<?> w : waiters) {
            w.get(10, TimeUnit.SECONDS);
        }
        assertEquals(0, semaphore.availablePermits());
    }

    /** Waits until no script has run for 200 ms: every attempt under way has landed. */
    private void awaitQuietScripts() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long last = scriptCalls();
        long quietSince = System.nanoTime();
        while (System.nanoTime() - quietSince < TimeUnit.MILLISECONDS.toNanos(200)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("scripts never went quiet: " + scriptCalls());
            }
            Thread.sleep(10); // polling the server's counts: quiet has no signal
            long now = scriptCalls();
            if (now != last) {
                last = now;
                quietSince = System.nanoTime();
            }
        }
    }
}
