package dev.baton.lua;

import dev.baton.testkit.RedisErrorReply;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The semaphore scripts run raw: counts, refusals, ids, server-clock expiry, deletion. */
@ExtendWith(RedisExtension.class)
class SemaphoreScriptsTest {
    private static final String MEMORY = "60000";
    private static final List<String> EXPIRABLE = List.of("pes", "{pes}:timeout", "redisson_sc:{pes}");

    private static final String ID1 = "00112233445566778899aabbccddeeff";
    private static final String ID2 = "ffeeddccbbaa99887766554433221100";

    private final RedisServer redis;
    private int ids;

    SemaphoreScriptsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
    }

    private Object run(Script script, List<String> keys, String... args) {
        return ScriptRunner.run(redis::command, script, keys, args);
    }

    /** expirable_acquire of the ids (the last argument: the lease), under the first id's request key. */
    private Object expirableAcquire(String... idsAndLease) {
        return run(Script.EXPIRABLE_ACQUIRE, expirableKeys(idsAndLease[0]), with(idsAndLease, MEMORY));
    }

    /** expirable_cancel of an attempt's ids, under the first id's request key. */
    private Object expirableCancel(String... ids) {
        return run(Script.EXPIRABLE_CANCEL, expirableKeys(ids[0]), with(ids, MEMORY));
    }

    private static List<String> expirableKeys(String firstId) {
        return List.of(EXPIRABLE.get(0), EXPIRABLE.get(1), EXPIRABLE.get(2), Layout.request("pes", firstId));
    }

    private static String[] with(String[] args, String last) {
        String[] all = java.util.Arrays.copyOf(args, args.length + 1);
        all[args.length] = last;
        return all;
    }

    /** A fresh request id, as the client makes one per request. */
    private String id() {
        return String.format("%016x", ++ids);
    }

    private static String key(String id) {
        return "baton_request:{sem}:" + id;
    }

    /** The plain semaphore's keys for a change: the name, its channel, the request's key, keys to forget. */
    private static List<String> change(String id, String... forget) {
        List<String> keys = new ArrayList<>(List.of("sem", "redisson_sc:{sem}", key(id)));
        keys.addAll(Arrays.asList(forget));
        return keys;
    }

    private Object acquire(String permits, String id, String... forget) {
        List<String> keys = new ArrayList<>(List.of("sem", key(id)));
        keys.addAll(Arrays.asList(forget));
        return run(Script.SEMAPHORE_ACQUIRE, keys, permits, MEMORY);
    }

    private Object add(String change, String id) {
        return run(Script.SEMAPHORE_ADD, change(id), change, "2147483647", MEMORY);
    }

    private Object trySet(String permits, String id) {
        return run(Script.SEMAPHORE_TRY_SET, change(id), permits, MEMORY);
    }

    private Object cancel(String permits, String id) {
        return run(Script.SEMAPHORE_CANCEL, change(id), permits, MEMORY);
    }

    @Test
    void acquireTakesOnlyWhatIsThereAndSaysWhetherTheSemaphoreExists() {
        assertEquals(List.of(0L, 0L, 0L), acquire("1", id()), "absent: 0 permits");
        assertEquals(1L, trySet("3", id()));
        assertEquals(0L, trySet("9", id()));
        assertEquals(List.of(1L, 1L), acquire("2", id()));
        assertEquals(List.of(0L, 1L, 1L), acquire("2", id()), "exists, not enough: 1 free");
        assertEquals(3L, add("2", id()));
        assertEquals(3L, run(Script.SEMAPHORE_DRAIN, List.of("sem")));
        assertEquals("0", redis.command("GET", "sem"), "drained, still there");
        RedisErrorReply overflow = assertThrows(RedisErrorReply.class,
                () -> run(Script.SEMAPHORE_ADD, change(id()), "2147483647", "2147483646", MEMORY));
        assertTrue(overflow.getMessage().startsWith("BATON_ARG"), overflow.getMessage());
        assertEquals(1L, run(Script.SEMAPHORE_DELETE, List.of("sem", "redisson_sc:{sem}", "{sem}:timeout")));
        assertNull(redis.command("GET", "sem"));
        redis.command("RPUSH", "sem", "x");
        String refused = id();
        for (Script script : List.of(Script.SEMAPHORE_ACQUIRE, Script.SEMAPHORE_ADD)) {
            RedisErrorReply e = assertThrows(RedisErrorReply.class,
                    () -> run(script, change(refused), "1", "2147483647", MEMORY));
            assertTrue(e.getMessage().contains("WRONGTYPE"), script + ": " + e.getMessage());
        }
        assertEquals(1L, redis.command("LLEN", "sem"), "left alone");
        assertEquals(0L, redis.command("EXISTS", key(refused)), "a refused release leaves no request key");
    }

    @Test
    void aReleaseReSentAfterADeleteDoesNotBringTheSemaphoreBack() {
        trySet("1", id());
        String giving = id();
        assertEquals(2L, add("1", giving));
        assertEquals(1L, run(Script.SEMAPHORE_DELETE, List.of("sem", "redisson_sc:{sem}", "{sem}:timeout")));
        assertEquals(0L, add("1", giving), "the late copy: applied before, so nothing changes");
        assertEquals(0L, redis.command("EXISTS", "sem"), "not even as \"0\"");
        assertEquals(1L, trySet("4", id()), "so trySetPermits still finds it absent");
    }

    @Test
    void everyCopyOfOneAcquireOrReleaseCountsOnce() {
        trySet("3", id());
        String taking = id();
        assertEquals(List.of(1L, 1L), acquire("2", taking));
        assertEquals(List.of(1L, 1L), acquire("2", taking), "a re-sent copy takes nothing more");
        String giving = id();
        assertEquals(3L, add("2", giving));
        assertEquals(3L, add("2", giving), "a re-sent release adds nothing more");
        assertEquals("3", redis.command("GET", "sem"));
        long ttl = (Long) redis.command("PTTL", key(giving));
        assertTrue(ttl > 50_000 && ttl <= 60_000, "a request key lives for the memory: " + ttl);
    }

    @Test
    void cancellingAnAcquireGivesItsPermitsBackOnceOrStopsItsLateCopy() {
        trySet("3", id());
        String ran = id();
        acquire("2", ran);
        assertEquals(1L, cancel("2", ran), "it had run: permits back");
        assertEquals(0L, cancel("2", ran), "cancelled once only");
        assertEquals("3", redis.command("GET", "sem"));
        assertEquals(List.of(0L, 1L, 3L), acquire("2", ran), "a copy arriving after the cancel takes nothing");
        String late = id();
        assertEquals(0L, cancel("1", late), "not run yet");
        assertEquals(List.of(0L, 1L, 3L), acquire("1", late), "so it never takes anything");
        assertEquals("3", redis.command("GET", "sem"));
        String deleted = id();
        acquire("1", deleted);
        redis.command("DEL", "sem");
        assertEquals(2L, cancel("1", deleted), "deleted: nothing resurrected");
        assertEquals(0L, redis.command("EXISTS", "sem"));
    }

    @Test
    void aReSentTrySetRepliesAsTheFirstCopyDid() {
        String setting = id();
        assertEquals(1L, trySet("2", setting));
        assertEquals(1L, trySet("2", setting), "set by this request");
        assertEquals(0L, trySet("2", id()), "another request: set already");
    }

    @Test
    void answeredRequestsAreForgotten() {
        trySet("5", id());
        String a = id();
        String b = id();
        acquire("1", a);
        add("1", b);
        assertEquals(1L, redis.command("EXISTS", key(a)));
        acquire("1", id(), key(a), key(b));
        assertEquals(0L, redis.command("EXISTS", key(a)), "a forgotten");
        assertEquals(0L, redis.command("EXISTS", key(b)), "b forgotten");
    }

    @Test
    void expirableAcquireIsIdempotentPerIdAndExpiresOnTheServerClock() throws Exception {
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "try_set", "1", "2147483647"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, "50"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, "50"), "re-sent: same permit");
        assertEquals("0", redis.command("GET", "pes"));
        @SuppressWarnings("unchecked")
        List<Long> refused = (List<Long>) expirableAcquire(ID2, "-1");
        assertEquals(0L, refused.get(0));
        // The lease counts from the server's now in ms rounded up: the expiry is at most 1 ms later.
        assertTrue(refused.get(1) >= 0 && refused.get(1) <= 51, "waits for the earliest expiry: " + refused);
        Thread.sleep(60); // let id-1's 50 ms lease pass on the server's clock
        assertEquals(0L, ((List<?>) expirableAcquire(ID1, "50")).get(0),
                "a late copy of id-1's attempt, whose permit expired: refused, not reported held, nothing taken");
        assertEquals(List.of(1L, 0L), expirableAcquire(ID2, "-1"), "expired permit reclaimed");
        List<?> taken = (List<?>) redis.command("ZRANGE", "{pes}:timeout", "0", "-1", "WITHSCORES");
        assertEquals(2, taken.size());
        assertEquals(16L, redis.command("EVAL", "return string.len(redis.call('zrange', KEYS[1], 0, 0)[1])", "1",
                "{pes}:timeout"), "the id is stored as 16 raw bytes, as Redisson does");
        assertEquals("922337203685477", taken.get(1), "no expiry: Redisson's mark");
        assertEquals(0L, run(Script.EXPIRABLE_RELEASE, EXPIRABLE, ID1), "expired and reclaimed already");
        assertEquals(1L, run(Script.EXPIRABLE_RELEASE, EXPIRABLE, ID2));
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "available", "0", "2147483647"));
    }

    @Test
    void severalExpirablePermitsAreTakenAllOrNoneAndReleasedInOneCall() {
        String id3 = "0123456789abcdef0123456789abcdef";
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "try_set", "2", "2147483647"));
        @SuppressWarnings("unchecked")
        List<Long> refused = (List<Long>) expirableAcquire(ID1, ID2, id3, "-1");
        assertEquals(List.of(0L, -1L, 1L), refused, "three of two: refused, nothing taken");
        assertEquals("2", redis.command("GET", "pes"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, ID2, "60000"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, ID2, "60000"), "re-sent: the same two");
        assertEquals("0", redis.command("GET", "pes"));
        assertEquals(2L, redis.command("ZCARD", "{pes}:timeout"));
        assertEquals(2L, run(Script.EXPIRABLE_RELEASE, EXPIRABLE, ID1, ID2, id3), "two of the three ids were held");
        assertEquals("2", redis.command("GET", "pes"));
        assertEquals(0L, run(Script.EXPIRABLE_RELEASE, EXPIRABLE, ID1, ID2), "a re-sent release changes nothing");
        assertEquals("2", redis.command("GET", "pes"));
    }

    @Test
    void aLateCopyOfAnExpirableAcquireTakesNothingAfterItsReleaseOrItsCancel() {
        String id3 = "0123456789abcdef0123456789abcdef";
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "try_set", "2", "2147483647"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, "-1"));
        assertEquals(1L, run(Script.EXPIRABLE_RELEASE, EXPIRABLE, ID1));
        assertEquals(List.of(0L, -1L, 1L), expirableAcquire(ID1, "-1"),
                "a copy after the release: refused (its permit is not held), and it took nothing");
        assertEquals("2", redis.command("GET", "pes"));
        assertEquals(0L, redis.command("ZCARD", "{pes}:timeout"));

        assertEquals(0L, expirableCancel(ID2, id3), "cancelled before it ran: nothing to give back");
        assertEquals(List.of(0L, -1L, 1L), expirableAcquire(ID2, id3, "-1"), "a copy after the cancel is refused");
        assertEquals("2", redis.command("GET", "pes"));
        assertEquals(0L, expirableCancel(ID2, id3), "a re-sent cancel changes nothing");
        assertEquals("2", redis.command("GET", "pes"));
    }

    @Test
    void aCopyWhoseRequestKeyIsGoneTakesNothingWhileItsPermitIsTaken() {
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "try_set", "3", "2147483647"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, "-1"));
        redis.command("DEL", Layout.request("pes", ID1)); // the key's lifetime ran out (or it was evicted)
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, "-1"), "its permit is live: answered as taken");
        assertEquals("2", redis.command("GET", "pes"), "and nothing taken twice");
        assertEquals(1L, redis.command("ZCARD", "{pes}:timeout"));
    }

    @Test
    void aPermitPastItsExpiryIsNotHeldEvenWhereTheSweepStoppedBeforeIt() throws Exception {
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "try_set", "1", "2147483647"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, "30"));
        Thread.sleep(40); // id-1's lease passes on the server's clock
        oldExpiredPermits(1001); // more than one call's sweep returns (1,000), all ahead of id-1
        assertEquals(0L, ((List<?>) expirableAcquire(ID1, "30")).get(0),
                "a re-sent copy of id-1's attempt: refused, not reported held, nothing taken again");
        oldExpiredPermits(1001);
        assertEquals(0L, run(Script.EXPIRABLE_UPDATE_LEASE, EXPIRABLE, ID1, "60000"), "an expired permit gets no new lease");
    }

    /** Permits of other holders that expired long ago, ahead of every real one in the sweep's order. */
    private void oldExpiredPermits(int n) {
        redis.command("EVAL", "for i = 1, tonumber(ARGV[1]) do redis.call('zadd', KEYS[1], 1, 'old-' .. i) end "
                + "redis.call('decrby', KEYS[2], tonumber(ARGV[1])) return 1", "2", "{pes}:timeout", "pes", Integer.toString(n));
    }

    @Test
    void anExpirableCancelGivesBackWhatTheAttemptTookOnce() {
        assertEquals(1L, run(Script.EXPIRABLE_PERMITS, EXPIRABLE, "try_set", "2", "2147483647"));
        assertEquals(List.of(1L, 0L), expirableAcquire(ID1, ID2, "-1"));
        assertEquals("0", redis.command("GET", "pes"));
        assertEquals(2L, expirableCancel(ID1, ID2));
        assertEquals("2", redis.command("GET", "pes"));
        assertEquals(0L, expirableCancel(ID1, ID2), "a re-sent cancel changes nothing");
        assertEquals(List.of(0L, -1L, 1L), expirableAcquire(ID1, ID2, "-1"), "a copy after the cancel is refused");
        assertEquals("2", redis.command("GET", "pes"));
    }
}
