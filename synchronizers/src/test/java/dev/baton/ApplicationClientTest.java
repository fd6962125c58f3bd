package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An application hands Baton the Lettuce client it already has (README): Baton opens its own
 * two connections from it, closes only those, and never shuts the client down.
 */
@ExtendWith(RedisExtension.class)
class ApplicationClientTest {

    private static long connectedClients(RedisServer redis) {
        String info = (String) redis.command("INFO", "clients");
        return Long.parseLong(info.replaceAll("(?s).*connected_clients:(\\d+).*", "$1")) - 1; // minus this probe
    }

    @Test
    void batonOpensTwoConnectionsOfItsOwnAndLeavesTheApplicationsClientRunning(RedisServer redis) throws Exception {
        RedisClient application = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> appConnection = application.connect()) {
            long before = connectedClients(redis);
            Baton baton = Baton.create(application, BatonOptions.builder().build());
            BatonLock lock = baton.lock("app-client");
            lock.lock();
            lock.unlock();
            assertEquals(before + 2, connectedClients(redis), "one command and one pub/sub connection of Baton's own");
            baton.close();
            dev.baton.testkit.Await.until(Duration.ofSeconds(2), () -> "Baton's connections closed",
                    () -> connectedClients(redis) == before);
            assertEquals("PONG", appConnection.sync().ping(), "the application's own connection still works");
            try (StatefulRedisConnection<String, String> fresh = application.connect()) {
                assertEquals("PONG", fresh.sync().ping(), "and its client was not shut down");
            }
        } finally {
            application.shutdown();
        }
    }

    /**
     * Opening a client on a Redis that accepts connections but does not answer fails within the
     * command timeout, whatever timeouts the application's Lettuce client has (Lettuce's default
     * URI timeout, which Spring Boot also uses, is 60 s).
     */
    @Test
    void aClientWithoutAUriOfItsOwnIsRefusedWithAClearError() {
        RedisClient noUri = RedisClient.create(); // what Spring Data Redis makes for static master/replica
        try {
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> Baton.create(noUri, BatonOptions.builder().build()));
            assertTrue(e.getMessage().contains("no RedisURI of its own"), e.getMessage());
        } finally {
            noUri.shutdown();
        }
    }

    @Test
    void openingOnAPausedRedisFailsWithinTheCommandTimeout() {
        Duration timeout = Duration.ofSeconds(1);
        Duration bound = dev.baton.testkit.Bounds.within(timeout);
        try (RedisServer paused = RedisServer.start()) {
            // The JVM's first client is given longer (FirstOpenTest): this one is not the first.
            Baton.create(paused.uri()).close();
            RedisClient application = RedisClient.create(paused.uri());
            paused.pause();
            try {
                long start = System.nanoTime();
                RedisUnavailableException e = org.junit.jupiter.api.Assertions.assertThrows(RedisUnavailableException.class,
                        () -> Baton.create(application, BatonOptions.builder().commandTimeout(timeout).build()));
                long tookMs = Duration.ofNanos(System.nanoTime() - start).toMillis();
                assertTrue(tookMs <= bound.toMillis(), "the application's client: " + tookMs + " ms, bound " + bound);
                assertTrue(e.getMessage().contains("no answer within the command timeout"), e.getMessage());

                start = System.nanoTime();
                org.junit.jupiter.api.Assertions.assertThrows(RedisUnavailableException.class,
                        () -> Baton.create(BatonOptions.builder().redisUri(paused.uri()).commandTimeout(timeout).build()));
                tookMs = Duration.ofNanos(System.nanoTime() - start).toMillis();
                assertTrue(tookMs <= bound.toMillis(), "a client Baton owns: " + tookMs + " ms, bound " + bound);
            } finally {
                paused.resume();
                application.shutdown();
            }
        }
    }

    @Test
    void aServerThatRefusesWaitIsReportedOnceAndNotAskedAgain(RedisServer redis) {
        // A user without +wait: Redis refuses WAIT the way a proxy without it does.
        redis.command("ACL", "SETUSER", "nowait", "on", ">pw", "~*", "&*", "+@all", "-wait");
        PrintStream stderr = System.err;
        ByteArrayOutputStream logged = new ByteArrayOutputStream();
        System.setErr(new PrintStream(logged, true, StandardCharsets.UTF_8));
        try (Baton baton = Baton.create(BatonOptions.builder().redisUri("redis://nowait:pw@" + redis.host() + ":" + redis.port())
                .replicaSync(1, Duration.ofMillis(200), BatonOptions.ReplicaSyncFailure.FAIL).build())) {
            for (int i = 0; i < 5; i++) {
                BatonLock lock = baton.lock("no-wait");
                lock.lock();
                lock.unlock();
            }
        } finally {
            System.setErr(stderr);
        }
        String log = logged.toString(StandardCharsets.UTF_8);
        stderr.print(log);
        int warnings = log.split("replica sync is off for this client", -1).length - 1;
        assertEquals(1, warnings, "one warning, then replica sync is off for this client: " + log);
        assertTrue(log.contains("WARN") && log.contains("Redis refused WAIT"), log);
    }
}
