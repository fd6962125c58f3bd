package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Connection failures in the middle of waits and releases, injected by a TCP proxy between one
 * client and Redis: waits with a budget ride through reconnects inside their budget, and a
 * release that could not be confirmed is completed by calling it again, whether or not the
 * first one had landed.
 */
class ReconnectTest {
    private static final Duration TIMEOUT = Duration.ofMillis(800);
    private static final Duration BUDGET = Duration.ofSeconds(8);

    private RedisServer redis;
    private TcpProxy proxy;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private Baton holder;
    private Baton waiter;

    @BeforeEach
    void start() {
        redis = RedisServer.start();
        proxy = TcpProxy.start(redis.host(), redis.port());
        holder = clients.open(BatonOptions.builder().redisUri(redis.uri()).commandTimeout(TIMEOUT).build());
        waiter = clients.open(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(TIMEOUT).build());
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        proxy.close();
        redis.close();
    }

    @Test
    void waitsWithABudgetRideThroughRepeatedConnectionCuts() throws Exception {
        // The holder takes everything; twelve waits start on the other client, behind the proxy.
        holder.lock("rc-lock").lock();
        holder.fairLock("rc-fair").lock();
        holder.readWriteLock("rc-rw").writeLock().lock();
        holder.semaphore("rc-sem").trySetPermits(0);
        holder.permitExpirableSemaphore("rc-pes").trySetPermits(0);
        holder.countDownLatch("rc-latch").trySetCount(1);
        long budgetMs = BUDGET.toMillis();
        Map<String, Callable<Boolean>> waits = new LinkedHashMap<>();
        waits.put("lock", () -> waiter.lock("rc-lock").tryLock(budgetMs, TimeUnit.MILLISECONDS));
        waits.put("fair lock", () -> waiter.fairLock("rc-fair").tryLock(budgetMs, TimeUnit.MILLISECONDS));
        waits.put("read lock", () -> waiter.readWriteLock("rc-rw").readLock().tryLock(budgetMs, TimeUnit.MILLISECONDS));
        for (int i = 0; i < 3; i++) {
            waits.put("semaphore " + i, () -> waiter.semaphore("rc-sem").tryAcquire(budgetMs, TimeUnit.MILLISECONDS));
            waits.put("expirable " + i, () -> waiter.permitExpirableSemaphore("rc-pes")
                    .tryAcquire(budgetMs, 30_000, TimeUnit.MILLISECONDS).isPresent());
        }
        waits.put("latch", () -> waiter.countDownLatch("rc-latch").await(budgetMs, TimeUnit.MILLISECONDS));
        waits.put("latch async", () -> waiter.countDownLatch("rc-latch").awaitAsync(budgetMs, TimeUnit.MILLISECONDS)
                .toCompletableFuture().get());
        waits.put("lock async", () -> waiter.lock("rc-lock2").tryLockAsync(budgetMs, TimeUnit.MILLISECONDS, 77)
                .toCompletableFuture().get());
        holder.lock("rc-lock2").lock();
        Map<String, Future<Boolean>> outcomes = new LinkedHashMap<>();
        Map<String, Long> finishedAt = new java.util.concurrent.ConcurrentHashMap<>();
        long started = System.nanoTime();
        for (Map.Entry<String, Callable<Boolean>> wait : waits.entrySet()) {
            outcomes.put(wait.getKey(), threads.submit(() -> {
                try {
                    return wait.getValue().call();
                } finally {
                    finishedAt.put(wait.getKey(), System.nanoTime());
                }
            }));
        }
        assertEquals(12, outcomes.size());
        redis.awaitAnySubscriber("redisson_lock__channel:{rc-lock}");
        redis.awaitAnySubscriber("redisson_sc:{rc-pes}");
        redis.awaitAnySubscriber("redisson_countdownlatch__channel__{rc-latch}");

        // For a second, every 100 ms the holder releases everything or takes back what it can,
        // and 25 ms later, while the woken waiters' attempts are on the wire (20 ms of latency
        // each way keeps them there), every connection of the waiting client is reset.
        proxy.setLatency(Duration.ofMillis(20));
        int retakenPermits = 0;
        long lastRelease = 0;
        for (int round = 0; round < 10; round++) {
            if (round % 2 == 0 || round == 9) {
                for (String lock : java.util.List.of("rc-lock", "rc-lock2")) {
                    if (holder.lock(lock).isHeldByCurrentThread()) {
                        holder.lock(lock).unlock();
                    }
                }
                if (holder.fairLock("rc-fair").isHeldByCurrentThread()) {
                    holder.fairLock("rc-fair").unlock();
                }
                if (holder.readWriteLock("rc-rw").writeLock().isHeldByCurrentThread()) {
                    holder.readWriteLock("rc-rw").writeLock().unlock();
                }
                holder.semaphore("rc-sem").release(round == 0 ? 3 : Math.max(1, retakenPermits));
                retakenPermits = 0;
                holder.permitExpirableSemaphore("rc-pes").addPermits(round == 0 ? 3 : 1);
                holder.countDownLatch("rc-latch").countDown();
                lastRelease = System.nanoTime();
            } else {
                holder.lock("rc-lock").tryLock();
                holder.lock("rc-lock2").tryLock();
                holder.readWriteLock("rc-rw").writeLock().tryLock();
                retakenPermits += holder.semaphore("rc-sem").drainPermits();
            }
            Thread.sleep(25); // the fault's rhythm
            proxy.resetAll();
            Thread.sleep(75);
        }

        Map<String, String> wrong = new LinkedHashMap<>();
        long deadline = started + Bounds.failure(TIMEOUT, BUDGET).toNanos();
        for (Map.Entry<String, Future<Boolean>> outcome : outcomes.entrySet()) {
            try {
                if (!outcome.getValue().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    wrong.put(outcome.getKey(), "false");
                }
            } catch (java.util.concurrent.ExecutionException e) {
                wrong.put(outcome.getKey(), String.valueOf(e.getCause()));
            } catch (java.util.concurrent.TimeoutException e) {
                wrong.put(outcome.getKey(), "still waiting past its bound");
            }
        }
        assertEquals(Map.of(), wrong, "waits that did not ride through the cuts");
        // The per-fault table: through resets, a waiter goes on within 1 s of the release (here the
        // last round's, whose connections are reset 25 ms after it).
        for (Map.Entry<String, Long> finished : finishedAt.entrySet()) {
            long after = finished.getValue() - lastRelease;
            assertTrue(after <= Bounds.within(Bounds.WAKE).toNanos(), finished.getKey() + " went on " + after / 1_000_000
                    + " ms after the last release, bound " + Bounds.within(Bounds.WAKE).toMillis() + " ms");
        }
        assertTrue(System.nanoTime() - started < BUDGET.toNanos(), "and all of them inside their budget");
        assertTrue(proxy.connectionsAccepted() >= 10, "the cuts really happened: " + proxy.connectionsAccepted());
    }

    @Test
    void aWaitWithABudgetReportsRedisUnavailableNotFalseWhenRedisStaysAway() throws Exception {
        holder.lock("away").lock();
        proxy.setBlackhole(true);
        long started = System.nanoTime();
        RedisUnavailableException e = assertThrows(RedisUnavailableException.class,
                () -> waiter.lock("away").tryLock(1_500, TimeUnit.MILLISECONDS));
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(tookMs >= 1_500, "it used its budget: " + tookMs + " ms");
        assertTrue(tookMs <= Bounds.failure(TIMEOUT, Duration.ofMillis(1_500)).toMillis(), "within its bound: " + tookMs + " ms");
        assertTrue(e.getMessage().startsWith("acquiring lock 'away' failed after "), e.getMessage());
    }

    @Test
    void anUnlockThatCouldNotBeConfirmedIsCompletedByTheNextUnlockWhetherOrNotItLanded() throws Exception {
        // It did not land: nothing reached Redis.
        BatonLock lock = waiter.lock("unconfirmed");
        lock.lock();
        proxy.setBlackhole(true);
        long started = System.nanoTime();
        RedisUnavailableException first = assertThrows(RedisUnavailableException.class, lock::unlock);
        assertTrue(System.nanoTime() - started <= Bounds.failure(TIMEOUT).toNanos(), "within the command timeout");
        assertTrue(first.getMessage().contains("calling unlock again completes the release"), first.getMessage());
        proxy.setBlackhole(false);
        proxy.cutAll();
        assertTrue(holder.lock("unconfirmed").isLocked(), "still held: the release never reached Redis");
        lock.unlock(); // not IllegalMonitorStateException: the hold was kept
        assertFalse(holder.lock("unconfirmed").isLocked());

        // It did land: the release ran in Redis, only its reply was lost.
        lock.lock();
        lock.lock();
        lock.unlock();
        proxy.setDropReplies(true);
        assertThrows(RedisUnavailableException.class, lock::unlock);
        proxy.setDropReplies(false);
        proxy.cutAll();
        assertFalse(holder.lock("unconfirmed").isLocked(), "the release had landed");
        lock.unlock(); // recognised as the first release having landed
        assertThrows(IllegalMonitorStateException.class, lock::unlock, "and nothing more is held");
    }

    @Test
    void aHandleWhoseCloseFailedCanBeClosedAgain() throws Exception {
        holder.semaphore("handle").trySetPermits(1);
        SemaphorePermits permits = waiter.semaphore("handle").acquirePermits(1);
        proxy.setBlackhole(true);
        assertThrows(RedisUnavailableException.class, permits::close);
        proxy.setBlackhole(false);
        proxy.cutAll();
        permits.close(); // waits for the same release, still being sent: counted once
        permits.close();
        assertEquals(1, holder.semaphore("handle").availablePermits());
        LockHold hold = waiter.lock("handle-lock").acquire();
        proxy.setBlackhole(true);
        assertThrows(RedisUnavailableException.class, hold::close);
        proxy.setBlackhole(false);
        proxy.cutAll();
        hold.close();
        assertFalse(holder.lock("handle-lock").isLocked());
        holder.permitExpirableSemaphore("handle-expirable").trySetPermits(1);
        ExpirablePermit permit = waiter.permitExpirableSemaphore("handle-expirable").acquirePermit(60, TimeUnit.SECONDS);
        proxy.setBlackhole(true);
        assertThrows(RedisUnavailableException.class, permit::close);
        proxy.setBlackhole(false);
        proxy.cutAll();
        permit.close(); // sends the release by id again: the permit comes back now, not at its lease
        permit.close();
        assertEquals(1, holder.permitExpirableSemaphore("handle-expirable").availablePermits());
    }
}
