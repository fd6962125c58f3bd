package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BatonOptions.Builder#clockDriftAllowance}: the share of a lease that lease-scoped work
 * keeps back for clocks running at different rates (issue 45: the validity margin stated as the
 * clock allowance it is, configurable, tested at its bound). A scope is valid until the send that
 * set its lease + the lease − (the share of it + 25 ms).
 */
@ExtendWith(RedisExtension.class)
class ClockDriftAllowanceTest {
    private final RedisServer redis;
    private final Clients clients = new Clients();

    ClockDriftAllowanceTest(RedisServer redis) {
        this.redis = redis;
    }

    @AfterEach
    void stop() {
        clients.close();
    }

    private Baton withAllowance(double share, Duration watchdog) {
        return clients.open(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(watchdog)
                .clockDriftAllowance(share).build());
    }

    @Test
    void theAllowanceIsAShareOfTheLeaseFromZeroToAHalf() {
        assertEquals(0.01, BatonOptions.builder().redisUri("redis://127.0.0.1:6379").build().clockDriftAllowance());
        assertEquals(0.5, BatonOptions.builder().clockDriftAllowance(0.5).redisUri("redis://127.0.0.1:6379").build()
                .clockDriftAllowance());
        for (double bad : new double[] {-0.01, 0.51, Double.NaN, 2}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> BatonOptions.builder().clockDriftAllowance(bad));
            assertTrue(e.getMessage().contains("clockDriftAllowance") && e.getMessage().contains(String.valueOf(bad)),
                    e.getMessage());
        }
    }

    /** A watchdog lease of 1 s with 30 % kept back: a fresh scope has at most 1000 − 300 − 25 = 675 ms. */
    @Test
    void aLocksScopeKeepsBackTheConfiguredShare() throws Exception {
        Baton baton = withAllowance(0.3, Duration.ofSeconds(1));
        long promised = 1_000 - 300 - 25;
        long remaining = baton.lock("allowance-lock").withLock(scope -> scope.remaining().toMillis());
        System.out.println("a fresh scope under a 1 s watchdog lease and a 30 % allowance: " + remaining + " ms (promised "
                + promised + ")");
        assertTrue(remaining <= promised, "no more than the lease less 30 % and 25 ms: " + remaining + " ms");
        assertTrue(remaining >= promised - Bounds.margin(Duration.ofMillis(promised)).toMillis(),
                "the lease less the allowance, counted from the acquisition's send: " + remaining + " ms");
    }

    /** A permit's 1 s lease with 20 % kept back: work running past it is stopped at 1000 − 200 − 25 = 775 ms. */
    @Test
    void workPastAPermitsValidityIsStoppedAtTheConfiguredMargin() throws Exception {
        Baton baton = withAllowance(0.2, Duration.ofSeconds(30));
        BatonPermitExpirableSemaphore permits = baton.permitExpirableSemaphore("allowance-permits");
        assertTrue(permits.trySetPermits(1));
        long promised = 1_000 - 200 - 25;
        AtomicLong stoppedAt = new AtomicLong();
        long begun = System.nanoTime();
        assertThrows(LeaseLostException.class, () -> permits.withPermit(1_000, TimeUnit.MILLISECONDS, scope -> {
            try {
                Thread.sleep(10_000);
            } catch (InterruptedException e) {
                stoppedAt.set(System.nanoTime());
                throw e;
            }
            return null;
        }));
        long after = TimeUnit.NANOSECONDS.toMillis(stoppedAt.get() - begun);
        System.out.println("work past a 1 s permit lease with a 20 % allowance stopped " + after + " ms after the call began"
                + " (promised " + promised + " ms from the acquisition's send)");
        // Not before: the acquisition was sent after the call began.
        assertTrue(after >= promised, "not before the lease less 20 % and 25 ms: " + after + " ms");
        assertTrue(after <= promised + Bounds.margin(Duration.ofMillis(promised)).toMillis(),
                "at the lease less 20 % and 25 ms (+ the margin): " + after + " ms");
        assertEquals(1, permits.availablePermits(), "the permit back");
    }
}
