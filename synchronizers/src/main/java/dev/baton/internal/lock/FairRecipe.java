package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/*
 * The fair lock: first come, first served, with direct hand-off. Waiters queue in a sorted set
 * by ticket; the release script itself gives the lock to the first live waiter (setting its
 * hold in the lock hash, with a short claim timeout) and publishes that waiter's owner id and
 * queue ticket, so exactly one waiter in one process wakes: no herd, and nobody can barge in.
 *
 * The woken waiter does not take the message as its grant: it calls acquire again, and the
 * script's reply (it finds the hold set for it, and extends it to the owner's lease) is the
 * grant, as for every other kind. A message says what was true when it was published; only a
 * reply says what is true now. (Until 2026-11-26 a message was taken as the grant, claimed in
 * the background; the nemesis soak found two holders that way under connection faults, each
 * time a claim that found the lock passed on.)
 *
 * Liveness: each queued waiter calls acquire again at least every third of the waiter lease,
 * which refreshes its deadline (server clock). A waiter that stopped calling (its process died
 * or paused) is dead past its deadline and is skipped when it reaches the head. A hand-off the
 * waiter never claims expires with the claim timeout, and the next acquire call hands it on.
 *
 * Layout: the lock hash is the reentrant lock's (so isLocked, hold counts and renewal are
 * shared), plus three keys and a channel of its own, all in the name's hash-tag slot. Not
 * interoperable with Redisson's RFairLock, whose queue layout is different.
 */
public final class FairRecipe implements LockRecipe {
    private final CommandExecutor executor;
    private final String name;
    private final String channel;
    private final List<String> keys;
    private final long waiterLeaseMs;
    private final long claimTimeoutMs;
    /** The extra argument of an election's acquire (the candidate's identity); empty for a fair lock. */
    private final List<String> electionArgs;
    private final BatonObserver.Kind kind;

    public FairRecipe(Services services, String name, long waiterLeaseMs) {
        this(services, name, List.of(name, Layout.fairQueue(name), Layout.fairWaiters(name), Layout.fairChannel(name),
                Layout.fairTicket(name)), waiterLeaseMs, List.of(), BatonObserver.Kind.FAIR_LOCK);
    }

    private FairRecipe(Services services, String name, List<String> keys, long waiterLeaseMs, List<String> electionArgs,
                       BatonObserver.Kind kind) {
        this.executor = services.executor();
        this.name = name;
        this.channel = keys.get(3);
        this.keys = keys;
        this.waiterLeaseMs = waiterLeaseMs;
        this.claimTimeoutMs = waiterLeaseMs;
        this.electionArgs = electionArgs;
        this.kind = kind;
    }

    /**
     * A leader election's lock: a fair lock on {@code Layout.leader(election)} whose scripts, given
     * the epoch counter and the identities as two more keys and {@code identity} as one more
     * argument, also keep the leader's identity, epoch and since in the lock hash; a grant's
     * token is the epoch of the leadership.
     *
     * @param lockKey {@code Layout.leader(election)}, the name the lock is made with
     */
    public static FairRecipe election(Services services, String election, String lockKey, long waiterLeaseMs,
                                      String identity) {
        return new FairRecipe(services, lockKey, List.of(lockKey, Layout.leaderQueue(election),
                Layout.leaderWaiters(election), Layout.leaderChannel(election), Layout.leaderTicket(election),
                Layout.leaderEpoch(election), Layout.leaderIdentities(election)),
                waiterLeaseMs, List.of(identity), BatonObserver.Kind.LEADER_ELECTION);
    }

    @Override
    public String channel() {
        return channel;
    }

    /** The owners in the queue, of every client (a dead client's until their waiter lease ends). */
    @Override
    public CompletableFuture<Long> waiters(CommandExecutor executor) {
        String queue = keys.get(1);
        return executor.read("ZCARD", queue, c -> c.zcard(queue));
    }

    @Override
    public CompletableFuture<Boolean> isLocked() {
        return executor.read("EXISTS", name, c -> c.exists(name)).thenApply(n -> n > 0);
    }

    @Override
    public WakeRule wakeRule() {
        return WakeRule.TAGGED;
    }

    @Override
    public String waiterTag(String owner) {
        return owner;
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        List<String> args = new ArrayList<>(List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore),
                Long.toString(waiterLeaseMs), Long.toString(claimTimeoutMs), willWait ? "1" : "0"));
        args.addAll(electionArgs);
        return executor.<List<Object>>eval(Script.FAIR_ACQUIRE, CommandExecutor.Reply.ARRAY, keys, args)
                .thenApply(reply -> {
                    Grant grant = Grant.of(reply);
                    return grant.granted() && fenced() ? grant.withToken((Long) reply.get(2)) : grant;
                });
    }

    @Override
    public boolean fenced() {
        return kind == BatonObserver.Kind.LEADER_ELECTION;
    }

    @Override
    public CompletableFuture<CommandExecutor.Delivered<Long>> release(String owner, int heldBefore, long leaseMs, boolean cleanup) {
        return executor.release(cleanup, Script.FAIR_RELEASE, CommandExecutor.Reply.INTEGER, keys,
                List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore), Long.toString(claimTimeoutMs)));
    }

    @Override
    public CompletableFuture<Boolean> forceUnlock() {
        return executor.<Long>eval(Script.FAIR_FORCE_UNLOCK, CommandExecutor.Reply.INTEGER, keys,
                List.of(Long.toString(claimTimeoutMs))).thenApply(deleted -> deleted == 1L);
    }

    @Override
    public CompletableFuture<?> leave(String owner) {
        // Leaves the queue; a lock handed to us that we never learnt of (one hold) is passed on.
        return release(owner, 1, claimTimeoutMs, true);
    }

    @Override
    public BatonObserver.Kind kind() {
        return kind;
    }

    @Override
    public String toString() {
        return fenced() ? "leader election" : "fair lock";
    }
}
