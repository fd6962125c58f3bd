package dev.baton.internal.lease;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The renewal registry driven by a fake clock and a fake Redis: no sleeping, no server. */
// Needs no Redis: tagged so `mvn test -Dgroups=no-redis` runs it (and its like) in seconds.
@Tag("no-redis")
class RenewalRegistryTest {
    private static final long WATCHDOG_MS = 30_000;

    private final FakeScheduler scheduler = new FakeScheduler();
    private final List<List<Lease>> calls = new ArrayList<>();
    private final Set<String> heldInRedis = new HashSet<>();
    private final Map<Lease, String> lost = new HashMap<>();
    private CompletableFuture<List<Boolean>> nextReply;
    private RenewalRegistry registry;

    @BeforeEach
    void create() {
        RenewalRegistry.Renewer renewer = (batch, leaseMs) -> {
            assertEquals(WATCHDOG_MS, leaseMs);
            calls.add(List.copyOf(batch));
            if (nextReply != null) {
                return nextReply;
            }
            List<Boolean> flags = new ArrayList<>();
            for (Lease lease : batch) {
                flags.add(heldInRedis.contains(lease.key));
            }
            return CompletableFuture.completedFuture(flags);
        };
        registry = new RenewalRegistry(renewer, (lease, cause, reason) -> lost.put(lease, reason), scheduler, key -> key.charAt(0), WATCHDOG_MS, 3);
    }

    private Lease held(String key) {
        heldInRedis.add(key);
        Lease lease = new Lease(key, "client:1", Lease.Renewal.HASH_FIELD, 1, WATCHDOG_MS, true, scheduler.nanoTime());
        registry.register(lease);
        return lease;
    }

    @Test
    void ticksEveryThirdOfTheWatchdogTimeout() {
        registry.start();
        assertEquals(List.of(TimeUnit.SECONDS.toNanos(10)), scheduler.pendingDelaysNanos());
        held("a1");
        scheduler.advance(9_999, TimeUnit.MILLISECONDS);
        assertTrue(calls.isEmpty());
        scheduler.advance(1, TimeUnit.MILLISECONDS);
        assertEquals(1, calls.size());
        scheduler.advance(10, TimeUnit.SECONDS);
        assertEquals(2, calls.size());
    }

    @Test
    void batchesNeverMixSlotsAndRespectTheBatchSize() {
        for (String key : List.of("a1", "a2", "a3", "a4", "b1", "b2")) {
            held(key);
        }
        registry.tick();
        List<Integer> sizes = new ArrayList<>();
        for (List<Lease> batch : calls) {
            sizes.add(batch.size());
            assertEquals(1, batch.stream().map(l -> l.key.charAt(0)).distinct().count(), "mixed slots: " + batch);
        }
        Collections.sort(sizes);
        assertEquals(List.of(1, 2, 3), sizes);
        assertTrue(lost.isEmpty());
    }

    @Test
    void aLeaseGoneFromRedisIsReportedOnceAndNoLongerRenewed() {
        Lease kept = held("a1");
        Lease gone = held("a2");
        heldInRedis.remove("a2");
        registry.tick();
        assertEquals(Set.of(gone), lost.keySet());
        assertTrue(lost.get(gone).contains("no longer held"), lost.get(gone));
        calls.clear();
        registry.tick();
        assertEquals(List.of(List.of(kept)), calls);
        assertEquals(1, lost.size());
    }

    @Test
    void aLeaseUnregisteredWhileItsRenewalWasInFlightIsNotReported() {
        Lease lease = held("a1");
        nextReply = new CompletableFuture<>();
        registry.tick();
        registry.unregister(lease); // the owner released it meanwhile
        nextReply.complete(List.of(false));
        assertTrue(lost.isEmpty());
        assertEquals(0, registry.size());
    }

    @Test
    void renewalFailuresBecomeALossOnlyAfterTheWholeLease() {
        Lease lease = held("a1");
        nextReply = CompletableFuture.failedFuture(new IllegalStateException("Redis down"));
        scheduler.advance(WATCHDOG_MS - 1, TimeUnit.MILLISECONDS);
        registry.tick();
        assertTrue(lost.isEmpty(), "still within the lease");
        scheduler.advance(1, TimeUnit.MILLISECONDS);
        registry.tick();
        assertEquals(Set.of(lease), lost.keySet());
        assertTrue(lost.get(lease).contains("Redis down"), lost.get(lease));
    }

    @Test
    void aSuccessfulRenewalRestartsTheSilenceClock() {
        Lease lease = held("a1");
        scheduler.advance(20, TimeUnit.SECONDS);
        registry.tick();
        nextReply = CompletableFuture.failedFuture(new IllegalStateException("Redis down"));
        scheduler.advance(20, TimeUnit.SECONDS);
        registry.tick();
        assertTrue(lost.isEmpty(), "renewed 20 s ago, lease is 30 s");
        assertEquals(1, registry.size());
        assertTrue(lease.lastRenewedNanos > 0);
    }

    @Test
    void closeStopsTheTimer() {
        registry.start();
        held("a1");
        registry.close();
        scheduler.advance(1, TimeUnit.MINUTES);
        assertTrue(calls.isEmpty());
        assertEquals(0, registry.size());
    }
}
