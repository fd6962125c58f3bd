package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The reentrant (non-fair) lock: Redisson's RLock layout; a release publishes "0" and wakes one
 * local waiter, who competes with everybody else for the lock.
 */
public final class ReentrantRecipe implements LockRecipe {
    private static final String UNLOCK_MESSAGE = "0";

    private final CommandExecutor executor;
    private final List<String> keys;
    private final List<String> releaseKeys;
    private final String channel;

    public ReentrantRecipe(CommandExecutor executor, String name) {
        this.executor = executor;
        this.channel = Layout.lockChannel(name);
        this.keys = List.of(name);
        this.releaseKeys = List.of(name, channel);
    }

    @Override
    public String channel() {
        return channel;
    }

    @Override
    public CompletableFuture<Boolean> isLocked() {
        return executor.read("EXISTS", keys.get(0), c -> c.exists(keys.get(0))).thenApply(n -> n > 0);
    }

    @Override
    public WakeRule wakeRule() {
        return WakeRule.ONE;
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        return executor.<List<Object>>eval(Script.LOCK_ACQUIRE, CommandExecutor.Reply.ARRAY, keys,
                        List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore)))
                .thenApply(Grant::of);
    }

    @Override
    public CompletableFuture<CommandExecutor.Delivered<Long>> release(String owner, int heldBefore, long leaseMs, boolean cleanup) {
        return executor.release(cleanup, Script.LOCK_RELEASE, CommandExecutor.Reply.INTEGER, releaseKeys,
                List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore), UNLOCK_MESSAGE));
    }

    @Override
    public CompletableFuture<Boolean> forceUnlock() {
        return executor.<Long>eval(Script.LOCK_FORCE_UNLOCK, CommandExecutor.Reply.INTEGER, releaseKeys,
                List.of(UNLOCK_MESSAGE)).thenApply(deleted -> deleted == 1L);
    }

    @Override
    public BatonObserver.Kind kind() {
        return BatonObserver.Kind.LOCK;
    }

    @Override
    public String toString() {
        return "lock";
    }
}
