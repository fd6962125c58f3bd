package dev.baton.micrometer;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonRateLimiter;
import dev.baton.RateLimit;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.Await;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The meters of {@link BatonMetrics}, recorded from a real client on a real Redis. */
@ExtendWith(RedisExtension.class)
class BatonMetricsTest {
    private final RedisServer redis;
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private BatonMetrics metrics;
    private Baton baton;

    BatonMetricsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        BatonOptions options = BatonOptions.builder().redisUri(redis.uri())
                .watchdogTimeout(Duration.ofMillis(600)).commandTimeout(Duration.ofSeconds(1)).build();
        MeterRegistry registry = this.registry;
        // snippet micrometer-setup begins
        BatonMetrics metrics = BatonMetrics.builder()
                .tagNames(Set.of("nightly-report"))   // only these names become tags
                .build();
        metrics.bindTo(registry);                      // any Micrometer registry
        Baton baton = metrics.watch(Baton.create(options.toBuilder().observer(metrics).build()));
        // snippet micrometer-setup ends
        this.metrics = metrics;
        this.baton = baton;
    }

    @AfterEach
    void close() {
        baton.close();
    }

    private Timer timer(String name, String... tags) {
        return registry.find(name).tags(tags).timer();
    }

    @Test
    void acquisitionsAreTimedByKindOutcomeAndAllowedName() throws Exception {
        SimpleMeterRegistry second = new SimpleMeterRegistry();
        metrics.bindTo(second);
        BatonLock report = baton.lock("nightly-report");
        report.lock();
        Baton other = Baton.create(redis.uri());
        try {
            assertFalse(other.lock("nightly-report").tryLock(20, TimeUnit.MILLISECONDS));
        } finally {
            other.close();
        }
        report.unlock();
        BatonLock order = baton.lock("order:4711");
        order.lock();
        order.unlock();
        baton.semaphore("s").trySetPermits(1);
        assertTrue(baton.semaphore("s").tryAcquire(1, TimeUnit.SECONDS));
        assertTrue(baton.countDownLatch("c").await(1, TimeUnit.SECONDS));

        assertEquals(1, timer("baton.acquisitions", "kind", "lock", "outcome", "acquired", "name", "nightly-report").count());
        assertEquals(1, timer("baton.acquisitions", "kind", "lock", "outcome", "acquired", "name", "other").count(),
                "a name outside the allow-list is tagged 'other'");
        assertNull(registry.find("baton.acquisitions").tag("name", "order:4711").timer(), "never tagged by its own name");
        assertEquals(1, timer("baton.holds", "kind", "lock", "name", "nightly-report").count());
        assertEquals(1, timer("baton.acquisitions", "kind", "semaphore", "outcome", "acquired").count());
        assertEquals(1, timer("baton.acquisitions", "kind", "count-down-latch", "outcome", "acquired").count());
        assertTrue(timer("baton.holds", "kind", "lock", "name", "nightly-report").totalTime(TimeUnit.NANOSECONDS) > 0);
        assertEquals(1, second.find("baton.acquisitions").tags("kind", "lock", "outcome", "acquired", "name", "nightly-report")
                .timer().count(), "a second registry records too");
    }

    /** A rate limiter's calls: admitted (with the wait for the slot), refused, and given up, under kind rate-limiter. */
    /**
     * A leader election: each election won counts, the leading gauge is 1 while a candidate leads
     * and 0 after, the epoch gauge shows the highest epoch, and each leadership's tenure is timed
     * by how it ended.
     */
    @Test
    void leaderElectionsAreCountedTheirLeadershipGaugedAndTheirTenureTimed() throws Exception {
        dev.baton.Candidacy c = baton.leaderElection("nightly-report").join("me", leadership -> Thread.sleep(Long.MAX_VALUE));
        assertTrue(c.awaitLeadership(10, TimeUnit.SECONDS));
        long epoch = c.leadership().orElseThrow().epoch();
        assertEquals(1, registry.find("baton.leader.elections").tags("name", "nightly-report").counter().count());
        assertEquals(1, registry.find("baton.leader.leading").tags("name", "nightly-report").gauge().value());
        assertEquals((double) epoch, registry.find("baton.leader.epoch").tags("name", "nightly-report").gauge().value());
        assertTrue(c.relinquish());
        dev.baton.testkit.Await.until(Duration.ofSeconds(10), () -> "re-elected", () -> registry.find("baton.leader.elections")
                .tags("name", "nightly-report").counter().count() == 2);
        assertEquals(1, timer("baton.leader.tenure", "name", "nightly-report", "reason", "relinquished").count());
        c.close();
        assertEquals(0, registry.find("baton.leader.leading").tags("name", "nightly-report").gauge().value());
        assertEquals(1, timer("baton.leader.tenure", "name", "nightly-report", "reason", "closed").count());
        assertTrue(registry.find("baton.leader.epoch").tags("name", "nightly-report").gauge().value() > epoch);
    }

    @Test
    void rateLimiterCallsAreTimedAsAdmittedRefusedAndGivenUp() throws Exception {
        BatonRateLimiter rate = baton.rateLimiter("partner", RateLimit.perSecond(5));
        assertTrue(rate.tryAcquire());
        assertFalse(rate.tryAcquire());
        assertTrue(rate.tryAcquire(1, 1, TimeUnit.SECONDS));
        java.util.concurrent.CompletableFuture<Void> waiting = rate.acquireAsync(1).toCompletableFuture();
        waiting.cancel(false);
        Timer admitted = timer("baton.acquisitions", "kind", "rate-limiter", "outcome", "acquired");
        assertEquals(2, admitted.count());
        assertTrue(admitted.max(TimeUnit.MILLISECONDS) >= 150, "the wait for the slot is timed: " + admitted.max(TimeUnit.MILLISECONDS));
        assertEquals(1, timer("baton.acquisitions", "kind", "rate-limiter", "outcome", "timed-out").count(), "refused");
        assertEquals(1, timer("baton.acquisitions", "kind", "rate-limiter", "outcome", "interrupted").count(), "given up");
    }

    @Test
    void aWaitThatRedisDidNotAnswerIsCountedAsRedisUnavailable() {
        redis.pause();
        try {
            assertThrows(RedisUnavailableException.class, () -> baton.lock("nightly-report").tryLock());
        } finally {
            redis.resume();
        }
        assertEquals(1, timer("baton.acquisitions", "kind", "lock", "outcome", "redis-unavailable").count());
    }

    @Test
    void leasesHeldLostAndRenewedAreMetered() {
        Gauge held = registry.find("baton.leases.held").gauge();
        baton.lock("nightly-report").lock();
        baton.lock("fixed").lock(30, TimeUnit.SECONDS);
        assertEquals(2, held.value());
        Await.until(Duration.ofSeconds(2), () -> "a renewal metered",
                () -> timer("baton.renewals", "outcome", "success") != null && timer("baton.renewals", "outcome", "success").count() > 0);
        redis.command("DEL", "nightly-report");
        Await.until(Duration.ofSeconds(2), () -> "the loss counted",
                () -> registry.find("baton.leases.lost").tags("cause", "gone", "name", "nightly-report").counter() != null);
        redis.command("DEL", "fixed");
        assertThrows(LeaseLostException.class, () -> baton.lock("fixed").unlock());
        assertEquals(1, registry.find("baton.leases.lost").tags("cause", "gone", "name", "other").counter().count());
        assertEquals(0, held.value());
    }

    @Test
    void aLeaseTheWatchdogCouldNotRenewIsLostAsUnreachableAfterFailedRenewals() {
        Gauge held = registry.find("baton.leases.held").gauge();
        baton.lock("nightly-report").lock();
        redis.pause();
        try {
            // The watchdog's lease is 600 ms and a command times out after 1 s: the first renewal
            // that Redis does not answer fails after the lease has run out.
            Await.until(Duration.ofSeconds(5), () -> "the loss counted as unreachable",
                    () -> registry.find("baton.leases.lost").tags("cause", "unreachable", "name", "nightly-report")
                            .counter() != null);
        } finally {
            redis.resume();
        }
        assertEquals(1, registry.find("baton.leases.lost").tags("cause", "unreachable").counter().count());
        assertTrue(timer("baton.renewals", "outcome", "failure").count() >= 1, "the failed renewal is timed");
        assertEquals(0, held.value());
    }

    @Test
    void waitsThatAreInterruptedOrFailAreCountedSo() throws Exception {
        Baton other = Baton.create(redis.uri());
        try {
            BatonLock taken = other.lock("nightly-report");
            taken.lock();
            Thread waiter = new Thread(() -> {
                try {
                    baton.lock("nightly-report").lockInterruptibly();
                } catch (InterruptedException expected) {
                    // the outcome under test
                }
            });
            waiter.start();
            redis.awaitSubscribers("redisson_lock__channel:{nightly-report}", 1); // the waiter was refused and waits
            waiter.interrupt();
            waiter.join(5_000);
            assertFalse(waiter.isAlive());
            taken.unlock();
        } finally {
            other.close();
        }
        assertEquals(1, timer("baton.acquisitions", "kind", "lock", "outcome", "interrupted").count());

        assertTrue(baton.countDownLatch("c").trySetCount(1));
        long reads = redis.calls("get");
        Thread awaiting = new Thread(() -> {
            try {
                baton.countDownLatch("c").await(10, TimeUnit.SECONDS);
            } catch (RuntimeException | InterruptedException expected) {
                // deleted while waiting: the outcome under test
            }
        });
        awaiting.start();
        // Parked: it read the count, subscribed, and read it again (deleted before its first read,
        // the latch would simply be open for it: a missing latch counts as zero).
        Await.until(Duration.ofSeconds(5), () -> "the latch waiter parked", () -> redis.calls("get") >= reads + 2);
        baton.countDownLatch("c").delete();
        awaiting.join(5_000);
        assertFalse(awaiting.isAlive());
        assertEquals(1, timer("baton.acquisitions", "kind", "count-down-latch", "outcome", "failed").count());
    }

    @Test
    void anAcquisitionIsAnObservationChildOfTheCallersCurrentOne() throws Exception {
        List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
        ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }

            @Override
            public void onStop(Observation.Context context) {
                stopped.add(context);
            }
        });
        SimpleMeterRegistry handled = new SimpleMeterRegistry();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(handled));
        BatonOptions options = BatonOptions.builder().redisUri(redis.uri()).build();
        // snippet micrometer-observations begins
        BatonMetrics traced = BatonMetrics.builder()
                .tagNames(Set.of("nightly-report"))
                .observationRegistry(observations)             // each acquisition is an Observation
                .build();
        // snippet micrometer-observations ends
        try (Baton client = Baton.create(options.toBuilder().observer(traced).build())) {
            Observation request = Observation.start("http.request", observations);
            try (Observation.Scope scope = request.openScope()) {
                BatonLock lock = client.lock("nightly-report");
                lock.lock();
                lock.unlock();
                assertTrue(client.semaphore("order:4711").tryAcquire(0, TimeUnit.MILLISECONDS) == false);
            } finally {
                request.stop();
            }
        }
        Await.until(Duration.ofSeconds(2), () -> "three observations stopped: " + stopped, () -> stopped.size() == 3);
        Observation.Context lock = stopped.get(0);
        assertEquals("baton.acquire", lock.getName());
        assertEquals("baton acquire lock", lock.getContextualName());
        assertEquals("lock", lock.getLowCardinalityKeyValue("kind").getValue());
        assertEquals("acquired", lock.getLowCardinalityKeyValue("outcome").getValue());
        assertEquals("nightly-report", lock.getLowCardinalityKeyValue("name").getValue());
        assertEquals("http.request", lock.getParentObservation().getContextView().getName(), "the caller's observation is the parent");
        Observation.Context semaphore = stopped.get(1);
        assertEquals("timed-out", semaphore.getLowCardinalityKeyValue("outcome").getValue());
        assertEquals(OTHER_NAME, semaphore.getLowCardinalityKeyValue("name").getValue(), "the allow-list applies");
        assertEquals("order:4711", semaphore.getHighCardinalityKeyValue("baton.name").getValue());
        assertEquals("http.request", stopped.get(2).getName());
        assertEquals(1, handled.find("baton.acquire").tags("kind", "lock", "outcome", "acquired").timer().count(),
                "a meter handler records the observation as its own timer");
    }

    private static final String OTHER_NAME = BatonMetrics.OTHER;
}
