package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

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

    public FairRecipe(Services services, String name, long waiterLeaseMs) {
        this.executor = services.executor();
        this.name = name;
        this.channel = Layout.fairChannel(name);
        this.keys = List.of(name, Layout.fairQueue(name), Layout.fairWaiters(name), channel, Layout.fairTicket(name));
        this.waiterLeaseMs = waiterLeaseMs;
        this.claimTimeoutMs = waiterLeaseMs;
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
        return executor.<List<Object>>eval(Script.FAIR_ACQUIRE, CommandExecutor.Reply.ARRAY, keys,
                        List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore), Long.toString(waiterLeaseMs),
                                Long.toString(claimTimeoutMs), willWait ? "1" : "0"))
                .thenApply(Grant::of);
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
        return BatonObserver.Kind.FAIR_LOCK;
    }

    @Override
    public String toString() {
        return "fair lock";
    }
}
