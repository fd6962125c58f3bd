package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonSemaphore;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Baton and Redisson 4.7 semaphores on the same names keep one count and wake each other. */
class RedissonSemaphoreInteropTest extends InteropTest {

    RedissonSemaphoreInteropTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void mixedHoldersKeepTheCountRightAndNeverExceedIt() throws Exception {
        BatonSemaphore ours = baton.semaphore("mixed");
        RSemaphore theirs = redisson.getSemaphore("mixed");
        assertTrue(ours.trySetPermits(2));
        assertEquals(2, theirs.availablePermits());
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            boolean useBaton = t % 2 == 0;
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 100; i++) {
                    if (useBaton) {
                        ours.acquire();
                    } else {
                        theirs.acquire();
                    }
                    most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    Thread.sleep(2); // hold the permit, so holders overlap and an extra one would be seen
                    inside.decrementAndGet();
                    if (useBaton) {
                        ours.release();
                    } else {
                        theirs.release();
                    }
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(2, TimeUnit.MINUTES);
        }
        assertEquals(2, most.get(), "both permits in use at once, never more holders than permits");
        assertEquals(2, ours.availablePermits());
        assertEquals(2, theirs.availablePermits());
    }

    @Test
    void releasesWakeTheOtherClientsWaiters() throws Exception {
        baton.semaphore("wake").trySetPermits(0);
        Future<Boolean> redissonWaiter = threads.submit(() -> redisson.getSemaphore("wake").tryAcquire(15, TimeUnit.SECONDS));
        redis.awaitAnySubscriber("redisson_sc:{wake}");
        assertTrue(wokenBy(redissonWaiter, () -> baton.semaphore("wake").release()));
        Future<Boolean> batonWaiter = threads.submit(() -> baton.semaphore("wake").tryAcquire(15, TimeUnit.SECONDS));
        redis.awaitAnySubscriber("redisson_sc:{wake}");
        assertTrue(wokenBy(batonWaiter, () -> redisson.getSemaphore("wake").release()));
    }

    @Test
    void expirablePermitsAreCountedByBothClients() throws Exception {
        BatonPermitExpirableSemaphore ours = baton.permitExpirableSemaphore("leases");
        RPermitExpirableSemaphore theirs = redisson.getPermitExpirableSemaphore("leases");
        assertTrue(ours.trySetPermits(3));
        String redissonPermit = theirs.acquire(30, TimeUnit.SECONDS);
        String batonPermit = ours.acquire(30, TimeUnit.SECONDS);
        assertEquals(1, ours.availablePermits());
        assertEquals(1, theirs.availablePermits());
        theirs.release(batonPermit);   // permits are not owned: ids work across clients
        ours.release(redissonPermit);
        assertEquals(3, theirs.availablePermits());
    }
}
