package dev.baton;

import dev.baton.lua.Script;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Owner ids for asynchronous work: a hand-picked number is also some thread's id and shares that
 * thread's blocking holds (shown here with the calling thread's own id), while
 * {@link Baton#newOwnerId()} gives ids no thread has, unique across threads.
 */
class AsyncOwnerTest extends TwoClientsTest {
    AsyncOwnerTest(RedisServer redis) {
        super(redis);
    }

    @Test
    void newOwnerIdsAreUniqueAndNeverAThreadsSoTheyNeverShareItsHolds() throws Exception {
        Set<Long> ids = ConcurrentHashMap.newKeySet();
        Future<?>[] makers = new Future<?>[4];
        for (int t = 0; t < makers.length; t++) {
            makers[t] = threads.submit(() -> {
                for (int i = 0; i < 1_000; i++) {
                    long id = Baton.newOwnerId();
                    assertTrue(id < 0, "below every thread id: " + id);
                    assertTrue(ids.add(id), "unique: " + id);
                }
            });
        }
        for (Future<?> maker : makers) {
            maker.get(10, TimeUnit.SECONDS);
        }
        assertEquals(4_000, ids.size());

        BatonLock lock = a.lock("owners");
        lock.lock(); // the calling thread's blocking hold
        try {
            long picked = Thread.currentThread().getId(); // what "long owner = 42" is for thread 42
            assertTrue(lock.tryLockAsync(picked).toCompletableFuture().get(5, TimeUnit.SECONDS),
                    "a hand-picked id equal to a thread's id re-enters that thread's hold");
            lock.unlockAsync(picked).toCompletableFuture().get(5, TimeUnit.SECONDS);
            long fresh = Baton.newOwnerId();
            assertFalse(lock.tryLockAsync(fresh).toCompletableFuture().get(5, TimeUnit.SECONDS),
                    "a new owner id is another owner: the thread's hold excludes it");
        } finally {
            lock.unlock();
        }
        assertFalse(lock.isLocked());
    }

    /**
     * An owner's acquisitions of one lock take turns, but one whose grant was delivered is not
     * waited for: a re-entry started from the grant's own callback, even one that does not wait,
     * asks Redis at once and is granted.
     */
    @Test
    void aReEntryFromTheGrantsCallbackIsGrantedAtOnce() throws Exception {
        long owner = Baton.newOwnerId();
        BatonLock lock = a.lock("re-entry-in-callback");
        boolean again = lock.lockAsync(owner).toCompletableFuture()
                .thenCompose(v -> lock.tryLockAsync(0, TimeUnit.MILLISECONDS, owner))
                .toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertTrue(again, "the holder re-enters");
        assertEquals(2, lock.getHoldCount(owner));
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertFalse(lock.isLocked());
    }

    /**
     * An owner that re-enters and, before the re-entry is answered, unlocks the hold it had
     * (async code that reuses one owner id across overlapping calls, as the multi-lock storm of
     * issue 45 did): Redis runs the re-entry first (2 holds), then the unlock (1 left). The one
     * left is the re-entry's: it stays held and counted once, and the owner's next unlock frees
     * the lock. Before, the unlock took the hold left for a stray and gave it back, while the
     * client counted two: the re-entry's caller held nothing, and its unlock reported a loss.
     */
    @Test
    void anUnlockSentWhileTheOwnersReEntryIsInFlightLeavesTheReEntrysHold() throws Exception {
        BatonLock lock = a.lock("unlock-beside-re-entry");
        for (int round = 0; round < 20; round++) {
            long owner = Baton.newOwnerId();
            lock.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            String field = a.clientId() + ":" + owner;
            // Both sent from this thread, in this order, on the client's one connection.
            java.util.concurrent.CompletableFuture<Void> reEntry = lock.lockAsync(owner).toCompletableFuture();
            java.util.concurrent.CompletableFuture<Void> unlock = lock.unlockAsync(owner).toCompletableFuture();
            reEntry.get(5, TimeUnit.SECONDS);
            unlock.get(5, TimeUnit.SECONDS);
            assertEquals("1", redis.command("HGET", "unlock-beside-re-entry", field),
                    "round " + round + ": the re-entry's hold, once, in Redis (the client counts " + lock.getHoldCount(owner)
                            + "; hash " + redis.command("HGETALL", "unlock-beside-re-entry") + ")");
            assertEquals(1, lock.getHoldCount(owner), "round " + round + ": one hold counted");
            lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            assertFalse(lock.isLocked(), "round " + round + ": free after the re-entry's unlock");
            assertEquals(0, a.leasesHeld(), "round " + round);
        }
    }

    /**
     * The same with a third acquisition of the owner waiting its turn behind the first: the
     * re-entry from the first's grant does not wait behind it (a review found it ended false).
     */
    @Test
    void aReEntryFromTheGrantsCallbackDoesNotWaitBehindAQueuedOne() throws Exception {
        long owner = Baton.newOwnerId();
        BatonLock held = b.lock("re-entry-behind");
        held.lock();
        BatonLock lock = a.lock("re-entry-behind");
        java.util.concurrent.CompletableFuture<Boolean> again = lock.lockAsync(owner).toCompletableFuture()
                .thenCompose(v -> lock.tryLockAsync(0, TimeUnit.MILLISECONDS, owner)).toCompletableFuture();
        java.util.concurrent.CompletableFuture<Void> queued = lock.lockAsync(owner).toCompletableFuture();
        held.unlock();
        assertTrue(again.get(10, TimeUnit.SECONDS), "the holder re-enters from its grant's callback");
        queued.get(10, TimeUnit.SECONDS); // then the queued one, a third hold
        assertEquals(3, lock.getHoldCount(owner));
        for (int i = 0; i < 3; i++) {
            lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        }
        assertFalse(lock.isLocked());
    }

    /**
     * Two acquisitions of one owner started together from two threads take turns too: both end
     * granted (the second re-enters), and the lock is free after two releases, every time.
     */
    @Test
    void acquisitionsOfOneOwnerStartedTogetherTakeTurns() throws Exception {
        BatonLock lock = a.lock("started-together");
        for (int round = 0; round < 50; round++) {
            long owner = Baton.newOwnerId();
            java.util.concurrent.CyclicBarrier together = new java.util.concurrent.CyclicBarrier(2);
            Future<Boolean> one = threads.submit(() -> {
                together.await();
                return lock.tryLockAsync(2, TimeUnit.SECONDS, owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            });
            Future<Boolean> two = threads.submit(() -> {
                together.await();
                return lock.tryLockAsync(2, TimeUnit.SECONDS, owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            });
            assertTrue(one.get(10, TimeUnit.SECONDS) && two.get(10, TimeUnit.SECONDS), "round " + round + ": both granted");
            assertEquals(2, lock.getHoldCount(owner), "round " + round);
            lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            assertFalse(lock.isLocked(), "round " + round + ": free after two releases");
        }
    }

    /**
     * An owner's unlock that is not answered yet goes before the same owner's next acquisition of
     * the lock, even when Redis refuses the unlock's EVALSHA with NOSCRIPT (its script gone after
     * SCRIPT FLUSH or a restart) and runs it as EVAL a round trip later, behind an acquire whose
     * script is cached. Before, the acquire ran first, Redis took it for a re-sent copy of the
     * hold the owner had, and the release after it freed the lock the owner believed it held (the
     * simulation found it through a multi-lock's give-back, multi-lock seed 67).
     */
    @Test
    void anUnlockRunLateAfterNoscriptStillGoesBeforeTheOwnersNextLock() throws Exception {
        BatonLock lock = a.lock("noscript-order");
        long owner = Baton.newOwnerId();
        lock.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        redis.command("SCRIPT", "FLUSH");
        redis.command("SCRIPT", "LOAD", Script.LOCK_ACQUIRE.text());
        java.util.concurrent.CompletableFuture<Void> unlocked = lock.unlockAsync(owner).toCompletableFuture();
        java.util.concurrent.CompletableFuture<Void> locked = lock.lockAsync(owner).toCompletableFuture();
        unlocked.get(5, TimeUnit.SECONDS);
        locked.get(5, TimeUnit.SECONDS);
        assertTrue(lock.isLocked(), "the owner's new hold is in Redis, not freed by the unlock that ran after it");
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertFalse(lock.isLocked());
    }

    /**
     * Holds Redis keeps for an owner beyond its own calls (a late copy of an earlier acquisition
     * of the owner's, re-entering a later hold: the Redisson layout counts holds by owner only)
     * are nobody's: the owner's final unlock gives them back too, so the lock is free when it
     * returns. Before, the unlock left them, and the watchdog renewed them for ever (the
     * simulation's million-seed run found it, lock seed 103548).
     */
    @Test
    void strayHoldsOfAnOwnerAreGivenBackByItsFinalUnlock() throws Exception {
        BatonLock lock = a.lock("stray-holds");
        long owner = Baton.newOwnerId();
        String field = a.clientId() + ":" + owner;
        // A stray hold that lands during the hold.
        lock.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        redis.command("HINCRBY", "stray-holds", field, "1");
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(0L, redis.command("EXISTS", "stray-holds"), "free once the final unlock returned");
        assertEquals(0, a.leasesHeld());
        // Stray holds already there when the owner takes the lock (re-entered by its first acquire).
        redis.command("HSET", "stray-holds", field, "2");
        redis.command("PEXPIRE", "stray-holds", "30000");
        lock.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        lock.lockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertTrue(lock.isLocked(), "the owner's first hold is still held");
        lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(0L, redis.command("EXISTS", "stray-holds"), "free once the owner's two unlocks returned");
        assertEquals(0, a.leasesHeld());
    }
}
