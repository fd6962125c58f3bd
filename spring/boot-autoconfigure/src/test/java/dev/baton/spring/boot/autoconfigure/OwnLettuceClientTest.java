package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.ssl.DefaultSslBundleRegistry;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import java.lang.reflect.Proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An application whose Spring Data Redis is served by another connection factory (Jedis's,
 * Redisson's) has no Lettuce client to share: Baton opens its own from the same
 * {@code spring.data.redis.*}, on whichever Boot line runs (Boot 4's and Boot 3.5's connection
 * details are read by different configurations). Redisson's real starter beside Baton's is
 * {@link RedissonStarterTest}.
 */
class OwnLettuceClientTest {

    /** A connection factory that is not Lettuce's and that nothing here uses. */
    private static RedisConnectionFactory anotherFactory() {
        return (RedisConnectionFactory) Proxy.newProxyInstance(OwnLettuceClientTest.class.getClassLoader(),
                new Class<?>[] {RedisConnectionFactory.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "toString" -> "another connection factory";
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new UnsupportedOperationException(method.getName() + ": Baton must not use it");
                });
    }

    @Test
    void withAnotherConnectionFactoryBatonOpensItsOwnClientFromTheSameProperties() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            redis.command("CONFIG", "SET", "requirepass", "s3cr@t:pass/w%rd"); // after the fixture's start-up PING
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(BootLine.redisAutoConfiguration(), BatonAutoConfiguration.class,
                            BatonHealthAutoConfiguration.class))
                    .withBean(RedisConnectionFactory.class, OwnLettuceClientTest::anotherFactory)
                    .withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(),
                            "spring.data.redis.password=s3cr@t:pass/w%rd", "spring.data.redis.database=3",
                            "spring.data.redis.client-name=orders-service")
                    .run(context -> {
                        assertNull(context.getStartupFailure(), () -> "starts: " + context.getStartupFailure());
                        assertTrue(context.getBeansOfType(LettuceConnectionFactory.class).isEmpty(), "no Lettuce factory");
                        BatonLock lock = context.getBean(Baton.class).lock("nightly-report");
                        assertTrue(lock.tryLock());
                        assertHeldInDatabase3ByOrdersService(redis, "nightly-report");
                        lock.unlock();
                        assertEquals("UP", BootLine.health(context).status());
                    });
        }
    }

    /**
     * Checks, as the password {@code s3cr@t:pass/w%rd} allows, that {@code key} is in database 3
     * and that a connection named {@code orders-service} (Baton's) is open.
     */
    static void assertHeldInDatabase3ByOrdersService(RedisServer redis, String key) throws Exception {
        try (RespClient client = new RespClient(redis.host(), redis.port())) {
            client.call("AUTH", "s3cr@t:pass/w%rd");
            client.call("SELECT", "3");
            assertEquals(1L, client.call("EXISTS", key), "in the configured database");
            String clients = String.valueOf(client.call("CLIENT", "LIST"));
            assertTrue(clients.lines().anyMatch(line -> line.contains(" name=orders-service ")),
                    "Baton's connections carry the client name: " + clients);
        }
    }

    /**
     * TLS from the properties, as Boot's own Lettuce configuration reads them: with
     * {@code ssl.enabled} and no bundle name, or a {@code rediss://} URL, Baton's client speaks
     * TLS (to a plain Redis here, so its first use fails to connect rather than being refused or
     * connecting in plain text); a bundle name is refused by name.
     */
    @Test
    void tlsFromThePropertiesIsUsedAndABundleIsRefusedByName() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            ApplicationContextRunner runner = new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(BootLine.redisAutoConfiguration(), BatonAutoConfiguration.class))
                    .withBean(RedisConnectionFactory.class, OwnLettuceClientTest::anotherFactory)
                    .withPropertyValues("baton.command-timeout=1s");
            String hostPort = redis.host() + ":" + redis.port();
            for (String tls : new String[] {"spring.data.redis.ssl.enabled=true", "spring.data.redis.url=rediss://" + hostPort}) {
                runner.withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(), tls)
                        .run(context -> assertThrows(RedisUnavailableException.class,
                                () -> context.getBean(Baton.class).lock("k").tryLock(), tls + ": TLS to a plain server"));
            }
            runner.withBean(SslBundles.class, () -> new DefaultSslBundleRegistry("client", SslBundle.systemDefault()))
                    .withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(),
                    "spring.data.redis.ssl.enabled=true", "spring.data.redis.ssl.bundle=client").run(context -> {
                Exception refused = assertThrows(Exception.class, () -> context.getBean(Baton.class).lock("k").tryLock());
                Throwable cause = refused;
                while (!(cause instanceof IllegalStateException) && cause.getCause() != null) {
                    cause = cause.getCause();
                }
                assertInstanceOf(IllegalStateException.class, cause, String.valueOf(refused));
                assertTrue(cause.getMessage().contains("spring.data.redis.ssl.bundle"), cause.getMessage());
            });
        }
    }
}
