package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lost replies, injected for real: a TCP proxy between Baton and Redis lets a script reach
 * Redis and run, then drops its reply and cuts the connection. Lettuce reconnects and sends
 * the command again, so the script runs twice for one call. The hold counts in Redis must come
 * out as if it had run once, and no call may report a false error.
 */
@ExtendWith(RedisExtension.class)
class LostReplyTest {
    private final RedisServer redis;
    private TcpProxy proxy;
    private Baton baton;

    LostReplyTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        proxy = TcpProxy.start(redis.host(), redis.port());
        baton = Baton.create(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(Duration.ofSeconds(5)).build());
    }

    @AfterEach
    void close() {
        baton.close();
        proxy.close();
    }

    private String hold(BatonLock lock) {
        return (String) redis.command("HGET", lock.getName(), baton.clientId() + ":" + Thread.currentThread().getId());
    }

    @Test
    void aResentAcquireAddsNoPhantomHold() {
        BatonLock lock = baton.lock("acquire-twice");
        lock.lock();
        proxy.dropNextReplyAndCut();
        lock.lock(); // runs twice in Redis: 1 -> 2, then the copy finds 2 and leaves it
        assertEquals("2", hold(lock));
        lock.unlock();
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "acquire-twice"));
    }

    @Test
    void aResentFirstAcquireHoldsOnce() {
        BatonLock lock = baton.lock("first-twice");
        proxy.dropNextReplyAndCut();
        lock.lock();
        assertEquals("1", hold(lock));
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "first-twice"));
    }

    @Test
    void aResentReentrantReleaseTakesOneHoldNotTwo() {
        BatonLock lock = baton.lock("release-twice");
        lock.lock();
        lock.lock();
        proxy.dropNextReplyAndCut();
        lock.unlock(); // runs twice: 2 -> 1, then the copy finds 1 and leaves it
        assertEquals("1", hold(lock));
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    @Test
    void aResentFinalReleaseReportsNoFalseIllegalMonitorState() {
        BatonLock lock = baton.lock("final-twice");
        lock.lock();
        proxy.dropNextReplyAndCut();
        lock.unlock(); // the copy finds nothing held: that is our own first copy's work
        assertNull(hold(lock));
        assertFalse(lock.isLocked());
        assertTrue(proxy.connectionsAccepted() > 2, "the proxy really cut the connection");
    }
}
