package dev.baton.lua;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fair-lock scripts in election mode (two more keys, the identity as one more argument), and
 * election_state.lua, run raw: the leader's identity, epoch and since in the lock hash, a new
 * epoch for each claim and none for a re-entry, epochs that keep rising after the counter is lost,
 * the identity carried through a hand-off, and the state anyone reads.
 */
@ExtendWith(RedisExtension.class)
class ElectionScriptsTest {
    private static final String NAME = "nightly";
    private static final List<String> KEYS = List.of(Layout.leader(NAME), Layout.leaderQueue(NAME),
            Layout.leaderWaiters(NAME), Layout.leaderChannel(NAME), Layout.leaderTicket(NAME), Layout.leaderEpoch(NAME),
            Layout.leaderIdentities(NAME));
    private static final List<String> STATE_KEYS = List.of(Layout.leader(NAME), Layout.leaderQueue(NAME),
            Layout.leaderWaiters(NAME), Layout.leaderIdentities(NAME));
    private static final String A = "client-a:1";
    private static final String B = "client-b:7";

    private final RedisServer redis;

    ElectionScriptsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
    }

    @SuppressWarnings("unchecked")
    private List<Object> acquire(String owner, int heldBefore, String identity) {
        return (List<Object>) ScriptRunner.run(redis::command, Script.FAIR_ACQUIRE, KEYS, "30000", owner,
                Integer.toString(heldBefore), "10000", "10000", "1", identity);
    }

    private Object release(String owner) {
        return ScriptRunner.run(redis::command, Script.FAIR_RELEASE, KEYS, "30000", owner, "1", "10000");
    }

    @SuppressWarnings("unchecked")
    private List<Object> state() {
        return (List<Object>) ScriptRunner.run(redis::command, Script.ELECTION_STATE, STATE_KEYS);
    }

    private long serverMicros() {
        @SuppressWarnings("unchecked")
        List<Object> time = (List<Object>) redis.command("TIME");
        return Long.parseLong(time.get(0).toString()) * 1_000_000 + Long.parseLong(time.get(1).toString());
    }

    @Test
    void aGrantOnAFreeElectionIssuesAnEpochAndRecordsTheLeader() {
        long before = serverMicros();
        List<Object> grant = acquire(A, 0, "billing@host-1");
        assertEquals(1L, grant.get(0));
        long epoch = (Long) grant.get(2);
        assertTrue(epoch >= before, "the epoch " + epoch + " is below the server clock " + before + " µs");
        assertEquals(Long.toString(epoch), redis.command("GET", Layout.leaderEpoch(NAME)));
        assertEquals("billing@host-1", redis.command("HGET", Layout.leader(NAME), "baton:identity"));
        assertEquals(Long.toString(epoch), redis.command("HGET", Layout.leader(NAME), "baton:epoch"));
        List<Object> s = state();
        assertEquals(A, s.get(0));
        assertEquals("billing@host-1", s.get(1));
        assertEquals(epoch, s.get(2));
        assertEquals(0L, s.get(6), "nobody in line");
    }

    @Test
    void aReEntryKeepsTheEpochAndALostReplysCopyGetsANewOne() {
        long first = (Long) acquire(A, 0, "a").get(2);
        assertEquals(first, acquire(A, 1, "a").get(2), "a re-entry keeps the hold's epoch");
        long copy = (Long) acquire(A, 0, "a").get(2);
        assertTrue(copy > first, "a first acquisition that finds the hold (its reply was lost) gets a new epoch");
    }

    @Test
    void epochsKeepRisingWhenTheCounterIsLost() {
        long first = (Long) acquire(A, 0, "a").get(2);
        assertEquals(0L, release(A));
        redis.command("FLUSHALL"); // Redis restarted without its data
        long second = (Long) acquire(B, 0, "b").get(2);
        assertTrue(second > first, second + " after " + first);
    }

    @Test
    void aHandOffCarriesTheNextCandidatesIdentityAndItsClaimIssuesTheEpoch() {
        long first = (Long) acquire(A, 0, "first").get(2);
        List<Object> queued = acquire(B, 0, "second");
        assertEquals(0L, queued.get(0));
        List<Object> s = state();
        assertEquals(1L, s.get(6));
        assertEquals(B, s.get(7));
        assertEquals("second", s.get(8));
        assertEquals(0L, release(A));
        // Handed to B: its identity and since are there, its epoch comes with its claim.
        assertEquals("second", redis.command("HGET", Layout.leader(NAME), "baton:identity"));
        assertNull(redis.command("HGET", Layout.leader(NAME), "baton:epoch"));
        assertEquals(0L, state().get(2), "epoch 0 between a hand-off and its claim");
        long claimed = (Long) acquire(B, 0, "second").get(2);
        assertTrue(claimed > first);
        assertEquals(claimed, state().get(2));
        assertEquals(0L, redis.command("EXISTS", Layout.leaderIdentities(NAME)), "the identities go with the line");
    }

    @Test
    void theStateOfAnElectionNobodyJoinedIsEmpty() {
        List<Object> s = state();
        assertEquals("", s.get(0));
        assertEquals(0L, s.get(6));
    }
}
