package dev.baton.lua;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The catalog of Baton's Lua scripts: one constant per operation, one {@code .lua} file per
 * constant (in this module's resources, next to this class). Each file opens with a header
 * naming its KEYS, ARGV, reply and what it publishes; {@code docs/data-layout.md} lists the
 * keys and channels they touch.
 *
 * <p>The text is loaded once, when the enum is initialised, and its SHA-1 is computed the way
 * Redis computes it, so callers can send {@code EVALSHA} first and fall back to {@code EVAL}
 * only after a {@code NOSCRIPT} reply.
 *
 * <p>This module is internal to Baton; its API may change in any release.
 */
public enum Script {
    /** Take or re-enter a reentrant lock. */
    LOCK_ACQUIRE("lock_acquire.lua"),
    /** Give back one hold of a reentrant lock. */
    LOCK_RELEASE("lock_release.lua"),
    /** Batched watchdog renewal of reentrant-lock holds. */
    LOCK_RENEW("lock_renew.lua"),
    /** Delete a reentrant lock whoever holds it. */
    LOCK_FORCE_UNLOCK("lock_force_unlock.lua"),
    /** Arm a count-down latch if it is not armed. */
    LATCH_TRY_SET_COUNT("latch_try_set_count.lua"),
    /** Count a latch down by one, once per request id. */
    LATCH_COUNT_DOWN("latch_count_down.lua"),
    /** Delete a count-down latch and tell its waiters. */
    LATCH_DELETE("latch_delete.lua"),
    /** Take a fair lock in arrival order, or join and stay alive in its queue. */
    FAIR_ACQUIRE("fair_acquire.lua"),
    /** Give back one hold of a fair lock (handing it to the next live waiter), or leave the queue. */
    FAIR_RELEASE("fair_release.lua"),
    /** Delete a fair lock whoever holds it and hand it to the next live waiter. */
    FAIR_FORCE_UNLOCK("fair_force_unlock.lua"),
    /** Take or re-enter a fenced lock and return its fencing token. */
    FENCED_ACQUIRE("fenced_acquire.lua"),
    /** Take permits from a semaphore if enough are available, once per request id. */
    SEMAPHORE_ACQUIRE("semaphore_acquire.lua"),
    /** Undo a semaphore acquire whose reply never came, once per request id. */
    SEMAPHORE_CANCEL("semaphore_cancel.lua"),
    /** Add (or remove) semaphore permits, once per request id: release and addPermits. */
    SEMAPHORE_ADD("semaphore_add.lua"),
    /** Give a semaphore its initial permits if it does not exist. */
    SEMAPHORE_TRY_SET("semaphore_try_set.lua"),
    /** Take every available permit. */
    SEMAPHORE_DRAIN("semaphore_drain.lua"),
    /** Delete a semaphore and wake its waiters. */
    SEMAPHORE_DELETE("semaphore_delete.lua"),
    /** Take permits of a permit-expirable semaphore, each under an id, once per attempt. */
    EXPIRABLE_ACQUIRE("expirable_acquire.lua"),
    /** Undo a permit-expirable semaphore acquire whose caller will never have its permits, once. */
    EXPIRABLE_CANCEL("expirable_cancel.lua"),
    /** Return a permit, by id, to a permit-expirable semaphore. */
    EXPIRABLE_RELEASE("expirable_release.lua"),
    /** Give a held permit a new lease. */
    EXPIRABLE_UPDATE_LEASE("expirable_update_lease.lua"),
    /** Read or change a permit-expirable semaphore's count, after returning expired permits. */
    EXPIRABLE_PERMITS("expirable_permits.lua"),
    /** Take or re-enter the read side of a read-write lock. */
    RWLOCK_READ_ACQUIRE("rwlock_read_acquire.lua"),
    /** Give back one read hold. */
    RWLOCK_READ_RELEASE("rwlock_read_release.lua"),
    /** Take or re-enter the write side of a read-write lock. */
    RWLOCK_WRITE_ACQUIRE("rwlock_write_acquire.lua"),
    /** Give back one write hold. */
    RWLOCK_WRITE_RELEASE("rwlock_write_release.lua"),
    /** Delete a read-write lock held in a given mode. */
    RWLOCK_FORCE_UNLOCK("rwlock_force_unlock.lua"),
    /** Batched watchdog renewal of read holds. */
    RWLOCK_READ_RENEW("rwlock_read_renew.lua"),
    /** A waiting writer gives up and removes its mark. */
    RWLOCK_WRITER_LEAVE("rwlock_writer_leave.lua"),
    /** Admit permits of a rate limiter now or reserve their slot, on Redis's clock, once per request id. */
    RATE_ACQUIRE("rate_acquire.lua"),
    /** Undo a rate limiter request whose caller gave up or heard no reply, once per request id. */
    RATE_CANCEL("rate_cancel.lua"),
    /** Read a rate limiter's limit and backlog on Redis's clock. */
    RATE_STATE("rate_state.lua"),
    /** Change a rate limiter's limit for every client, keeping its backlog. */
    RATE_SET_LIMIT("rate_set_limit.lua"),
    /** Delete a rate limiter. */
    RATE_DELETE("rate_delete.lua"),
    /** Read a leader election: the leader, its epoch and since when, and the live candidates. */
    ELECTION_STATE("election_state.lua");

    private final String fileName;
    private final String text;
    private final String sha1;

    Script(String fileName) {
        this.fileName = fileName;
        this.text = load(fileName);
        this.sha1 = sha1Hex(text);
    }

    /** The file this script is read from, e.g. {@code lock_acquire.lua}. */
    public String fileName() {
        return fileName;
    }

    /** The script's source, exactly as sent with {@code EVAL} or {@code SCRIPT LOAD}. */
    public String text() {
        return text;
    }

    /** The lower-case hex SHA-1 of {@link #text()}, the digest {@code EVALSHA} takes. */
    public String sha1() {
        return sha1;
    }

    private static String load(String fileName) {
        try (InputStream in = Script.class.getResourceAsStream(fileName)) {
            if (in == null) {
                throw new IllegalStateException("Lua script " + fileName + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Lua script " + fileName, e);
        }
    }

    private static String sha1Hex(String text) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-1");
            return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-1", e);
        }
    }
}
