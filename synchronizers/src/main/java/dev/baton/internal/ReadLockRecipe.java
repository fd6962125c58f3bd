package dev.baton.internal;

import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.ToIntFunction;

/**
 * The read side of the read-write lock (Redisson's layout): many readers, each read hold with a
 * lease of its own; refused while another owner writes or while a writer waits (unless the
 * caller already reads).
 */
final class ReadLockRecipe implements LockRecipe {
    private static final String FREE_MESSAGE = "0";
    private static final String WAKE_ALL_MESSAGE = "1";

    private final CommandExecutor executor;
    private final String name;
    private final String channel;
    private final String mark;

    ReadLockRecipe(CommandExecutor executor, String name) {
        this.executor = executor;
        this.name = name;
        this.channel = Names.rwlockChannel(name);
        this.mark = Names.writerMark(name);
    }

    @Override
    public String channel() {
        return channel;
    }

    @Override
    public ToIntFunction<String> wakeRule() {
        return PubSubService.WAKE_ALL;
    }

    @Override
    public Renewal renewal() {
        return Renewal.READ_HOLDS;
    }

    @Override
    public CompletableFuture<Grant> acquire(String owner, int heldBefore, long leaseMs, boolean willWait) {
        return executor.<List<Object>>eval(Script.RWLOCK_READ_ACQUIRE, CommandExecutor.Reply.ARRAY,
                        List.of(name, mark, Names.readHoldPrefix(name, owner)),
                        List.of(Long.toString(leaseMs), owner, owner + ":write", Integer.toString(heldBefore)))
                .thenApply(reply -> new Grant((Long) reply.get(0) == 1L, (Long) reply.get(1)));
    }

    @Override
    public CompletableFuture<CommandExecutor.Delivered<Long>> release(String owner, int heldBefore, long leaseMs, boolean cleanup) {
        return executor.release(cleanup, Script.RWLOCK_READ_RELEASE, CommandExecutor.Reply.INTEGER,
                List.of(name, channel, Names.readHoldPrefix(name, owner), Names.hashTagged(name)),
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
    public String toString() {
        return "read lock";
    }
}
