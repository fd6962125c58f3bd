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
