package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The fast path is the floor: an uncontended lock() + unlock() is exactly two commands (two
 * EVALSHA), with no subscription, counted by Redis itself (INFO commandstats).
 */
class RoundTripTest {

    @Test
    void uncontendedLockAndUnlockAreTwoCommands() {
        try (RedisServer redis = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri())
                     .watchdogTimeout(Duration.ofMinutes(10)).build())) {
            BatonLock lock = baton.lock("fast");
            lock.lock(); // warm-up: loads the scripts after the first NOSCRIPT
            lock.unlock();
            redis.command("CONFIG", "RESETSTAT");
            for (int i = 0; i < 100; i++) {
                lock.lock();
                lock.unlock();
            }
            Map<String, Long> calls = commandCalls(redis);
            assertEquals(Map.of("evalsha", 200L), calls);
            assertEquals(0, ((BatonClient) baton).subscribedChannels());
        }
    }

    private static final java.util.Set<String> INSIDE_SCRIPTS_OR_THIS_TEST = java.util.Set.of(
            "hincrby", "hget", "hset", "pexpire", "exists", "del", "publish", "pttl", "info", "config");

    private static Map<String, Long> commandCalls(RedisServer redis) {
        Map<String, Long> calls = new HashMap<>();
        for (String line : ((String) redis.command("INFO", "commandstats")).split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                long count = Long.parseLong(line.replaceAll("^[^:]*:calls=(\\d+),.*", "$1"));
                // Commands run inside scripts are counted too, and so are this test's own.
                if (!INSIDE_SCRIPTS_OR_THIS_TEST.contains(name.split("\\|")[0])) {
                    calls.put(name, count);
                }
            }
        }
        return calls;
    }
}
