package dev.baton.internal;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.lua.Script;
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
 *
 * <p>Every script is loaded before each test, so the dropped reply is the script's own (not a
 * NOSCRIPT that would make the client send EVAL instead), and each test checks that Redis ran
 * the script twice: the re-sent copy really reached the script.
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
        for (Script script : Script.values()) {
            redis.command("SCRIPT", "LOAD", script.text());
        }
        proxy = TcpProxy.start(redis.host(), redis.port());
        baton = Baton.create(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(Duration.ofSeconds(5)).build());
    }

    @AfterEach
    void close() {
        baton.close();
        proxy.close();
    }

    /** Drops the reply of the next command and counts how often Redis runs EVALSHA meanwhile. */
    private void dropNextReply() {
        redis.command("CONFIG", "RESETSTAT");
        proxy.dropNextReplyAndCut();
    }

    private void assertRanTwice() {
        assertEquals(2L, redis.calls("evalsha"), "the script ran, its reply was lost, and the copy ran again");
        assertEquals(0L, redis.calls("eval"), "no NOSCRIPT detour");
    }

    private String hold(BatonLock lock) {
        return (String) redis.command("HGET", lock.getName(), baton.clientId() + ":" + Thread.currentThread().getId());
    }

    @Test
    void aResentAcquireAddsNoPhantomHold() {
        BatonLock lock = baton.lock("acquire-twice");
        lock.lock();
        dropNextReply();
        lock.lock(); // runs twice in Redis: 1 -> 2, then the copy finds 2 and leaves it
        assertRanTwice();
        assertEquals("2", hold(lock));
        lock.unlock();
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "acquire-twice"));
    }

    @Test
    void aResentFirstAcquireHoldsOnce() {
        BatonLock lock = baton.lock("first-twice");
        dropNextReply();
        lock.lock();
        assertRanTwice();
        assertEquals("1", hold(lock));
        lock.unlock();
        assertEquals(0L, redis.command("EXISTS", "first-twice"));
    }

    @Test
    void aResentReentrantReleaseTakesOneHoldNotTwo() {
        BatonLock lock = baton.lock("release-twice");
        lock.lock();
        lock.lock();
        dropNextReply();
        lock.unlock(); // runs twice: 2 -> 1, then the copy finds 1 and leaves it
        assertRanTwice();
        assertEquals("1", hold(lock));
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    @Test
    void aResentFinalReleaseReportsNoFalseIllegalMonitorState() {
        BatonLock lock = baton.lock("final-twice");
        lock.lock();
        dropNextReply();
        lock.unlock(); // returns normally: the copy finds nothing held, which is our own first copy's work
        assertRanTwice();
        assertNull(hold(lock));
        assertFalse(lock.isLocked());
        assertTrue(proxy.connectionsAccepted() > 2, "the proxy really cut the connection");
    }

    @Test
    void aResentSemaphoreAcquireOrReleaseCountsOnce() throws Exception {
        baton.semaphore("permits-twice").trySetPermits(3);
        dropNextReply();
        assertTrue(baton.semaphore("permits-twice").tryAcquire(2));
        assertRanTwice();
        assertEquals("1", redis.command("GET", "permits-twice"), "two permits taken, not four");
        dropNextReply();
        baton.semaphore("permits-twice").release(2);
        assertRanTwice();
        assertEquals("3", redis.command("GET", "permits-twice"), "two permits back, not four");
    }

    @Test
    void aResentCountDownCountsOnce() {
        baton.countDownLatch("count-twice").trySetCount(3);
        dropNextReply();
        baton.countDownLatch("count-twice").countDown();
        assertRanTwice();
        assertEquals("2", redis.command("GET", "count-twice"), "counted once");
    }

    @Test
    void aResentExpirableAcquireTakesOnePermit() throws Exception {
        baton.permitExpirableSemaphore("once").trySetPermits(3);
        dropNextReply();
        String id = baton.permitExpirableSemaphore("once").acquire(30, java.util.concurrent.TimeUnit.SECONDS);
        assertRanTwice();
        assertEquals("2", redis.command("GET", "once"), "one permit, not two");
        assertEquals(1L, redis.command("ZCARD", "{once}:timeout"));
        baton.permitExpirableSemaphore("once").release(id);
        assertEquals("3", redis.command("GET", "once"));
    }
}
