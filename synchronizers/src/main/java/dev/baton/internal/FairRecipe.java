package dev.baton.internal;

import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.ToIntFunction;

/*
 * The fair lock: first come, first served, with direct hand-off. Waiters queue in a sorted set
 * by ticket; the release script itself gives the lock to the first live waiter (setting its
 * hold in the lock hash) and publishes that waiter's owner id and queue ticket, so exactly one
 * waiter in one process wakes, and it already holds the lock: no second round trip on the way
 * in, no herd. The ticket makes each hand-off message unique: a message that arrives late, when
 * its owner is already waiting again with a new ticket, is recognised as stale and ignored.
 *
 * Liveness: each queued waiter calls acquire again at least every third of the waiter lease,
 * which refreshes its deadline (server clock). A waiter that stopped calling (its process died
 * or paused) is dead past its deadline and is skipped when it reaches the head. A hand-off is
 * granted with a short claim timeout; the new holder confirms ("claims") it in the background
 * right after waking, extending it to its own lease. A holder that never claims loses the lock
 * when the claim timeout runs out, and the next acquire call hands it on.
 *
 * Layout: the lock hash is the reentrant lock's (so isLocked, hold counts and renewal are
 * shared), plus three keys and a channel of its own, all in the name's hash-tag slot. Not
 * interoperable with Redisson's RFairLock, whose queue layout is different.
 */
final class FairRecipe implements LockRecipe {
    private final CommandExecutor executor;
    private final String name;
    private final String channel;
    private final List<String> keys;
    private final long waiterLeaseMs;
    private final long claimTimeoutMs;

    FairRecipe(CommandExecutor executor, String name, long waiterLeaseMs) {
        this.executor = executor;
        this.name = name;
        this.channel = Names.fairChannel(name);
        this.keys = List.of(name, Names.fairQueue(name), Names.fairWaiters(name), channel, Names.fairTicket(name));
        this.waiterLeaseMs = waiterLeaseMs;
        this.claimTimeoutMs = waiterLeaseMs;
    }

    @Override
    public String channel() {
        return channel;
    }

    @Override
    public CompletableFuture<Boolean> isLocked() {
        return executor.read("EXISTS", name, c -> c.exists(name)).thenApply(n -> n > 0);
    }

    @Override
    public ToIntFunction<String> wakeRule() {
        return PubSubService.WAKE_TAGGED;
    }

    @Override
    public String waiterTag(String owner) {
        return owner;
    }

    @Override
    public boolean handedTo(String owner, long ticket, String message) {
        return ticket > 0 && message.equals(owner + "#" + ticket);
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        return executor.<List<Object>>eval(Script.FAIR_ACQUIRE, CommandExecutor.Reply.ARRAY, keys,
                        List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore), Long.toString(waiterLeaseMs),
                                Long.toString(claimTimeoutMs), willWait ? "1" : "0"))
                .thenApply(reply -> new Grant((Long) reply.get(0) == 1L, (Long) reply.get(1), 0, (Long) reply.get(2)));
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
    public String toString() {
        return "fair lock";
    }
}
