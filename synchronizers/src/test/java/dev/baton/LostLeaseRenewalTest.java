package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A lease Baton has found lost is renewed no more, whoever found the loss. The simulation found
 * (read-write seed 405, 2026-11-28) that a re-entry which found its owner's hold gone reported the
 * loss but left the lease with the watchdog: when a late copy of one of the owner's acquisitions
 * then wrote the hold again, the watchdog renewed it for nobody, for ever, and no one could take
 * the lock. Here the late copy is written by hand: the hold must end with the lease it was given.
 */
@ExtendWith(RedisExtension.class)
class LostLeaseRenewalTest {
    private static final String NAME = "lost-lease-renewal";
    /** The watchdog: a renewal every 100 ms. */
    private static final Duration WATCHDOG = Duration.ofMillis(300);
    /** The lease the stand-in for a late copy writes. */
    private static final long LATE_COPY_LEASE_MS = 500;

    private final RedisServer redis;
    private final Clients clients = new Clients();

    LostLeaseRenewalTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void stop() {
        clients.close();
    }

    @Test
    void aHoldWrittenAgainAfterAReEntryFoundItsLeaseLostIsNotRenewed() throws Exception {
        Baton baton = clients.open(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG).build());
        BatonLock lock = baton.lock(NAME);
        lock.lock();
        Object fields = redis.command("HKEYS", NAME);
        assertTrue(fields instanceof java.util.List<?> l && l.size() == 1, "one owner: " + fields);
        String field = String.valueOf(((java.util.List<?>) fields).get(0));

        redis.command("DEL", NAME); // the hold is gone (deleted, expired, force-unlocked), nobody told
        LeaseLostException lost = assertThrows(LeaseLostException.class, lock::lock, "the re-entry finds the loss");
        assertTrue(lost.getMessage().contains("re-entry"), lost.getMessage());
        assertEquals(0, baton.leasesHeld());

        // What a late copy of an earlier acquisition of this owner leaves: its hold, with a lease.
        redis.command("HSET", NAME, field, "1");
        redis.command("PEXPIRE", NAME, Long.toString(LATE_COPY_LEASE_MS));
        long written = System.nanoTime();
        // Gone when its lease runs out (+ the 300 ms margin): renewed every 100 ms, it never would be.
        Await.until(Bounds.within(Duration.ofMillis(LATE_COPY_LEASE_MS)),
                () -> "the late copy's hold to end with its lease (PTTL " + redis.command("PTTL", NAME) + " ms)",
                () -> Long.valueOf(0).equals(redis.command("EXISTS", NAME)));
        System.out.println("the hold a late copy wrote ended " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - written)
                + " ms after it was written (lease " + LATE_COPY_LEASE_MS + " ms)");
        assertThrows(LeaseLostException.class, lock::unlock, "the outer hold's unlock reports the loss");
    }
}
