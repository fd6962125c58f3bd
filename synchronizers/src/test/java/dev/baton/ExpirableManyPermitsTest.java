package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Several permits of a permit-expirable semaphore in one call: all or none, one id each. */
class ExpirableManyPermitsTest extends TwoClientsTest {

    ExpirableManyPermitsTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void severalPermitsAreTakenAllOrNoneEachWithItsOwnId() throws Exception {
        BatonPermitExpirableSemaphore s = a.permitExpirableSemaphore("pool");
        s.trySetPermits(5);
        List<String> three = s.acquire(3, 30, TimeUnit.SECONDS);
        assertEquals(3, new HashSet<>(three).size(), "three distinct ids: " + three);
        assertEquals(2, s.availablePermits());
        assertEquals(List.of(), b.permitExpirableSemaphore("pool").tryAcquire(3, 0, 30, TimeUnit.SECONDS),
                "three are refused while two are left, and none is taken");
        assertEquals(2, s.availablePermits());
        for (String id : three) {
            s.release(id);
        }
        assertEquals(5, s.availablePermits());
    }

    @Test
    void aWaiterForSeveralPermitsGetsThemWhenEnoughComeBack() throws Exception {
        BatonPermitExpirableSemaphore s = a.permitExpirableSemaphore("wait");
        s.trySetPermits(2);
        String first = s.acquire(30, TimeUnit.SECONDS);
        Future<List<String>> waiter = threads.submit(() -> b.permitExpirableSemaphore("wait").tryAcquire(2, 10, -1, TimeUnit.SECONDS));
        s.release(first);
        List<String> got = waiter.get(10, TimeUnit.SECONDS);
        assertEquals(2, got.size());
        assertEquals(0, s.availablePermits());
        assertEquals(2, ((List<?>) redis.command("ZRANGE", "{wait}:timeout", "0", "-1")).size(), "two ids in Redisson's layout");
    }

    @Test
    void permitsTakenTogetherExpireTogether() throws Exception {
        BatonPermitExpirableSemaphore s = a.permitExpirableSemaphore("short");
        s.trySetPermits(2);
        List<String> ids = s.tryAcquire(2, 0, 200, TimeUnit.MILLISECONDS);
        assertEquals(2, ids.size());
        List<String> again = b.permitExpirableSemaphore("short").tryAcquire(2, 5, 30, TimeUnit.SECONDS);
        assertEquals(2, again.size(), "both came back when their lease ran out");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.release(ids.get(0))).getMessage().contains("not held"));
    }

    @Test
    void badCountsAreRefusedByName() {
        BatonPermitExpirableSemaphore s = a.permitExpirableSemaphore("bad");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.acquire(0, 1, TimeUnit.SECONDS)).getMessage().contains("permits"));
        assertThrows(IllegalArgumentException.class, () -> s.tryAcquire(-2, 0, 1, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> s.tryAcquire(2, 0, 0, TimeUnit.SECONDS));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.tryAcquire(10_001, 0, 1, TimeUnit.SECONDS))
                .getMessage().contains("at most 10000"));
    }
}
