package dev.baton.testkit;

import org.junit.jupiter.api.Test;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The fixture itself: every topology starts, answers, and can be hurt the ways tests need. */
class FixtureTest {

    @Test
    void aServerCanBePausedResumedRestartedEmptyAndKilled() {
        try (RedisServer redis = RedisServer.start()) {
            assertNotEquals(6379, redis.port());
            assertEquals("OK", redis.command("SET", "k", "v"));
            redis.pause();
            try (RespClient client = new RespClient(redis.host(), redis.port(), 300)) {
                assertThrows(UncheckedIOException.class, () -> client.call("PING"));
            }
            redis.resume();
            assertEquals("v", redis.command("GET", "k"));
            int port = redis.port();
            redis.restart();
            assertEquals(port, redis.port());
            assertNull(redis.command("GET", "k"), "restarted empty");
            redis.kill();
            assertFalse(redis.isRunning());
        }
    }

    @Test
    void serversLeftByAJvmThatDiedWithoutItsHooksAreReaped() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("baton-redis-orphan-");
        Process orphan = new ProcessBuilder(RedisBinary.resolve().server().toString(), "--port", "0", "--save", "",
                "--dir", dir.toString()).redirectErrorStream(true).redirectOutput(dir.resolve("out.txt").toFile()).start();
        Process deadJvm = new ProcessBuilder("true").start();
        deadJvm.waitFor();
        java.nio.file.Files.writeString(dir.resolve("jvm.pid"), Long.toString(deadJvm.pid()));
        java.nio.file.Files.writeString(dir.resolve("redis.pid"), Long.toString(orphan.pid()));
        try {
            ProcessRegistry.reapOrphans();
            assertTrue(orphan.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "the orphaned redis-server was killed");
            assertFalse(java.nio.file.Files.exists(dir), "its directory was removed");
        } finally {
            orphan.destroyForcibly();
        }
    }

    @Test
    void theEmbeddedBinaryRuns() {
        RedisBinary embedded = RedisBinary.embedded();
        assertTrue(embedded.version().startsWith("6.2"), embedded.version());
        assertTrue(embedded.source().contains("embedded-redis"));
    }

    @Test
    void independentMasters() {
        try (RedisMasters masters = RedisMasters.start(3)) {
            Set<Integer> ports = new HashSet<>();
            for (RedisServer server : masters.servers()) {
                ports.add(server.port());
                assertEquals("PONG", server.command("PING"));
            }
            assertEquals(3, ports.size());
        }
    }

    @Test
    void sentinelsFailOverWhenTheMasterDies() {
        try (RedisSentinelGroup group = RedisSentinelGroup.start(1, 3)) {
            assertEquals(group.master().port(), group.currentMaster().port());
            assertTrue(group.sentinelUri().startsWith("redis-sentinel://127.0.0.1:"));
            group.master().kill();
            group.awaitFailover(Duration.ofSeconds(45));
            assertEquals(group.replicas().get(0).port(), group.currentMaster().port());
        }
    }

    @Test
    void aThreeMasterClusterRoutesKeysToTheirSlotOwner() {
        try (RedisClusterGroup cluster = RedisClusterGroup.start(3, 0)) {
            assertEquals(3, cluster.masters().size());
            int accepted = 0;
            for (RedisServer node : cluster.nodes()) {
                try {
                    node.command("SET", "{orders}", "x");
                    accepted++;
                } catch (RedisErrorReply e) {
                    assertTrue(e.getMessage().startsWith("MOVED"), e.getMessage());
                }
            }
            assertEquals(1, accepted, "exactly the slot owner accepts the write");
        }
    }

    @Test
    void theProxyForwardsCutsAndLosesAReplyAfterTheCommandRan() {
        try (RedisServer redis = RedisServer.start(); TcpProxy proxy = TcpProxy.start(redis.host(), redis.port())) {
            try (RespClient client = new RespClient("127.0.0.1", proxy.port())) {
                assertEquals("PONG", client.call("PING"));
                proxy.cutAll();
                assertThrows(UncheckedIOException.class, () -> client.call("PING"));
            }
            try (RespClient client = new RespClient("127.0.0.1", proxy.port())) {
                proxy.dropNextReplyAndCut();
                assertThrows(UncheckedIOException.class, () -> client.call("INCR", "counter"));
            }
            assertEquals("1", redis.command("GET", "counter"), "the command ran although its reply was lost");
            try (RespClient client = new RespClient("127.0.0.1", proxy.port(), 300)) {
                proxy.setBlackhole(true);
                assertThrows(UncheckedIOException.class, () -> client.call("PING"));
            }
            proxy.setBlackhole(false);
            try (RespClient client = new RespClient("127.0.0.1", proxy.port())) {
                assertEquals(List.of("PONG").get(0), client.call("PING"));
            }
        }
    }
}
