package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The fenced lock: the reentrant lock plus a fencing token issued by the acquire script each
 * time the lock goes from free to held. Release, force-unlock and the channel are the reentrant
 * lock's.
 */
final class FencedRecipe implements LockRecipe {
    private final CommandExecutor executor;
    private final ReentrantRecipe plain;
    private final List<String> keys;

    FencedRecipe(CommandExecutor executor, String name) {
        this.executor = executor;
        this.plain = new ReentrantRecipe(executor, name);
        this.keys = List.of(name, Layout.fencingToken(name));
    }

    @Override
    public String channel() {
        return plain.channel();
    }

    @Override
    public CompletableFuture<Boolean> isLocked() {
        return plain.isLocked();
    }

    @Override
    public WakeRule wakeRule() {
        return plain.wakeRule();
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        return executor.<List<Object>>eval(Script.FENCED_ACQUIRE, CommandExecutor.Reply.ARRAY, keys,
                        List.of(Long.toString(leaseMs), owner, Integer.toString(heldBefore)))
                .thenApply(reply -> Grant.of(reply).withToken((Long) reply.get(2)));
    }

    @Override
    public CompletableFuture<CommandExecutor.Delivered<Long>> release(String owner, int heldBefore, long leaseMs, boolean cleanup) {
        return plain.release(owner, heldBefore, leaseMs, cleanup);
    }

    @Override
    public CompletableFuture<Boolean> forceUnlock() {
        return plain.forceUnlock();
    }

    @Override
    public boolean fenced() {
        return true;
    }

    @Override
    public BatonObserver.Kind kind() {
        return BatonObserver.Kind.FENCED_LOCK;
    }

    @Override
    public String toString() {
        return "fenced lock";
    }
}
