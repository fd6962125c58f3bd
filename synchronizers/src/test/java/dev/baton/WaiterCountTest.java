package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link BatonLock#waiterCount()}: queued fair owners, and clients subscribed for the other kinds. */
class WaiterCountTest extends TwoClientsTest {

    WaiterCountTest(RedisServer redis) {
        super(redis);
    }

    private List<Future<Boolean>> waitFor(BatonLock lock, int threadsWaiting) {
        List<Future<Boolean>> waits = new ArrayList<>();
        for (int i = 0; i < threadsWaiting; i++) {
            waits.add(threads.submit(() -> {
                if (lock.tryLock(20, TimeUnit.SECONDS)) {
                    lock.unlock();
                    return true;
                }
                return false;
            }));
        }
        return waits;
    }

    @Test
    void aFairLockCountsEveryQueuedOwner() throws Exception {
        BatonLock held = a.fairLock("fair");
        held.lock();
        assertFalse(held.hasWaiters());
        List<Future<Boolean>> waits = waitFor(b.fairLock("fair"), 3);
        Await.until(Duration.ofSeconds(5), () -> "three queued owners (now " + held.waiterCount() + ")",
                () -> held.waiterCount() == 3);
        assertEquals(3, b.fairLock("fair").waiterCount(), "the same answer from the waiting client");
        held.unlock();
        for (Future<Boolean> w : waits) {
            assertTrue(w.get(10, TimeUnit.SECONDS));
        }
        assertEquals(0, held.waiterCount(), "the queue is empty once every owner has had its turn");
    }

    @Test
    void otherLocksCountWaitingClientsOncePerClient() throws Exception {
        BatonLock held = a.lock("plain");
        held.lock();
        assertEquals(0, held.waiterCount());
        List<Future<Boolean>> waits = waitFor(b.lock("plain"), 3);
        Await.until(Bounds.WAKE, () -> "client b subscribed (now " + held.waiterCount() + ")", () -> held.waiterCount() == 1);
        try (Baton c = clients.open(options())) {
            waits.addAll(waitFor(c.lock("plain"), 1));
            Await.until(Bounds.WAKE, () -> "clients b and c subscribed (now " + held.waiterCount() + ")",
                    () -> held.waiterCount() == 2);
            assertTrue(held.hasWaiters());
            held.unlock();
            for (Future<Boolean> w : waits) {
                assertTrue(w.get(10, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void aReadWriteLockCountsClientsWaitingOnEitherSide() throws Exception {
        BatonReadWriteLock rw = a.readWriteLock("rw");
        rw.writeLock().lock();
        List<Future<Boolean>> waits = waitFor(b.readWriteLock("rw").readLock(), 2);
        Await.until(Bounds.WAKE, () -> "a reader's client subscribed", () -> rw.readLock().waiterCount() == 1);
        assertEquals(1, rw.writeLock().waiterCount(), "both sides share the lock's channel");
        rw.writeLock().unlock();
        for (Future<Boolean> w : waits) {
            assertTrue(w.get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void semaphoresAndLatchesCountTheirWaitingClients() throws Exception {
        BatonSemaphore semaphore = a.semaphore("s");
        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore("x");
        BatonCountDownLatch latch = a.countDownLatch("c");
        latch.trySetCount(1);
        assertEquals(0, semaphore.waiterCount());
        Future<Boolean> permit = threads.submit(() -> b.semaphore("s").tryAcquire(20, TimeUnit.SECONDS));
        Future<Boolean> expiring = threads.submit(() -> b.permitExpirableSemaphore("x").tryAcquire(20, 5, TimeUnit.SECONDS).isPresent());
        Future<Boolean> awaiting = threads.submit(() -> b.countDownLatch("c").await(20, TimeUnit.SECONDS));
        Await.until(Bounds.WAKE, () -> "b waiting on both semaphores",
                () -> semaphore.waiterCount() == 1 && expirable.waiterCount() == 1);
        Await.until(Bounds.WAKE, () -> "b awaiting the latch", () -> latch.waiterCount() == 1);
        semaphore.addPermits(1);
        expirable.addPermits(1);
        latch.countDown();
        assertTrue(permit.get(10, TimeUnit.SECONDS));
        assertTrue(expiring.get(10, TimeUnit.SECONDS));
        assertTrue(awaiting.get(10, TimeUnit.SECONDS));
    }
}
