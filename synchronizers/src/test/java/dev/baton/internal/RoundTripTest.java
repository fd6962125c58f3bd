package dev.baton.internal;

import dev.baton.Runtimes;
import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The fast path is the floor: an uncontended lock() + unlock() of every lock kind is exactly
 * two commands (two EVALSHA) on the wire, with no subscription. Counted by Redis's MONITOR, which shows every
 * command a client sent (and, marked "lua", the ones scripts ran, which are not round trips),
 * so an extra read, subscribe or WAIT the client sent would be seen whatever its name.
 */
class RoundTripTest {
    private static final String DONE = "round-trip-test-done";

    @ParameterizedTest
    @EnumSource(LostReplyTest.Kind.class)
    void uncontendedLockAndUnlockAreTwoCommands(LostReplyTest.Kind kind) {
        try (RedisServer redis = RedisServer.start();
             Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri())
                     .watchdogTimeout(Duration.ofMinutes(10)).build())) {
            BatonLock lock = kind.lock(baton, "fast");
            lock.lock(); // warm-up: loads the scripts after the first NOSCRIPT
            lock.unlock();
            try (RespClient monitor = new RespClient(redis.host(), redis.port())) {
                assertEquals("OK", monitor.call("MONITOR"));
                for (int i = 0; i < 100; i++) {
                    lock.lock();
                    lock.unlock();
                }
                redis.command("ECHO", DONE);
                Map<String, Integer> sent = new TreeMap<>();
                while (true) {
                    String line = String.valueOf(monitor.readReply());
                    if (line.contains(DONE)) {
                        break;
                    }
                    if (line.contains(" lua] ")) {
                        continue; // run by a script inside Redis, not sent by the client
                    }
                    String command = line.replaceAll("^[^\\]]*\\] \"([^\"]+)\".*$", "$1").toLowerCase();
                    sent.merge(command, 1, Integer::sum);
                }
                assertEquals(Map.of("evalsha", 200), sent, "what the client sent for 100 lock+unlock pairs of a " + kind + " lock");
            }
            assertEquals(0, Runtimes.of(baton).subscribedChannels());
        }
    }
}
