package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link BatonLock#updateLease} and {@link BatonLock#getHoldCount(long)}: owner-checked, for every lock kind. */
class UpdateLeaseTest extends TwoClientsTest {

    UpdateLeaseTest(RedisServer redis) {
        super(redis);
    }

    private long pttl(String key) {
        return (Long) redis.command("PTTL", key);
    }

    @Test
    void aFixedLeaseIsExtendedForEveryLockKind() {
        List<BatonLock> kinds = List.of(a.lock("plain"), a.fairLock("fair"), a.fencedLock("fenced"),
                a.readWriteLock("rw").writeLock(), a.readWriteLock("rw-read").readLock());
        for (BatonLock lock : kinds) {
            lock.lock(2, TimeUnit.SECONDS);
            assertTrue(pttl(lock.getName()) <= 2_000, lock + " starts with its 2 s lease");
            lock.updateLease(Duration.ofMinutes(5));
            assertTrue(pttl(lock.getName()) > 290_000, lock + " now lives 5 minutes: " + pttl(lock.getName()));
            lock.unlock();
            assertFalse(lock.isLocked(), lock + " released after the update");
        }
    }

    @Test
    void aReentrantReleaseKeepsTheUpdatedLease() {
        BatonLock lock = a.lock("reentrant");
        lock.lock(2, TimeUnit.SECONDS);
        lock.lock(2, TimeUnit.SECONDS);
        lock.updateLease(Duration.ofMinutes(5));
        lock.unlock();
        assertTrue(pttl("reentrant") > 290_000, "the remaining hold keeps the updated lease: " + pttl("reentrant"));
        lock.unlock();
    }

    @Test
    void onlyTheOwnerOfAFixedLeaseMayUpdateIt() throws Exception {
        BatonLock mine = a.lock("owned");
        mine.lock(30, TimeUnit.SECONDS);
        assertThrows(IllegalMonitorStateException.class, () -> b.lock("owned").updateLease(Duration.ofMinutes(1)),
                "another client's thread");
        ExecutionException otherThread = assertThrows(ExecutionException.class,
                () -> threads.submit(() -> mine.updateLease(Duration.ofMinutes(1))).get(10, TimeUnit.SECONDS));
        assertTrue(otherThread.getCause() instanceof IllegalMonitorStateException, "another thread: " + otherThread.getCause());
        mine.unlock();

        BatonLock watched = a.lock("watched");
        watched.lock();
        IllegalStateException watchdog = assertThrows(IllegalStateException.class, () -> watched.updateLease(Duration.ofMinutes(1)));
        assertTrue(watchdog.getMessage().contains("watchdog"), watchdog.getMessage());
        watched.unlock();

        assertThrows(IllegalArgumentException.class, () -> mine.updateLease(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> mine.updateLease(Duration.ofMillis(-1)));
        assertThrows(NullPointerException.class, () -> mine.updateLease(null));
    }

    @Test
    void anUpdateOfALostLeaseReportsTheLossAndUnlockStillDoes() {
        BatonLock lock = a.lock("lost");
        lock.lock(30, TimeUnit.SECONDS);
        redis.command("DEL", "lost");
        LeaseLostException e = assertThrows(LeaseLostException.class, () -> lock.updateLease(Duration.ofMinutes(1)));
        assertTrue(e.getMessage().contains("lost"), e.getMessage());
        assertThrows(LeaseLostException.class, lock::unlock, "the unlock learns it too");
        assertEquals(0L, (Long) redis.command("EXISTS", "lost"), "the update did not bring the lock back");
    }

    @Test
    void asyncOwnersUpdateTheirLeaseAndReadTheirHoldCount() throws Exception {
        BatonLock lock = a.lock("async");
        long owner = 77;
        lock.lockAsync(2, TimeUnit.SECONDS, owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        lock.lockAsync(2, TimeUnit.SECONDS, owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(2, lock.getHoldCount(owner));
        assertEquals(0, lock.getHoldCount(), "the calling thread holds nothing");
        assertEquals(0, lock.getHoldCount(78));
        lock.updateLeaseAsync(Duration.ofMinutes(5), owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertTrue(pttl("async") > 290_000);
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(1, lock.getHoldCount(owner));
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(0, lock.getHoldCount(owner));
    }
}
