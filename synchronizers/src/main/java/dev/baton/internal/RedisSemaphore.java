package dev.baton.internal;

import dev.baton.BatonSemaphore;
import dev.baton.SemaphorePermits;
import dev.baton.lua.Script;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/*
 * The semaphore recipe: Redisson's RSemaphore layout (available permits in a string at the
 * name, the new count published on redisson_sc:{name} when permits come back) and the shared
 * acquire engine for waiting. A release of k permits announces the new count c and wakes up to
 * c local waiters: enough to use every permit, not a herd.
 *
 * There is no holder to remember, so an acquire whose reply was lost cannot be told apart from
 * one that never ran, and a re-sent copy takes its permits twice. That is documented; the
 * permit-expirable semaphore, whose permits have ids, has neither problem.
 */
final class RedisSemaphore implements BatonSemaphore {
    private static final Logger log = LoggerFactory.getLogger(RedisSemaphore.class);
    private static final String MAX_PERMITS = Integer.toString(Integer.MAX_VALUE);

    private final BatonClient client;
    private final String name;
    private final String channel;
    private final List<String> nameOnly;
    private final List<String> withChannel;

    RedisSemaphore(BatonClient client, String name) {
        this.client = client;
        this.name = Names.requireName(name);
        this.channel = Names.semaphoreChannel(name);
        this.nameOnly = List.of(name);
        this.withChannel = List.of(name, channel);
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public void acquire() throws InterruptedException {
        acquire(1);
    }

    @Override
    public void acquire(int permits) throws InterruptedException {
        SemaphoreWaits.requirePermits(permits);
        Blocking.awaitInterruptibly(() -> start(permits, -1), client.cleanupNanos());
    }

    @Override
    public boolean tryAcquire() {
        return tryAcquire(1);
    }

    @Override
    public boolean tryAcquire(int permits) {
        SemaphoreWaits.requirePermits(permits);
        return Blocking.awaitUninterruptibly(start(permits, 0));
    }

    @Override
    public boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, timeout, unit);
    }

    @Override
    public boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException {
        SemaphoreWaits.requirePermits(permits);
        long waitNanos = SemaphoreWaits.waitNanos(timeout, unit);
        return Blocking.awaitInterruptibly(() -> start(permits, waitNanos), client.cleanupNanos());
    }

    @Override
    public SemaphorePermits acquirePermits(int permits) throws InterruptedException {
        acquire(permits);
        AtomicBoolean closed = new AtomicBoolean();
        return new SemaphorePermits() {
            @Override
            public int permits() {
                return permits;
            }

            @Override
            public void close() {
                if (closed.compareAndSet(false, true)) {
                    release(permits);
                }
            }
        };
    }

    @Override
    public void release() {
        release(1);
    }

    @Override
    public void release(int permits) {
        Blocking.join(releaseAsync(permits).toCompletableFuture());
    }

    @Override
    public int availablePermits() {
        return Blocking.join(availablePermitsAsync().toCompletableFuture());
    }

    @Override
    public boolean trySetPermits(int permits) {
        return Blocking.join(trySetPermitsAsync(permits).toCompletableFuture());
    }

    @Override
    public void addPermits(int permits) {
        Blocking.join(addPermitsAsync(permits).toCompletableFuture());
    }

    @Override
    public int drainPermits() {
        return Blocking.join(drainPermitsAsync().toCompletableFuture());
    }

    @Override
    public boolean delete() {
        return Blocking.join(deleteAsync().toCompletableFuture());
    }

    @Override
    public CompletionStage<Void> acquireAsync(int permits) {
        SemaphoreWaits.requirePermits(permits);
        return start(permits, -1).untilGranted();
    }

    @Override
    public CompletionStage<Boolean> tryAcquireAsync(int permits, long timeout, TimeUnit unit) {
        SemaphoreWaits.requirePermits(permits);
        return start(permits, SemaphoreWaits.waitNanos(timeout, unit)).result();
    }

    @Override
    public CompletionStage<Void> releaseAsync(int permits) {
        SemaphoreWaits.requirePermits(permits);
        return add(permits);
    }

    @Override
    public CompletionStage<Integer> availablePermitsAsync() {
        return client.executor().read("GET", name, c -> c.get(name))
                .thenApply(value -> value == null ? 0 : (int) Math.max(Integer.MIN_VALUE, Long.parseLong(value)));
    }

    @Override
    public CompletionStage<Boolean> trySetPermitsAsync(int permits) {
        if (permits < 0) {
            throw new IllegalArgumentException("permits must not be negative, was " + permits);
        }
        return client.executor().<Long>eval(Script.SEMAPHORE_TRY_SET, CommandExecutor.Reply.INTEGER, withChannel,
                List.of(Integer.toString(permits))).thenApply(set -> set == 1L);
    }

    @Override
    public CompletionStage<Void> addPermitsAsync(int permits) {
        return add(permits);
    }

    @Override
    public CompletionStage<Integer> drainPermitsAsync() {
        return client.executor().<Long>eval(Script.SEMAPHORE_DRAIN, CommandExecutor.Reply.INTEGER, nameOnly, List.of())
                .thenApply(Long::intValue);
    }

    @Override
    public CompletionStage<Boolean> deleteAsync() {
        return client.executor().<Long>eval(Script.SEMAPHORE_DELETE, CommandExecutor.Reply.INTEGER,
                List.of(name, channel, Names.expirablePermits(name)), List.of()).thenApply(deleted -> deleted == 1L);
    }

    private CompletableFuture<Void> add(int permits) {
        return client.executor().<Long>eval(Script.SEMAPHORE_ADD, CommandExecutor.Reply.INTEGER, withChannel,
                List.of(Integer.toString(permits), MAX_PERMITS)).thenApply(count -> null);
    }



    private AcquireEngine.Acquisition start(int permits, long waitNanos) {
        client.checkOpen();
        return client.engine().acquire(new PermitsAttempt(permits), channel, SemaphoreWaits.WAKE_BY_COUNT, waitNanos);
    }

    /** One acquisition's attempts to take its permits. */
    private final class PermitsAttempt implements AcquireEngine.Attempt {
        private final int permits;
        private final SemaphoreWaits.DeletionWatch deletion = new SemaphoreWaits.DeletionWatch();

        PermitsAttempt(int permits) {
            this.permits = permits;
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            client.checkOpen();
            return client.executor().<List<Object>>eval(Script.SEMAPHORE_ACQUIRE, CommandExecutor.Reply.ARRAY, nameOnly,
                    List.of(Integer.toString(permits))).thenApply(reply -> {
                        if ((Long) reply.get(0) == 1L) {
                            return AcquireEngine.Outcome.GRANTED;
                        }
                        deletion.check(name, (Long) reply.get(1) == 1L);
                        return new AcquireEngine.Outcome(false, SemaphoreWaits.RECHECK_MS);
                    });
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            log.warn("an acquire of {} permits of semaphore '{}' got no reply; if it ran, those permits are taken "
                    + "and will not come back by themselves", permits, name);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            return add(permits).exceptionally(e -> {
                log.warn("giving back {} permits of semaphore '{}' taken after the wait was abandoned failed", permits, name, e);
                return null;
            });
        }
    }

    @Override
    public String toString() {
        return "BatonSemaphore{" + name + "}";
    }
}
