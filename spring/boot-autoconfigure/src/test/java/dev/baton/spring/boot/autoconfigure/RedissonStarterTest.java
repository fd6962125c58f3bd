package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.spring.data.connection.RedissonConnectionFactory;
import org.redisson.spring.starter.RedissonAutoConfigurationV4;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The migration guide's first step: Redisson's real starter (4.7) and Baton's in one application.
 * Redisson's starter registers its own connection factory, so there is no Lettuce one to share:
 * Baton opens its own Lettuce client from the same {@code spring.data.redis.*} (host, port,
 * database, password, client name), and both clients exclude each other on one lock name. Before,
 * Baton's auto-configuration backed off silently and the application failed with "no bean of
 * type Baton".
 *
 * <p>Boot 4 only: Redisson 4.7 needs Netty 4.2 and ships no Spring Data module for Boot 3.5. On
 * Boot 3.5 the same path (another connection factory, Baton's own client from the same properties)
 * is {@link OwnLettuceClientTest}'s.
 */
class RedissonStarterTest {

    private static ApplicationContextRunner twoStarters(RedisServer redis, String... properties) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(RedissonAutoConfigurationV4.class, BootLine.redisAutoConfiguration(),
                        BatonAutoConfiguration.class, BatonHealthAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port())
                .withPropertyValues(properties);
    }

    @Test
    void besideRedissonsStarterBatonOpensItsOwnClientFromTheSameProperties() throws Exception {
        BootLine.requireBoot4("Redisson 4.7's starter needs Netty 4.2 and has no Spring Data module for Boot 3.5");
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
                OwnLettuceClientTest.assertHeldInDatabase3ByOrdersService(redis, "nightly-report");
                ours.unlock();
                assertTrue(other.submit(() -> {
                    boolean got = theirs.tryLock();
                    if (got) {
                        theirs.unlock();
                    }
                    return got;
                }).get(10, TimeUnit.SECONDS), "and Baton's release frees it for Redisson");
                assertEquals("UP", BootLine.health(context).status());
            });
        } finally {
            other.shutdownNow();
        }
    }
}
