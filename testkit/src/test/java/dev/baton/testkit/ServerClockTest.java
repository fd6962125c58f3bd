package dev.baton.testkit;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ServerClockTest {

    @Test
    void aServerReadsTheClockTheTestSetsAndItsKeysRunOutByIt() {
        Optional<String> why = ServerClock.unavailable();
        if (why.isPresent()) {
            System.out.println("[testkit] NOT RUN: a server clock the test sets (" + why.get() + ")");
            return;
        }
        try (ServerClock clock = ServerClock.at(1_790_000_000_123_456L);
             RedisServer server = RedisServer.start(clock)) {
            assertEquals(List.of("1790000000", "123456"), server.command("TIME"), "TIME is the clock, standing still");
            assertEquals("OK", server.command("SET", "k", "v", "PX", "5000"));
            clock.advance(5_000, TimeUnit.MILLISECONDS);
            assertEquals(1L, server.command("EXISTS", "k"), "at its expiry time to the ms, a key is still there");
            assertEquals(0L, server.command("PTTL", "k"));
            clock.advance(1, TimeUnit.MILLISECONDS);
            assertEquals(0L, server.command("EXISTS", "k"), "a ms later it is gone");
            assertEquals(List.of("1790000005", "124456"), server.command("EVAL", "return redis.call('time')", "0"),
                    "a script reads the same clock");
            server.restart();
            assertEquals(List.of("1790000005", "124456"), server.command("TIME"), "a restarted server keeps the clock");
        }
    }

    @Test
    void aClockStandsAfterTheEpoch() {
        assertThrows(IllegalArgumentException.class, () -> ServerClock.at(0));
    }
}
