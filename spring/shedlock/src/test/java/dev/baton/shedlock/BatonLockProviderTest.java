package dev.baton.shedlock;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link BatonLockProvider}'s ShedLock semantics on a real Redis; two clients stand for two nodes. */
@ExtendWith(RedisExtension.class)
class BatonLockProviderTest {
    private final RedisServer redis;
    private Baton a;
    private Baton b;

    BatonLockProviderTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        BatonOptions options = BatonOptions.builder().redisUri(redis.uri()).commandTimeout(Duration.ofSeconds(1)).build();
        a = Baton.create(options);
        b = Baton.create(options);
    }

    @AfterEach
    void close() {
        a.close();
        b.close();
    }

    private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
    }

    private long ttl(String key) {
        return (Long) redis.command("PTTL", key);
    }

    @Test
    void oneNodeGetsTheLockForLockAtMostForAndReleasesItOnUnlock() {
        LockProvider nodeA = new BatonLockProvider(a);
        LockProvider nodeB = new BatonLockProvider(b);
        Optional<SimpleLock> lock = nodeA.lock(config("report", Duration.ofSeconds(10), Duration.ZERO));
        assertTrue(lock.isPresent());
        long ttl = ttl("shedlock:report");
        assertTrue(ttl > 9000 && ttl <= 10_000, "the lease is lockAtMostFor: " + ttl);
        assertTrue(nodeB.lock(config("report", Duration.ofSeconds(10), Duration.ZERO)).isEmpty(), "the other node");
        assertTrue(nodeA.lock(config("report", Duration.ofSeconds(10), Duration.ZERO)).isEmpty(), "another run here");
        // A lock belongs to its acquisition, not to a thread: another thread unlocks it.
        CompletableFuture.runAsync(lock.get()::unlock).join();
        assertEquals(-2L, ttl("shedlock:report"), "released");
        assertTrue(nodeB.lock(config("report", Duration.ofSeconds(10), Duration.ZERO)).isPresent());
        assertThrows(IllegalStateException.class, () -> lock.get().unlock(), "ShedLock's own check: unlocked twice");
    }

    @Test
    void anEarlyUnlockKeepsTheLockUntilLockAtLeastFor() {
        LockProvider provider = new BatonLockProvider(a, "jobs:");
        SimpleLock lock = provider.lock(config("sync", Duration.ofSeconds(10), Duration.ofMillis(3000))).orElseThrow();
        lock.unlock();
        long ttl = ttl("jobs:sync");
        assertTrue(ttl > 2000 && ttl <= 3000, "kept for what is left of lockAtLeastFor: " + ttl);
        assertTrue(new BatonLockProvider(b, "jobs:").lock(config("sync", Duration.ofSeconds(10), Duration.ZERO)).isEmpty());
        Await.until(Duration.ofSeconds(5), () -> "lockAtLeastFor passed", () -> ttl("jobs:sync") == -2L);
        assertTrue(new BatonLockProvider(b, "jobs:").lock(config("sync", Duration.ofSeconds(10), Duration.ZERO)).isPresent());
    }

    @Test
    void keepingLockAtLeastForNeverShortensAnotherNodesLock() {
        SimpleLock first = new BatonLockProvider(a).lock(config("sync", Duration.ofSeconds(10), Duration.ofSeconds(5))).orElseThrow();
        redis.command("DEL", "shedlock:sync"); // force-unlocked by an operator while the task ran
        SimpleLock second = new BatonLockProvider(b).lock(config("sync", Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
        first.unlock(); // lockAtLeastFor has 5 s left: the shortening is checked against the owner
        assertTrue(ttl("shedlock:sync") > 9000, "the other node's lease is untouched: " + ttl("shedlock:sync"));
        second.unlock();
    }

    @Test
    void lockFailsWithinTheCommandTimeoutWhenRedisDoesNotAnswer() {
        BatonLockProvider provider = new BatonLockProvider(a);
        redis.pause();
        try {
            Bounds.assertThrowsWithin(RedisUnavailableException.class, Bounds.failure(Duration.ofSeconds(1)),
                    () -> provider.lock(config("paused", Duration.ofSeconds(10), Duration.ZERO)),
                    "lock() on a paused Redis (so ShedLock does not run the task): the 1 s command timeout + 150 ms, with its margin");
        } finally {
            redis.resume();
        }
    }

    @Test
    void extensionReplacesTheLeaseFromAnyThreadAndFailsOnceTheLeaseIsGone() throws Exception {
        LockProvider provider = new BatonLockProvider(a);
        SimpleLock lock = provider.lock(config("long", Duration.ofSeconds(2), Duration.ZERO)).orElseThrow();
        // ShedLock's KeepAliveLockProvider extends from its own thread: no thread owns the lock.
        SimpleLock extended = CompletableFuture.supplyAsync(() -> lock.extend(Duration.ofSeconds(30), Duration.ZERO))
                .get(5, TimeUnit.SECONDS).orElseThrow();
        assertTrue(ttl("shedlock:long") > 29_000, "extended to 30 s: " + ttl("shedlock:long"));
        assertThrows(IllegalStateException.class, lock::unlock, "the lock before the extension is no longer valid");

        SimpleLock shortened = extended.extend(Duration.ofMillis(300), Duration.ZERO).orElseThrow();
        Await.until(Duration.ofSeconds(3), () -> "the 300 ms lease ran out", () -> ttl("shedlock:long") == -2L);
        assertTrue(new BatonLockProvider(b).lock(config("long", Duration.ofSeconds(10), Duration.ZERO)).isPresent(),
                "another node took it");
        assertFalse(shortened.extend(Duration.ofSeconds(10), Duration.ZERO).isPresent(), "no extension of a lost lock");
    }

    @Test
    void aTaskThatOutlivedLockAtMostForUnlocksWithoutThrowingAndLeavesTheNextHolderAlone() {
        LockProvider provider = new BatonLockProvider(a);
        SimpleLock late = provider.lock(config("slow", Duration.ofMillis(300), Duration.ZERO)).orElseThrow();
        Await.until(Duration.ofSeconds(3), () -> "lockAtMostFor passed", () -> ttl("shedlock:slow") == -2L);
        SimpleLock next = new BatonLockProvider(b).lock(config("slow", Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
        String logged = stderrOf(late::unlock);
        assertTrue(logged.contains("WARN") && logged.contains("'slow'") && logged.contains("lockAtMostFor"),
                "a WARN naming the task (shedlock.md): " + logged);
        assertTrue(ttl("shedlock:slow") > 9000, "the next holder's lock is untouched");
        next.unlock();
    }

    @Test
    void anUnlockRedisDoesNotConfirmIsLoggedNotThrownAndTheLockEndsAtLockAtMostFor() {
        SimpleLock lock = new BatonLockProvider(a).lock(config("paused", Duration.ofSeconds(3), Duration.ZERO)).orElseThrow();
        redis.pause();
        String logged;
        try {
            // ShedLock calls it in a finally block: a throw would replace the task's outcome
            logged = stderrOf(lock::unlock);
        } finally {
            redis.resume();
        }
        assertTrue(logged.contains("WARN") && logged.contains("'paused'") && logged.contains("not confirmed"),
                "a WARN naming the task (shedlock.md): " + logged);
        long ttl = ttl("shedlock:paused");
        assertTrue(ttl == -2L || ttl <= 3000, "released, or ends at lockAtMostFor: " + ttl);
        Await.until(Duration.ofSeconds(5), () -> "free by lockAtMostFor", () -> ttl("shedlock:paused") == -2L);
    }

    /** What the loggers (slf4j-simple, to stderr) wrote while {@code call} ran; it must not throw. */
    private static String stderrOf(Runnable call) {
        java.io.PrintStream stderr = System.err;
        java.io.ByteArrayOutputStream logged = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(logged, true, java.nio.charset.StandardCharsets.UTF_8));
        try {
            call.run();
        } finally {
            System.setErr(stderr);
        }
        String text = logged.toString(java.nio.charset.StandardCharsets.UTF_8);
        stderr.print(text);
        return text;
    }

    @Test
    void badArgumentsAreRefused() {
        assertThrows(NullPointerException.class, () -> new BatonLockProvider(null));
        assertThrows(NullPointerException.class, () -> new BatonLockProvider(a, null));
        assertThrows(NullPointerException.class, () -> new BatonLockProvider(a).lock(null));
    }
}
