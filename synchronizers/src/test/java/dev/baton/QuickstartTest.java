package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The README's quickstart, compiled and run ({@link DocSnippetsTest} checks that the README shows it). */
@ExtendWith(RedisExtension.class)
class QuickstartTest {

    @Test
    void quickstartRuns(RedisServer redis) throws Exception {
        String redisUri = redis.uri();
        // snippet quickstart begins
        try (Baton baton = Baton.create(BatonOptions.create(redisUri))) {
            BatonLock lock = baton.lock("nightly-report");
            try (LockHold held = lock.acquire()) {
                // only one process in the fleet runs this at a time
            }
            if (lock.tryLock(2, TimeUnit.SECONDS)) {
                try {
                    // waited at most 2 s for the lock
                } finally {
                    lock.unlock();
                }
            }
        }
        // snippet quickstart ends
        assertEquals(0L, redis.command("EXISTS", "nightly-report"));
    }

    @Test
    void theReadmesOptionsAndTimedHandlesRun(RedisServer redis) throws Exception {
        String redisUri = redis.uri();
        java.util.List<String> alerts = new java.util.concurrent.CopyOnWriteArrayList<>();
        // snippet readme-options begins
        BatonOptions options = BatonOptions.builder()
                .redisUri(redisUri)
                .commandTimeout(Duration.ofSeconds(2))     // a call fails within 2 s + 150 ms when Redis is away
                .watchdogTimeout(Duration.ofSeconds(30))   // a crashed holder's lock expires within 30 s
                .leaseLostListener((name, owner, reason) -> alerts.add(name + ": " + reason))
                .build();
        try (Baton baton = Baton.create(options)) {
            Optional<LockHold> held = baton.lock("nightly-report").tryAcquire(2, TimeUnit.SECONDS);
            if (held.isPresent()) {
                try (LockHold hold = held.get()) {
                    // waited at most 2 s; released by the try-with-resources
                }
            }
        }
        // snippet readme-options ends
        assertEquals(0L, redis.command("EXISTS", "nightly-report"));
        assertEquals(java.util.List.of(), alerts);
    }
}
