package dev.baton.internal;

import dev.baton.BatonObserver;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CompletableFuture;

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
    private static final Logger log = LoggerFactory.getLogger(FairRecipe.class);

    private final Services services;
    private final CommandExecutor executor;
    private final String name;
    private final String channel;
    private final List<String> keys;
    private final long waiterLeaseMs;
    private final long claimTimeoutMs;

    FairRecipe(Services services, String name, long waiterLeaseMs) {
        this.services = services;
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

    /**
     * A waiter's ticket, and whether a message handed it the lock: the message names the owner
     * and the ticket it waits with, so a hand-off meant for an earlier ticket of the same owner
     * (a late message) is stale and ignored.
     */
    @Override
    public Waiting waiting(String owner) {
        return new Waiting() {
            private long ticket;
            private boolean handedOver;

            @Override
            public void refused(Grant grant) {
                ticket = grant.ticket();
            }

            @Override
            public void messageSeen(String message) {
                handedOver |= ticket > 0 && message.equals(owner + "#" + ticket);
            }

            @Override
            public boolean handedOver() {
                return handedOver;
            }

            /**
             * The undo (a release with one hold) passes on a lock handed to this waiter and takes
             * it out of the queue; its next attempt queues it again with a new ticket. Until then
             * no ticket is valid, so a hand-off message for the old one, however late it arrives,
             * is not taken as a grant (the nemesis soak found a holder that had been handed the
             * lock, undone it after a lost reply, and then believed the message).
             */
            @Override
            public void abandoned() {
                ticket = 0;
                handedOver = false;
            }

            /** Confirms a handed-off grant, extending it from the claim timeout to the owner's lease. */
            @Override
            public void claimed(Lease granted) {
                services.renewNow(granted).whenComplete((held, e) -> {
                    if (e == null && !held) {
                        services.leases().lost(granted, "the lock was handed to this owner but passed on before it was claimed");
                    } else if (e != null) {
                        log.debug("claiming the hand-off of '{}' by {} failed: {}", name, granted.owner, e.toString());
                    }
                });
            }
        };
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        return executor.<List<Object>>eval(Script.FAIR_ACQUIRE, CommandExecutor.Reply.ARRAY, keys,
                        List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore), Long.toString(waiterLeaseMs),
                                Long.toString(claimTimeoutMs), willWait ? "1" : "0"))
                .thenApply(reply -> Grant.of(reply).withTicket((Long) reply.get(2)));
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
