package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pause drill: Redis is stopped (SIGSTOP) for longer than any call's bound while
 * clients are busy, and a call of every kind, blocking and asynchronous, starts in the pause.
 * Every one must fail with {@link RedisUnavailableException} (a semaphore release and a latch
 * countDown, which a second call would repeat: {@link DoNotRetryException}) within its own bound (the command
 * timeout + 150 ms; a wait with a budget: budget + timeout + 150 ms; each with the margin of
 * {@link Bounds}), say what it was doing and for how long, and after SIGCONT nothing may be
 * left over or counted twice: acquires undone, the failed unlock completed by a second unlock,
 * the failed release and countDown landed exactly once.
 *
 * <p>An earlier acquire engine awaited each clean-up command with a timeout of its own before
 * reporting; this test failed on it (calls ended after two and three timeouts).
 */
class PauseDrillTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final Duration BUDGET = Duration.ofMillis(1_500);
    /** Longer than the longest bound (a budgeted wait may send its last attempt at its deadline). */
    private static final Duration PAUSE = Bounds.failure(TIMEOUT, BUDGET).plusMillis(200);

    private RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private Baton baton;

    @BeforeEach
    void start() {
        redis = RedisServer.start();
        baton = clients.open(BatonOptions.builder().redisUri(redis.uri()).commandTimeout(TIMEOUT).build());
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        redis.close();
    }

    /** One call made during the pause, with the bound it must fail within. */
    /**
     * One call started in the pause, and what it must throw: RedisUnavailableException, or for a
     * release that a second call would repeat DoNotRetryException (the retry rule).
     */
    private record Drill(String name, Duration bound, Callable<?> call, Class<? extends BatonException> expected) {
        Drill(String name, Duration bound, Callable<?> call) {
            this(name, bound, call, RedisUnavailableException.class);
        }
    }

    private static Callable<?> async(Callable<? extends CompletionStage<?>> call) {
        return () -> {
            try {
                return call.call().toCompletableFuture().get();
            } catch (ExecutionException e) {
                throw (Exception) e.getCause();
            }
        };
    }

    @Test
    void everyCallStartedInAPauseFailsWithinItsBoundAndNothingIsLeftOrCountedTwice() throws Exception {
        Duration single = Bounds.failure(TIMEOUT);
        Duration budgeted = Bounds.failure(TIMEOUT, BUDGET);
        // State before the pause: a held lock (to unlock in the pause), permits, a latch.
        BatonLock held = baton.lock("drill-held");
        held.lock();
        baton.lock("drill-busy").lock(); // so waits on it do not succeed at once after SIGCONT
        BatonSemaphore semaphore = baton.semaphore("drill-sem");
        semaphore.trySetPermits(2);
        assertTrue(semaphore.tryAcquire()); // one permit out, released in the pause
        BatonPermitExpirableSemaphore expirable = baton.permitExpirableSemaphore("drill-pes");
        expirable.trySetPermits(2);
        BatonCountDownLatch latch = baton.countDownLatch("drill-latch");
        latch.trySetCount(3);
        BatonLock leased = baton.lock("drill-leased");
        leased.lockAsync(60, TimeUnit.SECONDS, 9_100).toCompletableFuture().get(5, TimeUnit.SECONDS);
        leased.updateLeaseAsync(Duration.ofSeconds(60), 9_100).toCompletableFuture().get(5, TimeUnit.SECONDS);
        long oldLeaseSetAt = System.nanoTime();
        baton.lock("drill-warm").tryLock(); // every script loaded, so no NOSCRIPT round trip later
        baton.lock("drill-warm").unlock();

        List<Drill> drills = new ArrayList<>();
        long owner = 9_000;
        drills.add(new Drill("lock()", single, () -> {
            baton.lock("drill-a").lock();
            return null;
        }));
        drills.add(new Drill("lock(lease)", single, () -> {
            baton.lock("drill-b").lock(10, TimeUnit.SECONDS);
            return null;
        }));
        drills.add(new Drill("lockInterruptibly()", single, () -> {
            baton.lock("drill-c").lockInterruptibly();
            return null;
        }));
        drills.add(new Drill("tryLock()", single, () -> baton.lock("drill-d").tryLock()));
        drills.add(new Drill("tryLock(budget)", budgeted, () -> baton.lock("drill-busy").tryLock(BUDGET.toMillis(), TimeUnit.MILLISECONDS)));
        long me = Thread.currentThread().getId();
        drills.add(new Drill("unlock (of this thread's hold)", single, async(() -> held.unlockAsync(me))));
        drills.add(new Drill("isLocked()", single, () -> baton.lock("drill-e").isLocked()));
        drills.add(new Drill("fairLock().lock()", single, () -> {
            baton.fairLock("drill-fair").lock();
            return null;
        }));
        drills.add(new Drill("fairLock().tryLock(budget)", budgeted,
                () -> baton.fairLock("drill-fair2").tryLock(BUDGET.toMillis(), TimeUnit.MILLISECONDS)));
        drills.add(new Drill("writeLock().lock()", single, () -> {
            baton.readWriteLock("drill-rw").writeLock().lock();
            return null;
        }));
        drills.add(new Drill("readLock().lock()", single, () -> {
            baton.readWriteLock("drill-rw2").readLock().lock();
            return null;
        }));
        drills.add(new Drill("fencedLock().lockAndGetToken()", single, () -> baton.fencedLock("drill-fenced").lockAndGetToken()));
        drills.add(new Drill("semaphore.acquire()", single, () -> {
            semaphore.acquire();
            return null;
        }));
        drills.add(new Drill("semaphore.tryAcquire()", single, semaphore::tryAcquire));
        drills.add(new Drill("semaphore.tryAcquire(budget)", budgeted,
                () -> semaphore.tryAcquire(BUDGET.toMillis(), TimeUnit.MILLISECONDS)));
        drills.add(new Drill("semaphore.release()", single, () -> {
            semaphore.release();
            return null;
        }, DoNotRetryException.class));
        drills.add(new Drill("expirable.acquire(lease)", single, () -> expirable.acquire(10, TimeUnit.SECONDS)));
        drills.add(new Drill("expirable.tryAcquire()", single, expirable::tryAcquire));
        drills.add(new Drill("expirable.tryAcquire(budget)", budgeted,
                () -> expirable.tryAcquire(BUDGET.toMillis(), 10_000, TimeUnit.MILLISECONDS)));
        drills.add(new Drill("latch.await()", single, () -> {
            latch.await();
            return null;
        }));
        drills.add(new Drill("latch.await(budget)", budgeted, () -> latch.await(BUDGET.toMillis(), TimeUnit.MILLISECONDS)));
        drills.add(new Drill("latch.countDown()", single, () -> {
            latch.countDown();
            return null;
        }, DoNotRetryException.class));
        drills.add(new Drill("latch.getCount()", single, latch::getCount));
        drills.add(new Drill("lockAsync", single, async(() -> baton.lock("drill-f").lockAsync(owner))));
        drills.add(new Drill("tryLockAsync(budget)", budgeted,
                async(() -> baton.lock("drill-busy").tryLockAsync(BUDGET.toMillis(), TimeUnit.MILLISECONDS, owner + 1))));
        drills.add(new Drill("writeLock().lockAsync", single,
                async(() -> baton.readWriteLock("drill-rw3").writeLock().lockAsync(owner + 2))));
        drills.add(new Drill("semaphore.acquireAsync", single, async(() -> baton.semaphore("drill-sem2").acquireAsync(1))));
        drills.add(new Drill("expirable.tryAcquireAsync(budget)", budgeted,
                async(() -> baton.permitExpirableSemaphore("drill-pes2").tryAcquireAsync(BUDGET.toMillis(), 10_000, TimeUnit.MILLISECONDS))));
        drills.add(new Drill("latch.awaitAsync", single, async(() -> baton.countDownLatch("drill-latch").awaitAsync())));
        drills.add(new Drill("updateLeaseAsync", single, async(() -> leased.updateLeaseAsync(Duration.ofMinutes(2), 9_100))));
        drills.add(new Drill("waiterCount()", single, () -> baton.lock("drill-busy").waiterCount()));
        drills.add(new Drill("fairLock().waiterCount()", single, () -> baton.fairLock("drill-fair").waiterCount()));
        drills.add(new Drill("expirable.tryAcquire(2 permits, budget)", budgeted,
                () -> expirable.tryAcquire(2, BUDGET.toMillis(), 10_000, TimeUnit.MILLISECONDS)));

        // Load: two threads keep locking and unlocking other names through the pause.
        AtomicBoolean loading = new AtomicBoolean(true);
        AtomicInteger loadHangs = new AtomicInteger();
        List<Future<?>> load = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            BatonLock loaded = baton.lock("drill-load-" + t);
            load.add(threads.submit(() -> {
                for (int i = 0; i < 100_000 && loading.get(); i++) {
                    long begun = System.nanoTime();
                    try {
                        if (loaded.tryLock(200, TimeUnit.MILLISECONDS)) {
                            loaded.unlock();
                        }
                    } catch (RedisUnavailableException e) {
                        if (System.nanoTime() - begun > Bounds.failure(TIMEOUT, Duration.ofMillis(200)).toNanos()) {
                            loadHangs.incrementAndGet();
                        }
                    }
                }
                return null;
            }));
        }

        redis.pause();
        long pausedAt = System.nanoTime();
        Map<String, Future<String>> outcomes = new LinkedHashMap<>();
        CountDownLatch go = new CountDownLatch(1);
        try {
            for (Drill drill : drills) {
                outcomes.put(drill.name(), threads.submit(() -> {
                    go.await();
                    long begun = System.nanoTime();
                    try {
                        drill.call().call();
                        return "returned normally";
                    } catch (RedisUnavailableException | DoNotRetryException e) {
                        if (!drill.expected().isInstance(e)) {
                            return "threw " + e + ", not a " + drill.expected().getSimpleName();
                        }
                        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begun);
                        if (tookMs > drill.bound().toMillis()) {
                            return "took " + tookMs + " ms, bound " + drill.bound().toMillis() + " ms: " + e.getMessage();
                        }
                        return e.getMessage().matches("(?s).*(\\d+ ms|\\d+(\\.\\d+)? s).*") ? "ok" : "no elapsed time in: " + e.getMessage();
                    } catch (Exception e) {
                        return "threw " + e;
                    }
                }));
            }
            go.countDown();
            Map<String, String> wrong = new LinkedHashMap<>();
            for (Map.Entry<String, Future<String>> outcome : outcomes.entrySet()) {
                String result = outcome.getValue().get(budgeted.toMillis() + 5_000, TimeUnit.MILLISECONDS);
                if (!result.equals("ok")) {
                    wrong.put(outcome.getKey(), result);
                }
            }
            assertEquals(Map.of(), wrong, "calls that missed their bound or did not fail as documented");
            assertTrue(System.nanoTime() - pausedAt < PAUSE.toNanos(), "every call ended while Redis was still paused");
        } finally {
            long left = PAUSE.toNanos() - (System.nanoTime() - pausedAt);
            if (left > 0) {
                Thread.sleep(TimeUnit.NANOSECONDS.toMillis(left)); // the pause itself is the fault under test
            }
            redis.resume();
        }
        loading.set(false);
        for (Future<?> f : load) {
            f.get(30, TimeUnit.SECONDS);
        }
        assertEquals(0, loadHangs.get(), "load calls beyond their bound");

        // After SIGCONT: the failed unlock is completed by a second one, as its exception said.
        held.unlock();
        assertFalse(held.isLocked(), "the kept hold was released by the second unlock");
        // Every acquire made in the pause was undone; the release and countDown landed once.
        Await.until(Bounds.within(TIMEOUT), () -> "permits: " + semaphore.availablePermits() + " of 2",
                () -> semaphore.availablePermits() == 2);
        Await.until(Bounds.within(TIMEOUT), () -> "latch count " + latch.getCount() + ", want 2", () -> latch.getCount() == 2);
        for (String name : List.of("drill-a", "drill-b", "drill-c", "drill-d", "drill-e", "drill-f", "drill-fair",
                "drill-fair2", "drill-rw", "drill-rw2", "drill-rw3", "drill-fenced")) {
            Await.until(Bounds.within(TIMEOUT), () -> name + " still held", () -> redis.command("EXISTS", name).equals(0L));
        }
        assertEquals(2, expirable.availablePermits(), "expirable permits taken in the pause were given back");
        // The update's bytes reached the paused server's socket, so it may still run once Redis
        // answers again: the hold then has the old lease (60 s, from before the pause) or the
        // new one (120 s), never none and never another.
        long pttl = (Long) redis.command("PTTL", "drill-leased");
        long sinceOldLease = System.nanoTime() - oldLeaseSetAt;
        boolean old = pttl > 0 && pttl <= 60_000 - TimeUnit.NANOSECONDS.toMillis(sinceOldLease) + 50;
        boolean landedLate = pttl > 60_000 && pttl <= 120_000;
        assertTrue(old || landedLate, "the old lease or the requested one, PTTL " + pttl + " ms");
        System.out.println("[pause-drill] the update that failed in the pause " + (landedLate ? "landed when Redis answered again"
                : "never ran") + " (PTTL " + pttl + " ms)");
        assertEquals(0, baton.semaphore("drill-sem2").availablePermits(), "nothing taken from an empty semaphore");
        assertEquals(0, baton.permitExpirableSemaphore("drill-pes2").availablePermits());
        Thread.sleep(TIMEOUT.toMillis()); // nothing more may land later: the counts stay exact
        assertEquals(2, semaphore.availablePermits());
        assertEquals(2, latch.getCount());
        assertEquals(2, expirable.availablePermits());
    }
}
