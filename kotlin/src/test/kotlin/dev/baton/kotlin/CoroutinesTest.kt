package dev.baton.kotlin

import dev.baton.Baton
import dev.baton.BatonOptions
import dev.baton.LeaseLostException
import dev.baton.SynchronizerDeletedException
import dev.baton.testkit.Await
import dev.baton.testkit.Bounds
import dev.baton.testkit.RedisExtension
import dev.baton.testkit.RedisServer
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.ExtendWith
import java.util.concurrent.Executors
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.EmptyCoroutineContext
import kotlin.time.Duration.Companion.milliseconds
import java.time.Duration as JavaDuration

/**
 * baton-kotlin on a real Redis: holders per coroutine (its context), never per thread; the
 * scoped block re-enters within its coroutine and children, releases however it ends, and is
 * cancelled when its lease is lost; a cancelled wait leaves nothing behind. Watchdog 900 ms.
 */
@ExtendWith(RedisExtension::class)
class CoroutinesTest(private val redis: RedisServer) {
    private lateinit var baton: Baton

    @BeforeEach
    fun open() {
        redis.command("FLUSHALL")
        baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(WATCHDOG)
            .commandTimeout(JavaDuration.ofSeconds(1)).build())
    }

    @AfterEach
    fun close() = baton.close()

    /**
     * lead() is a candidacy while it runs: the work runs in a child coroutine each time the
     * candidate leads, queues again when it returns, and cancelling lead() cancels the running
     * work and leaves the election with nobody leading.
     */
    @Test
    fun leadIsACandidacyWhoseWorkRunsAsAChildWhileItLeads() = runBlocking {
        val election = baton.leaderElection("kotlin-election").suspending()
        val terms = java.util.concurrent.atomic.AtomicInteger()
        val cancelled = java.util.concurrent.atomic.AtomicBoolean()
        val candidacy = launch(kotlinx.coroutines.Dispatchers.Default) {
            election.lead("kotlin@host") { leadership ->
                if (terms.incrementAndGet() < 3) {
                    kotlinx.coroutines.delay(20)
                } else {
                    try {
                        kotlinx.coroutines.awaitCancellation()
                    } finally {
                        cancelled.set(true)
                    }
                }
            }
        }
        kotlinx.coroutines.withTimeout(10_000) {
            while (terms.get() < 3) kotlinx.coroutines.delay(10)
        }
        assertEquals("kotlin@host", election.state().leader().orElseThrow().identity())
        candidacy.cancelAndJoin()
        assertTrue(cancelled.get(), "the running work was cancelled")
        assertTrue(election.state().leader().isEmpty, "nobody leads after the candidacy's coroutine was cancelled")
    }

    @Test
    fun withLockReEntersWithinTheCoroutineAndItsChildrenAndReleasesHoweverItEnds() = runBlocking {
        // snippet kotlin-with-lock begins
        val lock = baton.lock("orders:42").suspending()
        val posted = lock.withLock { scope ->
            scope.checkValid()                                  // LeaseLostException once not known to be held
            val nested = lock.withLock { "re-entered" }         // the same coroutine: its own hold again
            val child = async { lock.withLock { "by its child too" } }.await()
            "$nested, $child"
        }                                                       // released here
        // snippet kotlin-with-lock ends
        assertEquals("re-entered, by its child too", posted)
        assertEquals(0L, redis.command("EXISTS", "orders:42"), "released")

        val failed = runCatching { lock.withLock<String> { throw IllegalStateException("the block failed") } }
        assertEquals("the block failed", failed.exceptionOrNull()?.message)
        assertEquals(0L, redis.command("EXISTS", "orders:42"), "released after a failing block")
    }

    @Test
    fun unrelatedCoroutinesOnOneThreadExcludeEachOther() {
        val one = Executors.newSingleThreadExecutor().asCoroutineDispatcher()
        try {
            runBlocking(one) {
                val lock = baton.lock("one-thread").suspending()
                val holding = CompletableDeferred<String>()
                val release = CompletableDeferred<Unit>()
                val first = launch {
                    lock.withLock {
                        holding.complete(Thread.currentThread().name.substringBefore(" @"))
                        release.await()
                    }
                }
                val firstThread = holding.await()
                val second = withBatonOwner { lock.tryLock(0.milliseconds) }
                assertEquals(firstThread, Thread.currentThread().name.substringBefore(" @"), "both on one thread")
                assertFalse(second, "an unrelated coroutine on the same thread is another owner")
                release.complete(Unit)
                first.join()
            }
        } finally {
            one.close()
        }
        assertEquals(0L, redis.command("EXISTS", "one-thread"))
    }

    @Test
    fun lockAndUnlockAcrossDispatchersForTheCoroutinesOwner() = runBlocking {
        val lock = baton.lock("hopping").suspending()
        // snippet kotlin-lock-unlock begins
        withBatonOwner {
            lock.lock()
            val lockedOn = Thread.currentThread()
            val unlockedOn = withContext(Dispatchers.IO) {      // another thread, the same owner
                lock.unlock()
                Thread.currentThread()
            }
            assertNotEquals(lockedOn, unlockedOn)
        }
        // snippet kotlin-lock-unlock ends
        assertEquals(0L, redis.command("EXISTS", "hopping"))
        val noOwner = runCatching { lock.lock() }.exceptionOrNull()
        assertInstanceOf(IllegalStateException::class.java, noOwner)
        assertTrue(noOwner!!.message!!.contains("withBatonOwner"), noOwner.message)

        // Two dispatchers of one thread each, so the threads are certain: the owner locks on one,
        // another owner on that very thread cannot unlock it, and the owner unlocks from the other.
        val locking = Executors.newSingleThreadExecutor { Thread(it, "locking-thread") }.asCoroutineDispatcher()
        val unlocking = Executors.newSingleThreadExecutor { Thread(it, "unlocking-thread") }.asCoroutineDispatcher()
        try {
            withContext(locking) {
                withBatonOwner {
                    val owner = coroutineContext[BatonOwner]!!.id
                    lock.lock()
                    val lockedOn = Thread.currentThread().name.substringBefore(" @")
                    assertTrue(lock.lock.isHeldByThread(owner), "held for the coroutine's owner")
                    assertEquals(1, lock.lock.getHoldCount(owner))
                    val stranger = withBatonOwner { runCatching { lock.unlock() }.exceptionOrNull() }
                    assertInstanceOf(IllegalMonitorStateException::class.java, stranger,
                        "another owner on the thread that locked cannot unlock: $stranger")
                    assertEquals(lockedOn, Thread.currentThread().name.substringBefore(" @"))
                    val unlockedOn = withContext(unlocking) {
                        lock.unlock()
                        Thread.currentThread().name.substringBefore(" @")
                    }
                    assertEquals("locking-thread", lockedOn)
                    assertEquals("unlocking-thread", unlockedOn)
                    assertEquals(0L, redis.command("EXISTS", "hopping"), "released by its owner from the other thread")
                    assertEquals(0, baton.leasesHeld())
                }
            }
        } finally {
            locking.close()
            unlocking.close()
        }
    }

    /**
     * Runs [call] in a coroutine on a thread of its own, after [before] there, and cancels that
     * coroutine while the call's command is in flight (Redis paused, so it cannot be answered):
     * the coroutine must not end before Redis answered, and it has ended when this returns.
     * Returns what the call ended with (null: it returned).
     */
    private fun cancelledInFlight(context: CoroutineContext, before: suspend () -> Unit, call: suspend () -> Unit): Throwable? {
        val one = Executors.newSingleThreadExecutor { Thread(it, "caller") }.asCoroutineDispatcher()
        try {
            return runBlocking {
                val ready = CompletableDeferred<Unit>()
                val go = CompletableDeferred<Unit>()
                val calling = CompletableDeferred<Unit>()
                val ended = java.util.concurrent.atomic.AtomicReference<Throwable?>()
                val job = launch(one + context) {
                    before()
                    ready.complete(Unit)
                    go.await()
                    calling.complete(Unit)
                    try {
                        call()
                    } catch (e: Throwable) {
                        ended.set(e)
                        throw e
                    }
                }
                ready.await()
                redis.pause()
                try {
                    go.complete(Unit)
                    calling.await()
                    withContext(one) {} // the call has run up to its suspension: its command is sent
                    job.cancel()
                    withContext(one) {} // a call that gave way to the cancel would have ended the coroutine by now
                    assertFalse(job.isCompleted, "the coroutine ended at its cancel, before Redis could answer its call")
                } finally {
                    redis.resume()
                }
                withTimeout(5_000) { job.join() }
                ended.get()
            }
        } finally {
            one.close()
        }
    }

    @Test
    fun unlockReleaseAndCountDownCompleteWhenTheirCoroutineIsCancelled() {
        val lock = baton.lock("not-cancelled").suspending()
        val unlocked = cancelledInFlight(BatonOwner(Baton.newOwnerId()), { lock.lock() }) { lock.unlock() }
        println("unlock() cancelled in flight ended with $unlocked")
        assertEquals(0L, redis.command("EXISTS", "not-cancelled"), "the unlock completed though its coroutine was cancelled")
        assertEquals(0, baton.leasesHeld())

        val permits = baton.semaphore("not-cancelled-sem").suspending()
        val released = cancelledInFlight(EmptyCoroutineContext, {
            assertTrue(permits.trySetPermits(1))
            baton.semaphore("not-cancelled-sem").acquire(1)
        }) { permits.release(1) }
        println("release(1) cancelled in flight ended with $released")
        assertEquals("1", redis.command("GET", "not-cancelled-sem"), "the permit is back though its coroutine was cancelled")

        val latch = baton.countDownLatch("not-cancelled-latch").suspending()
        val counted = cancelledInFlight(EmptyCoroutineContext, { assertTrue(latch.trySetCount(1)) }) { latch.countDown() }
        println("countDown() cancelled in flight ended with $counted")
        assertEquals(0L, baton.countDownLatch("not-cancelled-latch").count, "counted down though its coroutine was cancelled")
        assertEquals(0L, redis.command("EXISTS", "not-cancelled-latch"))
    }

    @Test
    fun aDeletedLatchEndsItsAwaitWithSynchronizerDeletedException(): Unit = runBlocking {
        val latch = baton.countDownLatch("deleted-latch").suspending()
        assertTrue(latch.trySetCount(1))
        redis.command("CONFIG", "RESETSTAT")
        val awaiting = async(Dispatchers.Default) { runCatching { latch.await() }.exceptionOrNull() }
        // Parked: subscribed, and both its reads (before and after SUBSCRIBE) answered.
        redis.awaitSubscribers("redisson_countdownlatch__channel__{deleted-latch}", 1)
        Await.until(JavaDuration.ofSeconds(10), { "two reads" }) { redis.calls("get") >= 2 }
        assertFalse(awaiting.isCompleted, "waiting at a count of 1")
        val deleted = System.nanoTime()
        assertTrue(baton.countDownLatch("deleted-latch").delete())
        val failure = withTimeout(5_000) { awaiting.await() }
        println("a deleted latch's await ended ${JavaDuration.ofNanos(System.nanoTime() - deleted).toMillis()} ms after the delete with $failure")
        assertInstanceOf(SynchronizerDeletedException::class.java, failure, failure.toString())
    }

    @Test
    fun aCancelledWaitLeavesNoHoldSubscriptionOrQueueEntry() = runBlocking {
        val other = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build())
        try {
            val theirs = other.fairLock("queued")
            theirs.lock()
            val ran = AtomicBoolean()
            val waiting = launch(Dispatchers.IO) { baton.fairLock("queued").suspending().withLock { ran.set(true) } }
            Await.until(JavaDuration.ofSeconds(5), { "queued" }) { redis.command("ZCARD", "baton_fair_queue:{queued}") == 1L }
            waiting.cancelAndJoin()
            Await.until(Bounds.CLEAN_UP, { "its queue entry and subscription gone" }) {
                redis.command("ZCARD", "baton_fair_queue:{queued}") == 0L && redis.subscribers("baton_fair_lock:{queued}") == 0L
            }
            theirs.unlock()
            assertEquals(0L, redis.command("EXISTS", "queued"))
            assertFalse(ran.get(), "the block of a cancelled wait never runs")
            assertEquals(0, baton.leasesHeld())
        } finally {
            other.close()
        }
    }

    @Test
    fun theBlockIsCancelledWithLeaseLostWhenTheLeaseIsLost() = runBlocking {
        val cancelled = AtomicBoolean()
        var deleted = 0L
        val failure = runCatching {
            baton.lock("lost").suspending().withLock {
                try {
                    deleted = System.nanoTime()
                    redis.command("DEL", "lost")
                    delay(30_000)
                } finally {
                    cancelled.set(true)
                }
            }
        }.exceptionOrNull()
        val after = JavaDuration.ofNanos(System.nanoTime() - deleted)
        assertInstanceOf(LeaseLostException::class.java, failure, failure.toString())
        assertTrue(cancelled.get(), "the block's coroutine was cancelled")
        val bound = Bounds.within(WATCHDOG.dividedBy(3))
        assertTrue(after <= bound, "within ${bound.toMillis()} ms of the delete: ${after.toMillis()} ms")
        assertEquals(0, baton.leasesHeld())
    }

    @Test
    fun semaphoresAndLatchesSuspend() = runBlocking {
        val permits = baton.semaphore("partner").suspending()
        assertTrue(permits.trySetPermits(2))
        var inside = 0
        var most = 0
        val jobs = (1..6).map {
            launch(Dispatchers.Default) {
                permits.withPermits(1) {
                    synchronized(this@CoroutinesTest) { inside++; most = maxOf(most, inside) }
                    delay(20)
                    synchronized(this@CoroutinesTest) { inside-- }
                }
            }
        }
        jobs.forEach { it.join() }
        assertTrue(most in 1..2, "at most the 2 permits at once: $most")
        assertEquals(2, permits.availablePermits())

        val latch = baton.countDownLatch("workers").suspending()
        assertTrue(latch.trySetCount(2))
        val awaited = async { latch.await() }
        latch.countDown()
        assertFalse(awaited.isCompleted, "one count left")
        latch.countDown()
        awaited.await()
        assertEquals(0L, latch.count())
    }

    @Test
    fun aRateLimiterSuspendsToItsSlotAndACancelledWaitUndoesItsReservation() = runBlocking {
        val rate = baton.rateLimiter("kotlin-rate", dev.baton.RateLimit.of(1, java.time.Duration.ofSeconds(10))).suspending()
        assertTrue(rate.tryAcquire())
        assertFalse(rate.tryAcquire(1, kotlin.time.Duration.parse("100ms")), "its slot is 10 s away: false at once")
        val waiting = launch(Dispatchers.Default) { rate.acquire() }
        val reserved = System.nanoTime() + 5_000_000_000
        while (rate.state().reservedAhead.toSeconds() < 15 && System.nanoTime() < reserved) {
            delay(5)
        }
        assertTrue(rate.state().reservedAhead.toSeconds() >= 15, "the coroutine reserved its slot")
        waiting.cancelAndJoin()
        val undone = System.nanoTime() + 300_000_000 // the clean-up bound
        while (rate.state().reservedAhead.toSeconds() >= 11 && System.nanoTime() < undone) {
            delay(5)
        }
        assertTrue(rate.state().reservedAhead.toSeconds() < 11, "the cancelled coroutine's reservation undone")
    }

    @Test
    fun childrenReEnteringAtOnceRunUnderTheOneHold() = runBlocking {
        val lock = baton.lock("children").suspending()
        lock.withLock {
            coroutineScope {
                repeat(4) {
                    launch(Dispatchers.Default) {
                        lock.withLock {
                            assertEquals(listOf("1"), redis.command("HVALS", "children"), "one hold in Redis, not one per child")
                            delay(20)
                        }
                    }
                }
            }
        }
        assertEquals(0L, redis.command("EXISTS", "children"))
        assertEquals(0, baton.leasesHeld())
    }

    @Test
    fun aCancelledCallerReleasesOnlyAfterTheBlockHasEnded() = runBlocking {
        val lock = baton.lock("cleanup").suspending()
        val started = CompletableDeferred<Unit>()
        val heldDuringCleanup = AtomicBoolean()
        val job = launch(Dispatchers.Default) {
            lock.withLock {
                try {
                    started.complete(Unit)
                    delay(30_000)
                } finally {
                    withContext(NonCancellable) {
                        delay(200) // a clean-up that still runs under the lock
                        heldDuringCleanup.set(redis.command("EXISTS", "cleanup") == 1L)
                    }
                }
            }
        }
        started.await()
        job.cancelAndJoin()
        assertTrue(heldDuringCleanup.get(), "the lock was still held while the block's clean-up ran")
        assertEquals(0L, redis.command("EXISTS", "cleanup"), "released by the time the cancelled caller ended")
        assertEquals(0, baton.leasesHeld())
    }

    /**
     * Runs a block that waits forever under [name], with [fault] done inside it and [heal] after
     * it ended; how long after the fault began the block was cancelled, which must have ended
     * `withLock` with [LeaseLostException].
     */
    private fun cancelledAfter(name: String, fault: () -> Unit, heal: () -> Unit): JavaDuration = runBlocking {
        var faultAt = 0L
        var cancelledAt = 0L
        val failure = try {
            runCatching {
                baton.lock(name).suspending().withLock {
                    try {
                        faultAt = System.nanoTime()
                        fault()
                        delay(30_000)
                    } finally {
                        cancelledAt = System.nanoTime()
                    }
                }
            }.exceptionOrNull()
        } finally {
            heal()
        }
        assertInstanceOf(LeaseLostException::class.java, failure, failure.toString())
        JavaDuration.ofNanos(cancelledAt - faultAt)
    }

    /** Cancelled by its validity's end: within the watchdog timeout + 300 ms of the fault, not before half of it; nothing kept. */
    private fun assertCancelledByTheValidityEnd(after: JavaDuration, fault: String) {
        val bound = Bounds.within(WATCHDOG)
        assertTrue(after <= bound, "cancelled ${after.toMillis()} ms after $fault, bound ${bound.toMillis()} ms")
        assertTrue(after >= WATCHDOG.dividedBy(2), "not before the last renewal's lease could end: ${after.toMillis()} ms")
        Await.until(Bounds.CLEAN_UP, { "nothing kept held" }) { baton.leasesHeld() == 0 }
    }

    @Test
    fun theBlockIsCancelledWhenItsValidityRunsOutWhileRedisIsPaused() =
        assertCancelledByTheValidityEnd(cancelledAfter("paused", redis::pause, redis::resume), "the pause")

    @Test
    fun theBlockIsCancelledWithinTheLeaseWhenRedisRestartsEmpty() {
        val after = cancelledAfter("restarted", redis::restartWithoutData) {}
        val bound = Bounds.within(WATCHDOG)
        assertTrue(after <= bound, "cancelled ${after.toMillis()} ms after the restart began, bound ${bound.toMillis()} ms")
        assertEquals(0L, redis.command("EXISTS", "restarted"))
        assertEquals(0, baton.leasesHeld())
    }

    @Test
    fun theBlockIsCancelledWhenTheWatchdogCannotRenewWithRedisDown() =
        assertCancelledByTheValidityEnd(cancelledAfter("down", redis::kill, redis::restart), "Redis went down")

    private companion object {
        val WATCHDOG: JavaDuration = JavaDuration.ofMillis(900)
    }
}
