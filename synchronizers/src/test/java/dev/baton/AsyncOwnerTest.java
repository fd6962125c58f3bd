package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Owner ids for asynchronous work: a hand-picked number is also some thread's id and shares that
 * thread's blocking holds (shown here with the calling thread's own id), while
 * {@link Baton#newOwnerId()} gives ids no thread has, unique across threads.
 */
class AsyncOwnerTest extends TwoClientsTest {
    AsyncOwnerTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void newOwnerIdsAreUniqueAndNeverAThreadsSoTheyNeverShareItsHolds() throws Exception {
        Set<Long> ids = ConcurrentHashMap.newKeySet();
        Future<?>[] makers = new Future<?>[4];
        for (int t = 0; t < makers.length; t++) {
            makers[t] = threads.submit(() -> {
                for (int i = 0; i < 1_000; i++) {
                    long id = Baton.newOwnerId();
                    assertTrue(id < 0, "below every thread id: " + id);
                    assertTrue(ids.add(id), "unique: " + id);
                }
            });
        }
        for (Future<?> maker : makers) {
            maker.get(10, TimeUnit.SECONDS);
        }
        assertEquals(4_000, ids.size());

        BatonLock lock = a.lock("owners");
        lock.lock(); // the calling thread's blocking hold
        try {
            long picked = Thread.currentThread().getId(); // what "long owner = 42" is for thread 42
            assertTrue(lock.tryLockAsync(picked).toCompletableFuture().get(5, TimeUnit.SECONDS),
                    "a hand-picked id equal to a thread's id re-enters that thread's hold");
            lock.unlockAsync(picked).toCompletableFuture().get(5, TimeUnit.SECONDS);
            long fresh = Baton.newOwnerId();
            assertFalse(lock.tryLockAsync(fresh).toCompletableFuture().get(5, TimeUnit.SECONDS),
                    "a new owner id is another owner: the thread's hold excludes it");
        } finally {
            lock.unlock();
        }
        assertFalse(lock.isLocked());
    }
}
