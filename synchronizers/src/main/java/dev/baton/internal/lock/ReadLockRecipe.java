package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.lease.Lease;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The read side of the read-write lock (Redisson's layout): many readers, each read hold with a
 * lease of its own; refused while another owner writes or while a writer waits (unless the
 * caller already reads).
 */
public final class ReadLockRecipe implements LockRecipe {
    private static final String FREE_MESSAGE = "0";
    private static final String WAKE_ALL_MESSAGE = "1";

    private final CommandExecutor executor;
    private final String name;
    private final String channel;
    private final String mark;

    public ReadLockRecipe(CommandExecutor executor, String name) {
        this.executor = executor;
        this.name = name;
        this.channel = Layout.rwlockChannel(name);
        this.mark = Layout.writerMark(name);
    }

    @Override
    public String channel() {
        return channel;
    }

    @Override
    public WakeRule wakeRule() {
        return WakeRule.ALL;
    }

    @Override
    public Lease.Renewal renewal() {
        return Lease.Renewal.READ_HOLDS;
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        return executor.<List<Object>>eval(Script.RWLOCK_READ_ACQUIRE, CommandExecutor.Reply.ARRAY,
                        List.of(name, mark, Layout.readHoldPrefix(name, owner)),
                        List.of(Long.toString(leaseMs), owner, owner + ":write", Integer.toString(heldBefore)))
                .thenApply(Grant::of);
    }

    @Override
    public CompletableFuture<CommandExecutor.Delivered<Long>> release(String owner, int heldBefore, long leaseMs, boolean cleanup) {
        return executor.release(cleanup, Script.RWLOCK_READ_RELEASE, CommandExecutor.Reply.INTEGER,
                List.of(name, channel, Layout.readHoldPrefix(name, owner), Layout.hashTagged(name)),
                List.of(owner, Integer.toString(heldBefore), FREE_MESSAGE));
    }

    @Override
    public CompletableFuture<Boolean> forceUnlock() {
        return executor.<Long>eval(Script.RWLOCK_FORCE_UNLOCK, CommandExecutor.Reply.INTEGER, List.of(name, channel),
                List.of("read", WAKE_ALL_MESSAGE)).thenApply(deleted -> deleted == 1L);
    }

    @Override
    public CompletableFuture<Boolean> isLocked() {
        return executor.read("HGET", name, c -> c.hget(name, "mode")).thenApply("read"::equals);
    }

    @Override
    public BatonObserver.Kind kind() {
        return BatonObserver.Kind.READ_LOCK;
    }

    @Override
    public String toString() {
        return "read lock";
    }
}
