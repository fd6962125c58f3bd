package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bounded waits that hand back a closeable handle (so the waits the docs recommend need no
 * hand-written try/finally): a lock's {@code tryAcquire}, a semaphore's
 * {@code tryAcquirePermits}, an expirable semaphore's {@code tryAcquirePermit}; and an expirable
 * permit whose lease ran out before its close reports it, as a lock reports a lost lease.
 */
class TimedHandlesTest extends TwoClientsTest {
    TimedHandlesTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void aTimedLockWaitGivesAHoldOrNothing() throws Exception {
        BatonLock lock = a.lock("h-lock");
        Optional<LockHold> held = lock.tryAcquire(1, TimeUnit.SECONDS);
        assertTrue(held.isPresent());
        try (LockHold hold = held.get()) {
            assertEquals(Optional.empty(), threads.submit(() -> b.lock("h-lock").tryAcquire(200, TimeUnit.MILLISECONDS))
                    .get(10, TimeUnit.SECONDS), "held elsewhere: empty once the wait ran out");
        }
        assertFalse(lock.isLocked(), "closed by the try-with-resources");
        try (LockHold hold = lock.tryAcquire(0, 5, TimeUnit.SECONDS).orElseThrow()) {
            long ttl = (Long) redis.command("PTTL", "h-lock");
            assertTrue(ttl > 0 && ttl <= 5_000, "a fixed lease: " + ttl);
        }
        assertFalse(lock.isLocked());
    }

    @Test
    void timedSemaphoreWaitsGiveHandlesOrNothing() throws Exception {
        BatonSemaphore semaphore = a.semaphore("h-sem");
        semaphore.trySetPermits(2);
        try (SemaphorePermits two = semaphore.tryAcquirePermits(2, 1, TimeUnit.SECONDS).orElseThrow()) {
            assertEquals(2, two.permits());
            assertEquals(Optional.empty(), semaphore.tryAcquirePermits(1, 100, TimeUnit.MILLISECONDS));
        }
        assertEquals(2, semaphore.availablePermits(), "given back by the handle, nothing by the empty wait");

        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore("h-exp");
        expirable.trySetPermits(1);
        try (ExpirablePermit permit = expirable.tryAcquirePermit(1, 30, TimeUnit.SECONDS).orElseThrow()) {
            assertEquals(Optional.empty(), expirable.tryAcquirePermit(100, 30, TimeUnit.MILLISECONDS));
            assertEquals(32, permit.id().length());
        }
        assertEquals(1, expirable.availablePermits());
    }

    @Test
    void anExpirablePermitThatRanOutBeforeItsCloseIsReported() throws Exception {
        BatonPermitExpirableSemaphore expirable = a.permitExpirableSemaphore("h-gone");
        expirable.trySetPermits(1);
        ExpirablePermit permit = expirable.acquirePermit(200, TimeUnit.MILLISECONDS);
        // Another client takes the permit once its lease ran out: the holder's work overlapped it.
        Await.until(Duration.ofSeconds(5), () -> "the expired permit taken elsewhere",
                () -> b.permitExpirableSemaphore("h-gone").tryAcquire().isPresent());
        LeaseLostException lost = assertThrows(LeaseLostException.class, permit::close);
        assertEquals("h-gone", lost.lockName());
        assertTrue(lost.getMessage().contains(permit.id()), lost.getMessage());
        permit.close(); // once reported, closed
        assertEquals(0, expirable.availablePermits(), "the other holder's permit is untouched");
    }
}
