package dev.baton.lua;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The read-write lock scripts run raw: Redisson's layout, the writer mark, upgrade, downgrade. */
@ExtendWith(RedisExtension.class)
class ReadWriteScriptsTest {
    private static final String R = "client-a:1";
    private static final String W = "client-b:2:write";

    private final RedisServer redis;

    ReadWriteScriptsTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
    }

    private Object run(Script script, List<String> keys, String... args) {
        return ScriptRunner.run(redis::command, script, keys, args);
    }

    private Object read(String reader, int heldBefore) {
        return run(Script.RWLOCK_READ_ACQUIRE, List.of("doc", "baton_rwlock_writer:{doc}", "{doc}:" + reader + ":rwlock_timeout"),
                "10000", reader, reader + ":write", Integer.toString(heldBefore));
    }

    private Object write(String writer, int heldBefore) {
        String reader = writer.substring(0, writer.length() - 6);
        return run(Script.RWLOCK_WRITE_ACQUIRE, List.of("doc", "baton_rwlock_writer:{doc}", "{doc}:" + reader + ":rwlock_timeout"),
                "10000", writer, reader, Integer.toString(heldBefore), "3000", "1");
    }

    @Test
    void readHoldsGetTheirOwnKeysAndAWaitingWriterKeepsNewReadersOut() {
        assertEquals(List.of(1L, 1L), read(R, 0));
        assertEquals(List.of(1L, 1L), read(R, 0), "re-delivered: still one hold");
        assertEquals(List.of(1L, 2L), read(R, 1));
        assertEquals("read", redis.command("HGET", "doc", "mode"));
        assertEquals("1", redis.command("GET", "{doc}:" + R + ":rwlock_timeout:2"));
        assertEquals(0L, ((List<?>) write(W, 0)).get(0), "a writer waits while reading goes on");
        assertEquals(W, redis.command("GET", "baton_rwlock_writer:{doc}"), "and leaves its mark");
        assertEquals(0L, ((List<?>) read("client-c:3", 0)).get(0), "a new reader is kept out by the mark");
        assertEquals(List.of(1L, 3L), read(R, 2), "a reader that already reads may re-enter");
    }

    /**
     * A read hold whose own key expired while the hash lived on (another reader's longer lease)
     * is gone: a late copy of its acquire must not report it held (the simulation's read-write
     * seed 3023: the "granted" hold was then deleted with the hash by the other reader's release).
     */
    @Test
    void aReadHoldWhoseKeyExpiredIsNotReportedHeldByALateCopy() {
        assertEquals(List.of(1L, 1L), read(R, 0));
        assertEquals(List.of(1L, 1L), read("client-c:3", 0));
        redis.command("DEL", "{doc}:" + R + ":rwlock_timeout:1"); // its lease ran out; the hash lives on for client-c
        assertEquals(List.of(1L, 1L), read(R, 0), "a fresh hold, not the expired one re-reported");
        assertEquals("1", redis.command("GET", "{doc}:" + R + ":rwlock_timeout:1"), "with a lease of its own");
        assertEquals("1", redis.command("HGET", "doc", R), "counted once");
    }

    /**
     * A read field of the writer whose own key expired while other readers kept the hash alive is
     * not an upgrade: without this the writer was refused as upgrading for as long as anyone read
     * (a review found it: a stray field from a late copy kept the owner's write out for good).
     */
    @Test
    void aStrayReadFieldWhoseKeyExpiredDoesNotRefuseItsOwnersWrite() {
        String writer = R + ":write";
        assertEquals(List.of(1L, 1L), read(R, 0));
        redis.command("DEL", "{doc}:" + R + ":rwlock_timeout:1"); // its lease ran out; nobody else reads
        assertEquals(List.of(1L, 1L), write(writer, 0), "the stray field is dropped, the hash with it, and the write granted");
        redis.command("FLUSHALL");
        assertEquals(List.of(1L, 1L), read(R, 0));
        assertEquals(List.of(1L, 1L), read("client-c:3", 0));
        redis.command("DEL", "{doc}:" + R + ":rwlock_timeout:1");
        assertEquals(0L, ((List<?>) write(writer, 0)).get(0), "another reader still reads: waiting, not refused for good");
        assertNull(redis.command("HGET", "doc", R), "the stray field is gone");
    }

    /** A re-delivered read grant gives the hold its lease again: it may be a hold a give-back never released. */
    @Test
    void aReDeliveredReadGrantRenewsTheHold() {
        assertEquals(List.of(1L, 1L), run(Script.RWLOCK_READ_ACQUIRE, List.of("doc", "baton_rwlock_writer:{doc}",
                "{doc}:" + R + ":rwlock_timeout"), "500", R, R + ":write", "0"));
        assertEquals(List.of(1L, 1L), read(R, 0), "re-delivered, with a 10 s lease");
        long keyTtl = (Long) redis.command("PTTL", "{doc}:" + R + ":rwlock_timeout:1");
        long hashTtl = (Long) redis.command("PTTL", "doc");
        org.junit.jupiter.api.Assertions.assertTrue(keyTtl > 5000 && hashTtl > 5000, "lease given again: " + keyTtl + ", " + hashTtl);
    }

    @Test
    void anUpgradeIsRefusedForGoodAndADowngradeKeepsTheRead() {
        read(R, 0);
        assertEquals(List.of(-1L, 0L), write(R + ":write", 0));
        assertNull(redis.command("GET", "baton_rwlock_writer:{doc}"), "no mark for a refused upgrade");
        redis.command("FLUSHALL");
        assertEquals(List.of(1L, 1L), write(W, 0));
        String writerAsReader = W.substring(0, W.length() - 6);
        assertEquals(List.of(1L, 1L), read(writerAsReader, 0), "the writer may read");
        assertEquals(0L, run(Script.RWLOCK_WRITE_RELEASE, List.of("doc", "redisson_rwlock:{doc}"), "10000", W, "1", "1"));
        assertEquals("read", redis.command("HGET", "doc", "mode"), "downgraded");
        assertEquals("1", redis.command("HGET", "doc", writerAsReader));
    }
}
