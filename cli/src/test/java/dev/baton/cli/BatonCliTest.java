package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The baton command, run in-process against the fixture's Redis, checked by its output. */
@ExtendWith(RedisExtension.class)
class BatonCliTest {
    private final RedisServer redis;

    BatonCliTest(RedisServer redis) {
        this.redis = redis;
    }

    private record Result(int exit, String out, String err) {
    }

    private Result run(String stdin, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = BatonCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
        return new Result(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void theDemoProvesItsInvariants() {
        Result r = run("", "demo", "--redis", redis.uri(), "--workers", "4", "--permits", "2", "--items", "30", "--no-progress");
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().contains("All invariants hold."), r.out());
        assertTrue(r.out().matches("(?s).*max concurrent calls\\s+[12] \\(permits 2\\)\\s+ok.*"), r.out());
        assertTrue(r.out().matches("(?s).*ledger entries\\s+30 \\(work items 30\\)\\s+ok.*"), r.out());
        assertEquals(List.of(), redis.command("KEYS", "*demo:*"), "the demo cleans up after itself");
    }

    @Test
    void theDemoRecoversFromACrashedWorker() {
        Result r = run("", "demo", "--redis", redis.uri(), "--workers", "3", "--permits", "2", "--items", "20",
                "--fail-one", "--no-progress");
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().contains("crashed worker 2"), r.out());
        assertTrue(r.out().matches("(?s).*permits available at end\\s+2 of 2\\s+ok.*"), r.out());
        assertTrue(r.out().contains("All invariants hold."), r.out());
    }

    @Test
    void theDemoRunsOnAnEmbeddedRedisWhenNoneIsGiven() {
        Result r = run("", "demo", "--workers", "2", "--items", "6", "--no-progress");
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().startsWith("Redis: embedded redis-server"), r.out());
    }

    @Test
    void inspectListAndForceUnlockALock() throws Exception {
        redis.command("FLUSHALL");
        try (Baton baton = Baton.create(BatonOptions.create(redis.uri()))) {
            BatonLock lock = baton.lock("ops:orders");
            lock.lock();
            Result inspect = run("", "inspect", "--redis", redis.uri(), "ops:orders");
            assertEquals(0, inspect.exit(), inspect.err());
            assertTrue(inspect.out().matches("(?s).*kind:\\s+lock.*"), inspect.out());
            assertTrue(inspect.out().contains(baton.clientId()), inspect.out());
            Result json = run("", "inspect", "--redis", redis.uri(), "ops:orders", "--json");
            assertTrue(json.out().startsWith("{\"name\":\"ops:orders\",\"kind\":\"lock\",\"holders\":[{\"owner\":\""), json.out());

            redis.command("CONFIG", "RESETSTAT");
            Result list = run("", "list", "--redis", redis.uri(), "ops:*");
            assertTrue(list.out().contains("hash") && list.out().contains("ops:orders") && list.out().contains("1 key(s)"), list.out());
            assertTrue(redis.calls("scan") > 0, "list walks the keyspace with SCAN");
            assertEquals(0L, redis.calls("keys"), "and never with KEYS, which blocks Redis");

            Result declined = run("n\n", "force-unlock", "--redis", redis.uri(), "ops:orders");
            assertEquals(1, declined.exit());
            assertTrue(declined.out().contains("Not unlocked."), declined.out());
            assertTrue(lock.isLocked());

            Result forced = run("", "force-unlock", "--redis", redis.uri(), "ops:orders", "--yes");
            assertEquals(0, forced.exit(), forced.err());
            assertFalse(lock.isLocked());
        }
    }

    @Test
    void inspectTellsLatchesAndSemaphoresApartAndWatchRepeats() throws Exception {
        redis.command("FLUSHALL");
        try (Baton baton = Baton.create(BatonOptions.create(redis.uri()))) {
            baton.permitExpirableSemaphore("ops:partner").trySetPermits(3);
            baton.permitExpirableSemaphore("ops:partner").acquire();
            Result sem = run("", "inspect", "--redis", redis.uri(), "ops:partner", "--json");
            assertTrue(sem.out().contains("\"kind\":\"permit-expirable semaphore\",\"availablePermits\":2,\"takenPermits\":1"),
                    sem.out());
            Result absent = run("", "inspect", "--redis", redis.uri(), "ops:nothing");
            assertEquals(1, absent.exit());
            Result watch = run("", "watch", "--redis", redis.uri(), "ops:partner", "--count", "2", "--interval-ms", "100", "--json");
            assertEquals(2, watch.out().lines().count(), watch.out());
        }
    }

    @Test
    void usageErrorsAndAnUnreachableRedisGiveTheUsualExitCodes() {
        assertEquals(2, run("", "inspect").exit(), "missing --redis and NAME");
        assertEquals(2, run("", "demo", "--workers", "0").exit());
        Result down = run("", "inspect", "--redis", "redis://127.0.0.1:1", "x");
        assertEquals(BatonCli.EXIT_UNREACHABLE, down.exit(), down.err());
        assertTrue(run("", "--help").out().contains("force-unlock"));
    }
}
