package dev.baton;

import dev.baton.lua.Script;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton under a Redis ACL user allowed exactly the commands docs/security.md lists for the
 * server's version (read from that page, not copied), on contended paths too; every command a
 * Lua script calls is in those lists; a user without script rights gets a clear error; passwords
 * never appear in messages, logs or {@code toString()}.
 */
class AclTest {
    private static final Path SECURITY_MD = Path.of("").toAbsolutePath().resolveSibling("docs").resolve("security.md");

    /** The documented ACL rules for a server of this major version, without "ACL SETUSER baton". */
    static String documentedRules(int majorVersion) throws IOException {
        String page = Files.readString(SECURITY_MD);
        String heading = majorVersion >= 7 ? "Redis 7.0 and later" : "Redis 6.2";
        int at = page.indexOf(heading);
        assertTrue(at >= 0, "security.md has a section for " + heading);
        Matcher line = Pattern.compile("ACL SETUSER baton (.*)").matcher(page.substring(at));
        assertTrue(line.find(), "security.md gives the rule line for " + heading);
        return line.group(1).trim();
    }

    @Test
    void everyCommandTheScriptsCallIsInBothDocumentedLines() throws IOException {
        Set<String> called = new TreeSet<>();
        Matcher call = Pattern.compile("redis\\.call\\('([a-z]+)'").matcher("");
        for (Script script : Script.values()) {
            call.reset(script.text());
            while (call.find()) {
                called.add(call.group(1));
            }
            if (script.text().contains("redis.call(ARGV[#ARGV]")) {
                called.add("publish");
            }
        }
        for (int major : List.of(6, 7)) {
            Set<String> allowed = new TreeSet<>();
            for (String rule : documentedRules(major).split("\\s+")) {
                if (rule.startsWith("+")) {
                    allowed.add(rule.substring(1).replaceAll("\\|.*", "")); // +pubsub|numsub allows the scripts' pubsub
                }
            }
            Set<String> missing = new TreeSet<>(called);
            missing.removeAll(allowed);
            assertTrue(missing.isEmpty(), "the Redis " + major + " line lacks " + missing);
        }
    }

    @Test
    void everySynchronizerWorksUnderTheDocumentedAclUser() throws Exception {
        ExecutorService threads = Executors.newCachedThreadPool();
        try (RedisServer redis = RedisServer.start()) {
            int major = redis.binary().majorVersion();
            System.out.println("[acl] " + redis.binary().version() + ": the rules of security.md for "
                    + (major >= 7 ? "Redis 7.0 and later" : "Redis 6.2"));
            redis.command(("ACL SETUSER baton " + documentedRules(major).replace(">CHANGE-ME", ">s3cret")).split(" "));
            String uri = "redis://baton:s3cret@" + redis.host() + ":" + redis.port();
            BatonOptions options = BatonOptions.builder().redisUri(uri).watchdogTimeout(Duration.ofMillis(600))
                    .fairLockWaiterTimeout(Duration.ofMillis(900)).build();
            try (Baton a = Baton.create(options); Baton b = Baton.create(options)) {
                // A lock: held past its watchdog timeout (renewal), waited for (SUBSCRIBE), released
                // (PUBLISH), then forced open.
                BatonLock lock = a.lock("acl-lock");
                lock.lock();
                Future<Boolean> lockWaiter = threads.submit(() -> b.lock("acl-lock").tryLock(10, TimeUnit.SECONDS));
                redis.awaitSubscribers("redisson_lock__channel:{acl-lock}", 1);
                Thread.sleep(900); // longer than the 600 ms watchdog timeout: only renewal keeps it
                assertTrue(lock.isHeldByCurrentThread(), "renewed under the ACL user");
                lock.unlock();
                assertTrue(lockWaiter.get(10, TimeUnit.SECONDS));
                assertTrue(b.lock("acl-lock").forceUnlock());

                // Threads of one client taking a lock in turn while another client waits for it too.
                Future<Boolean> otherClient = threads.submit(() -> {
                    BatonLock theirs = a.lock("acl-pass");
                    boolean got = theirs.tryLock(10, TimeUnit.SECONDS);
                    if (got) {
                        theirs.unlock();
                    }
                    return got;
                });
                List<Future<Integer>> passers = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    passers.add(threads.submit(() -> {
                        BatonLock mine = b.lock("acl-pass");
                        for (int i = 0; i < 40; i++) {
                            mine.lock();
                            mine.unlock();
                        }
                        return 40;
                    }));
                }
                for (Future<Integer> p : passers) {
                    assertEquals(40, p.get(30, TimeUnit.SECONDS));
                }
                assertTrue(otherClient.get(10, TimeUnit.SECONDS), "the other client got its turn");

                // A fair lock with a queued waiter; a read lock renewed, a writer waiting (mark).
                BatonLock fair = a.fairLock("acl-fair");
                fair.lock();
                Future<Boolean> fairWaiter = threads.submit(() -> b.fairLock("acl-fair").tryLock(10, TimeUnit.SECONDS));
                redis.awaitSubscribers("baton_fair_lock:{acl-fair}", 1);
                fair.unlock();
                assertTrue(fairWaiter.get(10, TimeUnit.SECONDS), "handed over through the queue");
                BatonLock read = a.readWriteLock("acl-rw").readLock();
                read.lock();
                Future<Boolean> writer = threads.submit(() -> b.readWriteLock("acl-rw").writeLock().tryLock(10, TimeUnit.SECONDS));
                redis.awaitSubscribers("redisson_rwlock:{acl-rw}", 1);
                Thread.sleep(900);
                assertTrue(read.isHeldByCurrentThread(), "read hold renewed");
                read.unlock();
                assertTrue(writer.get(10, TimeUnit.SECONDS));
                assertTrue(a.readWriteLock("acl-rw").writeLock().forceUnlock());
                assertTrue(a.fencedLock("acl-fenced").lockAndGetToken() > 0);
                a.fencedLock("acl-fenced").unlock();

                // Semaphores: a waiter woken by a release; an expirable permit; deletion.
                a.semaphore("acl-sem").trySetPermits(1);
                assertTrue(a.semaphore("acl-sem").tryAcquire());
                Future<Boolean> permitWaiter = threads.submit(() -> b.semaphore("acl-sem").tryAcquire(10, TimeUnit.SECONDS));
                redis.awaitSubscribers("redisson_sc:{acl-sem}", 1);
                a.semaphore("acl-sem").release();
                assertTrue(permitWaiter.get(10, TimeUnit.SECONDS));
                assertTrue(a.semaphore("acl-sem").delete());
                BatonPermitExpirableSemaphore pes = a.permitExpirableSemaphore("acl-pes");
                pes.trySetPermits(1);
                pes.release(pes.acquire(5, TimeUnit.SECONDS));
                assertTrue(pes.delete());

                // A latch awaited by another client and counted down.
                a.countDownLatch("acl-latch").trySetCount(1);
                Future<Boolean> latchWaiter = threads.submit(() -> b.countDownLatch("acl-latch").await(10, TimeUnit.SECONDS));
                redis.awaitSubscribers("redisson_countdownlatch__channel__{acl-latch}", 1);
                a.countDownLatch("acl-latch").countDown();
                assertTrue(latchWaiter.get(10, TimeUnit.SECONDS));

                // A rate limiter: admitted, a wait reserved and undone by a cancel, read, deleted.
                BatonRateLimiter rate = a.rateLimiter("acl-rate", RateLimit.of(1, Duration.ofSeconds(10)));
                assertTrue(rate.tryAcquire());
                java.util.concurrent.CompletableFuture<Void> reserved = b.rateLimiter("acl-rate", RateLimit.of(1, Duration.ofSeconds(10)))
                        .acquireAsync(1).toCompletableFuture();
                dev.baton.testkit.Await.until(Duration.ofSeconds(5), () -> "reserved", () -> rate.state().reservedAhead().toSeconds() >= 15);
                reserved.cancel(false);
                dev.baton.testkit.Await.until(Duration.ofSeconds(5), () -> "undone", () -> rate.state().reservedAhead().toSeconds() < 11);
                rate.setLimit(RateLimit.of(2, Duration.ofSeconds(10)));
                assertTrue(rate.delete());
            }
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aForbiddenCommandIsAClearErrorAndPasswordsStayOutOfMessages() throws Exception {
        PrintStream stderr = System.err;
        ByteArrayOutputStream logged = new ByteArrayOutputStream();
        List<String> shown = new ArrayList<>();
        try (RedisServer redis = RedisServer.start()) {
            redis.command("ACL", "SETUSER", "reader", "on", ">t0psecret", "~*", "&*", "-@all", "+hello", "+auth",
                    "+client|setname", "+ping", "+info", "+get", "+subscribe", "+unsubscribe");
            System.setErr(new PrintStream(logged, true, StandardCharsets.UTF_8));
            CompletableFuture<String> lost = new CompletableFuture<>();
            BatonOptions options = BatonOptions.builder()
                    .redisUri("redis://reader:t0psecret@" + redis.host() + ":" + redis.port())
                    .commandTimeout(Duration.ofMillis(500))
                    .leaseLostListener((n, o, r) -> lost.complete(r)).build();
            shown.add(options.toString());
            try (Baton baton = Baton.create(options)) {
                shown.add(baton.toString());
                BatonException e = assertThrows(BatonException.class, () -> baton.lock("forbidden").tryLock());
                shown.add(String.valueOf(e));
                assertTrue(e.getMessage().contains("NOPERM") || e.getMessage().contains("can't run this command"),
                        e.getMessage());
                assertTrue(e.getMessage().contains("lock_acquire.lua"), "says which operation: " + e.getMessage());
                redis.pause();
                try {
                    shown.add(String.valueOf(assertThrows(RedisUnavailableException.class, () -> baton.lock("x").isLocked())));
                } finally {
                    redis.resume();
                }
            }
            BatonException wrong = assertThrows(BatonException.class,
                    () -> Baton.create("redis://reader:wrongpassword@" + redis.host() + ":" + redis.port()));
            shown.add(String.valueOf(wrong));
            assertFalse(wrong instanceof RedisUnavailableException, "a refusal of the credentials is no outage: " + wrong);
            assertTrue(wrong.getMessage().contains("refused Baton's credentials") && wrong.getMessage().contains("WRONGPASS"),
                    "says what Redis refused: " + wrong.getMessage());
            RedisUnavailableException unreachable = assertThrows(RedisUnavailableException.class,
                    () -> Baton.create(BatonOptions.builder().redisUri("redis://reader:t0psecret@127.0.0.1:1")
                            .commandTimeout(Duration.ofMillis(500)).build()));
            shown.add(String.valueOf(unreachable));
            assertEquals(0L, redis.command("EXISTS", "forbidden"));
        } finally {
            System.setErr(stderr);
        }
        String everything = String.join("\n", shown) + "\n" + logged.toString(StandardCharsets.UTF_8);
        stderr.print(logged.toString(StandardCharsets.UTF_8));
        for (String secret : List.of("t0psecret", "wrongpassword")) {
            assertFalse(everything.contains(secret), "password in messages or logs: " + everything);
        }
    }
}
