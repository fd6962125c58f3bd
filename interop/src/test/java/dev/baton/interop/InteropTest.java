package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** One Baton client and one real Redisson 4.7 client on the same fresh Redis, per test. */
@ExtendWith(RedisExtension.class)
abstract class InteropTest {
    protected final RedisServer redis;
    protected final ExecutorService threads = Executors.newCachedThreadPool();
    protected RedissonClient redisson;
    protected Baton baton;

    InteropTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void openBoth() {
        redis.command("FLUSHALL");
        Config config = new Config();
        config.useSingleServer().setAddress(redis.uri());
        redisson = Redisson.create(config);
        baton = Baton.create(BatonOptions.create(redis.uri()));
    }

    @AfterEach
    void closeBoth() {
        threads.shutdownNow();
        baton.close();
        redisson.shutdown();
    }
}
