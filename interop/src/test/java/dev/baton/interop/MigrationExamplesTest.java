package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonSemaphore;
import dev.baton.LeaseLostListener;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import org.junit.jupiter.api.Test;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The snippets of docs/migration-from-redisson.md, compiled and run with a real Redisson 4.7 and
 * a Baton client on one Redis: what the guide says is shared really is.
 */
class MigrationExamplesTest extends InteropTest {

    MigrationExamplesTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void theSameLockFromBothClients() throws Exception {
        // snippet migration-lock begins
        // Before: Redisson
        RLock theirs = redisson.getLock("nightly-report");
        // After: Baton, on the same name; both clients exclude each other during the migration
        BatonLock ours = baton.lock("nightly-report");

        theirs.lock();
        try {
            boolean taken = ours.tryLock(100, TimeUnit.MILLISECONDS); // false: Redisson holds it
            System.out.println("Baton got it while Redisson held it: " + taken);
        } finally {
            theirs.unlock(); // wakes Baton's waiters too
        }
        // snippet migration-lock ends
        assertFalse(ours.isLocked());
        Future<Boolean> waiter = threads.submit(() -> {
            if (ours.tryLock(10, TimeUnit.SECONDS)) {
                ours.unlock();
                return true;
            }
            return false;
        });
        theirs.lock();
        assertTrue(wokenBy(waiter, theirs::unlock), "a Redisson unlock wakes a Baton waiter");
    }

    @Test
    void semaphoresAndLatchesMapOneToOne() throws Exception {
        // snippet migration-semaphore-latch begins
        RSemaphore theirPermits = redisson.getSemaphore("partner-api");
        theirPermits.trySetPermits(4);
        BatonSemaphore ourPermits = baton.semaphore("partner-api");
        ourPermits.acquire(1);                      // was: theirPermits.acquire()
        ourPermits.release(1);                      // was: theirPermits.release()

        RPermitExpirableSemaphore theirSlots = redisson.getPermitExpirableSemaphore("render-slots");
        theirSlots.trySetPermits(2);
        BatonPermitExpirableSemaphore ourSlots = baton.permitExpirableSemaphore("render-slots");
        String id = ourSlots.acquire(60, TimeUnit.SECONDS); // was: theirSlots.acquire(60, SECONDS)
        theirSlots.release(id);                     // ids are shared: either client may release

        RCountDownLatch theirLatch = redisson.getCountDownLatch("batch");
        theirLatch.trySetCount(1);
        BatonCountDownLatch ourLatch = baton.countDownLatch("batch");
        ourLatch.countDown();                       // releases Redisson's await() as well
        // snippet migration-semaphore-latch ends
        assertEquals(4, theirPermits.availablePermits());
        assertEquals(2, theirSlots.availablePermits());
        assertEquals(0, theirLatch.getCount());
    }

    @Test
    void batonOnTheApplicationsLettuceClientWithALeaseLossListener() throws Exception {
        List<String> lost = new CopyOnWriteArrayList<>();
        String redisUri = redis.uri();
        // snippet migration-setup begins
        RedisClient lettuce = RedisClient.create(redisUri);     // the client the application already has
        LeaseLostListener alert = (name, owner, reason) -> lost.add(name + ": " + reason);
        try (Baton client = Baton.create(lettuce, BatonOptions.builder().leaseLostListener(alert).build())) {
            client.lock("nightly-report").lock();
            // ... Redisson's lock-watchdog-timeout maps to BatonOptions.watchdogTimeout,
            // its timeout to BatonOptions.commandTimeout
            client.lock("nightly-report").unlock();
        } finally {
            lettuce.shutdown();                               // Baton never shuts down your client
        }
        // snippet migration-setup ends
        assertTrue(lost.isEmpty(), "nothing lost: " + lost);
    }
}
