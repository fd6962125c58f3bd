package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Fencing tokens: rising per grant across clients, equal on re-entry, rising across restarts. */
class FencedLockTest {
    private RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void start() {
        redis = RedisServer.start();
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        clients.close();
        redis.close();
    }

    @Test
    void tokensStrictlyRiseAcrossHoldersOfTwoClients() throws Exception {
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> workers = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
            BatonFencedLock lock = clients.open(redis).fencedLock("ledger");
            for (int t = 0; t < 2; t++) {
                workers.add(threads.submit(() -> {
                    for (int i = 0; i < 250; i++) {
                        long token = lock.lockAndGetToken();
                        try {
                            tokens.add(token); // in grant order: we hold the lock while adding
                        } finally {
                            lock.unlock();
                        }
                    }
                    return null;
                }));
            }
        }
        for (Future<?> w : workers) {
            w.get(2, TimeUnit.MINUTES);
        }
        assertEquals(1_000, tokens.size());
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "token " + i + " did not rise: " + tokens.subList(i - 1, i + 1));
        }
    }

    @Test
    void reentryKeepsTheTokenAndANewGrantRaisesIt() throws Exception {
        BatonFencedLock lock = clients.open(redis).fencedLock("reentry");
        long first = lock.lockAndGetToken();
        assertEquals(first, lock.lockAndGetToken(), "re-entry keeps the token");
        assertEquals(first, lock.getToken());
        lock.unlock();
        assertEquals(first, lock.getToken(), "still held once");
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::getToken);
        OptionalLong next = lock.tryLockAndGetToken(1, 30, TimeUnit.SECONDS);
        assertTrue(next.isPresent() && next.getAsLong() > first);
        assertFalse(threads.submit(() -> lock.tryLockAndGetToken()).get().isPresent(), "held by another thread");
        lock.unlock();
    }

    @Test
    void tokensKeepRisingAfterRedisRestartsEmpty() {
        BatonFencedLock lock = clients.open(redis).fencedLock("restart");
        long before = lock.lockAndGetToken();
        lock.unlock();
        redis.restart();
        assertEquals(0L, redis.command("EXISTS", "redisson_lock_token:{restart}"), "the counter is gone");
        long after = lock.lockAndGetToken();
        assertTrue(after > before, before + " then " + after);
        lock.unlock();
    }

    /**
     * A failover to a replica that lacks the last writes can bring back an owner's released hold
     * with the counter as it stood then. The owner's next acquisition finds its own hold there,
     * as a copy of an acquisition whose reply was lost would: it still gets a token above every
     * token issued, the one another client got on the old master included (found by the
     * simulation's lagging failovers, fenced seed 249: the old token was handed out again).
     */
    @Test
    void aHoldBroughtBackByAFailoverIsGrantedWithATokenAboveEveryOther() {
        BatonFencedLock a = clients.open(redis).fencedLock("failover");
        long first = a.lockAndGetToken();
        // What the replica has from here on: a's hold and the counter at a's token.
        List<?> replicaHold = (List<?>) redis.command("HGETALL", "failover");
        Object replicaCounter = redis.command("GET", "redisson_lock_token:{failover}");
        a.unlock();
        BatonFencedLock b = clients.open(redis).fencedLock("failover");
        long second = b.lockAndGetToken();
        assertTrue(second > first, first + " then " + second);
        // The master dies before its replica has the last writes; the replica is promoted.
        redis.command("DEL", "failover");
        redis.command("HSET", "failover", (String) replicaHold.get(0), (String) replicaHold.get(1));
        redis.command("PEXPIRE", "failover", "30000");
        redis.command("SET", "redisson_lock_token:{failover}", (String) replicaCounter);

        long third = a.lockAndGetToken();
        assertTrue(third > second, "a's grant after the failover got token " + third + ", not above " + second
                + " granted before it (a's own earlier token was " + first + ")");
        assertEquals(Long.toString(third), redis.command("GET", "redisson_lock_token:{failover}"), "the counter is the token issued");
        assertThrows(LeaseLostException.class, b::unlock, "b's hold went with the old master");
        a.unlock();
        assertEquals(0L, redis.command("EXISTS", "failover"));
    }

    @Test
    void aProtectedResourceRejectsAStaleToken() throws Exception {
        // The example of docs/fencing.md: the store remembers the highest token it has seen.
        FencedStore store = new FencedStore();
        BatonFencedLock mine = clients.open(redis).fencedLock("invoice-42");
        long myToken = mine.lockAndGetToken(200, TimeUnit.MILLISECONDS);
        // ... we stall past our lease; another process takes the lock and writes ...
        BatonFencedLock theirs = clients.open(redis).fencedLock("invoice-42");
        long theirToken = threads.submit(() -> theirs.tryLockAndGetToken(5, 30, TimeUnit.SECONDS).getAsLong()).get();
        assertTrue(store.write(theirToken, "paid"));
        // ... we wake up and try to write with our stale token: refused.
        assertFalse(store.write(myToken, "cancelled"));
        assertEquals("paid", store.value);
        assertThrows(LeaseLostException.class, mine::unlock);
    }

    /** A resource that accepts a write only with a token at least as high as any it has seen. */
    static final class FencedStore {
        private long highest = Long.MIN_VALUE;
        String value;

        synchronized boolean write(long token, String newValue) {
            if (token < highest) {
                return false;
            }
            highest = token;
            value = newValue;
            return true;
        }
    }
}
