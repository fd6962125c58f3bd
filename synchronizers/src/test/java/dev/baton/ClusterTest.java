package dev.baton;

import dev.baton.testkit.RedisClusterGroup;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Baton on a 3-master Redis Cluster started by the fixture. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterTest {
    /** Two names per master (slots 0-5460, 5461-10922, 10923-16383 as the fixture splits them). */
    private static final List<String> NAMES = namesOverAllMasters();

    private static List<String> namesOverAllMasters() {
        List<String> names = new ArrayList<>();
        int[] perThird = new int[3];
        for (int i = 0; names.size() < 6; i++) {
            String name = "job-" + i;
            int third = Math.min(2, io.lettuce.core.cluster.SlotHash.getSlot(name) * 3 / 16_384);
            if (perThird[third] < 2) {
                perThird[third]++;
                names.add(name);
            }
        }
        return List.copyOf(names);
    }

    private RedisClusterGroup cluster;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private Baton a;
    private Baton b;

    @BeforeAll
    void start() {
        cluster = RedisClusterGroup.start(3, 0);
        BatonOptions options = BatonOptions.builder().redisUris(cluster.uris()).cluster(true)
                .commandTimeout(Duration.ofSeconds(2)).build();
        a = clients.open(options);
        b = clients.open(options);
    }

    @AfterAll
    void stop() {
        threads.shutdownNow();
        clients.close();
        cluster.close();
    }

    @Test
    void namesSpreadOverEveryMasterAndEachSynchronizerWorksThere() throws Exception {
        Set<Integer> owners = new HashSet<>();
        for (String name : NAMES) {
            long slot = (Long) cluster.nodes().get(0).command("CLUSTER", "KEYSLOT", name);
            owners.add(ownerOf(slot));
            BatonLock lock = a.lock(name);
            lock.lock();
            assertFalse(threads.submit(() -> b.lock(name).tryLock()).get());
            Future<Boolean> waiter = threads.submit(() -> {
                BatonLock theirs = b.lock(name);
                boolean got = theirs.tryLock(15, TimeUnit.SECONDS);
                if (got) {
                    theirs.unlock();
                }
                return got;
            });
            awaitSubscribed("redisson_lock__channel:{" + name + "}");
            lock.unlock();
            assertTrue(waiter.get(12, TimeUnit.SECONDS), "woken across the cluster on " + name);

            BatonSemaphore semaphore = a.semaphore(name + ":permits");
            semaphore.trySetPermits(1);
            assertTrue(b.semaphore(name + ":permits").tryAcquire());
            assertFalse(a.semaphore(name + ":permits").tryAcquire());
            b.semaphore(name + ":permits").release();

            BatonCountDownLatch latch = a.countDownLatch(name + ":done");
            latch.trySetCount(1);
            Future<Boolean> awaiting = threads.submit(() -> b.countDownLatch(name + ":done").await(15, TimeUnit.SECONDS));
            awaitSubscribed("redisson_countdownlatch__channel__{" + name + ":done}");
            latch.countDown();
            assertTrue(awaiting.get(12, TimeUnit.SECONDS));
        }
        assertEquals(3, owners.size(), "the names cover all three masters");
    }

    @Test
    void noLostUpdateOnLocksSpreadOverTheCluster() throws Exception {
        AtomicInteger overlaps = new AtomicInteger();
        long[] counters = new long[3];
        AtomicInteger[] inside = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Baton client = t % 2 == 0 ? a : b;
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 150; i++) {
                    int k = i % 3;
                    BatonLock lock = client.lock(NAMES.get(2 * k) + ":rmw");
                    lock.lock();
                    try {
                        if (inside[k].incrementAndGet() > 1) {
                            overlaps.incrementAndGet();
                        }
                        long read = counters[k];
                        Thread.yield();
                        counters[k] = read + 1;
                        inside[k].decrementAndGet();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(3, TimeUnit.MINUTES);
        }
        assertEquals(0, overlaps.get());
        assertEquals(1_200L, counters[0] + counters[1] + counters[2]);
    }

    @Test
    void aMasterRestartedDuringTheRunLeavesNoHungCall() {
        assertTimeoutPreemptively(Duration.ofSeconds(90), () -> {
            RedisServer victim = cluster.masters().get(1);
            List<Future<Integer>> workers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                Baton client = t % 2 == 0 ? a : b;
                workers.add(threads.submit(() -> {
                    int done = 0;
                    for (int i = 0; i < 60; i++) {
                        BatonLock lock = client.lock(NAMES.get(i % NAMES.size()) + ":restart");
                        try {
                            if (lock.tryLock(2, 10, TimeUnit.SECONDS)) {
                                lock.unlock();
                                done++;
                            }
                        } catch (RedisUnavailableException | IllegalMonitorStateException e) {
                            // the restarted master's slots were unreachable, or its data (a lease) was lost
                        }
                    }
                    return done;
                }));
            }
            Thread.sleep(200);
            victim.restart();
            int total = 0;
            for (Future<Integer> w : workers) {
                total += w.get(80, TimeUnit.SECONDS);
            }
            assertTrue(total > 0, "work went on");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!((String) victim.command("CLUSTER", "INFO")).contains("cluster_state:ok") && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(b.lock(NAMES.get(2) + ":after-restart").tryLock(10, 10, TimeUnit.SECONDS), "the cluster serves again");
        });
    }

    /**
     * Sharded pub/sub on Redis 7+ (the channel's slot owner), classic before (any node): sum
     * every node's count of the kind in use.
     */
    private void awaitSubscribed(String channel) throws InterruptedException {
        String count = cluster.nodes().get(0).binary().majorVersion() >= 7 ? "SHARDNUMSUB" : "NUMSUB";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            long total = 0;
            for (RedisServer node : cluster.nodes()) {
                total += (Long) ((List<?>) node.command("PUBSUB", count, channel)).get(1);
            }
            if (total > 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("nobody subscribed to " + channel);
            }
            Thread.sleep(5);
        }
    }

    private int ownerOf(long slot) {
        List<?> shards = (List<?>) cluster.nodes().get(0).command("CLUSTER", "SLOTS");
        for (Object shard : shards) {
            List<?> s = (List<?>) shard;
            if ((Long) s.get(0) <= slot && slot <= (Long) s.get(1)) {
                return ((Long) ((List<?>) s.get(2)).get(1)).intValue();
            }
        }
        throw new AssertionError("no owner for slot " + slot);
    }
}
