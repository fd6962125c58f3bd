package dev.baton.internal.lock;

import dev.baton.BatonObserver;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * The write side of the read-write lock (Redisson's layout): one writer, field
 * {@code <owner>:write}. A waiting writer leaves a mark that keeps new Baton readers out; a
 * reader asking to upgrade is refused at once, since it could never succeed while it reads.
 */
public final class WriteLockRecipe implements LockRecipe {
    private static final String WAKE_ALL_MESSAGE = "1";
    /** How long a waiting writer's mark lives; the writer calls again every third of it. */
    static final long MARK_TTL_MS = 3_000;

    private final CommandExecutor executor;
    private final String name;
    private final String channel;
    /** The waiting writer's mark. */
    private final String mark;
    /** Whether this client holds a read of the lock for an owner (its lease table). */
    private final Predicate<String> readsHere;

    /**
     * How soon a writer asks again when Redis holds a read for it that this client does not: a
     * read hold nobody has (a late copy of its own earlier read acquire ran after that acquire was
     * undone), which ends with its lease since nobody renews it.
     */
    private static final long GHOST_READ_RECHECK_MS = 1_000;

    public WriteLockRecipe(CommandExecutor executor, String name, Predicate<String> readsHere) {
        this.executor = executor;
        this.readsHere = readsHere;
        this.name = name;
        this.channel = Layout.rwlockChannel(name);
        this.mark = Layout.writerMark(name);
    }

    @Override
    public String channel() {
        return channel;
    }

    @Override
    public String field(String owner) {
        return owner + ":write";
    }

    @Override
    public WakeRule wakeRule() {
        return WakeRule.ALL;
    }

    @Override
    public CompletableFuture<Grant> acquire(String writer, int heldBefore, long leaseMs, boolean willWait) {
        String reader = writer.substring(0, writer.length() - ":write".length());
        return executor.<List<Object>>eval(Script.RWLOCK_WRITE_ACQUIRE, CommandExecutor.Reply.ARRAY,
                        List.of(name, mark, Layout.readHoldPrefix(name, reader)),
                        List.of(Long.toString(leaseMs), writer, reader, Integer.toString(heldBefore),
                                Long.toString(MARK_TTL_MS), willWait ? "1" : "0"))
                .thenApply(reply -> {
                    if ((Long) reply.get(0) == -1L && !readsHere.test(reader)) {
                        // Redis holds a read for this owner that it does not have: not an upgrade
                        // (the simulation found it, read-write seed 2171). Wait for it to end.
                        return new Grant(false, 0, GHOST_READ_RECHECK_MS, 0);
                    }
                    if ((Long) reply.get(0) == -1L) {
                        throw new IllegalMonitorStateException("read-write lock '" + name + "': owner " + reader
                                + " holds the read lock and asks for the write lock; an upgrade can never succeed "
                                + "while it reads (release the read holds first)");
                    }
                    return Grant.of(reply);
                });
    }

    @Override
    public CompletableFuture<CommandExecutor.Delivered<Long>> release(String writer, int heldBefore, long leaseMs, boolean cleanup) {
        return executor.release(cleanup, Script.RWLOCK_WRITE_RELEASE, CommandExecutor.Reply.INTEGER, List.of(name, channel),
                List.of(Long.toString(leaseMs), writer, Integer.toString(heldBefore), WAKE_ALL_MESSAGE));
    }

    @Override
    public CompletableFuture<Boolean> forceUnlock() {
        return executor.<Long>eval(Script.RWLOCK_FORCE_UNLOCK, CommandExecutor.Reply.INTEGER, List.of(name, channel),
                List.of("write", WAKE_ALL_MESSAGE)).thenApply(deleted -> deleted == 1L);
    }

    @Override
    public CompletableFuture<?> leave(String writer) {
        // A writer that gives up takes its mark with it (only if the mark is its own), and wakes
        // the readers the mark refused unless a writer holds the lock.
        return executor.evalCleanup(Script.RWLOCK_WRITER_LEAVE, CommandExecutor.Reply.INTEGER, List.of(mark, name, channel),
                List.of(writer, WAKE_ALL_MESSAGE));
    }

    @Override
    public CompletableFuture<Boolean> isLocked() {
        return executor.read("HGET", name, c -> c.hget(name, "mode")).thenApply("write"::equals);
    }

    @Override
    public BatonObserver.Kind kind() {
        return BatonObserver.Kind.WRITE_LOCK;
    }

    @Override
    public String toString() {
        return "write lock";
    }
}
