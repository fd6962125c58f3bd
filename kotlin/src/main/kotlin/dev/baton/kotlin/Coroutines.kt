/**
 * Baton's synchronizers for Kotlin coroutines.
 *
 * A coroutine moves between threads and many coroutines share one thread, so a lock's holder
 * here is never a thread: it is the [BatonOwner] in the coroutine's context, which its children
 * inherit. [SuspendingLock.withLock] gives a coroutine an owner if it has none, so the same
 * coroutine (and its children) re-enter the lock, and unrelated coroutines on one thread
 * exclude each other.
 */
package dev.baton.kotlin

import dev.baton.Baton
import dev.baton.BatonCountDownLatch
import dev.baton.BatonLeaderElection
import dev.baton.BatonLock
import dev.baton.ElectionState
import dev.baton.Leadership
import dev.baton.BatonRateLimiter
import dev.baton.BatonSemaphore
import dev.baton.LeaseLostException
import dev.baton.LeaseScope
import dev.baton.RedisUnavailableException
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.future.await
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.supervisorScope
import kotlinx.coroutines.withContext
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionException
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.CompletionStage
import java.util.concurrent.TimeUnit
import kotlin.coroutines.AbstractCoroutineContextElement
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.coroutineContext
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException
import kotlin.time.Duration

/**
 * The lock owner of a coroutine and its children ([Baton.newOwnerId]). Put one in a context with
 * [withBatonOwner]; [SuspendingLock.withLock] adds one itself when the context has none.
 */
class BatonOwner(
    /** The owner id Baton's locks hold for (the one `lockAsync(ownerId)` and friends take). */
    val id: Long,
) : AbstractCoroutineContextElement(BatonOwner) {
    /** The key of [BatonOwner] in a coroutine context. */
    companion object Key : CoroutineContext.Key<BatonOwner>

    /**
     * The locks this owner's [SuspendingLock.withLock] blocks hold now (by the lock's name and
     * kind), with their scopes: a nested `withLock` of the same lock, in the coroutine or any of
     * its children, runs under that hold without asking Redis again, so children that re-enter
     * at the same time never send one owner's operations at once.
     */
    internal val held = ConcurrentHashMap<String, LeaseScope>()

    /** `BatonOwner(<id>)`. */
    override fun toString(): String = "BatonOwner($id)"
}

/**
 * Runs [block] with an owner of its own in the coroutine context, for [SuspendingLock.lock] and
 * [SuspendingLock.unlock] that belong together.
 */
suspend fun <T> withBatonOwner(block: suspend CoroutineScope.() -> T): T =
    withContext(BatonOwner(Baton.newOwnerId()), block)

/** This lock with suspend functions ([SuspendingLock]). */
fun BatonLock.suspending(): SuspendingLock = SuspendingLock(this)

/** This semaphore with suspend functions ([SuspendingSemaphore]). */
fun BatonSemaphore.suspending(): SuspendingSemaphore = SuspendingSemaphore(this)

/** This rate limiter with suspend functions ([SuspendingRateLimiter]). */
fun BatonRateLimiter.suspending(): SuspendingRateLimiter = SuspendingRateLimiter(this)

/** This latch with suspend functions ([SuspendingCountDownLatch]). */
fun BatonCountDownLatch.suspending(): SuspendingCountDownLatch = SuspendingCountDownLatch(this)

/** A Baton lock with suspend functions; the holder is the coroutine's [BatonOwner]. */
class SuspendingLock(
    /** The lock these functions act on. */
    val lock: BatonLock,
) {

    /**
     * Holds the lock while [block] runs, for the coroutine's owner (a new one if its context has
     * none; [block] and its children run with it, so they re-enter this lock), and releases it
     * however [block] ends. [block] is given the [LeaseScope] of the hold and runs as a child
     * coroutine that is cancelled when the lease is lost or no longer known to be held (the
     * bounds of [BatonLock.withLockAsync]); this function then throws [LeaseLostException].
     *
     * How it ends: with [block]'s value, after the release; with [block]'s exception, after the
     * release; with [LeaseLostException] as above; with [RedisUnavailableException] if Redis does
     * not answer the acquisition within the command timeout (+ 150 ms). Cancelling the calling
     * coroutine while it waits abandons the wait (nothing stays held or queued, [block] does not
     * run); while [block] runs, it cancels [block] and releases the lock.
     */
    suspend fun <T> withLock(block: suspend CoroutineScope.(LeaseScope) -> T): T {
        coroutineContext.ensureActive()
        val key = lock.toString()
        val current = coroutineContext[BatonOwner]
        val outer = current?.held?.get(key)
        if (outer != null) {
            outer.checkValid()
            return coroutineScope { block(outer) } // re-entry: runs under the enclosing hold
        }
        val owner = current ?: BatonOwner(Baton.newOwnerId())
        return supervisorScope {
            val started = AtomicBoolean()
            val result = lock.withLockAsync(owner.id) { scope ->
                started.set(true)
                owner.held[key] = scope
                val deferred = async(owner) {
                    try {
                        block(scope)
                    } finally {
                        owner.held.remove(key, scope)
                    }
                }
                BlockFuture(deferred)
            }.toCompletableFuture()
            awaitHold(result, started)
        }
    }

    /**
     * Awaits [result]. A cancel of the caller before the block started abandons the wait;
     * after, the block (a child of the caller) is cancelled by the caller's own cancellation,
     * and the release that follows its end is awaited before the cancellation goes on.
     */
    private suspend fun <T> awaitHold(result: CompletableFuture<T>, started: AtomicBoolean): T =
        try {
            suspendCancellableCoroutine { continuation ->
                continuation.invokeOnCancellation {
                    if (!started.get()) {
                        result.cancel(false) // still waiting for the lock: abandoned
                    }
                }
                result.whenComplete { value, error ->
                    if (error != null) continuation.resumeWithException(unwrap(error)) else continuation.resume(value)
                }
            }
        } catch (e: CancellationException) {
            if (started.get()) {
                withContext(NonCancellable) { runCatching { result.awaitUnwrapped() } } // the block's end and its release
            }
            throw e
        }

    /**
     * Acquires the lock for the coroutine's [BatonOwner] (see [withBatonOwner]), with the
     * watchdog. Cancelling the coroutine abandons the wait; a grant that comes as it is
     * cancelled is given back. Throws [IllegalStateException] if the context has no owner,
     * [RedisUnavailableException] as [BatonLock.lock].
     */
    suspend fun lock() {
        coroutineContext.ensureActive()
        val owner = requiredOwner()
        acquire(owner, lock.lockAsync(owner)) { true }
    }

    /** Tries to acquire the lock for the coroutine's owner, waiting at most [wait]; returns whether it did. */
    suspend fun tryLock(wait: Duration): Boolean {
        coroutineContext.ensureActive()
        val owner = requiredOwner()
        return acquire(owner, lock.tryLockAsync(wait.inWholeMilliseconds, TimeUnit.MILLISECONDS, owner)) { it }
    }

    /**
     * Releases one hold of the coroutine's owner; throws as [BatonLock.unlock] does. The release
     * is not cancelled with the coroutine: it completes first.
     */
    suspend fun unlock() {
        val owner = requiredOwner()
        withContext(NonCancellable) { lock.unlockAsync(owner).awaitUnwrapped() }
    }

    private suspend fun requiredOwner(): Long = coroutineContext[BatonOwner]?.id
        ?: throw IllegalStateException("no lock owner in the coroutine's context for '${lock.name}': "
            + "run it inside withBatonOwner { }, or use withLock { }")

    /** Awaits an acquisition; a cancel abandons it, and a grant that raced the cancel is given back. */
    private suspend fun <T> acquire(owner: Long, acquisition: CompletionStage<T>, isHold: (T) -> Boolean): T =
        suspendCancellableCoroutine { continuation ->
            val future = acquisition.toCompletableFuture()
            continuation.invokeOnCancellation { future.cancel(false) }
            future.whenComplete { value, error ->
                if (error != null) {
                    continuation.resumeWithException(unwrap(error))
                } else {
                    continuation.resume(value) { _, _, _ ->
                        if (isHold(value)) {
                            // Granted as the coroutine was cancelled: nobody will unlock it.
                            runCatching { lock.unlockAsync(owner) }
                        }
                    }
                }
            }
        }

    /** `SuspendingLock(<lock name>)`. */
    override fun toString(): String = "SuspendingLock(${lock.name})"
}

/** A Baton semaphore with suspend functions. Permits have no owner. */
class SuspendingSemaphore(
    /** The semaphore these functions act on. */
    val semaphore: BatonSemaphore,
) {

    /**
     * Takes [permits] while [block] runs and gives them back however it ends. Cancelling the
     * coroutine while it waits abandons the wait; permits granted as it is cancelled are given
     * back.
     */
    suspend fun <T> withPermits(permits: Int, block: suspend () -> T): T {
        coroutineContext.ensureActive()
        suspendCancellableCoroutine { continuation ->
            val future = semaphore.acquireAsync(permits).toCompletableFuture()
            continuation.invokeOnCancellation { future.cancel(false) }
            future.whenComplete { _, error ->
                if (error != null) {
                    continuation.resumeWithException(unwrap(error))
                } else {
                    continuation.resume(Unit) { _, _, _ -> runCatching { semaphore.releaseAsync(permits) } }
                }
            }
        }
        val outcome = runCatching { block() }
        val released = runCatching { withContext(NonCancellable) { semaphore.releaseAsync(permits).awaitUnwrapped() } }
        val failure = outcome.exceptionOrNull()
        val releaseFailure = released.exceptionOrNull()
        if (failure != null) {
            if (releaseFailure != null && releaseFailure !== failure) {
                failure.addSuppressed(releaseFailure)
            }
            throw failure
        }
        if (releaseFailure != null) {
            throw releaseFailure
        }
        return outcome.getOrThrow()
    }

    /** Gives back [permits]; not cancelled with the coroutine (see [BatonSemaphore.release]). */
    suspend fun release(permits: Int) {
        withContext(NonCancellable) { semaphore.releaseAsync(permits).awaitUnwrapped() }
    }

    /** The permits free now. */
    suspend fun availablePermits(): Int = semaphore.availablePermitsAsync().awaitUnwrapped()

    /** Sets the permits if the semaphore does not exist yet; returns whether it did. */
    suspend fun trySetPermits(permits: Int): Boolean = semaphore.trySetPermitsAsync(permits).awaitUnwrapped()
}

/**
 * A Baton rate limiter with suspend functions. Cancelling the coroutine while it sleeps toward its
 * slot undoes the reservation (see [BatonRateLimiter], "How a wait ends").
 */
class SuspendingRateLimiter(
    /** The rate limiter these functions act on. */
    val limiter: BatonRateLimiter,
) {
    /** Returns at the slot of [permits], however long it takes. */
    suspend fun acquire(permits: Int = 1) {
        cancellably(limiter.acquireAsync(permits).toCompletableFuture())
    }

    /** Whether [permits] could go now (one round trip; nothing reserved if not). */
    suspend fun tryAcquire(permits: Int = 1): Boolean = limiter.tryAcquireAsync(permits).awaitUnwrapped()

    /** `true` at the slot of [permits] if it comes within [wait]; `false` at once if it lies further away. */
    suspend fun tryAcquire(permits: Int, wait: Duration): Boolean =
        cancellably(limiter.tryAcquireAsync(permits, wait.inWholeNanoseconds, TimeUnit.NANOSECONDS).toCompletableFuture())

    /** The limiter's state on Redis's clock. */
    suspend fun state(): BatonRateLimiter.State = limiter.stateAsync().awaitUnwrapped()

    /** `SuspendingRateLimiter(<name>)`. */
    override fun toString(): String = "SuspendingRateLimiter(${limiter.name})"
}

/** This leader election with a suspend function ([SuspendingLeaderElection]). */
fun BatonLeaderElection.suspending(): SuspendingLeaderElection = SuspendingLeaderElection(this)

/** A Baton leader election as a suspend function: a call to [lead] is a candidacy. */
class SuspendingLeaderElection(
    /** The election these functions act on. */
    val election: BatonLeaderElection,
) {
    /**
     * A candidacy for as long as this call runs: each time this candidate is elected, [work] runs
     * in a child coroutine of the caller's scope with the leadership; when it returns (or throws)
     * leadership is handed on and the candidate queues again. The child is cancelled when
     * leadership is lost or relinquished. Never returns on its own: cancelling the calling
     * coroutine closes the candidacy (the work cancelled, leadership handed on, the line left)
     * before the cancellation completes.
     */
    suspend fun lead(identity: String, work: suspend CoroutineScope.(Leadership) -> Unit): Nothing = coroutineScope {
        val scope = this
        val candidacy = election.joinAsync(identity) { leadership ->
            val term = scope.async { work(leadership) }
            val stage = CompletableFuture<Any?>()
            term.invokeOnCompletion { error -> if (error == null) stage.complete(null) else stage.completeExceptionally(error) }
            stage.whenComplete { _, _ -> if (stage.isCancelled) term.cancel() }
            stage
        }
        try {
            suspendCancellableCoroutine<Nothing> { }
        } finally {
            withContext(NonCancellable) { candidacy.closeAsync().await() }
        }
    }

    /** Who leads and who waits. */
    suspend fun state(): ElectionState = election.stateAsync().awaitUnwrapped()

    /** `SuspendingLeaderElection(<name>)`. */
    override fun toString(): String = "SuspendingLeaderElection(${election.name})"
}

/** Waits for [future]; cancelling the coroutine cancels the future (the stage Baton returned, so Baton undoes what it holds). */
private suspend fun <T> cancellably(future: CompletableFuture<T>): T = suspendCancellableCoroutine { continuation ->
    continuation.invokeOnCancellation { future.cancel(false) }
    future.whenComplete { value, error ->
        if (error != null) {
            continuation.resumeWithException(unwrap(error))
        } else {
            continuation.resume(value)
        }
    }
}

/** A Baton count-down latch with suspend functions. */
class SuspendingCountDownLatch(
    /** The latch these functions act on. */
    val latch: BatonCountDownLatch,
) {
    /** Sets the count if the latch is not counting already; returns whether it did. */
    suspend fun trySetCount(count: Long): Boolean = latch.trySetCountAsync(count).awaitUnwrapped()

    /** Counts down by one; not cancelled with the coroutine (see [BatonCountDownLatch.countDown]). */
    suspend fun countDown() {
        withContext(NonCancellable) { latch.countDownAsync().awaitUnwrapped() }
    }

    /** The count now. */
    suspend fun count(): Long = latch.countAsync()

    /**
     * Suspends until the count is zero; throws [dev.baton.SynchronizerDeletedException] if the
     * latch is deleted meanwhile. Cancelling the coroutine stops the wait and unsubscribes.
     */
    suspend fun await() {
        latch.awaitAsync().awaitUnwrapped()
    }

    /** Suspends until the count is zero or [timeout] passes; returns whether it reached zero. */
    suspend fun await(timeout: Duration): Boolean =
        latch.awaitAsync(timeout.inWholeMilliseconds, TimeUnit.MILLISECONDS).awaitUnwrapped()

    private suspend fun BatonCountDownLatch.countAsync(): Long = getCountAsync().awaitUnwrapped()
}

/**
 * The block's coroutine as the stage Baton waits for: it completes when the block has ended,
 * never before, and cancelling it (a lost lease) cancels the block and still waits for its end,
 * so the lock is released only once the block, its `finally` included, is over.
 */
private class BlockFuture<T>(private val deferred: Deferred<T>) : CompletableFuture<T>() {
    init {
        deferred.invokeOnCompletion { error ->
            @OptIn(ExperimentalCoroutinesApi::class)
            if (error == null) super.complete(deferred.getCompleted()) else super.completeExceptionally(error)
        }
    }

    override fun cancel(mayInterruptIfRunning: Boolean): Boolean {
        deferred.cancel()
        return false
    }
}

/** [await], with Baton's own exception instead of a [CompletionException] around it. */
private suspend fun <T> CompletionStage<T>.awaitUnwrapped(): T =
    try {
        await()
    } catch (e: CompletionException) {
        throw e.cause ?: e
    }

private fun unwrap(error: Throwable): Throwable =
    if (error is CompletionException && error.cause != null) error.cause!! else error
