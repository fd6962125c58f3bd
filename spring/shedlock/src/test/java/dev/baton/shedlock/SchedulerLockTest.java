package dev.baton.shedlock;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.testkit.Await;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ShedLock's own {@code @SchedulerLock} on {@link BatonLockProvider}: two Spring application
 * contexts (two nodes) on one Redis run the same every-second job; each second's run happens once.
 */
@ExtendWith(RedisExtension.class)
class SchedulerLockTest {
    static final String RUNS = "test:runs";
    static RedisServer redis;

    SchedulerLockTest(RedisServer redis) {
        SchedulerLockTest.redis = redis;
    }

    // snippet shedlock-provider begins
    @Configuration
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "10m")
    static class SchedulingConfiguration {
        @Bean
        LockProvider lockProvider(Baton baton) {
            return new BatonLockProvider(baton);
        }
    }
    // snippet shedlock-provider ends

    /** One node: the scheduling configuration the page shows, a client and the job. */
    @Configuration
    @Import(SchedulingConfiguration.class)
    static class Node {
        @Bean(destroyMethod = "close")
        Baton baton() {
            return Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        }

        @Bean
        Job job() {
            return new Job();
        }
    }

    static class Job {
        @Scheduled(cron = "* * * * * *")
        @SchedulerLock(name = "every-second", lockAtLeastFor = "900ms")
        public void run() {
            // The second this run belongs to: both nodes fire for the same one. lockAtLeastFor
            // keeps the lock for 900 ms of it, so a node whose run fires late (a loaded machine)
            // still finds it taken, and the next second's runs find it free.
            long slot = System.currentTimeMillis() / 1000;
            redis.command("HINCRBY", RUNS, Long.toString(slot), "1");
        }
    }

    @Test
    void twoNodesRunTheJobOncePerSlot() {
        redis.command("FLUSHALL");
        try (AnnotationConfigApplicationContext one = new AnnotationConfigApplicationContext(Node.class);
             AnnotationConfigApplicationContext two = new AnnotationConfigApplicationContext(Node.class)) {
            assertTrue(one.isActive() && two.isActive(), "two nodes");
            Await.until(Duration.ofSeconds(15), () -> "five slots run",
                    () -> (Long) redis.command("HLEN", RUNS) >= 5);
        }
        Map<String, Long> runs = runs();
        assertTrue(runs.size() >= 5, "slots: " + runs);
        runs.forEach((slot, count) -> assertEquals(1L, count, "runs in second " + slot + ": " + runs));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Long> runs() {
        java.util.List<Object> flat = (java.util.List<Object>) redis.command("HGETALL", RUNS);
        Map<String, Long> runs = new java.util.TreeMap<>();
        for (int i = 0; i < flat.size(); i += 2) {
            runs.put(String.valueOf(flat.get(i)), Long.parseLong(String.valueOf(flat.get(i + 1))));
        }
        return runs;
    }
}
