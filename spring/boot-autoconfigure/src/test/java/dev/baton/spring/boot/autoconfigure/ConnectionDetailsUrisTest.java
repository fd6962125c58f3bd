package dev.baton.spring.boot.autoconfigure;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The URIs of Baton's own client from Spring Data Redis's connection details, either Boot line's. */
@Tag("no-redis")
class ConnectionDetailsUrisTest {

    private static ConnectionDetailsUris.Details standalone(String host, int port, int database, String user, String password,
                                                            boolean ssl, String clientName) {
        return new ConnectionDetailsUris.Details(user, password, new ConnectionDetailsUris.Standalone(host, port, database),
                null, null, false, ssl ? new ConnectionDetailsUris.Ssl(true, null) : ConnectionDetailsUris.Ssl.NONE, clientName);
    }

    @Test
    void theUrisCarryCredentialsDatabaseSentinelAndClusterNodes() {
        assertEquals(List.of("rediss://app:p%3Aw%40%2F%25@10.0.0.5:6380/2?clientName=svc"),
                ConnectionDetailsUris.of(standalone("10.0.0.5", 6380, 2, "app", "p:w@/%", true, "svc")).uris());
        assertEquals(List.of("redis://:secret@10.0.0.5:6380/2"),
                ConnectionDetailsUris.of(standalone("10.0.0.5", 6380, 2, null, "secret", false, null)).uris());
        List<ConnectionDetailsUris.Node> sentinels = List.of(new ConnectionDetailsUris.Node("h1", 26379),
                new ConnectionDetailsUris.Node("h2", 26380));
        ConnectionDetailsUris sentinel = ConnectionDetailsUris.of(new ConnectionDetailsUris.Details(null, null, null,
                new ConnectionDetailsUris.Sentinel(sentinels, "mymaster", 1, null), null, false, ConnectionDetailsUris.Ssl.NONE, null));
        assertEquals(List.of("redis-sentinel://h1:26379,h2:26380/1#mymaster"), sentinel.uris());
        assertFalse(sentinel.cluster());
        ConnectionDetailsUris cluster = ConnectionDetailsUris.of(new ConnectionDetailsUris.Details(null, null, null, null,
                List.of(new ConnectionDetailsUris.Node("n1", 7000), new ConnectionDetailsUris.Node("::1", 7001)),
                false, ConnectionDetailsUris.Ssl.NONE, null));
        assertEquals(List.of("redis://n1:7000", "redis://[::1]:7001"), cluster.uris());
        assertTrue(cluster.cluster());
    }

    @Test
    void sslAsBootsLettuceConfigurationReadsIt() {
        assertEquals(new ConnectionDetailsUris.Ssl(false, null), ConnectionDetailsUris.Ssl.of(false, null, null, () -> false));
        assertEquals(new ConnectionDetailsUris.Ssl(true, null), ConnectionDetailsUris.Ssl.of(true, null, null, () -> true),
                "ssl.enabled without a bundle name: the details carry the system default, which the JVM's trust is");
        assertEquals(new ConnectionDetailsUris.Ssl(true, null),
                ConnectionDetailsUris.Ssl.of(false, null, "rediss://h:6380", () -> false), "a rediss:// URL");
        assertEquals(new ConnectionDetailsUris.Ssl(false, null), ConnectionDetailsUris.Ssl.of(false, "tls", null, () -> false),
                "a bundle name with ssl.enabled=false: no SSL, as Boot's factory");
        assertEquals("spring.data.redis.ssl.bundle", ConnectionDetailsUris.Ssl.of(true, "tls", null, () -> true).unsupportedBundle());
        assertTrue(ConnectionDetailsUris.Ssl.of(false, null, null, () -> true).unsupportedBundle().contains("service connection"));
    }

    @Test
    void whatTheUrisCannotCarryIsRefusedByName() {
        IllegalStateException masterReplica = assertThrows(IllegalStateException.class, () -> ConnectionDetailsUris.of(
                new ConnectionDetailsUris.Details(null, null, null, null, null, true, ConnectionDetailsUris.Ssl.NONE, null)));
        assertTrue(masterReplica.getMessage().contains("masterreplica"), masterReplica.getMessage());
        IllegalStateException bundle = assertThrows(IllegalStateException.class, () -> ConnectionDetailsUris.of(
                new ConnectionDetailsUris.Details(null, null, new ConnectionDetailsUris.Standalone("h", 1, 0), null, null,
                        false, ConnectionDetailsUris.Ssl.of(true, "tls", null, () -> true), null)));
        assertTrue(bundle.getMessage().contains("spring.data.redis.ssl.bundle"), bundle.getMessage());
        IllegalStateException sentinelPassword = assertThrows(IllegalStateException.class, () -> ConnectionDetailsUris.of(
                new ConnectionDetailsUris.Details(null, null, null, new ConnectionDetailsUris.Sentinel(
                        List.of(new ConnectionDetailsUris.Node("h", 1)), "m", 0, "pw"), null, false,
                        ConnectionDetailsUris.Ssl.NONE, null)));
        assertTrue(sentinelPassword.getMessage().contains("spring.data.redis.sentinel.password"),
                sentinelPassword.getMessage());
        IllegalStateException colon = assertThrows(IllegalStateException.class,
                () -> ConnectionDetailsUris.of(standalone("h", 1, 0, "a:b", "pw", false, null)));
        assertTrue(colon.getMessage().contains("username"), colon.getMessage());
        IllegalStateException nothing = assertThrows(IllegalStateException.class, () -> ConnectionDetailsUris.of(
                new ConnectionDetailsUris.Details(null, null, null, null, null, false, ConnectionDetailsUris.Ssl.NONE, null)));
        assertTrue(nothing.getMessage().contains("no standalone server"), nothing.getMessage());
    }
}
