package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

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
}
