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
