package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.Runtimes;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Watchdog leases at their promised bounds: a held lock outlives its watchdog timeout by
 * renewal; a lost one (Redis restarted empty) is reported within a third of the timeout, by
 * log, listener and every outstanding hold's unlock; a crashed holder's lock expires within the
 * timeout.
 */
class LeaseLossFaultTest {
    private static final Duration WATCHDOG = Duration.ofMillis(1_500);

    @Test
    void anEmptyRestartIsReportedAsALostLease() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            CompletableFuture<String> reported = new CompletableFuture<>();
            BatonOptions options = BatonOptions.builder()
                    .redisUri(redis.uri())
                    .watchdogTimeout(WATCHDOG)
                    .commandTimeout(Duration.ofSeconds(1))
                    .leaseLostListener((name, owner, reason) -> reported.complete(name + " | " + owner + " | " + reason))
                    .build();
            try (Baton holder = Baton.create(options); Baton other = Baton.create(options)) {
                BatonLock lock = holder.lock("batch-job");
                lock.lock();
                lock.lock(); // two holds: each unlock must hear of the loss
                java.io.PrintStream stderr = System.err;
                java.io.ByteArrayOutputStream logged = new java.io.ByteArrayOutputStream();
                System.setErr(new java.io.PrintStream(logged, true, java.nio.charset.StandardCharsets.UTF_8));
                String report;
                long reportedAfter;
                try {
                    redis.restart();
                    long restarted = System.nanoTime();
                    report = reported.get(Bounds.within(WATCHDOG.dividedBy(3)).toMillis(), TimeUnit.MILLISECONDS);
                    reportedAfter = System.nanoTime() - restarted;
                } finally {
                    System.setErr(stderr);
                }
                String log = logged.toString(java.nio.charset.StandardCharsets.UTF_8);
                stderr.print(log);
                assertTrue(log.matches("(?s).*WARN dev\\.baton\\.internal\\.lease\\.Leases - Lease lost: lock 'batch-job' held by .*"),
                        "the loss is logged at WARN: " + log);
                assertTrue(reportedAfter <= Bounds.within(WATCHDOG.dividedBy(3)).toNanos(),
                        "reported within a third of the watchdog timeout: " + TimeUnit.NANOSECONDS.toMillis(reportedAfter) + " ms");
                assertTrue(report.startsWith("batch-job | " + holder.clientId() + ":" + Thread.currentThread().getId() + " | "),
                        report);
                assertEquals(0, Runtimes.of(holder).renewedLeases(), "renewal stopped");

                LeaseLostException first = assertThrows(LeaseLostException.class, lock::unlock);
                assertTrue(first.getMessage().contains("lost"), first.getMessage());
                assertThrows(LeaseLostException.class, lock::unlock, "the second hold reports the loss too");
                IllegalMonitorStateException after = assertThrows(IllegalMonitorStateException.class, lock::unlock);
                assertFalse(after instanceof LeaseLostException, "and then nothing is held");

                assertTrue(CompletableFuture.supplyAsync(() -> other.lock("batch-job").tryLock()).get(5, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void renewalKeepsAWatchdogLockAlivePastItsTimeout() throws Exception {
        try (RedisServer redis = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG).build())) {
            BatonLock lock = baton.lock("long-job");
            lock.lock();
            String owner = baton.clientId() + ":" + Thread.currentThread().getId();
            // Three watchdog timeouts: without renewal the lease would have run out twice over.
            long deadline = System.nanoTime() + WATCHDOG.multipliedBy(3).toNanos();
            while (System.nanoTime() < deadline) {
                assertEquals("1", redis.command("HGET", "long-job", owner), "still held");
                long pttl = (Long) redis.command("PTTL", "long-job");
                assertTrue(pttl > 0 && pttl <= WATCHDOG.toMillis(), "a lease of at most the watchdog timeout: " + pttl);
                Thread.sleep(50); // sampling the lease as time passes: the passing time is what is tested
            }
            assertTrue(lock.isHeldByCurrentThread());
            lock.unlock();
            assertEquals(0L, redis.command("EXISTS", "long-job"));
            assertEquals(0, Runtimes.of(baton).renewedLeases());
        }
    }

    @Test
    void aCrashedHoldersWatchdogLockExpiresWithinTheTimeout() throws Exception {
        try (RedisServer redis = RedisServer.start();
             Baton other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build())) {
            Baton crashing = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG).build());
            crashing.lock("crashed").lock();
            Thread.sleep(WATCHDOG.toMillis()); // held past its timeout by renewal first
            crashing.close(); // renewal stops, nothing is released: what Redis sees of a crash
            long crashed = System.nanoTime();
            assertTrue(CompletableFuture.supplyAsync(() -> {
                try {
                    return other.lock("crashed").tryLock(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }).get(15, TimeUnit.SECONDS));
            long freedAfter = System.nanoTime() - crashed;
            assertTrue(freedAfter <= Bounds.within(WATCHDOG).toNanos(),
                    "expired within the watchdog timeout: " + TimeUnit.NANOSECONDS.toMillis(freedAfter) + " ms");
            assertTrue(freedAfter >= WATCHDOG.multipliedBy(2).dividedBy(3).minus(Bounds.MIN_MARGIN).toNanos(),
                    "but not before the last renewal's lease ran out: " + TimeUnit.NANOSECONDS.toMillis(freedAfter) + " ms");
        }
    }
}
