package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Both semaphores on one real Redis, with two clients. */
class SemaphoreTest extends TwoClientsTest {
    SemaphoreTest(RedisServer redis) {
        super(redis);
    }

    private interface Holder {
        void hold(Runnable inside) throws Exception;
    }

    private void neverMoreThanPermitsHolders(int permits, List<Holder> holders) throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<Future<?>> workers = new ArrayList<>();
        for (Holder holder : holders) {
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 100; i++) {
                    holder.hold(() -> {
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        try {
                            Thread.sleep(2); // hold the permit, so holders overlap and an extra one is seen
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        inside.decrementAndGet();
                    });
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(2, TimeUnit.MINUTES);
        }
        assertEquals(permits, most.get(), "every permit in use at once, and never more holders than permits");
    }

    @Test
    void neverMoreHoldersThanPermitsAcrossTwoClients() throws Exception {
        assertTrue(a.semaphore("partner").trySetPermits(3));
        assertFalse(b.semaphore("partner").trySetPermits(9), "set already");
        List<Holder> holders = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            BatonSemaphore semaphore = (t % 2 == 0 ? a : b).semaphore("partner");
            holders.add(inside -> {
                try (SemaphorePermits permit = semaphore.acquirePermits(1)) {
                    inside.run();
                }
            });
        }
        neverMoreThanPermitsHolders(3, holders);
        assertEquals(3, a.semaphore("partner").availablePermits());
    }

    @Test
    void expirablePermitsNeverExceedTheirCountEither() throws Exception {
        assertTrue(a.permitExpirableSemaphore("workers").trySetPermits(2));
        List<Holder> holders = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            BatonPermitExpirableSemaphore semaphore = (t % 2 == 0 ? a : b).permitExpirableSemaphore("workers");
            holders.add(inside -> {
                try (ExpirablePermit permit = semaphore.acquirePermit(30, TimeUnit.SECONDS)) {
                    inside.run();
                }
            });
        }
        neverMoreThanPermitsHolders(2, holders);
        assertEquals(2, a.permitExpirableSemaphore("workers").availablePermits());
        assertEquals(0L, redis.command("ZCARD", "{workers}:timeout"));
    }

    @Test
    void aCrashedHoldersExpirablePermitComesBackButAPlainPermitLeaks() throws Exception {
        Baton doomed = clients.open(redis);
        doomed.semaphore("plain").trySetPermits(1);
        doomed.semaphore("plain").acquire();
        doomed.permitExpirableSemaphore("leased").trySetPermits(1);
        java.time.Duration lease = java.time.Duration.ofMillis(300);
        doomed.permitExpirableSemaphore("leased").acquire(lease.toMillis(), TimeUnit.MILLISECONDS);
        long taken = System.nanoTime();
        doomed.close(); // the holder dies without releasing anything

        Optional<String> reclaimed = threads.submit(() -> b.permitExpirableSemaphore("leased")
                .tryAcquire(10, 30, TimeUnit.SECONDS)).get();
        assertTrue(reclaimed.isPresent(), "the expired permit came back to the pool");
        assertTrue(System.nanoTime() - taken <= Bounds.within(lease).toNanos(), "at the end of its lease");
        // The plain semaphore has no leases: the dead holder's permit is gone for good.
        assertFalse(b.semaphore("plain").tryAcquire(300, TimeUnit.MILLISECONDS));
        assertEquals(0, b.semaphore("plain").availablePermits());
    }

    @Test
    void timedOutAndInterruptedAcquirersTakeNothing() throws Exception {
        a.semaphore("scarce").trySetPermits(0);
        assertFalse(b.semaphore("scarce").tryAcquire(200, TimeUnit.MILLISECONDS));
        assertTrue(b.permitExpirableSemaphore("scarce-x").tryAcquire(200, 1_000, TimeUnit.MILLISECONDS).isEmpty());
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                b.semaphore("scarce").acquire(2);
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        redis.awaitSubscribers("redisson_sc:{scarce}", 1);
        waiter.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        redis.awaitSubscribers("redisson_sc:{scarce}", 0, Bounds.CLEAN_UP);
        a.semaphore("scarce").release(2);
        assertEquals(2, a.semaphore("scarce").availablePermits(), "nobody took anything");
        assertEquals(0L, redis.command("ZCARD", "{scarce-x}:timeout"));
    }

    @Test
    void deletingASemaphoreFailsItsWaiters() throws Exception {
        a.semaphore("doomed").trySetPermits(0);
        a.permitExpirableSemaphore("doomed-x").trySetPermits(0);
        List<Future<?>> waiting = new ArrayList<>();
        waiting.add(threads.submit(() -> {
            b.semaphore("doomed").acquire();
            return null;
        }));
        waiting.add(threads.submit(() -> b.permitExpirableSemaphore("doomed-x").acquire()));
        redis.awaitSubscribers("redisson_sc:{doomed}", 1);
        redis.awaitSubscribers("redisson_sc:{doomed-x}", 1);
        assertTrue(a.semaphore("doomed").delete());
        assertTrue(a.permitExpirableSemaphore("doomed-x").delete());
        for (Future<?> w : waiting) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> w.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof SynchronizerDeletedException, String.valueOf(e.getCause()));
        }
    }

    @Test
    void aReleaseOfKPermitsWakesKWaitersNotAll() throws Exception {
        a.semaphore("gate").trySetPermits(0);
        List<Future<?>> waiting = new ArrayList<>();
        AtomicInteger got = new AtomicInteger();
        for (int i = 0; i < 4; i++) {
            waiting.add(threads.submit(() -> {
                b.semaphore("gate").acquire();
                got.incrementAndGet();
                return null;
            }));
        }
        // Each waiter tries once, subscribes and (unless the channel was already subscribed and
        // quiet) tries once more before it parks. Wait until all four are parked, then for quiet.
        dev.baton.internal.runtime.ClientRuntime waiters = Runtimes.of(b);
        Await.until(Duration.ofSeconds(10), () -> "four waiters parked (" + waiters.semaphoreWaitersParked("gate") + ")",
                () -> waiters.semaphoreWaitersParked("gate") == 4);
        awaitQuiet("evalsha");
        redis.command("CONFIG", "RESETSTAT");
        a.semaphore("gate").release(2);
        Await.until(Bounds.WAKE, () -> "two waiters to get a permit (" + got.get() + ")", () -> got.get() == 2);
        // Count only once every attempt the release caused has landed, losers' included.
        awaitQuiet("evalsha");
        assertEquals(2, got.get());
        // The release and two woken waiters: 3. A waking that reaches a waiter whose own attempt
        // won meanwhile is passed on (at most one more). Waking all four would be 5 or more.
        assertTrue(redis.calls("evalsha") <= 4, "the release and about two woken waiters' attempts, not all: " + redis.calls("evalsha"));
        a.semaphore("gate").release(2);
        for (Future<?> w : waiting) {
            w.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void expirablePermitsCanBeReleasedOnceAndReLeased() throws Exception {
        BatonPermitExpirableSemaphore s = a.permitExpirableSemaphore("ids");
        s.trySetPermits(2);
        String id = s.acquire(200, TimeUnit.MILLISECONDS);
        assertEquals(32, id.length());
        assertTrue(s.updateLeaseTime(id, 1, TimeUnit.MINUTES));
        List<?> taken = (List<?>) redis.command("ZRANGE", "{ids}:timeout", "0", "-1", "WITHSCORES");
        assertEquals(2, taken.size(), "one permit, stored as its 16 raw bytes: " + taken);
        double expiry = Double.parseDouble((String) taken.get(1));
        assertTrue(expiry > System.currentTimeMillis() + 30_000, "the new lease counts from now");
        s.release(id);
        assertFalse(s.tryRelease(id));
        assertThrows(IllegalArgumentException.class, () -> s.release(id));
        assertThrows(IllegalArgumentException.class, () -> s.release("never-issued"));
        assertThrows(IllegalArgumentException.class, () -> s.release("0123456789abcdef0123456789abcdef"));
        assertFalse(s.updateLeaseTime(id, 1, TimeUnit.MINUTES));
        s.setPermits(5);
        assertEquals(5, s.availablePermits());
        String held = s.acquire();
        s.setPermits(3);
        assertEquals(2, s.availablePermits(), "set counts the taken permit");
        s.release(held);
        assertEquals(3, s.availablePermits());
    }

    @Test
    void badInputIsRefusedByName() {
        BatonSemaphore s = a.semaphore("bad");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.acquire(0)).getMessage().contains("permits"));
        assertThrows(IllegalArgumentException.class, () -> s.release(-1));
        assertThrows(IllegalArgumentException.class, () -> s.trySetPermits(-1));
        s.trySetPermits(Integer.MAX_VALUE);
        IllegalArgumentException overflow = assertThrows(IllegalArgumentException.class, () -> s.release(1));
        assertTrue(overflow.getMessage().contains("overflow") && overflow.getMessage().contains("bad"), overflow.getMessage());
        assertEquals(Integer.MAX_VALUE, s.availablePermits(), "unchanged");
        BatonPermitExpirableSemaphore x = a.permitExpirableSemaphore("bad-x");
        assertThrows(IllegalArgumentException.class, () -> x.acquire(0, TimeUnit.SECONDS));
        assertThrows(NullPointerException.class, () -> x.release(null));
        redis.command("RPUSH", "a-list", "x");
        assertEquals("a-list", assertThrows(WrongTypeException.class, () -> a.semaphore("a-list").tryAcquire()).key());
        assertThrows(WrongTypeException.class, () -> a.permitExpirableSemaphore("a-list").availablePermits());
        assertEquals(1L, redis.command("LLEN", "a-list"));
    }

    private void awaitQuiet(String command) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long last = -1;
        while (System.nanoTime() < deadline) {
            long now = redis.calls(command);
            if (now == last) {
                return;
            }
            last = now;
            Thread.sleep(300); // a quiet period: no signal exists for "nothing more will happen"
        }
    }
}
