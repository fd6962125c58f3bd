package dev.baton.interop;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.testkit.RedisClusterGroup;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton and Redisson 4.7 on a 3-master Redis Cluster with default settings on both sides: on
 * Redis 7+ both use sharded pub/sub, so each client's releases wake the other's waiters.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedissonClusterInteropTest {
    private RedisClusterGroup cluster;
    private RedissonClient redisson;
    private Baton baton;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeAll
    void start() {
        cluster = RedisClusterGroup.start(3, 0);
        RedisServer node = cluster.nodes().get(0);
        System.out.println("[cluster-interop] " + node.binary().product() + " " + node.binary().version() + ": "
                + (node.binary().majorVersion() >= 7 ? "Baton and Redisson meet on sharded pub/sub"
                : "no sharded pub/sub before Redis 7; both clients use classic pub/sub, the sharded path is NOT tested in this lane"));
        Config config = new Config();
        config.useClusterServers().addNodeAddress(cluster.uris().toArray(String[]::new));
        redisson = Redisson.create(config);
        baton = Baton.create(BatonOptions.builder().redisUris(cluster.uris()).cluster(true).build());
    }

    @AfterAll
    void stop() {
        threads.shutdownNow();
        baton.close();
        redisson.shutdown();
        cluster.close();
    }

    /** Names on every master. */
    private List<String> names() {
        List<String> names = new ArrayList<>();
        boolean[] seen = new boolean[3];
        for (int i = 0; names.size() < 3; i++) {
            String name = "mixed-" + i;
            int third = Math.min(2, io.lettuce.core.cluster.SlotHash.getSlot(name) * 3 / 16_384);
            if (!seen[third]) {
                seen[third] = true;
                names.add(name);
            }
        }
        return names;
    }

    @Test
    void eachClientsReleaseWakesTheOthersWaiterOnEveryMaster() throws Exception {
        for (String name : names()) {
            BatonLock ours = baton.lock(name);
            ours.lock(); // watchdog lease: 30 s, longer than the waits below
            assertFalse(threads.submit(() -> redisson.getLock(name).tryLock()).get());
            Future<Boolean> redissonWaiter = threads.submit(() -> {
                RLock r = redisson.getLock(name);
                boolean got = r.tryLock(15, 5, TimeUnit.SECONDS);
                if (got) {
                    r.unlock();
                }
                return got;
            });
            awaitShardSubscriber("redisson_lock__channel:{" + name + "}");
            assertTrue(InteropTest.wokenBy(redissonWaiter, () -> ours.unlock()), "a Baton release woke a Redisson waiter on " + name);

            RLock theirs = redisson.getLock(name);
            theirs.lock();
            Future<Boolean> batonWaiter = threads.submit(() -> {
                BatonLock b = baton.lock(name);
                boolean got = b.tryLock(15, TimeUnit.SECONDS);
                if (got) {
                    b.unlock();
                }
                return got;
            });
            awaitShardSubscriber("redisson_lock__channel:{" + name + "}");
            assertTrue(InteropTest.wokenBy(batonWaiter, () -> theirs.unlock()), "a Redisson release woke a Baton waiter on " + name);
        }
    }

    @Test
    void latchesAcrossClientsInTheCluster() throws Exception {
        for (String name : names()) {
            String latch = name + ":done";
            assertTrue(redisson.getCountDownLatch(latch).trySetCount(1));
            Future<Boolean> batonWaiter = threads.submit(() -> baton.countDownLatch(latch).await(15, TimeUnit.SECONDS));
            awaitShardSubscriber("redisson_countdownlatch__channel__{" + latch + "}");
            assertTrue(InteropTest.wokenBy(batonWaiter, () -> redisson.getCountDownLatch(latch).countDown()));
        }
    }

    /** Waits until some client subscribed to the channel (sharded on Redis 7+, classic before). */
    private void awaitShardSubscriber(String channel) throws InterruptedException {
        boolean sharded = cluster.nodes().get(0).binary().majorVersion() >= 7;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            long total = 0;
            for (RedisServer node : cluster.nodes()) {
                List<?> reply = (List<?>) node.command("PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB", channel);
                total += (Long) reply.get(1);
            }
            if (total > 0) {
                return;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("nobody subscribed to " + channel);
    }
}
