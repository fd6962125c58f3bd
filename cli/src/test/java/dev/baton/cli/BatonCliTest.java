package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.RateLimit;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

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

    private CliRun run(String stdin, String... args) {
        return CliRun.of(stdin, args);
    }

    @Test
    void theDemoProvesItsInvariants() {
        CliRun r = run("", "demo", "--redis", redis.uri(), "--workers", "4", "--permits", "2", "--items", "30", "--no-progress");
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().contains("All invariants hold."), r.out());
        assertTrue(r.out().matches("(?s).*max concurrent calls\\s+[12] \\(permits 2\\)\\s+ok.*"), r.out());
        assertTrue(r.out().matches("(?s).*ledger entries\\s+30 \\(work items 30\\)\\s+ok.*"), r.out());
        // 30 calls at 20 a second: the partner sees at most 21 in any second, and the run takes
        // at least (30 - 1) / 20 s.
        assertTrue(r.out().matches("(?s).*most calls in any second\\s+(1[0-9]|2[01]) \\(partner allows 21\\)\\s+ok.*"), r.out());
        assertEquals(List.of(), redis.command("KEYS", "*demo:*"), "the demo cleans up after itself");
    }

    @Test
    void theDemoRecoversFromACrashedWorker() {
        CliRun r = run("", "demo", "--redis", redis.uri(), "--workers", "3", "--permits", "2", "--items", "20",
                "--fail-one", "--no-progress");
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().contains("crashed worker 2"), r.out());
        assertTrue(r.out().matches("(?s).*permits available at end\\s+2 of 2\\s+ok.*"), r.out());
        assertTrue(r.out().contains("All invariants hold."), r.out());
    }

    @Test
    void theDemoRunsOnAnEmbeddedRedisWhenNoneIsGiven() {
        CliRun r = run("", "demo", "--workers", "2", "--items", "6", "--no-progress");
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().startsWith("Redis: embedded redis-server"), r.out());
    }

    @Test
    void inspectListAndForceUnlockALock() throws Exception {
        redis.command("FLUSHALL");
        try (Baton baton = Baton.create(BatonOptions.create(redis.uri()))) {
            BatonLock lock = baton.lock("ops:orders");
            lock.lock();
            CliRun inspect = run("", "inspect", "--redis", redis.uri(), "ops:orders");
            assertEquals(0, inspect.exit(), inspect.err());
            assertTrue(inspect.out().matches("(?s).*kind:\\s+lock.*"), inspect.out());
            assertTrue(inspect.out().contains(baton.clientId()), inspect.out());
            CliRun json = run("", "inspect", "--redis", redis.uri(), "ops:orders", "--json");
            assertTrue(json.out().startsWith("{\"name\":\"ops:orders\",\"kind\":\"lock\",\"holders\":[{\"owner\":\""), json.out());

            redis.command("CONFIG", "RESETSTAT");
            CliRun list = run("", "list", "--redis", redis.uri(), "ops:*");
            assertTrue(list.out().contains("hash") && list.out().contains("ops:orders") && list.out().contains("1 key(s)"), list.out());
            assertTrue(redis.calls("scan") > 0, "list walks the keyspace with SCAN");
            assertEquals(0L, redis.calls("keys"), "and never with KEYS, which blocks Redis");

            CliRun declined = run("n\n", "force-unlock", "--redis", redis.uri(), "ops:orders");
            assertEquals(1, declined.exit());
            assertTrue(declined.out().contains("Not unlocked."), declined.out());
            assertTrue(lock.isLocked());

            CliRun forced = run("", "force-unlock", "--redis", redis.uri(), "ops:orders", "--yes");
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
            CliRun sem = run("", "inspect", "--redis", redis.uri(), "ops:partner", "--json");
            assertTrue(sem.out().contains("\"kind\":\"permit-expirable semaphore\",\"availablePermits\":2,\"takenPermits\":1"),
                    sem.out());
            assertTrue(baton.rateLimiter("ops:rate", RateLimit.perSecond(10).withBurst(4)).tryAcquire(3));
            CliRun rate = run("", "inspect", "--redis", redis.uri(), "ops:rate", "--json");
            assertTrue(rate.out().contains("\"kind\":\"rate limiter\",\"key\":\"baton_rate:{ops:rate}\",\"limit\":\"10 per 1000000 µs,"
                    + " burst 4\",\"availablePermits\":1,"), rate.out());
            dev.baton.Candidacy leader = baton.leaderElection("ops:nightly").join("billing@host-1", l -> Thread.sleep(Long.MAX_VALUE));
            assertTrue(leader.awaitLeadership(10, java.util.concurrent.TimeUnit.SECONDS));
            dev.baton.Candidacy waiting = baton.leaderElection("ops:nightly").join("billing@host-2", l -> Thread.sleep(Long.MAX_VALUE));
            dev.baton.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> "host-2 in line",
                    () -> baton.leaderElection("ops:nightly").state().candidates().equals(java.util.List.of("billing@host-2")));
            CliRun election = run("", "inspect", "--redis", redis.uri(), "ops:nightly", "--json");
            assertTrue(election.out().contains("\"kind\":\"leader election\",\"key\":\"baton_leader:{ops:nightly}\","
                    + "\"leader\":{\"identity\":\"billing@host-1\","), election.out());
            assertTrue(election.out().contains("\"epoch\":" + leader.leadership().orElseThrow().epoch() + ","), election.out());
            assertTrue(election.out().contains("\"candidates\":[{\"identity\":\"billing@host-2\","), election.out());
            waiting.close();
            leader.close();
            CliRun absent = run("", "inspect", "--redis", redis.uri(), "ops:nothing");
            assertEquals(1, absent.exit());
            CliRun watch = run("", "watch", "--redis", redis.uri(), "ops:partner", "--count", "2", "--interval-ms", "100", "--json");
            assertEquals(2, watch.out().lines().count(), watch.out());
        }
    }

    @Test
    void usageErrorsAndAnUnreachableRedisGiveTheUsualExitCodes() {
        assertEquals(2, run("", "inspect").exit(), "missing --redis and NAME");
        assertEquals(2, run("", "demo", "--workers", "0").exit());
        CliRun down = run("", "inspect", "--redis", "redis://127.0.0.1:1", "x");
        assertEquals(BatonCli.EXIT_UNREACHABLE, down.exit(), down.err());
        assertTrue(run("", "--help").out().contains("force-unlock"));
    }
}
