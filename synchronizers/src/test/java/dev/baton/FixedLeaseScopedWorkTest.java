package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisMasters;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lease-scoped work under holds nobody renews: a permit of the permit-expirable semaphore
 * ({@link BatonPermitExpirableSemaphore#withPermit}) and a RedLock ({@link BatonRedLock#withLock}).
 * Their scope is valid until the send (the round's start) + the lease − (1 % + 25 ms); the work
 * is stopped then, not before, and the hold given back however the work ends.
 */
@ExtendWith(RedisExtension.class)
class FixedLeaseScopedWorkTest {
    private static final long LEASE_MS = 700;
    private final RedisServer redis;
    private Baton baton;

    FixedLeaseScopedWorkTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).commandTimeout(Duration.ofSeconds(1)).build());
    }

    @AfterEach
    void close() {
        baton.close();
    }

    private static long margin(long leaseMs) {
        return leaseMs / 100 + 25;
    }

    @Test
    void aPermitsWorkRunsWithItsScopeAndThePermitComesBackHoweverItEnds() throws Exception {
        BatonPermitExpirableSemaphore permits = baton.permitExpirableSemaphore("scoped-permits");
        assertTrue(permits.trySetPermits(2));
        long remaining = permits.withPermit(LEASE_MS, TimeUnit.MILLISECONDS, scope -> {
            assertEquals("scoped-permits", scope.lockName());
            assertEquals(1, permits.availablePermits(), "one taken while the work runs");
            assertTrue(scope.isValid());
            scope.checkValid();
            assertTrue(scope.fencingToken().isEmpty());
            return scope.remaining().toMillis();
        });
        assertTrue(remaining > LEASE_MS / 2 && remaining <= LEASE_MS - margin(LEASE_MS),
                "the lease less the margin: " + remaining + " ms");
        assertEquals(2, permits.availablePermits(), "returned");

        IOException thrown = new IOException("the work failed");
        assertSame(thrown, assertThrows(IOException.class, () -> permits.withPermit(LEASE_MS, TimeUnit.MILLISECONDS, scope -> {
            throw thrown;
        })));
        assertEquals(2, permits.availablePermits(), "returned after failing work");

        IllegalArgumentException noLease = assertThrows(IllegalArgumentException.class,
                () -> permits.withPermit(-1, TimeUnit.MILLISECONDS, scope -> null));
        assertTrue(noLease.getMessage().contains("leaseTime"), noLease.getMessage());
        assertEquals(2, permits.availablePermits(), "nothing taken by a refused call");
    }

    /** Runs work that sleeps until interrupted; how long after {@code begun} it was stopped. */
    private interface Scoped {
        Object run(LeaseWork<Object, Exception> work) throws Exception;
    }

    private static Duration stoppedAfterStart(Scoped scoped) {
        AtomicLong stoppedAt = new AtomicLong();
        long begun = System.nanoTime();
        LeaseLostException lost = assertThrows(LeaseLostException.class, () -> scoped.run(scope -> {
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                stoppedAt.set(System.nanoTime());
                throw e;
            }
            return null;
        }));
        assertInstanceOf(InterruptedException.class, lost.getCause(), String.valueOf(lost));
        assertFalse(Thread.currentThread().isInterrupted(), "the stop's interrupt does not outlive the work");
        return Duration.ofNanos(stoppedAt.get() - begun);
    }

    @Test
    void workPastItsPermitsLeaseIsStoppedBeforeRedisCanGiveThePermitAway() throws Exception {
        BatonPermitExpirableSemaphore permits = baton.permitExpirableSemaphore("overrun-permits");
        assertTrue(permits.trySetPermits(1));
        Duration after = stoppedAfterStart(work -> permits.withPermit(LEASE_MS, TimeUnit.MILLISECONDS, work));
        long earliest = LEASE_MS - margin(LEASE_MS);
        assertTrue(after.toMillis() >= earliest, "not before the lease less the margin: " + after.toMillis() + " ms");
        // At the lease's own end: the acquisition was sent after the call began, so Redis cannot
        // have let the permit go (and given it to anybody) before the call's start + the lease.
        assertTrue(after.toNanos() < TimeUnit.MILLISECONDS.toNanos(LEASE_MS), "stopped " + after.toMillis()
                + " ms after the call began: not before the lease of " + LEASE_MS + " ms could end in Redis");
        assertEquals(1, permits.availablePermits(), "the permit back");
    }

    @Test
    void closingTheClientStopsAPermitsWorkAtOnce() throws Exception {
        Baton closing = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        BatonPermitExpirableSemaphore permits = closing.permitExpirableSemaphore("closing-permits");
        assertTrue(permits.trySetPermits(1));
        AtomicLong closedAt = new AtomicLong();
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        Thread closer = new Thread(() -> {
            try {
                started.await();
                closedAt.set(System.nanoTime());
                closing.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        closer.start();
        AtomicLong stoppedAt = new AtomicLong();
        LeaseLostException lost = assertThrows(LeaseLostException.class, () -> permits.withPermit(60, TimeUnit.SECONDS, scope -> {
            started.countDown();
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                stoppedAt.set(System.nanoTime());
                throw e;
            }
            return null;
        }));
        closer.join(10_000);
        assertTrue(lost.getMessage().contains("closed"), lost.getMessage());
        Duration after = Duration.ofNanos(stoppedAt.get() - closedAt.get());
        assertTrue(after.compareTo(Bounds.within(Duration.ZERO)) <= 0, "stopped " + after.toMillis() + " ms after close began");
        assertFalse(Thread.currentThread().isInterrupted());
    }

    @Test
    void aPermitGoneWhenTheWorkEndsIsReportedAsLost() {
        BatonPermitExpirableSemaphore permits = baton.permitExpirableSemaphore("deleted-permits");
        assertTrue(permits.trySetPermits(1));
        LeaseLostException lost = assertThrows(LeaseLostException.class, () -> permits.withPermit(LEASE_MS, TimeUnit.MILLISECONDS,
                scope -> redis.command("DEL", "deleted-permits", "{deleted-permits}:timeout")));
        assertEquals("deleted-permits", lost.lockName());
        assertNull(lost.getCause(), "the work itself ended normally");
    }

    @Test
    void aRedLocksWorkRunsWithItsScopeIsStoppedAtItsValidityAndReleasesEverywhere() throws Exception {
        try (RedisMasters masters = RedisMasters.start(3)) {
            List<Baton> nodes = new ArrayList<>();
            try {
                for (RedisServer server : masters.servers()) {
                    nodes.add(Baton.create(BatonOptions.builder().redisUri(server.uri())
                            .commandTimeout(Duration.ofMillis(500)).build()));
                }
                BatonRedLock lock = Baton.redLock("scoped-red", nodes);
                long remaining = lock.withLock(LEASE_MS, TimeUnit.MILLISECONDS, scope -> {
                    assertEquals("scoped-red", scope.lockName());
                    assertTrue(scope.isValid());
                    assertEquals(3, holders(masters, "scoped-red"));
                    long validity = lock.validityMillis();
                    long left = scope.remaining().toMillis();
                    assertTrue(left <= validity - 22 && left > 0, "the RedLock's validity less 23 ms: " + left + " of " + validity);
                    return left;
                });
                assertTrue(remaining <= LEASE_MS - margin(LEASE_MS), "within the lease less the margin: " + remaining);
                assertEquals(0, holders(masters, "scoped-red"), "released on every master");

                Duration after = stoppedAfterStart(work -> lock.withLock(LEASE_MS, TimeUnit.MILLISECONDS, work));
                long earliest = LEASE_MS - (LEASE_MS / 100 + 2 + 24); // the round's drift in whole ms + 24 ms
                assertTrue(after.toMillis() >= earliest, "not before the lease less the margin: " + after.toMillis() + " ms");
                assertTrue(after.toNanos() < TimeUnit.MILLISECONDS.toNanos(LEASE_MS), "stopped " + after.toMillis()
                        + " ms after the call began: not before the lease of " + LEASE_MS + " ms could end on the masters");

                Duration shortened = stoppedAfterStart(work -> lock.withLock(10, TimeUnit.SECONDS, scope -> {
                    assertTrue(lock.tryLock(0, LEASE_MS, TimeUnit.MILLISECONDS), "re-entered with a shorter lease");
                    return work.run(scope);
                }));
                assertTrue(shortened.toNanos() < TimeUnit.MILLISECONDS.toNanos(LEASE_MS),
                        "a re-entry's shorter lease moved the stop before that lease could end: " + shortened.toMillis() + " ms");
                lock.unlock(); // the re-entry's hold
                assertEquals(0, holders(masters, "scoped-red"), "released on every master");

                Duration unlocked = stoppedAfterStart(work -> lock.withLock(LEASE_MS, TimeUnit.MILLISECONDS, scope -> {
                    lock.unlock();
                    return work.run(scope);
                }));
                assertTrue(unlocked.compareTo(Bounds.within(Duration.ZERO)) <= 0, "work that released its own hold is stopped "
                        + "at once: " + unlocked.toMillis() + " ms");
            } finally {
                nodes.forEach(Baton::close);
            }
        }
    }

    private static long holders(RedisMasters masters, String name) {
        long n = 0;
        for (RedisServer server : masters.servers()) {
            n += (Long) server.command("EXISTS", name);
        }
        return n;
    }
}
