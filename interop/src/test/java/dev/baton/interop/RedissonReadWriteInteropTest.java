package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonReadWriteLock;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RReadWriteLock;

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Baton and Redisson 4.7 read-write locks on one name keep the read/write rules together. */
class RedissonReadWriteInteropTest extends InteropTest {

    RedissonReadWriteInteropTest(RedisServer redis) {
        super(redis);
    }

    private boolean other(java.util.concurrent.Callable<Boolean> call) throws Exception {
        return threads.submit(call).get(20, TimeUnit.SECONDS);
    }

    @Test
    void readersOfBothClientsShareAndExcludeTheOtherClientsWriter() throws Exception {
        BatonReadWriteLock ours = baton.readWriteLock("mixed");
        RReadWriteLock theirs = redisson.getReadWriteLock("mixed");
        ours.readLock().lock();
        assertTrue(other(() -> theirs.readLock().tryLock()), "a Redisson reader joins a Baton reader");
        assertFalse(other(() -> theirs.writeLock().tryLock()), "no Redisson writer while reading");
        ours.readLock().unlock();
        redis.command("FLUSHALL");
        theirs.writeLock().lock();
        assertFalse(other(() -> baton.readWriteLock("mixed").readLock().tryLock()), "no Baton reader while Redisson writes");
        assertFalse(other(() -> baton.readWriteLock("mixed").writeLock().tryLock()));
        theirs.writeLock().unlock();
        assertTrue(other(() -> baton.readWriteLock("mixed").writeLock().tryLock()));
    }

    @Test
    void releasesWakeTheOtherClientsWaiters() throws Exception {
        BatonReadWriteLock ours = baton.readWriteLock("wake");
        ours.writeLock().lock(); // watchdog lease: 30 s, longer than the waits below
        java.util.concurrent.atomic.AtomicReference<Thread> reader = new java.util.concurrent.atomic.AtomicReference<>();
        Future<Boolean> redissonReader = threads.submit(() -> {
            reader.set(Thread.currentThread());
            return redisson.getReadWriteLock("wake").readLock().tryLock(15, 5, TimeUnit.SECONDS);
        });
        redis.awaitAnySubscriber("redisson_rwlock:{wake}");
        awaitParkedInRedisson(reader); // a reader not yet waiting misses the broadcast (Redisson's own race)
        assertTrue(wokenBy(redissonReader, () -> ours.writeLock().unlock()), "a Baton write release wakes a Redisson reader");

        redis.command("FLUSHALL");
        RReadWriteLock theirs = redisson.getReadWriteLock("wake2");
        theirs.writeLock().lock();
        Future<Boolean> batonReader = threads.submit(() -> baton.readWriteLock("wake2").readLock().tryLock(15, TimeUnit.SECONDS));
        redis.awaitAnySubscriber("redisson_rwlock:{wake2}");
        assertTrue(wokenBy(batonReader, () -> theirs.writeLock().unlock()), "a Redisson write release wakes a Baton reader");
    }
}
