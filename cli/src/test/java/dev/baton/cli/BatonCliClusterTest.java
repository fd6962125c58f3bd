package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.lua.Layout;
import dev.baton.testkit.Await;
import dev.baton.testkit.RedisClusterGroup;
import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operator commands on a Redis Cluster: a node's URI is enough; keys are read where their slot
 * lives, SCAN walks every master, and waiting clients are counted where Baton subscribes (sharded
 * channels on the slot's master from Redis 7 on).
 */
class BatonCliClusterTest {
    private static RedisClusterGroup cluster;

    @BeforeAll
    static void start() {
        cluster = RedisClusterGroup.start(3, 0);
        int major = cluster.nodes().get(0).binary().majorVersion();
        System.out.println("[cli-cluster] Redis " + major + ": waiting clients counted with "
                + (major >= 7 ? "SHARDNUMSUB on the slot's master" : "NUMSUB summed over the nodes (no sharded pub/sub before 7)"));
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    private static CliRun run(String stdin, String... args) {
        return CliRun.of(stdin, args);
    }

    @Test
    void inspectListAndForceUnlockWorkOnACluster() throws Exception {
        String node = cluster.uris().get(0);
        // Names on every master, so SCAN must walk them all.
        Set<String> owners = new HashSet<>();
        List<String> names = new java.util.ArrayList<>();
        for (int i = 0; owners.size() < 3 && i < 1_000; i++) {
            String name = "ops:" + i;
            if (owners.add(cluster.ownerOf(SlotHash.getSlot(name)).uri())) {
                names.add(name);
            }
        }
        assertEquals(3, names.size(), "a name on each master");
        ExecutorService threads = Executors.newCachedThreadPool();
        try (Baton holder = Baton.create(BatonOptions.builder().redisUris(cluster.uris()).cluster(true).build());
             Baton waiter = Baton.create(BatonOptions.builder().redisUris(cluster.uris()).cluster(true).build())) {
            for (String name : names) {
                holder.lock(name).lock();
            }
            String contended = names.get(2);
            BatonLock waiting = waiter.lock(contended);
            Future<Boolean> waited = threads.submit(() -> waiting.tryLock(30, TimeUnit.SECONDS));
            CliRun inspect = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            do {
                inspect = run("", "inspect", "--redis", node, contended, "--json");
            } while (!inspect.out().contains("\"waitingClients\":1") && System.nanoTime() < deadline);
            assertEquals(0, inspect.exit(), inspect.err());
            assertTrue(inspect.out().contains("\"kind\":\"lock\""), inspect.out());
            assertTrue(inspect.out().contains("\"waitingClients\":1"), "the waiter's subscription on "
                    + Layout.lockChannel(contended) + " is counted: " + inspect.out());

            CliRun list = run("", "list", "--redis", node, "ops:*");
            assertEquals(0, list.exit(), list.err());
            for (String name : names) {
                assertTrue(list.out().contains(name), "list finds " + name + " on its master: " + list.out());
            }

            CliRun forced = run("", "force-unlock", "--redis", node, contended, "--yes");
            assertEquals(0, forced.exit(), forced.out() + forced.err());
            assertTrue(waited.get(10, TimeUnit.SECONDS), "the waiter got the lock once it was force-unlocked");
            Await.until(Duration.ofSeconds(5), () -> "the waiter holds " + contended, waiting::isLocked);
            assertFalse(holder.lock(contended).isHeldByThread(Thread.currentThread().getId()));
        } finally {
            threads.shutdownNow();
        }
    }
}
