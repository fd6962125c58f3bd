package dev.baton.lua;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fair-lock scripts run raw: queueing, hand-off, dead-waiter skipping, and the cost of a
 * release + acquire with 1 and with 1,000 queued waiters, counted in Redis commands executed
 * (INFO commandstats), not in time.
 */
@ExtendWith(RedisExtension.class)
class FairScriptsTest {
    private static final List<String> KEYS = List.of("fair", "baton_fair_queue:{fair}", "baton_fair_waiters:{fair}",
            "baton_fair_lock:{fair}", "baton_fair_ticket:{fair}");

    private final RedisServer redis;

    FairScriptsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
        redis.command("SCRIPT", "LOAD", Script.FAIR_ACQUIRE.text());
        redis.command("SCRIPT", "LOAD", Script.FAIR_RELEASE.text());
    }

    private Object run(RespClient client, Script script, String... args) {
        return ScriptRunner.run(client::call, script, KEYS, args);
    }

    private Object acquire(RespClient c, String owner, String waiterLeaseMs) {
        return run(c, Script.FAIR_ACQUIRE, "30000", owner, "0", waiterLeaseMs, "5000", "1");
    }

    private Object release(RespClient c, String owner, int heldBefore) {
        return run(c, Script.FAIR_RELEASE, "30000", owner, Integer.toString(heldBefore), "5000");
    }

    /**
     * Regression: the ticket counter is deleted whenever the queue empties, and it used to start
     * again at 1, so an owner waiting again could get the very ticket of an earlier hand-off to it,
     * and that hand-off's late message then looked current (found by FairQueueBenchmark).
     */
    @Test
    void aTicketIsNeverHandedOutTwiceEvenAfterTheQueueEmptied() {
        try (RespClient c = new RespClient(redis.host(), redis.port());
             RespClient subscriber = new RespClient(redis.host(), redis.port())) {
            subscriber.call("SUBSCRIBE", "baton_fair_lock:{fair}");
            assertEquals(List.of(1L, 1L, 0L), acquire(c, "holder", "10000"));
            long first = (Long) ((List<?>) acquire(c, "w1", "10000")).get(2);
            assertEquals(0L, release(c, "holder", 1));
            assertEquals(List.of("message", "baton_fair_lock:{fair}", "w1#" + first), subscriber.readReply());
            assertEquals(0L, c.call("EXISTS", "baton_fair_ticket:{fair}"), "the queue emptied: no helper key left");
            assertEquals(List.of(1L, 1L, 0L), acquire(c, "w1", "10000"), "w1 claims");
            assertEquals(0L, release(c, "w1", 1));
            assertEquals(List.of(1L, 1L, 0L), acquire(c, "holder", "10000"));
            long second = (Long) ((List<?>) acquire(c, "w1", "10000")).get(2);
            assertTrue(second > first, "w1 waits again with a new, higher ticket: " + first + " then " + second);
            assertEquals(0L, release(c, "holder", 1));
            assertEquals(List.of("message", "baton_fair_lock:{fair}", "w1#" + second), subscriber.readReply(),
                    "the ticket in the message is the one the waiter was given, digit for digit");
        }
    }

    @Test
    void waitersQueueInOrderAndReleaseHandsToTheHead() {
        try (RespClient c = new RespClient(redis.host(), redis.port());
             RespClient subscriber = new RespClient(redis.host(), redis.port())) {
            subscriber.call("SUBSCRIBE", "baton_fair_lock:{fair}");
            assertEquals(List.of(1L, 1L, 0L), acquire(c, "holder", "10000"));
            List<?> first = (List<?>) acquire(c, "w1", "10000");
            assertEquals(0L, first.get(0));
            List<?> second = (List<?>) acquire(c, "w2", "10000");
            assertTrue((Long) second.get(2) > (Long) first.get(2), "tickets rise: " + first + " " + second);
            assertEquals(first.get(2), ((List<?>) acquire(c, "w1", "10000")).get(2), "calling again keeps the ticket");
            assertEquals(List.of("w1", "w2"), c.call("ZRANGE", "baton_fair_queue:{fair}", "0", "-1"));
            assertEquals(0L, release(c, "holder", 1));
            assertEquals("1", c.call("HGET", "fair", "w1"), "handed to the head");
            assertEquals(List.of("message", "baton_fair_lock:{fair}", "w1#" + first.get(2)), subscriber.readReply(),
                    "the hand-off message names the waiter and its ticket");
            long pttl = (Long) c.call("PTTL", "fair");
            assertTrue(pttl > 0 && pttl <= 5000, "claim timeout, pttl " + pttl);
            assertEquals(List.of("w2"), c.call("ZRANGE", "baton_fair_queue:{fair}", "0", "-1"));
            assertEquals(List.of(1L, 1L, 0L), acquire(c, "w1", "10000"), "the head claims what it was handed");
            assertTrue((Long) c.call("PTTL", "fair") > 5000, "claimed: now on its own lease");
        }
    }

    @Test
    void deadHeadsAreSkipped() throws Exception {
        try (RespClient c = new RespClient(redis.host(), redis.port())) {
            acquire(c, "holder", "10000");
            acquire(c, "dead", "1");
            acquire(c, "alive", "10000");
            Thread.sleep(5); // let the dead waiter's 1 ms liveness deadline pass on the server clock
            release(c, "holder", 1);
            assertNull(c.call("HGET", "fair", "dead"));
            assertEquals("1", c.call("HGET", "fair", "alive"));
            assertEquals(0L, c.call("EXISTS", "baton_fair_queue:{fair}"), "queue emptied and removed");
        }
    }

    @Test
    void aLeavingWaiterPassesOnAHandOffItNeverClaimed() {
        try (RespClient c = new RespClient(redis.host(), redis.port())) {
            acquire(c, "holder", "10000");
            acquire(c, "w1", "10000");
            acquire(c, "w2", "10000");
            release(c, "holder", 1); // hands to w1
            assertEquals(0L, release(c, "w1", 1), "w1 gives up: leaving releases what it was handed");
            assertEquals("1", c.call("HGET", "fair", "w2"));
        }
    }

    @Test
    void releaseAndAcquireCostDoesNotGrowWithTheQueue() {
        long one = commandsPerHandOff(1);
        long two = commandsPerHandOff(2);
        long thousand = commandsPerHandOff(1_000);
        // One waiter: the release also empties the queue and deletes its keys (a constant).
        assertEquals(two, thousand, "the same commands with 2 and with 1,000 queued waiters");
        assertTrue(thousand <= one, "1,000 waiters cost no more than 1: " + thousand + " vs " + one);
    }

    /** Redis commands executed by one release (handing on) plus the next holder's claim. */
    private long commandsPerHandOff(int waiters) {
        redis.command("FLUSHALL");
        try (RespClient c = new RespClient(redis.host(), redis.port())) {
            acquire(c, "holder", "60000");
            for (int i = 0; i < waiters; i++) {
                acquire(c, "w" + i, "60000");
            }
            redis.command("CONFIG", "RESETSTAT");
            release(c, "holder", 1);
            acquire(c, "w0", "60000");
            return totalCalls();
        }
    }

    private long totalCalls() {
        long total = 0;
        for (String line : ((String) redis.command("INFO", "commandstats")).split("\r?\n")) {
            if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info") && !line.startsWith("cmdstat_config")) {
                total += Long.parseLong(line.replaceAll("^[^:]*:calls=(\\d+),.*", "$1"));
            }
        }
        return total;
    }

    /**
     * The line's keys expire a waiter timeout after the last call that queued or refreshed a
     * waiter (so waiters a data loss brought back, or whose leave was lost, are not left for ever),
     * and a later call sets that time again.
     */
    @Test
    void theLinesKeysExpireAWaiterTimeoutAfterTheLastCall() {
        try (RespClient c = new RespClient(redis.host(), redis.port())) {
            acquire(c, "a:1", "5000");
            acquire(c, "b:1", "5000");
            for (String key : List.of(KEYS.get(1), KEYS.get(2), KEYS.get(4))) {
                long pttl = (Long) c.call("PTTL", key);
                assertTrue(pttl > 4000 && pttl <= 5000, key + " PTTL " + pttl);
            }
            c.call("PEXPIRE", KEYS.get(1), "100");
            acquire(c, "b:1", "5000"); // b refreshes its place
            long pttl = (Long) c.call("PTTL", KEYS.get(1));
            assertTrue(pttl > 4000, "a waiter's call sets the line's expiry again: " + pttl);
        }
    }
}
