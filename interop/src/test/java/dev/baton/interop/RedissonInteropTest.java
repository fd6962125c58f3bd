package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonLock;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton and the real Redisson 4.7 client on the same lock names: they exclude each other, wake
 * each other's waiters and agree on reentrant hold counts. Baton runs on Lettuce 7 here.
 */
class RedissonInteropTest extends InteropTest {

    RedissonInteropTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void batonHolderExcludesRedissonAndItsUnlockWakesARedissonWaiter() throws Exception {
        BatonLock lock = baton.lock("shared");
        lock.lock(); // watchdog lease of 30 s: a waiter that relies on the TTL would time out below
        assertFalse(threads.submit(() -> redisson.getLock("shared").tryLock()).get());
        Future<Boolean> redissonWaiter = threads.submit(() -> {
            RLock r = redisson.getLock("shared");
            boolean got = r.tryLock(15, 5, TimeUnit.SECONDS);
            if (got) {
                r.unlock();
            }
            return got;
        });
        redis.awaitAnySubscriber("redisson_lock__channel:{shared}");
        assertTrue(wokenBy(redissonWaiter, () -> lock.unlock()));
    }

    @Test
    void redissonHolderExcludesBatonAndItsUnlockWakesABatonWaiter() throws Exception {
        RLock r = redisson.getLock("shared");
        r.lock();
        assertFalse(threads.submit(() -> baton.lock("shared").tryLock()).get());
        Future<Boolean> batonWaiter = threads.submit(() -> {
            BatonLock lock = baton.lock("shared");
            boolean got = lock.tryLock(15, TimeUnit.SECONDS);
            if (got) {
                lock.unlock();
            }
            return got;
        });
        redis.awaitAnySubscriber("redisson_lock__channel:{shared}");
        assertTrue(wokenBy(batonWaiter, () -> r.unlock()));
    }

    @Test
    void reentrantHoldCountsAgree() throws Exception {
        BatonLock lock = baton.lock("counted");
        lock.lock();
        lock.lock();
        lock.unlock();
        assertFalse(threads.submit(() -> redisson.getLock("counted").tryLock()).get(), "one Baton hold is left");
        lock.unlock();
        RLock r = redisson.getLock("counted");
        assertTrue(r.tryLock());
        assertTrue(r.tryLock());
        assertEquals(2, r.getHoldCount());
        r.unlock();
        assertFalse(threads.submit(() -> baton.lock("counted").tryLock()).get(), "one Redisson hold is left");
        assertTrue(baton.lock("counted").isLocked());
        r.unlock();
        assertTrue(threads.submit(() -> baton.lock("counted").tryLock()).get());
    }

    @Test
    void fencingTokensRiseAcrossBatonAndRedissonHolders() throws Exception {
        org.redisson.api.RFencedLock theirs = redisson.getFencedLock("fenced-mixed");
        dev.baton.BatonFencedLock ours = baton.fencedLock("fenced-mixed");
        long last = 0;
        for (int i = 0; i < 20; i++) {
            long token;
            if (i % 2 == 0) {
                token = ours.lockAndGetToken();
                ours.unlock();
            } else {
                token = theirs.lockAndGetToken();
                theirs.unlock();
            }
            assertTrue(token > last, "token " + token + " after " + last + " (grant " + i + ", "
                    + (i % 2 == 0 ? "Baton" : "Redisson") + ")");
            last = token;
        }
    }
}
