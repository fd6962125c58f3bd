package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.spring.data.connection.RedissonConnectionFactory;
import org.redisson.spring.starter.RedissonAutoConfigurationV4;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The migration guide's first step: Redisson's real starter (4.7) and Baton's in one application.
 * Redisson's starter registers its own connection factory, so there is no Lettuce one to share:
 * Baton opens its own Lettuce client from the same {@code spring.data.redis.*} (host, port,
 * database, password, client name), and both clients exclude each other on one lock name. Before,
 * Baton's auto-configuration backed off silently and the application failed with "no bean of
 * type Baton".
 */
class RedissonStarterTest {

    private static ApplicationContextRunner twoStarters(RedisServer redis, String... properties) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(RedissonAutoConfigurationV4.class, DataRedisAutoConfiguration.class,
                        BatonAutoConfiguration.class, BatonHealthAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port())
                .withPropertyValues(properties);
    }

    @Test
    void besideRedissonsStarterBatonOpensItsOwnClientFromTheSameProperties() throws Exception {
        ExecutorService other = Executors.newSingleThreadExecutor();
        try (RedisServer redis = RedisServer.start()) {
            redis.command("CONFIG", "SET", "requirepass", "s3cr@t:pass/w%rd"); // after the fixture's start-up PING
            twoStarters(redis, "spring.data.redis.password=s3cr@t:pass/w%rd", "spring.data.redis.database=3",
                    "spring.data.redis.client-name=orders-service").run(context -> {
                assertNull(context.getStartupFailure(), () -> "starts: " + context.getStartupFailure());
                assertInstanceOf(RedissonConnectionFactory.class, context.getBean(RedisConnectionFactory.class),
                        "Redisson's starter serves Spring Data Redis");
                assertTrue(context.getBeansOfType(LettuceConnectionFactory.class).isEmpty(), "no Lettuce factory to share");
                RedissonClient redisson = context.getBean(RedissonClient.class);
                Baton baton = context.getBean(Baton.class);

                BatonLock ours = baton.lock("nightly-report");
                RLock theirs = redisson.getLock("nightly-report");
                assertTrue(ours.tryLock());
                assertFalse(other.submit(() -> theirs.tryLock()).get(10, TimeUnit.SECONDS), "Redisson sees Baton's hold");
                try (RespClient client = new RespClient(redis.host(), redis.port())) {
                    client.call("AUTH", "s3cr@t:pass/w%rd");
                    client.call("SELECT", "3");
                    assertEquals(1L, client.call("EXISTS", "nightly-report"), "in the configured database");
                    String clients = String.valueOf(client.call("CLIENT", "LIST"));
                    assertTrue(clients.lines().anyMatch(line -> line.contains(" name=orders-service ")),
                            "Baton's connections carry the client name: " + clients);
                }
                ours.unlock();
                assertTrue(other.submit(() -> {
                    boolean got = theirs.tryLock();
                    if (got) {
                        theirs.unlock();
                    }
                    return got;
                }).get(10, TimeUnit.SECONDS), "and Baton's release frees it for Redisson");
                assertEquals(Status.UP, context.getBean(BatonHealthIndicator.class).health().getStatus());
            });
        } finally {
            other.shutdownNow();
        }
    }

    @Test
    void theUrisCarryCredentialsDatabaseSentinelAndClusterNodes() {
        Stub standalone = Stub.standalone("10.0.0.5", 6380, 2, "app", "p:w@/%");
        assertEquals(List.of("rediss://app:p%3Aw%40%2F%25@10.0.0.5:6380/2?clientName=svc"),
                ConnectionDetailsUris.of(standalone, true, "svc").uris());
        assertEquals(List.of("redis://:secret@10.0.0.5:6380/2"),
                ConnectionDetailsUris.of(Stub.standalone("10.0.0.5", 6380, 2, null, "secret"), false, null).uris());
        ConnectionDetailsUris sentinel = ConnectionDetailsUris.of(Stub.sentinel("mymaster", 1), false, null);
        assertEquals(List.of("redis-sentinel://h1:26379,h2:26380/1#mymaster"), sentinel.uris());
        assertFalse(sentinel.cluster());
        ConnectionDetailsUris cluster = ConnectionDetailsUris.of(Stub.cluster(), false, null);
        assertEquals(List.of("redis://n1:7000", "redis://n2:7001"), cluster.uris());
        assertTrue(cluster.cluster());
        IllegalStateException masterReplica = assertThrows(IllegalStateException.class,
                () -> ConnectionDetailsUris.of(new Stub(null, null, null, null, null, true), false, null));
        assertTrue(masterReplica.getMessage().contains("masterreplica"), masterReplica.getMessage());
        IllegalStateException colon = assertThrows(IllegalStateException.class,
                () -> ConnectionDetailsUris.of(Stub.standalone("h", 1, 0, "a:b", "pw"), false, null));
        assertTrue(colon.getMessage().contains("username"), colon.getMessage());
    }

    /** Connection details as Spring Boot gives them, for the URI rules alone. */
    private record Stub(String user, String password, DataRedisConnectionDetails.Standalone standaloneNode,
                        DataRedisConnectionDetails.Sentinel sentinels, DataRedisConnectionDetails.Cluster clusterNodes,
                        boolean masterReplica) implements DataRedisConnectionDetails {
        static Stub standalone(String host, int port, int database, String user, String password) {
            return new Stub(user, password, DataRedisConnectionDetails.Standalone.of(host, port, database), null, null, false);
        }

        static Stub sentinel(String master, int database) {
            return new Stub(null, null, null, new DataRedisConnectionDetails.Sentinel() {
                @Override
                public int getDatabase() {
                    return database;
                }

                @Override
                public String getMaster() {
                    return master;
                }

                @Override
                public List<Node> getNodes() {
                    return List.of(new Node("h1", 26379), new Node("h2", 26380));
                }

                @Override
                public String getUsername() {
                    return null;
                }

                @Override
                public String getPassword() {
                    return null;
                }
            }, null, false);
        }

        static Stub cluster() {
            return new Stub(null, null, null, null, () -> List.of(new Node("n1", 7000), new Node("n2", 7001)), false);
        }

        @Override
        public String getUsername() {
            return user;
        }

        @Override
        public String getPassword() {
            return password;
        }

        @Override
        public Standalone getStandalone() {
            return standaloneNode;
        }

        @Override
        public Sentinel getSentinel() {
            return sentinels;
        }

        @Override
        public Cluster getCluster() {
            return clusterNodes;
        }

        @Override
        public MasterReplica getMasterReplica() {
            return masterReplica ? () -> List.of(new Node("m", 6379)) : null;
        }
    }
}
