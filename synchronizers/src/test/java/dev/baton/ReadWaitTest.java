package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The read side's waits, as "every lock kind" in guarantees.md promises them (LockContractTest
 * cannot run the read lock: readers share): a reader waiting for another client's writer is woken
 * within 1 s of the write release, and a timed-out, interrupted or cancelled read wait leaves no
 * hold and no subscription (its clean-up within 300 ms).
 */
class ReadWaitTest extends TwoClientsTest {
    ReadWaitTest(RedisServer redis) {
        super(redis);
    }

    private static String channel(String name) {
        return dev.baton.lua.Layout.rwlockChannel(name);
    }

    private void writerHolds(String name) {
        b.readWriteLock(name).writeLock().lock();
    }

    /** Whether client {@code a} holds a read hold of {@code name} for any owner (its field in the lock hash). */
    private boolean aReads(String name) {
        Object fields = redis.command("HKEYS", name);
        return String.valueOf(fields).contains(a.clientId());
    }

    @Test
    void aReaderIsWokenWithinASecondOfTheWriteRelease() throws Exception {
        BatonLock writer = b.readWriteLock("r-wake").writeLock();
        writer.lock();
        Future<Long> reader = threads.submit(() -> {
            BatonLock read = a.readWriteLock("r-wake").readLock();
            assertTrue(read.tryLock(15, TimeUnit.SECONDS));
            long at = System.nanoTime();
            read.unlock();
            return at;
        });
        redis.awaitSubscribers(channel("r-wake"), 1);
        long released = System.nanoTime();
        writer.unlock();
        long wokenAfter = reader.get(15, TimeUnit.SECONDS) - released;
        assertTrue(wokenAfter <= Bounds.within(Bounds.WAKE).toNanos(), "woken " + wokenAfter / 1_000_000 + " ms after the release");
    }

    @Test
    void aTimedOutReadWaitLeavesNothing() throws Exception {
        writerHolds("r-timeout");
        Duration wait = Duration.ofMillis(400);
        long started = System.nanoTime();
        assertFalse(threads.submit(() -> a.readWriteLock("r-timeout").readLock().tryLock(wait.toMillis(), TimeUnit.MILLISECONDS))
                .get(10, TimeUnit.SECONDS));
        long took = System.nanoTime() - started;
        assertTrue(took >= wait.toNanos() && took <= Bounds.within(wait).toNanos(), "false at its wait time: " + took / 1_000_000 + " ms");
        redis.awaitSubscribers(channel("r-timeout"), 0, Bounds.CLEAN_UP);
        assertFalse(aReads("r-timeout"));
    }

    @Test
    void anInterruptedReadWaitLeavesNothing() throws Exception {
        writerHolds("r-interrupt");
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                a.readWriteLock("r-interrupt").readLock().lockInterruptibly();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        redis.awaitSubscribers(channel("r-interrupt"), 1);
        waiter.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        redis.awaitSubscribers(channel("r-interrupt"), 0, Bounds.CLEAN_UP);
        assertFalse(aReads("r-interrupt"));
    }

    @Test
    void aCancelledReadWaitLeavesNothing() throws Exception {
        writerHolds("r-cancel");
        CompletableFuture<Void> wait = a.readWriteLock("r-cancel").readLock().lockAsync(Baton.newOwnerId()).toCompletableFuture();
        redis.awaitSubscribers(channel("r-cancel"), 1);
        wait.cancel(true);
        redis.awaitSubscribers(channel("r-cancel"), 0, Bounds.CLEAN_UP);
        assertFalse(aReads("r-cancel"));
        assertEquals(1L, redis.command("EXISTS", "r-cancel"), "the writer still holds");
    }
}
