package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisErrorReply;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A server that is a replica now (what a connection meets during a failover until Sentinel's
 * reconfiguration moves it) refuses every script's first write with READONLY. Redis 6.2 sends
 * that wrapped in the script error ("ERR Error running script ... -READONLY ..."), 7.0 and Valkey
 * as a READONLY reply of its own; either way nothing ran, and Baton must send it again within the
 * command timeout and report {@link RedisUnavailableException}, never a {@link BatonException}
 * after a millisecond. Tested on what the lane's real server sends, not on a written message.
 */
class ReadOnlyReplicaTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(1);

    @Test
    void writesOnAReplicaAreRetriedAndReportedAsRedisUnavailableWithinTheirBound() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            int absent;
            try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                absent = s.getLocalPort(); // free, then closed: nobody is the master
            }
            try (Baton baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).commandTimeout(TIMEOUT).build())) {
                baton.lock("warm-up").tryLock(); // the client is open and the scripts are loaded
                baton.lock("warm-up").unlock();
                redis.command("REPLICAOF", "127.0.0.1", Integer.toString(absent));
                RedisErrorReply sent = assertThrows(RedisErrorReply.class,
                        () -> redis.command("EVAL", "return redis.call('set', KEYS[1], '1')", "1", "probe"));
                System.out.println("[read-only replica] " + redis.binary().version() + " sends: " + sent.getMessage());
                assertTrue(sent.getMessage().contains("READONLY"), sent.getMessage());

                BatonLock lock = baton.lock("replica-lock");
                Bounds.assertThrowsWithin(RedisUnavailableException.class, Bounds.failure(TIMEOUT), lock::lock, "lock()");
                Bounds.assertThrowsWithin(RedisUnavailableException.class, Bounds.failure(TIMEOUT), lock::tryLock, "tryLock()");
                Bounds.assertThrowsWithin(RedisUnavailableException.class, Bounds.failure(TIMEOUT, Duration.ofSeconds(1)),
                        () -> lock.tryLock(1, TimeUnit.SECONDS), "tryLock(1 s)");
                long started = System.nanoTime();
                RedisUnavailableException e = assertThrows(RedisUnavailableException.class,
                        () -> baton.semaphore("replica-sem").trySetPermits(2));
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                assertTrue(tookMs >= TIMEOUT.toMillis() / 2, "sent again within the command timeout, not failed at once: "
                        + tookMs + " ms, " + e.getMessage());
                assertTrue(e.getMessage().contains("READONLY"), e.getMessage());
            } finally {
                redis.command("REPLICAOF", "NO", "ONE");
            }
            List<?> role = (List<?>) redis.command("ROLE");
            assertTrue("master".equals(role.get(0)), "the server is a master again: " + role);
        }
    }
}
