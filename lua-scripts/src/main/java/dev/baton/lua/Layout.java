package dev.baton.lua;

/**
 * The one place that spells Redis key and channel names, for the library and for tools that
 * inspect what it left in Redis (the cli). Helper keys and channels wrap the synchronizer's name
 * in a hash tag, {@code prefix:{name}}, so that every key of one synchronizer lands in one Redis
 * Cluster slot; a name that already contains <code>'{'</code> is used as it is. This matches Redisson,
 * so both clients meet on the same keys and channels. docs/data-layout.md lists them all, with
 * their fields and messages.
 */
public final class Layout {
    private Layout() {
    }

    /** {@code name} inside a hash tag, unless it already has one. */
    public static String hashTagged(String name) {
        return name.contains("{") ? name : "{" + name + "}";
    }

    /** The reentrant lock's pub/sub channel: {@code redisson_lock__channel:{name}}. */
    public static String lockChannel(String name) {
        return "redisson_lock__channel:" + hashTagged(name);
    }

    /** A semaphore's channel (both kinds), Redisson's: {@code redisson_sc:{name}}. */
    public static String semaphoreChannel(String name) {
        return "redisson_sc:" + hashTagged(name);
    }

    /**
     * The permit-expirable semaphore's taken permits, Redisson's {@code {name}:timeout} (the
     * name used as it is, with a suffix, when it already has a hash tag).
     */
    public static String expirablePermits(String name) {
        return hashTagged(name) + ":timeout";
    }

    /**
     * The key that remembers one request on a semaphore (either kind) or a count-down latch
     * (Baton's own; Redisson never reads it): {@code baton_request:{name}:<id>}.
     */
    public static String request(String name, String id) {
        return "baton_request:" + hashTagged(name) + ":" + id;
    }

    /** The read-write lock's channel, Redisson's: {@code redisson_rwlock:{name}}. */
    public static String rwlockChannel(String name) {
        return "redisson_rwlock:" + hashTagged(name);
    }

    /** The waiting writer's mark (Baton's own): {@code baton_rwlock_writer:{name}}. */
    public static String writerMark(String name) {
        return "baton_rwlock_writer:" + hashTagged(name);
    }

    /** The prefix of one reader's per-hold keys, Redisson's: {@code {name}:<owner>:rwlock_timeout}. */
    public static String readHoldPrefix(String name, String owner) {
        return hashTagged(name) + ":" + owner + ":rwlock_timeout";
    }

    /** The fenced lock's token counter, Redisson's: {@code redisson_lock_token:{name}}. */
    public static String fencingToken(String name) {
        return "redisson_lock_token:" + hashTagged(name);
    }

    /** The fair lock's waiting queue (ZSET owner -> ticket): {@code baton_fair_queue:{name}}. */
    public static String fairQueue(String name) {
        return "baton_fair_queue:" + hashTagged(name);
    }

    /** The fair lock's waiter deadlines (HASH owner -> ms): {@code baton_fair_waiters:{name}}. */
    public static String fairWaiters(String name) {
        return "baton_fair_waiters:" + hashTagged(name);
    }

    /** The fair lock's ticket counter: {@code baton_fair_ticket:{name}}. */
    public static String fairTicket(String name) {
        return "baton_fair_ticket:" + hashTagged(name);
    }

    /** The fair lock's hand-off channel (message = new holder): {@code baton_fair_lock:{name}}. */
    public static String fairChannel(String name) {
        return "baton_fair_lock:" + hashTagged(name);
    }

    /**
     * The count-down latch's channel, {@code redisson_countdownlatch__channel__{name}}: Redisson
     * always adds the braces here, even to a name that has some.
     */
    public static String latchChannel(String name) {
        return "redisson_countdownlatch__channel__{" + name + "}";
    }

    /**
     * A rate limiter's state, Baton's own (Redisson's {@code RRateLimiter} keeps other keys at
     * the bare name): {@code baton_rate:{name}}, a hash that expires once the limiter is full
     * again.
     */
    public static String rateLimiter(String name) {
        return "baton_rate:" + hashTagged(name);
    }

    /**
     * A leader election's lock hash (a fair lock in election mode: the leader's owner id plus
     * its identity, epoch and since): {@code baton_leader:{name}}.
     */
    public static String leader(String name) {
        return "baton_leader:" + hashTagged(name);
    }

    /** A leader election's queue of candidates (ZSET owner -> ticket): {@code baton_leader_queue:{name}}. */
    public static String leaderQueue(String name) {
        return "baton_leader_queue:" + hashTagged(name);
    }

    /** A leader election's candidate deadlines (HASH owner -> ms): {@code baton_leader_waiters:{name}}. */
    public static String leaderWaiters(String name) {
        return "baton_leader_waiters:" + hashTagged(name);
    }

    /** A leader election's ticket counter: {@code baton_leader_ticket:{name}}. */
    public static String leaderTicket(String name) {
        return "baton_leader_ticket:" + hashTagged(name);
    }

    /** A leader election's hand-off channel (message = next leader's owner id and ticket): {@code baton_leader:{name}}. */
    public static String leaderChannel(String name) {
        return "baton_leader:" + hashTagged(name);
    }

    /** A leader election's epoch counter (never expires): {@code baton_leader_epoch:{name}}. */
    public static String leaderEpoch(String name) {
        return "baton_leader_epoch:" + hashTagged(name);
    }

    /** A leader election's candidate identities (HASH owner -> identity): {@code baton_leader_identity:{name}}. */
    public static String leaderIdentities(String name) {
        return "baton_leader_identity:" + hashTagged(name);
    }
}
