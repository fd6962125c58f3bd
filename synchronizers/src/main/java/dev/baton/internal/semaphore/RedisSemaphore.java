package dev.baton.internal.semaphore;

// Over 300 lines on purpose: the kind's API, its exactly-once requests, the permit handle and
// the in-client hand-off's hooks all speak about one count; the engine does the waiting and
// PermitHandOff keeps the local state.

import dev.baton.BatonObserver;
import dev.baton.BatonSemaphore;
import dev.baton.RedisUnavailableException;
import dev.baton.ReplicaSyncException;
import dev.baton.SemaphorePermits;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.Failures;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.internal.support.Args;
import dev.baton.internal.unconfirmed.Requests;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/*
 * The semaphore recipe: Redisson's RSemaphore layout (available permits in a string at the
 * name, the new count published on redisson_sc:{name} when permits come back) and the shared
 * acquire engine for waiting. A release of k permits announces the new count c and wakes up to
 * c local waiters: enough to use every permit, not a herd.
 *
 * There is no holder in that layout, so every change that must count once goes as an
 * exactly-once request (see Requests): each acquire attempt has its own id and an attempt
 * whose reply never came is cancelled by that id (its permits come back if it took them, and a
 * late copy takes nothing); each release has one id for all its copies, and one that is not
 * confirmed in time is finished in the background. Redisson clients on the same name read and
 * change the same count and never read the request keys.
 */
public final class RedisSemaphore implements BatonSemaphore {
    private static final String MAX_PERMITS = Integer.toString(Integer.MAX_VALUE);

    private final Services services;
    /** The client's in-client hand-off, shared by every semaphore of the client. */
    private final PermitHandOff handOff;
    private final String name;
    private final String channel;
    private final List<String> nameOnly;

    public RedisSemaphore(Services services, PermitHandOff handOff, String name) {
        this.services = services;
        this.handOff = handOff;
        this.name = Args.name(name);
        this.channel = Layout.semaphoreChannel(name);
        this.nameOnly = List.of(name);
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
        Args.permits(permits);
        Blocking.awaitInterruptibly(() -> start(new PermitsAttempt(permits, true), -1), services.cleanupNanos());
    }

    @Override
    public boolean tryAcquire() {
        return tryAcquire(1);
    }

    @Override
    public boolean tryAcquire(int permits) {
        Args.permits(permits);
        return Blocking.awaitUninterruptibly(start(new PermitsAttempt(permits, true), 0));
    }

    @Override
    public boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, timeout, unit);
    }

    @Override
    public boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException {
        Args.permits(permits);
        long waitNanos = Args.timeoutNanos(timeout, unit);
        return Blocking.awaitInterruptibly(() -> start(new PermitsAttempt(permits, true), waitNanos), services.cleanupNanos());
    }

    @Override
    public Optional<SemaphorePermits> tryAcquirePermits(int permits, long timeout, TimeUnit unit)
            throws InterruptedException {
        return tryAcquire(permits, timeout, unit)
                ? Optional.of(new Permits(permits, Requests.newId())) : Optional.empty();
    }

    @Override
    public SemaphorePermits acquirePermits(int permits) throws InterruptedException {
        Args.permits(permits);
        PermitsAttempt attempt = new PermitsAttempt(permits, true);
        Blocking.awaitInterruptibly(() -> start(attempt, -1), services.cleanupNanos());
        return new Permits(permits, Requests.newId());
    }

    /**
     * Permits as a handle. Its release has one request id, so closing it again after a failure
     * waits for the same release (still being sent in the background) instead of sending another.
     */
    private final class Permits implements SemaphorePermits {
        private final int permits;
        private final String releaseId;
        private final AtomicReference<Requests.Delivery<Long>> release = new AtomicReference<>();

        Permits(int permits, String releaseId) {
            this.permits = permits;
            this.releaseId = releaseId;
        }

        @Override
        public int permits() {
            return permits;
        }

        /**
         * Releases the permits once, however often it is called: after a
         * RedisUnavailableException, calling it again waits for the same release (Baton keeps
         * sending it). A release that landed with too few replicas acknowledging it throws
         * DoNotRetryException, on this call and every later one.
         */
        @Override
        public void close() {
            try {
                Requests.Delivery<Long> sent = release.get();
                if (sent == null) {
                    // Claimed before anything is released: a hand-off has no request id to make
                    // a second close count once, so only the close that claims it releases.
                    Requests.Delivery<Long> mine = new Requests.Delivery<>(new CompletableFuture<>(), new CompletableFuture<>());
                    if (release.compareAndSet(null, mine)) {
                        Requests.Delivery<Long> fresh;
                        try {
                            fresh = release(permits, releaseId);
                        } catch (RuntimeException e) {
                            release.set(null); // nothing was released: a later close may try again
                            mine.foreground().completeExceptionally(e);
                            mine.landed().completeExceptionally(e);
                            throw e;
                        }
                        fresh.foreground().whenComplete((v, e) -> complete(mine.foreground(), v, e));
                        fresh.landed().whenComplete((v, e) -> complete(mine.landed(), v, e));
                        Blocking.join(mine.foreground());
                        return;
                    }
                    sent = release.get();
                }
                Blocking.join(executorBound(sent.landed()));
            } catch (ReplicaSyncException landed) {
                throw Failures.doNotRetry(landed);
            }
        }
    }

    private static <T> void complete(CompletableFuture<T> target, T value, Throwable error) {
        if (error == null) {
            target.complete(value);
        } else {
            target.completeExceptionally(error);
        }
    }

    /** Waits for a release already under way at most one command timeout. */
    private CompletableFuture<Long> executorBound(CompletableFuture<Long> landed) {
        return landed.orTimeout(services.commandTimeout().toNanos(), TimeUnit.NANOSECONDS)
                .exceptionallyCompose(e -> CompletableFuture.failedFuture(
                        Failures.unwrap(e) instanceof TimeoutException
                                ? new RedisUnavailableException("the release of semaphore '" + name
                                + "' is still not confirmed; Baton keeps sending it in the background", null)
                                : Failures.unwrap(e)));
    }

    @Override
    public CompletionStage<Void> acquireAsync(int permits) {
        Args.permits(permits);
        return start(new PermitsAttempt(permits, false), -1).untilGranted();
    }

    @Override
    public CompletionStage<Boolean> tryAcquireAsync(int permits, long timeout, TimeUnit unit) {
        Args.permits(permits);
        return start(new PermitsAttempt(permits, false), Args.timeoutNanos(timeout, unit)).result();
    }

    @Override
    public CompletionStage<Void> releaseAsync(int permits) {
        Args.permits(permits);
        return Requests.notToBeRepeated(release(permits, Requests.newId()).foreground()).thenApply(count -> null);
    }

    /**
     * A release: what this client's parked acquisitions of the semaphore take is handed to them
     * (PermitHandOff); the rest goes to Redis as one exactly-once request with id {@code id}.
     */
    private Requests.Delivery<Long> release(int permits, String id) {
        services.checkOpen();
        int left = handOff.release(name, permits);
        if (left == 0) {
            CompletableFuture<Long> handed = CompletableFuture.completedFuture(-1L);
            return new Requests.Delivery<>(handed, handed);
        }
        return add(left, id, "release of " + permitsWord(left) + " of semaphore '" + name + "'");
    }

    @Override
    public CompletionStage<Long> waiterCountAsync() {
        services.checkOpen();
        return services.executor().subscribers(channel);
    }

    @Override
    public CompletionStage<Integer> availablePermitsAsync() {
        return services.executor().read("GET", name, c -> c.get(name))
                .thenApply(value -> value == null ? 0 : (int) Math.max(Integer.MIN_VALUE, Long.parseLong(value)));
    }

    @Override
    public CompletionStage<Boolean> trySetPermitsAsync(int permits) {
        Args.permitsNotNegative(permits);
        CommandExecutor executor = services.executor();
        return executor.<Long>evalUntilAnswered(Script.SEMAPHORE_TRY_SET, CommandExecutor.Reply.INTEGER,
                        List.of(name, channel, Requests.key(name, Requests.newId())),
                        List.of(Integer.toString(permits), services.requests().memoryArg()), executor.timeout().toNanos())
                .thenApply(set -> set.value() == 1L);
    }

    @Override
    public CompletionStage<Void> addPermitsAsync(int permits) {
        if (permits == 0) {
            return CompletableFuture.completedFuture(null);
        }
        return Requests.notToBeRepeated(add(permits, Requests.newId(), "adding " + permitsWord(permits)
                + " to semaphore '" + name + "'").foreground()).thenApply(count -> null);
    }

    @Override
    public CompletionStage<Integer> drainPermitsAsync() {
        return services.executor().<Long>eval(Script.SEMAPHORE_DRAIN, CommandExecutor.Reply.INTEGER, nameOnly, List.of())
                .thenApply(Long::intValue);
    }

    @Override
    public CompletionStage<Boolean> deleteAsync() {
        return services.executor().<Long>eval(Script.SEMAPHORE_DELETE, CommandExecutor.Reply.INTEGER,
                List.of(name, channel, Layout.expirablePermits(name)), List.of()).thenApply(deleted -> deleted == 1L);
    }

    /** Adds permits (a release, addPermits, a late grant given back) as one exactly-once request. */
    private Requests.Delivery<Long> add(int permits, String id, String what) {
        return add(services, name, channel, permits, id, what);
    }

    /**
     * The exactly-once add of semaphore_add.lua, for both semaphore kinds (their count and channel
     * are laid out alike): request {@code id} on {@code name} counts once however often it is sent.
     */
    static Requests.Delivery<Long> add(Services services, String name, String channel, int permits, String id, String what) {
        services.checkOpen();
        Requests ids = services.requests();
        String key = Requests.key(name, id);
        return ids.deliver(Script.SEMAPHORE_ADD, CommandExecutor.Reply.INTEGER,
                ids.withForgotten(name, List.of(name, channel, key)),
                List.of(Integer.toString(permits), MAX_PERMITS, ids.memoryArg()), name, key, what);
    }

    private AcquireEngine.Acquisition start(PermitsAttempt attempt, long waitNanos) {
        services.checkOpen();
        return services.engine().acquire(attempt, channel, WakeRule.BY_COUNT, waitNanos);
    }

    /** One acquisition's attempts to take its permits; each attempt is a request of its own. */
    private final class PermitsAttempt implements AcquireEngine.Attempt {
        private final int permits;
        private final SemaphoreWaits.DeletionWatch deletion = new SemaphoreWaits.DeletionWatch();
        /** Whether the caller blocks on the outcome (a hand-off may then deliver it on the releasing thread). */
        private final boolean blocking;
        /** Whether this acquisition is registered for hand-offs (at its first park). */
        private boolean offered;
        /** The request key of the latest attempt. */
        private String key;
        /** The permits free at the latest refusal. */
        private volatile long free;

        PermitsAttempt(int permits, boolean blocking) {
            this.permits = permits;
            this.blocking = blocking;
        }

        @Override
        public void passWakeUp(AcquireEngine.Acquisition acquisition) {
            handOff.passWakeUp(name, free, acquisition);
        }

        @Override
        public boolean parksOnAQuietChannel() {
            return true;
        }

        @Override
        public void parking(AcquireEngine.Acquisition acquisition) {
            if (!offered) {
                offered = true;
                handOff.parked(name, new PermitHandOff.Parked(acquisition, permits, blocking));
            }
        }

        @Override
        public BatonObserver.Kind kind() {
            return BatonObserver.Kind.SEMAPHORE;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return "acquiring " + permitsWord(permits) + " of semaphore '" + name + "'";
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            services.checkOpen();
            String attemptKey = Requests.key(name, Requests.newId());
            key = attemptKey;
            Requests ids = services.requests();
            return services.executor().<List<Object>>evalTracked(Script.SEMAPHORE_ACQUIRE, CommandExecutor.Reply.ARRAY,
                    ids.withForgotten(name, List.of(name, attemptKey)),
                    List.of(Integer.toString(permits), ids.memoryArg())).thenApply(delivered -> {
                        List<Object> reply = delivered.value();
                        if ((Long) reply.get(0) == 1L) {
                            if (!delivered.resent()) {
                                ids.answered(name, attemptKey);
                            }
                            return AcquireEngine.Outcome.GRANTED;
                        }
                        if (delivered.resent()) {
                            // A refusal answered by a copy Lettuce wrote again: the first copy may
                            // still be on its way (it sat in a dropped connection or a stalled
                            // server's input) and would take permits for nobody, for ever. Cancel
                            // the attempt by its id (the simulation found the lost permit, seed 286).
                            cancel(attemptKey, "cancelling a refused acquire whose earlier copy may still run");
                        }
                        deletion.check(name, (Long) reply.get(1) == 1L);
                        free = reply.size() > 2 ? (Long) reply.get(2) : 0;
                        return new AcquireEngine.Outcome(false, SemaphoreWaits.RECHECK_MS, free > 0);
                    });
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            return cancel(key, "cancelling an unanswered acquire");
        }

        /** Cancels an attempt by its id: permits it took come back, a late copy takes none. */
        private CompletableFuture<?> cancel(String attemptKey, String why) {
            Requests ids = services.requests();
            return ids.deliver(Script.SEMAPHORE_CANCEL, CommandExecutor.Reply.INTEGER, List.of(name, channel, attemptKey),
                    List.of(Integer.toString(permits), ids.memoryArg()), null, null,
                    why + " of " + permitsWord(permits) + " of semaphore '" + name + "'").foreground();
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            return add(permits, Requests.newId(), "giving back " + permitsWord(permits) + " of semaphore '" + name
                    + "' taken after the wait was abandoned").foreground();
        }
    }

    private static String permitsWord(int permits) {
        return permits + (permits == 1 ? " permit" : " permits");
    }

    @Override
    public String toString() {
        return "BatonSemaphore{" + name + "}";
    }
}
