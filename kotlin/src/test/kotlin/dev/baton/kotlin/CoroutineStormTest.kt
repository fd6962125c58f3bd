package dev.baton.kotlin

import dev.baton.Baton
import dev.baton.BatonOptions
import dev.baton.LeaseLostException
import dev.baton.testkit.Await
import dev.baton.testkit.Bounds
import dev.baton.testkit.RedisExtension
import dev.baton.testkit.RedisServer
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.ExtendWith
import java.util.Random
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.Executors
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicLong
import kotlin.time.Duration.Companion.milliseconds
import java.time.Duration as JavaDuration

/**
 * A bounded storm of the coroutine entry points on one lock: two clients, 12 coroutines each on
 * a dispatcher of two threads (so unrelated coroutines share threads), each running scoped
 * holds with in-coroutine and child re-entry, holds whose caller times out while waiting or
 * inside, `lock()`/`unlock()` for the context's owner, and `tryLock` with short waits. Checked
 * throughout: never two holders at once (the holders of both clients count into one counter);
 * a re-entry by the coroutine or its child never waits for another holder. Checked at the end:
 * nothing held, no queue entry, no subscription. Each storm stops by itself (6 s, 200 operations
 * per coroutine; one that has not ended 30 s in is cut short and fails); the seed is printed and `-Dbaton.storm.seed` replays its choices.
 */
@ExtendWith(RedisExtension::class)
class CoroutineStormTest(private val redis: RedisServer) {

    @Test
    fun coroutinesOfTwoClientsNeverHoldTogetherAndLeaveNothingBehind() {
        redis.command("FLUSHALL")
        val seed = java.lang.Long.getLong("baton.storm.seed") ?: Random().nextLong()
        println("[coroutine storm] seed $seed")
        val clients = List(2) {
            Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(JavaDuration.ofMillis(3000))
                .commandTimeout(JavaDuration.ofSeconds(1)).build())
        }
        val pools = List(2) { Executors.newFixedThreadPool(2) }
        val holders = AtomicInteger()
        val grants = AtomicLong()
        val violations = ConcurrentLinkedQueue<String>()
        val deadline = System.nanoTime() + JavaDuration.ofSeconds(6).toNanos()
        try {
            runBlocking {
                val workers = (0 until 24).map { n ->
                    val client = n % 2
                    val lock = clients[client].lock("storm").suspending()
                    val rnd = Random(seed + n)
                    launch(pools[client].asCoroutineDispatcher()) {
                        var ops = 0
                        while (ops++ < 200 && System.nanoTime() < deadline) {
                            suspend fun inside(how: String) {
                                val now = holders.incrementAndGet()
                                grants.incrementAndGet()
                                if (now != 1) violations += "$how by worker $n: $now holders at once"
                                try {
                                    delay(rnd.nextInt(3).toLong())
                                } finally {
                                    holders.decrementAndGet()
                                }
                            }
                            try {
                                when (rnd.nextInt(6)) {
                                    0 -> lock.withLock { inside("withLock") }
                                    1 -> lock.withLock {
                                        holders.incrementAndGet().let { if (it != 1) violations += "re-entry base $n: $it" }
                                        try {
                                            // re-entered by the coroutine and by a child: under this hold, no wait
                                            val within = withTimeoutOrNull(2_000.milliseconds) {
                                                lock.withLock { async { lock.withLock { "child" } }.await() }
                                            }
                                            if (within == null) violations += "a re-entry by worker $n waited 2 s"
                                        } finally {
                                            holders.decrementAndGet()
                                        }
                                    }
                                    2 -> withTimeoutOrNull(rnd.nextInt(6).toLong().milliseconds) { lock.withLock { inside("withLock timed") } }
                                    3 -> withBatonOwner {
                                        lock.lock()
                                        try {
                                            inside("lock()")
                                        } finally {
                                            lock.unlock()
                                        }
                                    }
                                    4 -> withBatonOwner {
                                        if (lock.tryLock(rnd.nextInt(20).milliseconds)) {
                                            try {
                                                inside("tryLock")
                                            } finally {
                                                lock.unlock()
                                            }
                                        }
                                    }
                                    else -> withTimeoutOrNull(rnd.nextInt(4).toLong().milliseconds) {
                                        lock.withLock { delay(5); inside("withLock cut short") }
                                    }
                                }
                            } catch (e: CancellationException) {
                                throw e
                            } catch (e: LeaseLostException) {
                                violations += "worker $n: a lease lost on a healthy Redis: $e"
                            } catch (e: Exception) {
                                violations += "worker $n: $e" // e.g. a release of a hold that was another's
                            }
                        }
                    }
                }
                if (withTimeoutOrNull(30_000) { workers.joinAll() } == null) {
                    violations += "the storm did not end within 30 s (a wait never ended: a hold never released?)"
                    workers.forEach { it.cancel() }
                }
            }
            assertEquals(listOf<String>(), violations.toList(), "seed $seed")
            assertTrue(grants.get() > 50, "the storm made holds: ${grants.get()}")
            println("[coroutine storm] seed $seed: ${grants.get()} holds, no violation")
            Await.until(Bounds.CLEAN_UP, { "nothing held, queued or subscribed" }) {
                clients.all { it.leasesHeld() == 0 } && redis.command("EXISTS", "storm") == 0L
                    && redis.subscribers("redisson_lock__channel:{storm}") == 0L
            }
        } finally {
            clients.forEach { it.close() }
            pools.forEach { it.shutdownNow() }
        }
    }
}
