package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.lease.Lease;
import dev.baton.internal.pubsub.WakeRule;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What makes one kind of lock different from another: its scripts, its channel and how its
 * messages wake waiters. {@link RedisLock} does everything else (the blocking and async API,
 * the hold counts, leases and renewal, the engine), the way the JDK's ReentrantLock forwards to
 * a small Sync.
 */
public interface LockRecipe {

    /**
     * The outcome of one acquire script call: granted, with the owner's hold count now (and a
     * fencing token, for kinds that issue them); or refused, with how long the holder's lease
     * has left (-1 unknown). Absent numbers are 0.
     */
    record Grant(boolean granted, int holds, long retryAfterMs, long token) {

        /**
         * From an acquire script's reply: {@code {1, holds, ...}} when granted,
         * {@code {0, retryAfterMs, ...}} when refused (every lock script answers this way).
         */
        static Grant of(List<Object> reply) {
            long number = (Long) reply.get(1);
            return (Long) reply.get(0) == 1L
                    ? new Grant(true, (int) number, 0, 0)
                    : new Grant(false, 0, number, 0);
        }

        /** This grant with the fencing token the script issued. */
        Grant withToken(long token) {
            return new Grant(granted, holds, retryAfterMs, token);
        }
    }

    /**
     * How many wait for the lock as far as Redis can tell: by default the connections
     * subscribed to its channel (one per client with waiters).
     */
    default CompletableFuture<Long> waiters(CommandExecutor executor) {
        return executor.subscribers(channel());
    }

    /** What the observer calls this kind. */
    BatonObserver.Kind kind();

    /** Whether a grant carries a fencing token (a lease scope then shows it). */
    default boolean fenced() {
        return false;
    }

    /** The channel waiters subscribe to. */
    String channel();

    /** The hash field that holds {@code owner}'s count (the owner id itself, unless a kind says otherwise). */
    default String field(String owner) {
        return owner;
    }

    /** How the watchdog renews this kind's leases. */
    default Lease.Renewal renewal() {
        return Lease.Renewal.HASH_FIELD;
    }

    /** Whether anybody holds the lock (in this kind's sense). */
    CompletableFuture<Boolean> isLocked();

    /** How a message on {@link #channel()} wakes local waiters. */
    WakeRule wakeRule();

    /**
     * Runs the acquire script once.
     *
     * @param heldBefore the owner's hold count before this call, as the client knows it
     * @param willWait   whether the caller will wait if refused (a fair lock then queues it)
     */
    CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait);

    /**
     * Runs the release script; the reply is the holds left, or -1 if nothing was held. An
     * owner's own release is re-sent on connection failures within the command timeout (it is
     * idempotent by hold count, and the owner waits for it); a {@code cleanup} release (the undo
     * of an unanswered acquire, a late grant given back) is sent once and kept in the
     * connection's order, since the owner may already have moved on.
     */
    CompletableFuture<CommandExecutor.Delivered<Long>> release(String owner, int heldBefore, long leaseMs, boolean cleanup);

    /** Deletes the lock whoever holds it; whether it was held. */
    CompletableFuture<Boolean> forceUnlock();

    /** The tag a waiter of {@code owner} answers to ({@code null}: every message concerns it). */
    default String waiterTag(String owner) {
        return null;
    }

    /** A waiter that held nothing gives up: undo what its waiting left in Redis. */
    default CompletableFuture<?> leave(String owner) {
        return CompletableFuture.completedFuture(null);
    }
}
