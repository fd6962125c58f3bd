package dev.baton;

import dev.baton.testkit.RedisMasters;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** RedLock over five independent masters started by the fixture. */
class RedLockTest {
    private RedisMasters masters;
    private final Clients clients = new Clients();
    private final List<Baton> nodes = new ArrayList<>();

    @BeforeEach
    void start() {
        masters = RedisMasters.start(5);
        for (RedisServer server : masters.servers()) {
            nodes.add(clients.open(BatonOptions.builder().redisUri(server.uri())
                    .commandTimeout(Duration.ofMillis(500)).build()));
        }
    }

    @AfterEach
    void stop() {
        clients.close();
        masters.close();
    }

    /**
     * Holders once a refused acquisition's give-backs have landed: they are sent before the call
     * returns and land within the clean-up bound (guarantees.md).
     */
    private long holdersAfterCleanUp(String name) {
        long until = System.nanoTime() + dev.baton.testkit.Bounds.CLEAN_UP.toNanos();
        long n = holders(name);
        while (n != 0 && System.nanoTime() < until) {
            Thread.onSpinWait();
            n = holders(name);
        }
        return n;
    }

    private long holders(String name) {
        long n = 0;
        for (RedisServer server : masters.servers()) {
            if (server.isRunning() && (Long) server.command("EXISTS", name) == 1L) {
                n++;
            }
        }
        return n;
    }

    @Test
    void aMajorityGrantsAndTheLockIsReleasedEverywhere() throws Exception {
        BatonRedLock lock = Baton.redLock("report", nodes);
        long started = System.nanoTime();
        assertTrue(lock.tryLock(1, 10, TimeUnit.SECONDS));
        long validity = lock.validityMillis();
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertEquals(5, holders("report"));
        // validity = lease - time spent acquiring - drift (1 % of the lease + 2 ms), fencing.md
        long mostValid = 10_000 - (10_000 / 100 + 2);
        assertTrue(validity <= mostValid && validity >= mostValid - elapsedMs - 1, "validity " + validity
                + " ms, " + elapsedMs + " ms after the acquisition began");
        lock.unlock();
        assertEquals(0, holders("report"));
        assertEquals(0, lock.validityMillis());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
    }

    @Test
    void keepsWorkingWithTwoMastersDownAndRefusesWithThree() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            masters.servers().get(0).kill();
            masters.servers().get(1).kill();
            BatonRedLock lock = Baton.redLock("quorum", nodes, Duration.ofMillis(200));
            assertTrue(lock.tryLock(2, 10, TimeUnit.SECONDS), "3 of 5 is a majority");
            assertEquals(3, holders("quorum"));
            lock.unlock();
            assertEquals(0, holders("quorum"));

            masters.servers().get(2).kill();
            assertFalse(lock.tryLock(1, 10, TimeUnit.SECONDS), "2 of 5 is not");
            assertEquals(0, holdersAfterCleanUp("quorum"), "a failed attempt keeps nothing");
        });
    }

    @Test
    void aGrantThatTookLongerThanTheLeaseIsAFailure() throws Exception {
        List<TcpProxy> proxies = new ArrayList<>();
        List<Baton> slow = new ArrayList<>();
        try {
            for (RedisServer server : masters.servers().subList(0, 3)) {
                TcpProxy proxy = TcpProxy.start(server.host(), server.port());
                proxies.add(proxy);
                slow.add(clients.open(BatonOptions.builder().redisUri(proxy.uri()).build()));
                proxy.setLatency(Duration.ofMillis(120)); // one round trip: at least 240 ms
            }
            BatonRedLock lock = Baton.redLock("too-slow", slow, Duration.ofSeconds(2));
            assertFalse(lock.tryLock(0, 100, TimeUnit.MILLISECONDS), "validity would be negative");
            assertEquals(0, lock.validityMillis());
        } finally {
            proxies.forEach(TcpProxy::close);
        }
    }

    /** A wait of zero or less is one round, as every other kind's: answered, never refused. */
    @Test
    void aWaitTimeOfZeroOrLessTriesOneRound() throws Exception {
        BatonRedLock lock = Baton.redLock("once", nodes);
        assertTrue(lock.tryLock(-1, 10, TimeUnit.SECONDS), "a free RedLock is taken in one round");
        assertEquals(5, holders("once"));
        java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            long started = System.nanoTime();
            assertFalse(other.submit(() -> lock.tryLock(-5, 10, TimeUnit.SECONDS)).get(10, TimeUnit.SECONDS),
                    "held by another owner: one round, refused");
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            // One round: at most the node timeout (200 ms by default) + the 300 ms margin.
            assertTrue(tookMs <= BatonRedLock.DEFAULT_NODE_TIMEOUT.toMillis() + 300, "one round took " + tookMs + " ms");
        } finally {
            other.shutdownNow();
        }
        lock.unlock();
        assertEquals(0, holders("once"));
    }

    @Test
    void badInputIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Baton.redLock("x", List.of()));
        assertThrows(IllegalArgumentException.class, () -> Baton.redLock("x", nodes, Duration.ZERO));
        BatonRedLock lock = Baton.redLock("x", nodes);
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(1, 0, TimeUnit.SECONDS));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> lock.tryLock(1, -1, TimeUnit.SECONDS))
                .getMessage().contains("no watchdog"));
    }
}
