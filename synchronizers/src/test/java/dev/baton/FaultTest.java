package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Faults injected into a real Redis while Baton works: scripts flushed, connections killed,
 * the server paused, a holder stalled past its lease, latency and a one-way blackhole. Each
 * checks that no call hangs past its timeout (plus a margin) and that exclusion holds.
 */
class FaultTest {
    private static final Duration TIMEOUT = Duration.ofMillis(800);
    private static final Duration NO_HANG = Duration.ofSeconds(60);

    private RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void start() {
        redis = RedisServer.start();
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        redis.close();
    }

    private Baton open(String uri) {
        return clients.open(BatonOptions.builder().redisUri(uri).commandTimeout(TIMEOUT).build());
    }

    /** What {@link #workThrough} saw: passes through the lock, and the attempts that did not get in. */
    private record Work(int done, int failedFast, int timedOut, Map<String, Integer> failures) {
    }

    /**
     * Two clients x 2 threads each pass through one lock 150 times while {@code fault} runs once,
     * midway. An attempt the fault fails fast (RedisUnavailableException: while Lettuce
     * reconnects it refuses commands at once) or times out is not a pass; the worker tries again,
     * within 2,000 attempts and 40 s, so a count of passes measures whether work went on, not how
     * many attempts the reconnect window happened to swallow.
     */
    private Work workThrough(Runnable fault) throws Exception {
        List<BatonLock> locks = List.of(open(redis.uri()).lock("shared"), open(redis.uri()).lock("shared"));
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicInteger timedOut = new AtomicInteger();
        Map<String, Integer> failures = new ConcurrentHashMap<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            BatonLock lock = locks.get(t % 2);
            workers.add(threads.submit(() -> {
                int passes = 0;
                for (int attempt = 0; attempt < 2_000 && passes < 150 && System.nanoTime() < deadline; attempt++) {
                    try {
                        if (!lock.tryLock(5, 10, TimeUnit.SECONDS)) {
                            timedOut.incrementAndGet();
                            continue;
                        }
                    } catch (RedisUnavailableException e) {
                        failures.merge(e.getMessage(), 1, Integer::sum);
                        continue; // the fault: this call failed fast, as promised
                    }
                    try {
                        if (inside.incrementAndGet() > 1) {
                            overlaps.incrementAndGet();
                        }
                        Thread.yield();
                        inside.decrementAndGet();
                        done.incrementAndGet();
                        passes++;
                    } finally {
                        unlockAsTheJavadocSays(lock);
                    }
                }
                return null;
            }));
        }
        while (done.get() < 100) {
            Thread.sleep(5);
        }
        fault.run();
        for (Future<?> w : workers) {
            w.get(NO_HANG.toSeconds(), TimeUnit.SECONDS);
        }
        assertEquals(0, overlaps.get(), "two holders at once");
        int failedFast = failures.values().stream().mapToInt(Integer::intValue).sum();
        return new Work(done.get(), failedFast, timedOut.get(), failures);
    }

    /**
     * An unlock that fails on the connection keeps the hold: call it again (BatonLock#unlock).
     * An IllegalMonitorStateException here would be a false report and fails the test.
     */
    private static void unlockAsTheJavadocSays(BatonLock lock) {
        for (int tries = 0; ; tries++) {
            try {
                lock.unlock();
                return;
            } catch (RedisUnavailableException e) {
                if (tries >= 20) {
                    throw e;
                }
            }
        }
    }

    @Test
    void scriptFlushMidRunIsAbsorbed() {
        assertTimeoutPreemptively(NO_HANG, () -> {
            long before = redis.calls("eval");
            Work work = workThrough(() -> redis.command("SCRIPT", "FLUSH"));
            assertEquals(600, work.done(), "every pass made it: " + work);
            assertEquals(0, work.failedFast() + work.timedOut(), "every attempt succeeded: NOSCRIPT is retried once with EVAL: " + work);
            assertTrue(redis.calls("eval") > before, "scripts were reloaded");
        });
    }

    @Test
    void killedCommandConnectionsAreReconnected() {
        assertTimeoutPreemptively(NO_HANG, () -> {
            Work work = workThrough(() -> redis.command("CLIENT", "KILL", "TYPE", "normal"));
            assertEquals(600, work.done(), "work went on after the kill: " + work);
        });
    }

    @Test
    void aKilledPubSubConnectionDoesNotStrandWaiters() throws Exception {
        Baton holder = open(redis.uri());
        Baton waiting = open(redis.uri());
        BatonLock held = holder.lock("stranded");
        held.lock(); // watchdog lease: 30 s, longer than the wait below
        Future<Long> waiter = threads.submit(() -> {
            assertTrue(waiting.lock("stranded").tryLock(20, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        redis.awaitSubscribers("redisson_lock__channel:{stranded}", 1);
        redis.command("CLIENT", "KILL", "TYPE", "pubsub");
        long released = System.nanoTime();
        held.unlock(); // its message may be lost; the re-subscription makes waiters re-check
        long wentOnAfter = waiter.get(25, TimeUnit.SECONDS) - released;
        // The per-fault table: a waiter goes on within 1 s of the release after a CLIENT KILL.
        assertTrue(wentOnAfter <= Bounds.within(Bounds.WAKE).toNanos(), "the waiter went on "
                + wentOnAfter / 1_000_000 + " ms after the release, bound " + Bounds.within(Bounds.WAKE).toMillis() + " ms");
    }

    @Test
    void aPausedRedisFailsCallsWithinTheTimeoutAndServesAgainAfter() {
        assertTimeoutPreemptively(NO_HANG, () -> {
            Baton baton = open(redis.uri());
            BatonLock lock = baton.lock("paused");
            assertTrue(lock.tryLock());
            lock.unlock();
            redis.pause();
            try {
                long start = System.nanoTime();
                assertThrows(RedisUnavailableException.class, lock::tryLock);
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertTrue(tookMs <= Bounds.failure(TIMEOUT).toMillis(), "failed after " + tookMs + " ms");
            } finally {
                redis.resume();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            boolean served = false;
            while (!served && System.nanoTime() < deadline) {
                try {
                    served = lock.tryLock();
                } catch (RedisUnavailableException e) {
                    // commands queued while paused are still draining
                }
            }
            assertTrue(served, "served again after resume");
            lock.unlock();
        });
    }

    @Test
    void aHolderStalledPastItsLeaseLosesItWithoutHarmingTheNextHolder() throws Exception {
        BatonFencedLock stale = open(redis.uri()).fencedLock("job");
        long staleToken = stale.lockAndGetToken(300, TimeUnit.MILLISECONDS);
        // ... the holder stalls (a GC pause, a stopped VM): no unlock, no renewal ...
        Baton next = open(redis.uri());
        long nextToken = threads.submit(() -> next.fencedLock("job").tryLockAndGetToken(10, 30, TimeUnit.SECONDS)
                .getAsLong()).get(20, TimeUnit.SECONDS);
        assertTrue(nextToken > staleToken, "the stale holder's token is lower");
        assertThrows(LeaseLostException.class, stale::unlock, "the stale unlock reports the lost lease");
        assertTrue(next.fencedLock("job").isLocked(), "and leaves the new holder's lock alone");
    }

    @Test
    void latencyAndAOneWayBlackholeThroughAProxy() {
        assertTimeoutPreemptively(NO_HANG, () -> {
            try (TcpProxy proxy = TcpProxy.start(redis.host(), redis.port())) {
                Baton baton = open(proxy.uri());
                BatonLock lock = baton.lock("far");
                proxy.setLatency(Duration.ofMillis(100)); // 200 ms per round trip, inside the timeout
                assertTrue(lock.tryLock());
                lock.unlock();
                proxy.setLatency(Duration.ZERO);
                proxy.setBlackhole(true); // bytes vanish, nothing is closed
                long start = System.nanoTime();
                assertThrows(RedisUnavailableException.class, lock::tryLock);
                assertTrue(System.nanoTime() - start <= Bounds.failure(TIMEOUT).toNanos(), "within the timeout");
                proxy.setBlackhole(false);
                proxy.cutAll(); // the stuck connection is dropped; Lettuce reconnects
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                boolean served = false;
                while (!served && System.nanoTime() < deadline) {
                    try {
                        served = lock.tryLock() || lock.isHeldByCurrentThread();
                    } catch (RedisUnavailableException e) {
                        // reconnecting
                    }
                }
                assertTrue(served);
            }
        });
    }

    @Test
    void anEmptyRestartWhileLocksPermitsAndLatchesAreHeldAndAwaitedHangsNothing() throws Exception {
        Duration watchdog = Duration.ofMillis(1_500);
        CompletableFuture<Long> lost = new CompletableFuture<>();
        Baton holder = clients.open(BatonOptions.builder().redisUri(redis.uri()).commandTimeout(TIMEOUT)
                .watchdogTimeout(watchdog).leaseLostListener((n, o, r) -> lost.complete(System.nanoTime())).build());
        Baton waiting = open(redis.uri());
        holder.lock("r-lock").lock();
        holder.semaphore("r-sem").trySetPermits(1);
        holder.semaphore("r-sem").acquire();
        holder.countDownLatch("r-latch").trySetCount(2);
        Future<Long> lockWaiter = threads.submit(() -> {
            assertTrue(waiting.lock("r-lock").tryLock(20, TimeUnit.SECONDS), "the lock waiter gets the lock");
            return System.nanoTime();
        });
        Future<Long> semaphoreWaiter = threads.submit(() -> {
            SynchronizerDeletedException e = assertThrows(SynchronizerDeletedException.class,
                    () -> waiting.semaphore("r-sem").tryAcquire(20, TimeUnit.SECONDS));
            assertEquals("r-sem", e.name());
            return System.nanoTime();
        });
        Future<Long> latchWaiter = threads.submit(() -> {
            assertTrue(waiting.countDownLatch("r-latch").await(20, TimeUnit.SECONDS), "the latch wait ends as at zero");
            return System.nanoTime();
        });
        redis.awaitSubscribers("redisson_lock__channel:{r-lock}", 1);
        redis.awaitSubscribers("redisson_sc:{r-sem}", 1);
        redis.awaitSubscribers("redisson_countdownlatch__channel__{r-latch}", 1);
        redis.restart();
        long restarted = System.nanoTime();
        // A restart drops the subscriptions; re-subscribing wakes every waiter to re-check at once
        // (PubSubService). The lock waiter would also re-check at the lease it saw (1.5 s); the
        // semaphore and latch waiters at their 5 s re-check. Each is held to the shorter bound.
        assertTrue(lockWaiter.get(20, TimeUnit.SECONDS) - restarted <= Bounds.within(watchdog).toNanos(),
                "the lock waiter within the lease it saw");
        Duration recheck = Duration.ofSeconds(BatonSemaphore.RECHECK_SECONDS);
        assertTrue(semaphoreWaiter.get(20, TimeUnit.SECONDS) - restarted <= Bounds.within(recheck).toNanos(),
                "the semaphore waiter within its re-check bound");
        assertTrue(latchWaiter.get(20, TimeUnit.SECONDS) - restarted <= Bounds.within(recheck).toNanos(),
                "the latch waiter within its re-check bound");
        // The holder is told at its next renewal: every third of the watchdog timeout.
        assertTrue(lost.get(20, TimeUnit.SECONDS) - restarted <= Bounds.within(watchdog.dividedBy(3)).toNanos(),
                "the lost lease is reported within a third of the watchdog timeout");
    }

    @Test
    void closeLeavesNoThreadOrConnectionBehind() throws Exception {
        long clientsBefore = connectedClients();
        java.util.Set<Thread> threadsBefore = batonThreads();
        Baton other = Baton.create(BatonOptions.create(redis.uri()));
        other.lock("tidy-held").lock();
        Baton baton = Baton.create(BatonOptions.create(redis.uri()));
        BatonLock lock = baton.lock("tidy");
        lock.lock();
        baton.semaphore("tidy-s").trySetPermits(1);
        Future<?> waiter = threads.submit(() -> baton.lock("tidy-held").lock());
        redis.awaitSubscribers("redisson_lock__channel:{tidy-held}", 1);
        assertTrue(connectedClients() > clientsBefore);
        baton.close();
        java.util.concurrent.ExecutionException closed = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> waiter.get(10, TimeUnit.SECONDS));
        assertTrue(closed.getCause() instanceof IllegalStateException, String.valueOf(closed.getCause()));
        other.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((connectedClients() > clientsBefore || !newThreads(threadsBefore).isEmpty()) && System.nanoTime() < deadline) {
            Thread.sleep(10); // polling the server's client count; no signal exists for it
        }
        assertEquals(clientsBefore, connectedClients(), "connections left open");
        assertEquals(java.util.List.of(), newThreads(threadsBefore), "threads of the closed clients left running");
        assertEquals(0L, redis.subscribers("redisson_lock__channel:{tidy-held}"), "the waiter's subscription is gone");
    }

    private long connectedClients() {
        String info = (String) redis.command("INFO", "clients");
        return Long.parseLong(info.replaceAll("(?s).*connected_clients:(\\d+).*", "$1")) - 1; // minus this probe
    }

    /**
     * The live threads a client owns: Baton's own (timers, the connect thread) and the event
     * loops and computation threads of the Lettuce client Baton made.
     */
    private static java.util.Set<Thread> batonThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && (t.getName().startsWith("baton-") || t.getName().startsWith("lettuce-")))
                .collect(java.util.stream.Collectors.toSet());
    }

    /** The names of such threads started since {@code before} and still alive. */
    private static java.util.List<String> newThreads(java.util.Set<Thread> before) {
        java.util.Set<Thread> now = batonThreads();
        now.removeAll(before);
        return now.stream().map(Thread::getName).sorted().toList();
    }
}
