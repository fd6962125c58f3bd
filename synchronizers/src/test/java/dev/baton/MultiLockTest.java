package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisMasters;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Several locks, on two independent Redis servers, taken all or nothing. */
class MultiLockTest {
    private RedisMasters masters;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private Baton a1;
    private Baton a2;
    private Baton b1;
    private Baton b2;

    @BeforeEach
    void start() {
        masters = RedisMasters.start(2);
        RedisServer first = masters.servers().get(0);
        RedisServer second = masters.servers().get(1);
        a1 = clients.open(first);
        a2 = clients.open(second);
        b1 = clients.open(first);
        b2 = clients.open(second);
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        masters.close();
    }

    /**
     * A multi-lock wait bounded by orTimeout, or completed by hand, is abandoned: when the
     * member it waited for is freed, none of the members is taken for nobody (they were, and
     * renewed, until the client closed).
     */
    @Test
    void aWaitWhoseFutureTheCallerCompletesHoldsNoneOfItsLocks() throws Exception {
        assertTrue(threads.submit(() -> b2.lock("queue-b").tryLock()).get());
        BatonMultiLock multi = Baton.multiLock(a1.lock("queue-a"), a2.lock("queue-b"));
        java.util.concurrent.CompletableFuture<Void> timed = multi.lockAsync(9_000_000_011L).toCompletableFuture()
                .orTimeout(200, TimeUnit.MILLISECONDS);
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> timed.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof java.util.concurrent.TimeoutException, e.toString());
        java.util.concurrent.CompletableFuture<Boolean> byHand = multi.tryLockAsync(30, -1, TimeUnit.SECONDS, 9_000_000_012L)
                .toCompletableFuture();
        assertTrue(byHand.complete(false), "still waiting");
        assertTrue(threads.submit(() -> {
            b2.lock("queue-b").unlock();
            return true;
        }).get());
        // Nothing to wait for but the absence of a grant: watch for the wake-up bound.
        Thread.sleep(dev.baton.testkit.Bounds.within(dev.baton.testkit.Bounds.WAKE).toMillis());
        assertEquals(0, a1.leasesHeld() + a2.leasesHeld(), "a member lock was taken for nobody");
        assertFalse(a1.lock("queue-a").isLocked());
        assertFalse(a2.lock("queue-b").isLocked());
    }

    @Test
    void anInterruptedWaitGivesBackWhatItTookBeforeItThrows() throws Exception {
        assertTrue(threads.submit(() -> b2.lock("queue-b").tryLock()).get());
        BatonMultiLock multi = Baton.multiLock(a1.lock("queue-a"), a2.lock("queue-b"));
        java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(1);
        Thread[] caller = new Thread[1];
        Future<Throwable> outcome = threads.submit(() -> {
            caller[0] = Thread.currentThread();
            waiting.countDown();
            try {
                multi.tryLock(30, TimeUnit.SECONDS);
                return null;
            } catch (InterruptedException e) {
                return e;
            }
        });
        waiting.await();
        // queue-a (first in canonical order) is taken, then the wait for queue-b parks: subscribed
        // to queue-b's channel, which happens only after queue-a's grant was seen. (Interrupted
        // while queue-a's own call is in flight, the wait ends at once and that call's undo
        // follows in the background: not what this test is about.)
        masters.servers().get(1).awaitSubscribers("redisson_lock__channel:{queue-b}", 1);
        assertEquals(1L, masters.servers().get(0).command("EXISTS", "queue-a"), "queue-a taken by the multi-lock");
        caller[0].interrupt();
        assertTrue(outcome.get(5, TimeUnit.SECONDS) instanceof InterruptedException, "the wait ended with the interrupt");
        assertEquals(0L, masters.servers().get(0).command("EXISTS", "queue-a"),
                "queue-a was given back before InterruptedException was thrown");
        assertFalse(a1.lock("queue-a").isLocked());
    }

    /**
     * A wait of Long.MAX_VALUE is a wait without end, still taken in order: the first member is
     * waited for and the second is not touched meanwhile. (A review found the deadline wrapping
     * negative: every member was taken at once, waiting in no order.)
     */
    @Test
    void theLongestWaitStillTakesTheLocksInOrder() throws Exception {
        assertTrue(threads.submit(() -> b1.lock("pa").tryLock()).get());
        BatonMultiLock multi = Baton.multiLock(a1.lock("pa"), a2.lock("pb"));
        java.util.concurrent.CompletableFuture<Boolean> waiting = multi.tryLockAsync(Long.MAX_VALUE, -1, TimeUnit.MILLISECONDS,
                9_000_000_021L).toCompletableFuture();
        masters.servers().get(0).awaitSubscribers("redisson_lock__channel:{pa}", 1);
        assertFalse(a2.lock("pb").isLocked(), "pb is taken only once pa is");
        assertFalse(waiting.isDone());
        threads.submit(() -> b1.lock("pa").unlock()).get();
        assertTrue(waiting.get(5, TimeUnit.SECONDS));
        assertTrue(a2.lock("pb").isLocked());
        multi.unlockAsync(9_000_000_021L).toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    @Test
    void allOrNothingWhenOneLockIsHeldElsewhere() throws Exception {
        assertTrue(threads.submit(() -> b2.lock("stock").tryLock()).get());
        BatonMultiLock multi = Baton.multiLock(a1.lock("orders"), a2.lock("stock"), a1.fairLock("audit"));
        RedisServer first = masters.servers().get(0);
        List<String> released = new java.util.ArrayList<>();
        try (dev.baton.testkit.RespClient monitor = new dev.baton.testkit.RespClient(first.host(), first.port())) {
            assertEquals("OK", monitor.call("MONITOR"));
            // Canonical order: audit, orders (first master), stock (second, held): the failure
            // gives back orders, then audit.
            assertFalse(multi.tryLock(300, 10_000, TimeUnit.MILLISECONDS));
            // The give-backs are sent before the call returns (as a clean-up, EVAL) and land
            // within the clean-up bound.
            awaitCleanUp(first, "orders", "audit");
            assertEquals(0L, first.command("EXISTS", "orders"), "released again after the failure");
            assertEquals(0L, first.command("EXISTS", "audit"));
            first.command("ECHO", "multi-lock-done");
            for (String line = ""; !line.contains("multi-lock-done"); line = String.valueOf(monitor.readReply())) {
                String[] words = line.split("\" \"");
                boolean release = words.length > 3 && (line.contains("\"EVAL\"") && (words[1].startsWith("-- lock_release")
                        || words[1].startsWith("-- fair_release")) || line.contains("\"EVALSHA\"")
                        && (words[1].equals(dev.baton.lua.Script.LOCK_RELEASE.sha1())
                        || words[1].equals(dev.baton.lua.Script.FAIR_RELEASE.sha1())));
                if (release) {
                    released.add(words[3]);
                }
            }
        }
        assertEquals(List.of("orders", "audit"), released, "given back in reverse order");
        assertFalse(multi.tryLockAsync(0, -1, TimeUnit.SECONDS, 77).toCompletableFuture().get(5, TimeUnit.SECONDS));
        awaitCleanUp(first, "orders", "audit");
        assertEquals(0L, first.command("EXISTS", "orders"), "one round's grants given back");

        threads.submit(() -> b2.lock("stock").unlock()).get();
        assertTrue(multi.tryLock(5, 60, TimeUnit.SECONDS));
        assertTrue(a1.lock("orders").isHeldByCurrentThread() && a2.lock("stock").isHeldByCurrentThread());
        multi.unlock();
        assertEquals(0L, first.command("EXISTS", "orders"));
        assertEquals(0L, masters.servers().get(1).command("EXISTS", "stock"));
    }

    /**
     * Waits, at most the clean-up bound, until none of {@code keys} exists: a failed call's
     * give-backs are sent before it returns and land within that bound (guarantees.md).
     */
    private static void awaitCleanUp(RedisServer server, String... keys) {
        long landBy = System.nanoTime() + Bounds.CLEAN_UP.toNanos();
        String[] args = new String[keys.length + 1];
        args[0] = "EXISTS";
        System.arraycopy(keys, 0, args, 1, keys.length);
        while (!Long.valueOf(0).equals(server.command(args)) && System.nanoTime() < landBy) {
            Thread.onSpinWait();
        }
    }

    @Test
    void reversedOrdersInTwoClientsNeverDeadlockOrOverlap() throws Exception {
        BatonMultiLock forward = Baton.multiLock(a1.lock("left"), a2.fairLock("right"));
        BatonMultiLock backward = Baton.multiLock(b2.fairLock("right"), b1.lock("left"));
        assertEquals(List.of("left", "right"), backward.locks().stream().map(BatonLock::getName).toList());
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<Future<?>> workers = new ArrayList<>();
        for (BatonMultiLock multi : List.of(forward, backward, forward, backward)) {
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 100; i++) {
                    multi.lock();
                    try {
                        if (inside.incrementAndGet() > 1) {
                            overlaps.incrementAndGet();
                        }
                        inside.decrementAndGet();
                    } finally {
                        multi.unlock();
                    }
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(2, TimeUnit.MINUTES);
        }
        assertEquals(0, overlaps.get());
    }

    @Test
    void badInputIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Baton.multiLock(List.of()));
        assertThrows(NullPointerException.class, () -> Baton.multiLock((List<BatonLock>) null));
        assertThrows(IllegalArgumentException.class, () -> Baton.multiLock(a1.lock("x"), a1.lock("x")));
        // One name appears once whatever its kind or Redis: the order is by name alone, so every
        // process agrees on it whatever objects stand for the locks.
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Baton.multiLock(a1.lock("x"), a2.lock("x")))
                .getMessage().contains("RedLock"));
        assertThrows(IllegalArgumentException.class, () -> Baton.multiLock(a1.lock("x"), a1.readWriteLock("x").writeLock()));
        assertThrows(UnsupportedOperationException.class, () -> Baton.multiLock(a1.lock("x")).newCondition());
    }
}
