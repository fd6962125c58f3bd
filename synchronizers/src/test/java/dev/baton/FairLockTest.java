package dev.baton;

import dev.baton.lua.Script;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What only the fair lock promises: arrival order, direct hand-off, dead waiters skipped. */
class FairLockTest extends TwoClientsTest {
    private static final String QUEUE = "baton_fair_queue:{%s}";

    FairLockTest(RedisServer redis) {
        super(redis);
    }

    @Override
    BatonOptions options() {
        return BatonOptions.builder().redisUri(redis.uri()).fairLockWaiterTimeout(Duration.ofMillis(1_500)).build();
    }

    private long queued(String name) {
        return (Long) redis.command("ZCARD", String.format(QUEUE, name));
    }

    /**
     * A thread of client b that waits up to 20 s for the fair lock {@code name} (telling its
     * thread id first), then unlocks; true if it was granted and Redis agreed it held the lock.
     */
    private Future<Boolean> waitsThenHolds(String name, CompletableFuture<Long> thread) {
        return threads.submit(() -> {
            thread.complete(Thread.currentThread().getId());
            BatonLock lock = b.fairLock(name);
            boolean got = lock.tryLock(20, TimeUnit.SECONDS);
            boolean heldInRedis = lock.isHeldByCurrentThread();
            lock.unlock();
            return got && heldInRedis;
        });
    }

    private void awaitQueued(String name, long expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (queued(name) != expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(name + " has " + queued(name) + " queued, expected " + expected);
            }
            Thread.sleep(5);
        }
    }

    @Test
    void grantsFollowArrivalOrderAcrossClientsAndThreads() throws Exception {
        BatonLock holder = a.fairLock("fifo");
        holder.lock();
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            int id = i;
            Baton client = i % 2 == 0 ? a : b;
            waiters.add(threads.submit(() -> {
                BatonLock lock = client.fairLock("fifo");
                lock.lock();
                try {
                    order.add(id);
                } finally {
                    lock.unlock();
                }
                return null;
            }));
            awaitQueued("fifo", i + 1); // waiter i is in line before waiter i + 1 arrives
        }
        holder.unlock();
        for (Future<?> w : waiters) {
            w.get(20, TimeUnit.SECONDS);
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 5), order);
        assertEquals(List.of(), redis.command("KEYS", "*fifo*"), "no key left behind");
    }

    @Test
    void releaseHandsTheLockToTheHeadWaiterSoNewcomersCannotBarge() throws Exception {
        BatonLock holder = a.fairLock("handoff");
        holder.lock();
        CompletableFuture<Long> waiterThread = new CompletableFuture<>();
        CompletableFuture<Void> mayRelease = new CompletableFuture<>();
        Future<?> waiter = threads.submit(() -> {
            BatonLock lock = b.fairLock("handoff");
            waiterThread.complete(Thread.currentThread().getId());
            lock.lock();
            mayRelease.get(10, TimeUnit.SECONDS);
            lock.unlock();
            return null;
        });
        String waiterOwner = b.clientId() + ":" + waiterThread.get(5, TimeUnit.SECONDS);
        awaitQueued("handoff", 1);
        holder.unlock();
        // The release itself made the waiter the holder, before the waiter ran anything.
        assertEquals("1", redis.command("HGET", "handoff", waiterOwner));
        assertFalse(threads.submit(() -> a.fairLock("handoff").tryLock()).get(), "a newcomer cannot barge in");
        mayRelease.complete(null);
        waiter.get(10, TimeUnit.SECONDS);
        assertTrue(threads.submit(() -> a.fairLock("handoff").tryLock()).get());
    }

    @Test
    void aDeadWaiterIsSkippedAndTheQueueMovesOn() throws Exception {
        // The promise: the queue moves on within 4/3 of the waiter timeout after a hand-off to a
        // dead waiter (its claim timeout runs out, then the next waiter's check-in, every third
        // of the timeout, takes the lock).
        Duration waiterTimeout = Duration.ofMillis(1_500);
        BatonOptions options = BatonOptions.builder().redisUri(redis.uri()).fairLockWaiterTimeout(waiterTimeout).build();
        Baton releasing = clients.open(options);
        Baton waiting = clients.open(options);
        BatonLock holder = releasing.fairLock("dead");
        holder.lock();
        // A waiter whose process died right after queueing: it never checks in again.
        List<String> keys = List.of("dead", "baton_fair_queue:{dead}", "baton_fair_waiters:{dead}",
                "baton_fair_lock:{dead}", "baton_fair_ticket:{dead}");
        List<String> command = new ArrayList<>(List.of("EVAL", Script.FAIR_ACQUIRE.text(), "5"));
        command.addAll(keys);
        command.addAll(List.of("30000", "crashed-client:1", "0", Long.toString(waiterTimeout.toMillis()),
                Long.toString(waiterTimeout.toMillis()), "1", "publish"));
        redis.command(command.toArray(String[]::new));
        awaitQueued("dead", 1);
        Future<Long> live = threads.submit(() -> {
            BatonLock lock = waiting.fairLock("dead");
            assertTrue(lock.tryLock(20, TimeUnit.SECONDS), "the live waiter got the lock after the dead one was skipped");
            long got = System.nanoTime();
            lock.unlock();
            return got;
        });
        awaitQueued("dead", 2);
        holder.unlock(); // hands the lock to the dead waiter, which never claims it
        long handedOff = System.nanoTime();
        long movedOnAfter = live.get(25, TimeUnit.SECONDS) - handedOff;
        Duration promised = waiterTimeout.plus(waiterTimeout.dividedBy(3));
        assertTrue(movedOnAfter <= Bounds.within(promised).toNanos(), "the queue moved on after "
                + TimeUnit.NANOSECONDS.toMillis(movedOnAfter) + " ms, promised " + promised.toMillis() + " ms");
        assertEquals(0L, redis.command("HEXISTS", "dead", "crashed-client:1"));
    }

    @Test
    void timedOutAndInterruptedWaitersLeaveNoQueueEntry() throws Exception {
        a.fairLock("leaving").lock();
        assertFalse(threads.submit(() -> b.fairLock("leaving").tryLock(300, TimeUnit.MILLISECONDS)).get());
        // Leaving the queue is dispatched before the call returns: it lands within a round trip.
        Await.until(Bounds.CLEAN_UP, () -> "no queue entry left", () -> queued("leaving") == 0L
                && redis.command("EXISTS", "baton_fair_waiters:{leaving}").equals(0L));

        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                b.fairLock("leaving").lockInterruptibly();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        awaitQueued("leaving", 1);
        waiter.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        Await.until(Bounds.CLEAN_UP, () -> "no queue entry left", () -> queued("leaving") == 0L);
        assertEquals(0L, redis.command("EXISTS", "baton_fair_waiters:{leaving}"));
    }

    /**
     * Regression: a hand-off message that arrives late (its owner got the lock by its own script
     * call, released it and is waiting again) must not grant the lock locally. Found by the
     * contended fair-lock benchmark, which saw LeaseLostException on unlock.
     */
    @Test
    void aStaleHandOffMessageDoesNotGrantTheLock() throws Exception {
        BatonLock holder = a.fairLock("stale");
        holder.lock();
        CompletableFuture<Long> waiterThread = new CompletableFuture<>();
        Future<Boolean> waiter = waitsThenHolds("stale", waiterThread);
        String owner = b.clientId() + ":" + waiterThread.get(5, TimeUnit.SECONDS);
        awaitQueued("stale", 1);
        // Messages from earlier hand-offs to the same owner, with tickets it no longer waits with.
        redis.command("PUBLISH", "baton_fair_lock:{stale}", owner + "#999999");
        redis.command("PUBLISH", "baton_fair_lock:{stale}", owner);
        stillWaitsUntilReleased("stale", holder, waiter);
    }

    /** After messages that must not grant it: the waiter still waits, in line, until the holder releases; then it holds the lock. */
    private void stillWaitsUntilReleased(String name, BatonLock holder, Future<Boolean> waiter) throws Exception {
        Thread.sleep(200); // give a wrongly woken waiter time to (wrongly) proceed; nothing to signal here
        assertFalse(waiter.isDone(), "the waiter must still be waiting: the lock is held by another");
        assertTrue(holder.isHeldByCurrentThread(), "and the holder still holds it");
        assertEquals(1L, queued(name), "the waiter is in line (a woken one asked Redis and is in line again)");
        holder.unlock();
        assertTrue(waiter.get(20, TimeUnit.SECONDS), "then it gets the lock for real");
    }

    /**
     * A hand-off message, even one naming the waiter's current ticket, only wakes the waiter: it
     * holds the lock when Redis's reply to its next acquire says so. A message tells what was
     * true when it was published; the nemesis soak found two holders under connection faults
     * while a waiter took the message itself as its grant and the lock had meanwhile been passed
     * on. Here the message is published while another client still holds the lock.
     */
    @Test
    void aHandOffMessageIsNotAGrantUntilRedisSaysSo() throws Exception {
        BatonLock holder = a.fairLock("told");
        holder.lock();
        Future<Boolean> waiter = waitsThenHolds("told", new CompletableFuture<>());
        awaitQueued("told", 1);
        List<?> entry = (List<?>) redis.command("ZRANGE", String.format(QUEUE, "told"), "0", "0", "WITHSCORES");
        String ticket = new java.math.BigDecimal((String) entry.get(1)).toBigInteger().toString();
        redis.command("PUBLISH", "baton_fair_lock:{told}", entry.get(0) + "#" + ticket);
        stillWaitsUntilReleased("told", holder, waiter);
    }

    /**
     * An owner's acquisitions of one lock take turns: a second one (async, the same owner id)
     * waits for the first to end, and one whose wait ends first ends without asking Redis. Before,
     * its clean-up at the deadline (a leave, counted by owner) took the owner out of the queue the
     * first one was waiting in, and could pass on a hold the first one had just been granted.
     */
    @Test
    void anOwnersSecondAcquisitionWaitsItsTurnAndLeavesTheFirstOnesPlace() throws Exception {
        BatonLock holder = a.fairLock("turns");
        holder.lock();
        BatonLock lock = b.fairLock("turns");
        CompletableFuture<Boolean> first = lock.tryLockAsync(20, TimeUnit.SECONDS, 7).toCompletableFuture();
        awaitQueued("turns", 1);
        CompletableFuture<Boolean> other = lock.tryLockAsync(20, TimeUnit.SECONDS, 8).toCompletableFuture();
        awaitQueued("turns", 2);
        long started = System.nanoTime();
        assertFalse(lock.tryLockAsync(100, TimeUnit.MILLISECONDS, 7).toCompletableFuture().get(5, TimeUnit.SECONDS),
                "the second acquisition's wait ends while the first still waits");
        assertTrue(System.nanoTime() - started <= Bounds.within(Duration.ofMillis(100)).toNanos(), "within its wait");
        List<?> head = (List<?>) redis.command("ZRANGE", String.format(QUEUE, "turns"), "0", "0");
        assertEquals(b.clientId() + ":7", head.get(0), "owner 7 keeps its place at the head of the queue");
        holder.unlock();
        assertTrue(first.get(20, TimeUnit.SECONDS), "the first acquisition is granted, in its turn");
        assertFalse(other.isDone(), "owner 8 waits behind it");
        assertTrue(lock.tryLockAsync(0, TimeUnit.MILLISECONDS, 7).toCompletableFuture().get(5, TimeUnit.SECONDS),
                "an acquisition after the first ended re-enters");
        lock.unlockAsync(7).toCompletableFuture().get(5, TimeUnit.SECONDS);
        lock.unlockAsync(7).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertTrue(other.get(20, TimeUnit.SECONDS));
        lock.unlockAsync(8).toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    /**
     * Regression: the hand-off message of an owner's previous wait, arriving late, must not hand
     * it the lock in its next wait (tickets used to restart at 1 whenever the queue emptied, so
     * the old message could carry the new wait's ticket; found by FairQueueBenchmark).
     */
    @Test
    void aLateHandOffMessageFromAnEarlierWaitDoesNotGrantTheLock() throws Exception {
        BatonLock holder = a.fairLock("late");
        ExecutorService waiterThread = Executors.newSingleThreadExecutor(); // one owner id for both waits
        try (dev.baton.testkit.RespClient subscriber = new dev.baton.testkit.RespClient(redis.host(), redis.port())) {
            subscriber.call("SUBSCRIBE", "baton_fair_lock:{late}");
            holder.lock();
            Future<Boolean> firstWait = waiterThread.submit(() -> {
                BatonLock lock = b.fairLock("late");
                boolean got = lock.tryLock(20, TimeUnit.SECONDS);
                lock.unlock();
                return got;
            });
            awaitQueued("late", 1);
            holder.unlock();
            String handOff = (String) ((List<?>) subscriber.readReply()).get(2);
            assertTrue(firstWait.get(20, TimeUnit.SECONDS));

            holder.lock();
            Future<Boolean> secondWait = waiterThread.submit(() -> {
                BatonLock lock = b.fairLock("late");
                boolean got = lock.tryLock(20, TimeUnit.SECONDS);
                boolean heldInRedis = lock.isHeldByCurrentThread();
                lock.unlock();
                return got && heldInRedis;
            });
            awaitQueued("late", 1);
            redis.command("PUBLISH", "baton_fair_lock:{late}", handOff); // the first wait's message, late
            Thread.sleep(200); // give a wrongly woken waiter time to (wrongly) proceed; nothing to signal here
            assertFalse(secondWait.isDone(), "the waiter must still be waiting: " + handOff + " is an old hand-off");
            holder.unlock();
            assertTrue(secondWait.get(20, TimeUnit.SECONDS), "then it gets the lock for real");
        } finally {
            waiterThread.shutdownNow();
        }
    }

    @Test
    void tryLockWithoutWaitingNeverQueues() throws Exception {
        a.fairLock("no-wait").lock();
        assertFalse(threads.submit(() -> b.fairLock("no-wait").tryLock()).get());
        assertEquals(0L, queued("no-wait"));
    }
}
