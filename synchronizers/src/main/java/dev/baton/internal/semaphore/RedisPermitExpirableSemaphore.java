package dev.baton.internal.semaphore;

// Over 300 lines on purpose: every operation of this kind (acquire, release, lease updates, the
// permits' settings) reads one layout with its per-attempt request keys; the engine does the
// waiting and Requests the background finishing.

import dev.baton.BatonObserver;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.ExpirablePermit;
import dev.baton.LeaseLostException;
import dev.baton.LeaseWork;
import dev.baton.RedisUnavailableException;
import dev.baton.ReplicaSyncException;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.Failures;
import dev.baton.internal.command.ReplicaShortfall;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.lease.LeaseScopedWork;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.internal.support.Args;
import dev.baton.internal.support.CloseOnce;
import dev.baton.internal.time.Scheduler;
import dev.baton.internal.unconfirmed.Requests;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/*
 * The permit-expirable semaphore: Redisson's layout (available count at the name, taken permits
 * in {name}:timeout as id -> expiry epoch ms, the new count on redisson_sc:{name}), with expiry
 * decided by the Redis server's clock inside every script, which first returns expired permits
 * to the pool.
 *
 * Each attempt picks its permit ids up front and is remembered by a request key named after its
 * first id, so a re-sent acquire never takes a second permit, and an attempt that got no reply
 * (or whose refusal came from a re-sent copy) is cancelled by that key: what it took comes back,
 * and a copy that runs later takes nothing. A refused waiter parks until the earliest permit expires, a release message,
 * or the re-check bound, whichever comes first.
 */
public final class RedisPermitExpirableSemaphore implements BatonPermitExpirableSemaphore {
    private static final String NO_EXPIRY = "-1";
    private static final String MAX_PERMITS = Integer.toString(Integer.MAX_VALUE);

    private final Services services;
    private final String name;
    private final String channel;
    private final List<String> keys;

    public RedisPermitExpirableSemaphore(Services services, String name) {
        this.services = services;
        this.name = Args.name(name);
        this.channel = Layout.semaphoreChannel(name);
        this.keys = List.of(name, Layout.expirablePermits(name), channel);
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public String acquire() throws InterruptedException {
        return take(1, NO_EXPIRY, -1).get(0);
    }

    @Override
    public String acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(1, anyLease(leaseTime, unit), -1).get(0);
    }

    @Override
    public List<String> acquire(int permits, long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(Args.permitsPerCall(permits), anyLease(leaseTime, unit), -1);
    }

    @Override
    public List<String> tryAcquire(int permits, long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long waitNanos = Args.timeoutNanos(waitTime, unit);
        return take(Args.permitsPerCall(permits), anyLease(leaseTime, unit), waitNanos);
    }

    @Override
    public CompletionStage<List<String>> tryAcquireAsync(int permits, long waitTime, long leaseTime, TimeUnit unit) {
        PermitAttempt attempt = new PermitAttempt(Args.permitsPerCall(permits), anyLease(leaseTime, unit));
        return start(attempt, Args.timeoutNanos(waitTime, unit)).resultAs(got -> got ? attempt.ids : List.of());
    }

    @Override
    public Optional<String> tryAcquire() {
        PermitAttempt attempt = new PermitAttempt(1, NO_EXPIRY);
        return Blocking.awaitUninterruptibly(start(attempt, 0)) ? Optional.of(attempt.ids.get(0)) : Optional.empty();
    }

    @Override
    public Optional<String> tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long waitNanos = Args.timeoutNanos(waitTime, unit);
        return take(1, anyLease(leaseTime, unit), waitNanos).stream().findFirst();
    }

    /**
     * Takes {@code permits} permits, interruptibly, waiting {@code waitNanos} (negative: as long as
     * it takes); their ids, or none when the wait time passed.
     */
    private List<String> take(int permits, String leaseMs, long waitNanos) throws InterruptedException {
        PermitAttempt attempt = new PermitAttempt(permits, leaseMs);
        return Blocking.awaitInterruptibly(() -> start(attempt, waitNanos), services.cleanupNanos()) ? attempt.ids : List.of();
    }

    /** A scope's margin (LeaseScope): the clock-drift allowance of the lease (1 % by default) + 25 ms. */
    private long scopeMarginNanos(long leaseNanos) {
        return services.leases().scopeMarginNanos(leaseNanos);
    }

    @Override
    public <T, E extends Exception> T withPermit(long leaseTime, TimeUnit unit, LeaseWork<T, E> work)
            throws E, InterruptedException {
        Objects.requireNonNull(work, "work");
        if (leaseTime <= 0) {
            throw new IllegalArgumentException("leaseTime must be positive for scoped work (a permit with no lease has no "
                    + "validity to bound the work by), got " + leaseTime + " " + unit);
        }
        String leaseMs = leaseMs(leaseTime, unit);
        long leaseNanos = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(leaseMs));
        PermitAttempt attempt = new PermitAttempt(1, leaseMs);
        if (!Blocking.awaitInterruptibly(() -> start(attempt, -1), services.cleanupNanos())) {
            throw new IllegalStateException("semaphore '" + name + "': a wait with no limit ended without a permit");
        }
        String id = attempt.ids.get(0);
        Scheduler clock = services.executor().scheduler();
        long validUntil = attempt.sentNanos + leaseNanos - scopeMarginNanos(leaseNanos);
        AtomicBoolean returned = new AtomicBoolean();
        LeaseScopedWork.Held held = new LeaseScopedWork.Held() {
            @Override
            public boolean isLive() {
                return !returned.get();
            }

            @Override
            public long validUntilNanos() {
                return validUntil;
            }

            @Override
            public void watch(Consumer<String> onLoss) {
                services.leases().watchClose(onLoss);
            }

            @Override
            public void unwatch(Consumer<String> onLoss) {
                services.leases().unwatchClose(onLoss);
            }

            @Override
            public String holder() {
                return "permit " + id;
            }
        };
        return new LeaseScopedWork(name, held, clock, false, Thread.currentThread()).run(work, stopped -> {
            try {
                return tryRelease(id) ? null : new LeaseLostException(name, "permit " + id + " of semaphore '"
                        + name + "' was no longer held when the work ended: its lease ran out (or the semaphore was "
                        + "deleted) while the work ran, and another holder may have overlapped it");
            } catch (RuntimeException e) {
                return e;
            } finally {
                returned.set(true); // the scope is over, whatever the release said
            }
        });
    }

    @Override
    public ExpirablePermit acquirePermit(long leaseTime, TimeUnit unit) throws InterruptedException {
        return handle(acquire(leaseTime, unit));
    }

    @Override
    public Optional<ExpirablePermit> tryAcquirePermit(long waitTime, long leaseTime, TimeUnit unit)
            throws InterruptedException {
        return tryAcquire(waitTime, leaseTime, unit).map(this::handle);
    }

    /**
     * A permit as a handle: closing it releases the permit once. A permit that had expired (or was
     * released elsewhere) before the close is reported, as a lock reports its lost lease: its
     * holder's work may have overlapped another holder's.
     */
    private ExpirablePermit handle(String id) {
        CloseOnce once = new CloseOnce();
        return new ExpirablePermit() {
            @Override
            public String id() {
                return id;
            }

            @Override
            public void close() {
                once.close(() -> {
                    if (!tryRelease(id)) {
                        throw new LeaseLostException(name, "permit " + id + " of semaphore '" + name
                                + "' was no longer held at close: its lease ran out (or it was released elsewhere) "
                                + "first, so another holder may have used it meanwhile");
                    }
                });
            }
        };
    }

    @Override
    public void setPermits(int permits) {
        Args.permitsNotNegative(permits);
        Blocking.join(permitsOp("set", permits));
    }

    @Override
    public boolean trySetPermits(int permits) {
        Args.permitsNotNegative(permits);
        return Blocking.join(permitsOp("try_set", permits)) == 1L;
    }

    @Override
    public boolean delete() {
        return Blocking.join(services.executor().<Long>eval(Script.SEMAPHORE_DELETE, CommandExecutor.Reply.INTEGER,
                List.of(name, channel, Layout.expirablePermits(name)), List.of())) == 1L;
    }

    @Override
    public CompletionStage<Optional<String>> tryAcquireAsync(long waitTime, long leaseTime, TimeUnit unit) {
        PermitAttempt attempt = new PermitAttempt(1, anyLease(leaseTime, unit));
        return start(attempt, Args.timeoutNanos(waitTime, unit))
                .resultAs(got -> got ? Optional.of(attempt.ids.get(0)) : Optional.empty());
    }

    @Override
    public CompletionStage<Void> releaseAsync(String permitId) {
        return sendRelease(permitId).thenApply(released -> {
            if (!released) {
                throw new IllegalArgumentException("permit " + permitId + " of semaphore '" + name
                        + "' is not held: never issued, released already, or expired");
            }
            return null;
        });
    }

    @Override
    public CompletionStage<Boolean> tryReleaseAsync(String permitId) {
        return sendRelease(permitId);
    }

    @Override
    public CompletionStage<Boolean> updateLeaseTimeAsync(String permitId, long leaseTime, TimeUnit unit) {
        Args.permitId(permitId);
        String lease = anyLease(leaseTime, unit);
        return services.executor().<Long>eval(Script.EXPIRABLE_UPDATE_LEASE, CommandExecutor.Reply.INTEGER, keys,
                List.of(permitId, lease)).thenApply(updated -> updated == 1L);
    }

    @Override
    public CompletionStage<Long> waiterCountAsync() {
        services.checkOpen();
        return services.executor().subscribers(channel);
    }

    @Override
    public CompletionStage<Integer> availablePermitsAsync() {
        return permitsOp("available", 0).thenApply(Long::intValue);
    }

    @Override
    public CompletionStage<Void> addPermitsAsync(int permits) {
        if (permits == 0) {
            return CompletableFuture.completedFuture(null);
        }
        // The plain semaphore's exactly-once add: a copy re-sent after a lost reply adds once, and
        // an unconfirmed add is finished by Baton and reported as DoNotRetryException (the retry rule).
        return Requests.notToBeRepeated(RedisSemaphore.add(services, name, channel, permits, Requests.newId(),
                "adding " + permits + " permits to semaphore '" + name + "'").foreground()).thenApply(count -> null);
    }

    private CompletableFuture<Long> permitsOp(String op, int n) {
        return services.executor().eval(Script.EXPIRABLE_PERMITS, CommandExecutor.Reply.INTEGER, keys,
                List.of(op, Integer.toString(n), MAX_PERMITS));
    }

    /**
     * Releases by id, re-sent on connection failures within the command timeout; true if it was
     * held. A "not held" answer is taken as our own work when an earlier copy may have run: a
     * re-sent copy, or a release of this id that could not be confirmed before (the caller
     * called release again, as the exception told it to).
     */
    private CompletableFuture<Boolean> sendRelease(String permitId) {
        String id = Args.permitId(permitId);
        CommandExecutor executor = services.executor();
        Requests requests = services.requests();
        return executor.<Long>evalUntilAnswered(Script.EXPIRABLE_RELEASE, CommandExecutor.Reply.INTEGER, keys,
                List.of(id), executor.timeout().toNanos()).handle((d, error) -> {
                    if (error == null) {
                        boolean unconfirmed = requests.takeUnconfirmed(name + "\u0000" + id);
                        return d.value() == 1L || d.resent() || unconfirmed;
                    }
                    Throwable cause = Failures.unwrap(error);
                    if (Failures.isConnectionFailure(cause)) {
                        requests.markUnconfirmed(name + "\u0000" + id);
                        throw new RedisUnavailableException("release of permit " + id + " of semaphore '" + name
                                + "' could not be confirmed: " + cause.getMessage() + "; calling release again with "
                                + "the same id completes it", cause);
                    }
                    if (cause instanceof ReplicaSyncException) {
                        // Ran on the master: a permit it released is not to be released again; one
                        // it did not find is answered as without replica sync (not held).
                        Object reply = ReplicaShortfall.replyOf(cause);
                        boolean notFound = reply instanceof CommandExecutor.Delivered<?> ran && Long.valueOf(0).equals(ran.value())
                                && !ran.resent() && !requests.takeUnconfirmed(name + "\u0000" + id);
                        if (notFound) {
                            return false;
                        }
                        throw Failures.doNotRetry(cause);
                    }
                    throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause);
                });
    }

    private static String leaseMs(long leaseTime, TimeUnit unit) {
        return Long.toString(Args.leaseMs(leaseTime, unit));
    }

    /** A lease where a negative one (Redisson's -1) means no lease time: the permit never expires. */
    private static String anyLease(long leaseTime, TimeUnit unit) {
        return Args.noLease(leaseTime, unit) ? NO_EXPIRY : leaseMs(leaseTime, unit);
    }


    private AcquireEngine.Acquisition start(PermitAttempt attempt, long waitNanos) {
        services.checkOpen();
        return services.engine().acquire(attempt, channel, WakeRule.BY_COUNT, waitNanos);
    }

    /**
     * One acquisition of one or more permits, all or none. Each attempt picks new ids, so the
     * undo of an attempt whose reply never came (a release of those ids) can never give back a
     * permit a later attempt took; {@link #ids} are the granted ones in the end.
     */
    private final class PermitAttempt implements AcquireEngine.Attempt {
        volatile List<String> ids = List.of();
        /** When the latest attempt began, before its send (the scope's validity counts from it). */
        volatile long sentNanos;
        /** The request key of the latest attempt. */
        private volatile String key;
        private final int permits;
        private final String leaseMs;
        private final SemaphoreWaits.DeletionWatch deletion = new SemaphoreWaits.DeletionWatch();

        PermitAttempt(int permits, String leaseMs) {
            this.permits = permits;
            this.leaseMs = leaseMs;
        }

        @Override
        public BatonObserver.Kind kind() {
            return BatonObserver.Kind.PERMIT_EXPIRABLE_SEMAPHORE;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return "acquiring " + (permits == 1 ? "a permit" : permits + " permits") + " of semaphore '" + name + "'";
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            services.checkOpen();
            sentNanos = services.executor().scheduler().nanoTime(); // before the send: the permit's lease starts later
            List<String> attemptIds = new ArrayList<>(permits);
            for (int i = 0; i < permits; i++) {
                attemptIds.add(UUID.randomUUID().toString().replace("-", ""));
            }
            ids = List.copyOf(attemptIds);
            List<String> taken = ids;
            String requestKey = Requests.key(name, taken.get(0));
            key = requestKey;
            Requests requests = services.requests();
            List<String> args = new ArrayList<>(attemptIds);
            args.add(leaseMs);
            args.add(requests.memoryArg());
            return services.executor().<List<Object>>evalTracked(Script.EXPIRABLE_ACQUIRE, CommandExecutor.Reply.ARRAY,
                    requests.withForgotten(name, withKey(requestKey)), args).thenApply(delivered -> {
                        List<Object> reply = delivered.value();
                        if ((Long) reply.get(0) == 1L) {
                            if (!delivered.resent()) {
                                requests.answered(name, requestKey);
                            }
                            return AcquireEngine.Outcome.GRANTED;
                        }
                        if (delivered.resent()) {
                            // A refusal answered by a copy Lettuce wrote again: the first copy may
                            // still be on its way (in a dropped connection or a stalled server's
                            // input) and would take permits for nobody, with no lease for ever
                            // (the simulation found it, expirable-semaphore seed 264).
                            cancel(taken, requestKey, "cancelling a refused acquire whose earlier copy may still run");
                        }
                        deletion.check(name, (Long) reply.get(2) == 1L);
                        long untilExpiry = (Long) reply.get(1);
                        long retry = untilExpiry < 0 ? SemaphoreWaits.RECHECK_MS : Math.min(untilExpiry + 1, SemaphoreWaits.RECHECK_MS);
                        return new AcquireEngine.Outcome(false, retry);
                    });
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            return cancel(ids, key, "cancelling an unanswered acquire");
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            // A release by this attempt's own ids; a late copy of the attempt finds its request
            // key "taken" and takes nothing more.
            List<String> taken = ids;
            return services.requests().deliver(Script.EXPIRABLE_RELEASE, CommandExecutor.Reply.INTEGER, keys, taken,
                    null, null, "giving back permit" + (taken.size() == 1 ? " " : "s ") + String.join(", ", taken)
                            + " of semaphore '" + name + "' taken after the wait was abandoned").foreground();
        }

        /**
         * Cancels an attempt by its request key: permits it took (and still has) come back, and a
         * copy of it that runs later takes none. Sent until answered (in the background past the
         * command timeout), never lost.
         */
        private CompletableFuture<?> cancel(List<String> taken, String requestKey, String why) {
            Requests requests = services.requests();
            List<String> args = new ArrayList<>(taken);
            args.add(requests.memoryArg());
            return requests.deliver(Script.EXPIRABLE_CANCEL, CommandExecutor.Reply.INTEGER, withKey(requestKey), args,
                    null, null, why + " (permit" + (taken.size() == 1 ? " " : "s ") + String.join(", ", taken)
                            + ") of semaphore '" + name + "'").foreground();
        }
    }

    /** The semaphore's keys and a request key. */
    private List<String> withKey(String requestKey) {
        return List.of(keys.get(0), keys.get(1), keys.get(2), requestKey);
    }

    @Override
    public String toString() {
        return "BatonPermitExpirableSemaphore{" + name + "}";
    }
}
