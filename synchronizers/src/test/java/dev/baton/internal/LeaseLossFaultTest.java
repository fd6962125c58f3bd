package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Redis restarts empty while a watchdog lock is held: the watchdog's next renewal finds the
 * lock gone, the holder is told (listener and log), its unlock says the lease was lost, and
 * another client can take the lock. Nothing hangs.
 */
class LeaseLossFaultTest {

    @Test
    void anEmptyRestartIsReportedAsALostLease() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            try (RedisServer redis = RedisServer.start()) {
                CompletableFuture<String> reported = new CompletableFuture<>();
                BatonOptions options = BatonOptions.builder()
                        .redisUri(redis.uri())
                        .watchdogTimeout(Duration.ofMillis(1_500))
                        .commandTimeout(Duration.ofSeconds(2))
                        .leaseLostListener((name, owner, reason) -> reported.complete(name + " | " + reason))
                        .build();
                try (Baton holder = Baton.create(options); Baton other = Baton.create(options)) {
                    BatonLock lock = holder.lock("batch-job");
                    lock.lock();
                    redis.restart();

                    String report = reported.get(30, TimeUnit.SECONDS);
                    assertTrue(report.startsWith("batch-job | "), report);
                    assertEquals(0, ((BatonClient) holder).renewedLeases(), "renewal stopped");

                    LeaseLostException e = assertThrows(LeaseLostException.class, lock::unlock);
                    assertTrue(e.getMessage().contains("lost"), e.getMessage());

                    BatonLock theirs = other.lock("batch-job");
                    assertTrue(CompletableFuture.supplyAsync(() -> {
                        try {
                            return theirs.tryLock(10, TimeUnit.SECONDS);
                        } catch (InterruptedException ie) {
                            throw new IllegalStateException(ie);
                        }
                    }).get(20, TimeUnit.SECONDS));
                }
            }
        });
    }

    @Test
    void renewalKeepsAWatchdogLockAlivePastItsTimeout() throws Exception {
        try (RedisServer redis = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri())
                     .watchdogTimeout(Duration.ofMillis(600)).build())) {
            BatonLock lock = baton.lock("long-job");
            lock.lock();
            long pttlBefore = (Long) redis.command("PTTL", "long-job");
            // Wait, by polling Redis, until the watchdog has visibly renewed the lease twice.
            long renewals = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            long last = pttlBefore;
            while (renewals < 2 && System.nanoTime() < deadline) {
                long pttl = (Long) redis.command("PTTL", "long-job");
                if (pttl > last) {
                    renewals++;
                }
                last = pttl;
                Thread.sleep(20);
            }
            assertEquals(2, renewals, "the watchdog did not renew the lease");
            assertTrue(lock.isHeldByCurrentThread());
            lock.unlock();
            assertEquals(0L, redis.command("EXISTS", "long-job"));
            assertEquals(0, ((BatonClient) baton).renewedLeases());
        }
    }
}
