package dev.baton.internal.lock;

// Over 300 lines on purpose: BatonLock's blocking and asynchronous methods (about thirty, each a
// line or two) and the one attempt and release every lock kind shares; what differs per kind is
// in its LockRecipe.

import dev.baton.BatonLock;
import dev.baton.BatonObserver;
import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.LeaseWork;
import dev.baton.LockHold;
import dev.baton.RedisUnavailableException;
import dev.baton.ReplicaSyncException;
import dev.baton.internal.lease.OwnerIds;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.Failures;
import dev.baton.internal.command.ReplicaShortfall;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.lease.Lease;
import dev.baton.internal.lease.LeaseScopedWork;
import dev.baton.internal.lease.Leases;
import dev.baton.internal.support.Args;
import dev.baton.internal.support.CallerEndedFuture;
import dev.baton.internal.support.CloseOnce;
import dev.baton.internal.support.Names;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/*
 * The lock plumbing shared by every kind of Baton lock: the blocking API as thin waits on the
 * async one, the async API with explicit owners, hold counts, leases and watchdog renewal, all
 * on the shared acquire engine. What differs between kinds (scripts, channel, wake rule, a fair
 * lock's queue and hand-off) is a LockRecipe.
 *
 * Hold counts are passed to the scripts. The acquire says "I believe I hold h"; the release
 * says "I believe I hold h". A re-sent copy of either finds the count already moved by one and
 * changes nothing, so a lost reply followed by Lettuce's re-send never adds a phantom hold and
 * never takes away a hold twice. That costs no extra key and no extra round trip: lock()
 * followed by unlock() is exactly two script calls.
 *
 * The one case the count cannot settle is a re-sent *final* release: the first copy deleted
 * the lock, so the second finds nothing, exactly as if the lease had expired. The executor
 * reports whether the command was written more than once; if it was, "nothing held" is taken
 * as our own release having landed. The remaining blind spot (a lease that expired just
 * before an unlock whose reply was lost) is documented in docs/guarantees.md.
 *
 * When an acquire gets no reply at all (timeout), it may still run later. The engine then
 * calls abandonUnknown(), which sends a release that expects h + 1 holds: if the acquire ran,
 * the release undoes it; if it did not, the release finds h holds and changes nothing. Both go
 * over the same connection, so the undo can never overtake the acquire.
 *
 * A fair lock may hand the lock to a waiter directly: the waiter learns it from the message
 * that woke it, records the grant without another round trip, and claims it (extends it from
 * the short claim timeout to its own lease) in the background.
 */
public class RedisLock implements BatonLock {
    private static final Logger log = LoggerFactory.getLogger(RedisLock.class);

    final Services services;
    final String name;
    private final LockRecipe recipe;

    public RedisLock(Services services, String name, Function<String, LockRecipe> recipe) {
        this.services = services;
        this.name = Args.name(name);
        this.recipe = recipe.apply(name);
    }

    @Override
    public String getName() {
        return name;
    }

    // ---- blocking API ----------------------------------------------------------------------

    @Override
    public void lock() {
        Blocking.awaitUninterruptibly(start(-1, watchdog(), Names.threadOwner()));
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        Blocking.awaitUninterruptibly(start(-1, lease(leaseTime, unit), Names.threadOwner()));
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lockInterruptiblyFor(watchdog());
    }

    @Override
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        lockInterruptiblyFor(lease(leaseTime, unit));
    }

    private void lockInterruptiblyFor(LeaseRequest lease) throws InterruptedException {
        long owner = Names.threadOwner();
        Blocking.awaitInterruptibly(() -> start(-1, lease, owner), services.cleanupNanos());
    }

    @Override
    public boolean tryLock() {
        return Blocking.awaitUninterruptibly(start(0, watchdog(), Names.threadOwner()));
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryLockFor(Args.waitNanos(waitTime, unit), watchdog());
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return tryLockFor(Args.waitNanos(waitTime, unit), lease(leaseTime, unit));
    }

    private boolean tryLockFor(long waitNanos, LeaseRequest lease) throws InterruptedException {
        long owner = Names.threadOwner();
        return Blocking.awaitInterruptibly(() -> start(waitNanos, lease, owner), services.cleanupNanos());
    }

    @Override
    public void unlock() {
        Blocking.join(release(Names.threadOwner()));
    }

    @Override
    public <T, E extends Exception> T withLock(LeaseWork<T, E> work) throws E, InterruptedException {
        Objects.requireNonNull(work, "work");
        long ownerId = Names.threadOwner();
        lockInterruptibly();
        Lease lease = services.leases().get(name, owner(ownerId));
        if (lease == null) {
            unlock(); // lost between the grant and here: the unlock says so (LeaseLostException)
            throw new IllegalStateException("'" + name + "' was granted but is not in the lease table");
        }
        LeaseScopedWork scope = new LeaseScopedWork(name, lease, services.leases(), services.executor().scheduler(),
                recipe.fenced(), Thread.currentThread());
        return scope.run(work, stopped -> {
            boolean last = lease.holds <= 1;
            try {
                unlock();
                return null;
            } catch (RuntimeException e) {
                if (stopped && e instanceof RedisUnavailableException && last) {
                    // Not known to be held, and not known to be released: nothing renews it any
                    // more (its renewal stopped before the release was sent), so Redis lets it
                    // expire within its lease; nobody will call unlock again for it.
                    forgetUnconfirmed(ownerId);
                }
                return e;
            }
        });
    }

    @Override
    public <T> CompletionStage<T> withLockAsync(Function<? super LeaseScope, ? extends CompletionStage<T>> work) {
        return withLockAsync(OwnerIds.next(), work);
    }

    @Override
    public <T> CompletionStage<T> withLockAsync(long ownerId, Function<? super LeaseScope, ? extends CompletionStage<T>> work) {
        Objects.requireNonNull(work, "work");
        AcquireEngine.Acquisition acquisition = start(-1, watchdog(), ownerId);
        CompletableFuture<Void> acquired = acquisition.untilGranted().toCompletableFuture();
        ScopedResult<T> result = new ScopedResult<>(ownerId, acquired, acquisition);
        acquired.whenComplete((granted, acquireFailure) -> {
            if (acquireFailure != null) {
                // Not granted (or given up by the caller): called off the completing thread.
                services.executor().scheduler().offload(() -> result.failUnlessEnded(Failures.unwrap(acquireFailure)));
                return;
            }
            // Granted: claimed here, on the thread that completed the grant, so that a caller
            // ending the call from now on finds the hold's release to wait for.
            CompletableFuture<Void> release = new CompletableFuture<>();
            boolean ours = result.state.compareAndSet(null, release);
            CompletableFuture<Void> claimed = ours ? release : result.claimedRelease();
            // The work is called off the thread that completed the grant (a Lettuce or timer thread).
            services.executor().scheduler().offload(() -> {
                if (ours) {
                    runScoped(ownerId, work, result, release);
                } else { // the caller ended the call as the grant came: give it back
                    giveBackThen(ownerId, claimed);
                }
            });
        });
        return result;
    }

    /**
     * Gives back the owner's hold as a clean-up (never kept as a hold if unconfirmed), ignoring
     * why it could not, and completes {@code after} once that give-back is answered.
     */
    private void giveBackThen(long ownerId, CompletableFuture<Void> after) {
        CompletableFuture<Void> back;
        try {
            back = giveBackAsync(ownerId);
        } catch (RuntimeException e) {
            log.debug("give-back of '{}' not sent: {}", name, e.toString());
            back = CompletableFuture.completedFuture(null);
        }
        back.whenComplete((v, e) -> after.complete(null));
    }

    /** {@link #unlockAsync(long)}, a synchronous refusal (a closed client) as a failed stage. */
    private CompletableFuture<Void> releaseAsync(long ownerId) {
        try {
            return release(ownerId);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** {@link ScopedResult#state} when the caller ended the call before any grant: nothing to give back. */
    private static final Object GIVEN_UP_BEFORE_THE_GRANT = new Object();

    /**
     * The stage {@link #withLockAsync} returns. Whoever else completes it (the caller's
     * {@code cancel}, {@code complete}, {@code orTimeout}, ...), the call is ended before any of
     * its callbacks runs (a caller's own callbacks run before Baton's): a wait still under way is
     * abandoned; a hold already granted has its coming release registered as the owner's release
     * in flight (Leases.releasing), so the owner's next acquisition of this lock, which such a
     * callback may start, waits for it instead of re-entering the hold being given back (the
     * simulation found it, readWriteLock seed 400076); running work is stopped. The grant and the
     * caller race for {@link #state} once: exactly one of them makes the release future, and it
     * completes once the release (or give-back) has been answered.
     */
    private final class ScopedResult<T> extends CallerEndedFuture<T> {
        private final long ownerId;
        private final CompletableFuture<Void> acquired;
        private final AcquireEngine.Acquisition acquisition;
        /** null: no grant and no caller's end yet; {@link #GIVEN_UP_BEFORE_THE_GRANT}; or the hold's release to come. */
        final AtomicReference<Object> state = new AtomicReference<>();
        private volatile LeaseScopedWork scope;
        /**
         * Set first thing when the caller ends the call: Baton then never completes the stage in
         * its place, and runScoped, which sets {@link #scope} and then reads this, never starts
         * the work after an end that read no scope.
         */
        private volatile boolean ended;

        ScopedResult(long ownerId, CompletableFuture<Void> acquired, AcquireEngine.Acquisition acquisition) {
            this.ownerId = ownerId;
            this.acquired = acquired;
            this.acquisition = acquisition;
        }

        @SuppressWarnings("unchecked")
        CompletableFuture<Void> claimedRelease() {
            return (CompletableFuture<Void>) state.get();
        }

        void running(LeaseScopedWork work) {
            this.scope = work;
        }

        /**
         * Completes once this stage has completed and the hold's release, if it had one, has been
         * answered; a wait given up before any grant, once the clean-up of the acquisition (a fair
         * waiter's leaving the queue) has been answered.
         */
        public CompletableFuture<Void> settled() {
            CompletableFuture<Void> done = new CompletableFuture<>();
            whenComplete((v, e) -> {
                if (state.get() instanceof CompletableFuture<?> release) {
                    release.whenComplete((ok, failed) -> done.complete(null));
                } else {
                    acquisition.finished().whenComplete((ok, failed) -> done.complete(null));
                }
            });
            return done;
        }

        /** The caller ends the call (see the class comment); {@code how} says how, for the stop's reason. */
        @Override
        protected void endedByCaller(String how) {
            if (isDone()) {
                return;
            }
            ended = true;
            if (state.get() == null) {
                if (acquired.cancel(false) || acquired.isCompletedExceptionally()) {
                    // Not granted: the wait is abandoned (a grant that races the cancel is the
                    // engine's to give back, and the owner's next acquisition waits for that).
                    state.compareAndSet(null, GIVEN_UP_BEFORE_THE_GRANT);
                    return;
                }
                // Granted, its callback not yet run: this call makes the release to wait for.
                state.compareAndSet(null, new CompletableFuture<Void>());
            }
            if (state.get() instanceof CompletableFuture<?> release && !release.isDone()) {
                services.leases().releasing(name, Names.owner(services.clientId(), ownerId), release);
            }
            LeaseScopedWork running = scope;
            if (running != null) {
                running.stop("the caller's stage completed first (" + how + ")");
            }
        }

        /** Whether the caller has ended the call (then it completes the stage itself). */
        boolean ended() {
            return ended;
        }

        /**
         * Baton's own completion: the release has been answered already. Not once the caller has
         * ended the call: the caller completes the stage itself, right after its end began, and
         * Baton completing it in between would run the caller's callbacks on Baton's thread (a
         * Lettuce event loop, where a blocking call in a callback stalls every reply) while the
         * caller's own cancel or complete lost (LeaseScopedWorkTest, under load).
         */
        void finish(T value) {
            if (!ended) {
                completeByOwner(value);
            }
        }

        /** Baton's own failure of the call, unless the caller has ended it (see {@link #finish}). */
        void fail(Throwable failure) {
            if (!ended) {
                failByOwner(failure);
            }
        }

        /** Baton's completion of a call that ended before its work ran, unless the caller ended it (and completes it). */
        void failUnlessEnded(Throwable failure) {
            if (!ended) {
                failByOwner(failure);
            }
        }
    }

    /**
     * Completes once a stage {@link #withLockAsync} returned has completed and its hold's release
     * has been answered (a caller's cancel completes the stage before that); any other stage:
     * once it completes.
     */
    public static CompletableFuture<Void> settled(CompletionStage<?> stage) {
        if (stage instanceof RedisLock.ScopedResult<?> scoped) {
            return scoped.settled();
        }
        return stage.toCompletableFuture().handle((v, e) -> null);
    }

    /**
     * {@link #withLockAsync}'s part once the lock is held for {@code ownerId}; {@code release}
     * completes once the hold's release (or give-back) has been answered, whatever happens here.
     */
    private <T> void runScoped(long ownerId, Function<? super LeaseScope, ? extends CompletionStage<T>> work,
                               ScopedResult<T> result, CompletableFuture<Void> release) {
        try {
            Lease lease = services.leases().get(name, owner(ownerId));
            if (lease == null || result.ended()) {
                // The caller gave up as the grant came (or it was lost at once): the work does not run.
                giveBackThen(ownerId, release);
                result.failUnlessEnded(leaseLost(owner(ownerId), "it was lost as it was granted"));
                return;
            }
            LeaseScopedWork scope = new LeaseScopedWork(name, lease, services.leases(), services.executor().scheduler(),
                    recipe.fenced(), null);
            result.running(scope);
            if (result.ended()) {
                // Ended as the scope was being made (its end may not have seen it): the same.
                giveBackThen(ownerId, release);
                return;
            }
            scope.watch();
            // The caller completing its stage in any way ends the work's too (also when that
            // came before the scope was known to it).
            result.whenComplete((r, e) -> scope.stop("the caller's stage completed first (" + (e == null ? "with a value"
                    : e.getClass().getSimpleName()) + ")"));
            CompletableFuture<T> stage;
            try {
                stage = scope.isStopped() ? CompletableFuture.failedFuture(scope.lost(null))
                        : Objects.requireNonNull(work.apply(scope), "the work returned no stage").toCompletableFuture();
            } catch (Throwable t) {
                stage = CompletableFuture.failedFuture(t);
            }
            scope.workStage(stage);
            stage.whenComplete((value, workFailure) -> {
                String stopped = scope.finish();
                Lease held = services.leases().get(name, owner(ownerId));
                boolean last = held == null || held.holds <= 1;
                releaseAsync(ownerId).whenComplete((v, releaseError) -> {
                    Throwable releaseFailure = releaseError == null ? null : Failures.unwrap(releaseError);
                    try {
                        if (releaseFailure instanceof RedisUnavailableException && last) {
                            // Nobody will call unlock again for this call's hold: forget it, which
                            // nothing renews any more, so Redis lets it expire with its lease (a hold
                            // the owner re-entered stays: its outer holder releases it).
                            forgetUnconfirmed(ownerId);
                        }
                    } finally {
                        release.complete(null); // the owner's next acquisition may go now
                    }
                    Throwable outcome = scope.outcome(stopped, workFailure == null ? null : Failures.unwrap(workFailure),
                            releaseFailure);
                    if (outcome != null) {
                        result.fail(outcome);
                    } else {
                        result.finish(value);
                    }
                });
            });
        } catch (RuntimeException | Error e) { // the client closed as the grant came, or the like: nothing runs
            giveBackThen(ownerId, release);
            result.failUnlessEnded(e);
            if (e instanceof Error error) {
                throw error;
            }
        }
    }

    @Override
    public LockHold acquire() {
        long owner = Names.threadOwner();
        lock();
        return new Hold(owner);
    }

    @Override
    public LockHold acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
        long owner = Names.threadOwner();
        lockInterruptibly(leaseTime, unit);
        return new Hold(owner);
    }

    @Override
    public Optional<LockHold> tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        long owner = Names.threadOwner();
        return tryLock(waitTime, unit) ? Optional.of(new Hold(owner)) : Optional.empty();
    }

    @Override
    public Optional<LockHold> tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long owner = Names.threadOwner();
        return tryLock(waitTime, leaseTime, unit) ? Optional.of(new Hold(owner)) : Optional.empty();
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return isHeldByThread(Names.threadOwner());
    }

    @Override
    public boolean isHeldByThread(long ownerId) {
        String owner = owner(ownerId);
        return Blocking.join(services.executor().read("HEXISTS", name, c -> c.hexists(name, owner)));
    }

    @Override
    public int getHoldCount() {
        return getHoldCount(Names.threadOwner());
    }

    @Override
    public int getHoldCount(long ownerId) {
        String owner = owner(ownerId);
        String count = Blocking.join(services.executor().read("HGET", name, c -> c.hget(name, owner)));
        return count == null ? 0 : Integer.parseInt(count);
    }

    @Override
    public void updateLease(Duration leaseTime) {
        Blocking.join(updateLeaseAsync(leaseTime, Names.threadOwner()));
    }

    @Override
    public CompletableFuture<Void> updateLeaseAsync(Duration leaseTime, long ownerId) {
        long leaseMs = Args.leaseMs(leaseTime);
        services.checkOpen();
        String owner = owner(ownerId);
        Lease lease = services.leases().get(name, owner);
        if (lease == null) {
            return CompletableFuture.failedFuture(notHeld(owner, services.leases().lostReason(name, owner)));
        }
        if (lease.watchdog) {
            return CompletableFuture.failedFuture(new IllegalStateException(recipe + " '" + name + "' is held by "
                    + owner + " under the watchdog, which renews it already; updateLease is for a hold taken with a lease time"));
        }
        long sent = services.leases().nanoTime();
        return services.renewer().update(lease, leaseMs).thenApply(held -> {
            if (!held) {
                String reason = "its lease expired or the lock was deleted before updateLease";
                services.leases().lost(lease, reason);
                throw leaseLost(owner, reason);
            }
            services.leases().updated(lease, leaseMs, sent);
            return null;
        });
    }

    @Override
    public long remainTimeToLive() {
        services.checkOpen();
        return Blocking.join(services.executor().read("PTTL", name, c -> c.pttl(name)));
    }

    // ---- asynchronous API ------------------------------------------------------------------

    @Override
    public CompletionStage<Void> lockAsync(long ownerId) {
        return start(-1, watchdog(), ownerId).untilGranted();
    }

    @Override
    public CompletionStage<Void> lockAsync(long leaseTime, TimeUnit unit, long ownerId) {
        return start(-1, lease(leaseTime, unit), ownerId).untilGranted();
    }


    @Override
    public CompletionStage<Boolean> tryLockAsync(long ownerId) {
        return start(0, watchdog(), ownerId).result();
    }

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, TimeUnit unit, long ownerId) {
        return start(Args.waitNanos(waitTime, unit), watchdog(), ownerId).result();
    }

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        return start(Args.waitNanos(waitTime, unit), lease(leaseTime, unit), ownerId).result();
    }

    @Override
    public CompletionStage<Void> unlockAsync(long ownerId) {
        return release(ownerId);
    }

    @Override
    public CompletionStage<Boolean> forceUnlockAsync() {
        services.checkOpen();
        return recipe.forceUnlock().thenApply(unlocked -> {
            wakeOwnWaiters(); // at once, not when the message comes back
            return unlocked;
        });
    }

    /**
     * Wakes this client's waiters for this lock as its release message would: run when the
     * client learns by itself that the lock may be free (a hold of its own found gone by a
     * renewal, a release or a re-entry; its forceUnlock), which Redis may never announce (a key
     * deleted by hand, or expired). Issue 45: a client whose own unlock reported the loss kept its
     * waiters asleep until their timers, 9 s.
     */
    private void wakeOwnWaiters() {
        services.engine().wakeLocal(recipe.channel(), recipe.wakeRule());
    }

    @Override
    public CompletionStage<Long> waiterCountAsync() {
        services.checkOpen();
        return recipe.waiters(services.executor());
    }

    @Override
    public CompletionStage<Boolean> isLockedAsync() {
        services.checkOpen();
        return recipe.isLocked();
    }

    // ---- the recipe ------------------------------------------------------------------------

    /** A requested lease: watchdog mode, or a fixed time in milliseconds. */
    record LeaseRequest(boolean watchdog, long ms) {
    }

    LeaseRequest watchdog() {
        return new LeaseRequest(true, services.watchdogMs());
    }

    /**
     * A caller's {@code leaseTime}, checked: a positive one is a fixed lease, a negative one
     * (Redisson's -1) means no lease time, that is the watchdog, and zero is refused.
     */
    LeaseRequest lease(long leaseTime, TimeUnit unit) {
        return Args.noLease(leaseTime, unit) ? watchdog() : new LeaseRequest(false, Args.leaseMs(leaseTime, unit));
    }

    /** The owner's field in the lock hash: its owner id, as the recipe spells it. */
    String owner(long ownerId) {
        return recipe.field(Names.owner(services.clientId(), ownerId));
    }

    AcquireEngine.Acquisition start(long waitNanos, LeaseRequest lease, long ownerId) {
        services.checkOpen();
        String owner = owner(ownerId);
        // An owner's acquisitions of one lock take turns, and one given up may still have an
        // attempt in flight whose grant it will give back: this one starts when the earlier ones
        // have settled, so no clean-up of theirs (counted by owner) can undo its hold
        // (Leases.acquiring). Keyed by the owner, not its field: a read lock's give-back must
        // land before the same owner's write acquisition too (which would otherwise be refused
        // as an upgrade).
        String ordered = Names.owner(services.clientId(), ownerId);
        return services.leases().acquiring(name, ordered, () -> services.engine().prepare(
                new LockAttempt(owner, ordered, lease, waitNanos != 0), recipe.channel(), recipe.wakeRule(), waitNanos));
    }

    /** One acquisition's attempts; remembers the hold count it last asked with. */
    private final class LockAttempt implements AcquireEngine.Attempt {
        private final String owner;
        /** The owner as acquisitions are ordered (Leases.acquiring): a read or write field's owner. */
        private final String ordered;
        private final LeaseRequest lease;
        private final boolean willWait;
        private int heldBefore;

        LockAttempt(String owner, String ordered, LeaseRequest lease, boolean willWait) {
            this.owner = owner;
            this.ordered = ordered;
            this.lease = lease;
            this.willWait = willWait;
        }

        @Override
        public String waiterTag() {
            return recipe.waiterTag(owner);
        }

        @Override
        public BatonObserver.Kind kind() {
            return recipe.kind();
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return "acquiring " + recipe + " '" + name + "'";
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            services.checkOpen();
            // The owner's releases of this lock still unanswered go first: one sent while this
            // acquisition waited for its turn, or between its attempts, would otherwise race
            // this attempt to Redis (see releaseInOrder).
            CompletableFuture<?> releases = services.leases().releasesInFlight(name, ordered);
            if (releases != null) {
                return releases.thenCompose(x -> attemptNow());
            }
            return attemptNow();
        }

        private CompletableFuture<AcquireEngine.Outcome> attemptNow() {
            services.checkOpen();
            Lease seen = services.leases().get(name, owner);
            heldBefore = services.leases().holds(name, owner);
            long sent = services.leases().nanoTime();
            return recipe.acquire(owner, heldBefore, lease.ms(), willWait).thenApply(grant -> {
                if (grant.granted() && reEntry() && grant.holds() <= heldBefore) {
                    throw reEnteredAfterLoss(grant.holds());
                }
                if (grant.granted()) {
                    // More holds in Redis than this owner's calls made (a late copy of an earlier
                    // acquisition of the owner's re-entered this one): they are nobody's, and the
                    // owner's final unlock gives them back too (see settle). And holds whose
                    // unlock the owner sent while this attempt was on its way (an unlock racing a
                    // re-entry, the multi-lock storm's finding): Redis ran this attempt first and
                    // counted them, their unlock takes them away after it, so they are not counted.
                    int releasedMeanwhile = seen == null || seen.holds >= heldBefore ? 0 : heldBefore - seen.holds;
                    int holds = Math.min(grant.holds(), heldBefore + 1) - releasedMeanwhile;
                    if (holds < grant.holds()) {
                        log.debug("'{}' by {}: {} holds in Redis for {} taken; the final unlock gives back the rest",
                                name, owner, grant.holds(), holds);
                    }
                    Lease held = services.leases().granted(name, owner, holds, lease.ms(),
                            lease.watchdog(), recipe.renewal(), sent);
                    held.token = grant.token();
                    held.onGone = RedisLock.this::wakeOwnWaiters;
                    return AcquireEngine.Outcome.GRANTED;
                }
                if (reEntry()) {
                    // Redis lets an owner that holds the lock re-enter at once, every kind: a
                    // refusal means the owner's holds are gone (and somebody else holds it now).
                    throw reEnteredAfterLoss(0);
                }
                return new AcquireEngine.Outcome(false, grant.retryAfterMs());
            });
        }

        /**
         * Whether this attempt is a re-entry of holds the owner has (not one whose last release
         * is unconfirmed: that release may have landed, and the owner was told to call unlock).
         */
        private boolean reEntry() {
            Lease held = services.leases().get(name, owner);
            return heldBefore > 0 && !(held != null && held.releaseUnconfirmed);
        }

        /**
         * A re-entry found the owner's earlier holds gone from Redis (force-unlocked, deleted, or
         * expired before the renewal or the loss report came): it was refused, or granted a first
         * hold ({@code freshHolds}) instead. Either way the owner must not go on as if it had held
         * throughout, while another owner may have held the lock in between. The loss is reported
         * (listener, WARN, the owner's next unlock), a fresh hold is given back, and the re-entry
         * fails with the loss.
         */
        private LeaseLostException reEnteredAfterLoss(int freshHolds) {
            String reason = "its lease was lost (the lock was deleted, force-unlocked or expired) before this re-entry";
            Lease old = services.leases().get(name, owner);
            if (old != null) {
                services.leases().lost(old, reason);
            }
            if (freshHolds > 0) {
                recipe.release(owner, freshHolds, lease.ms(), true).whenComplete((r, e) -> log.debug(
                        "giving back the hold a re-entry of '{}' by {} got after its lease was lost: {}", name, owner,
                        e == null ? "reply " + r.value() : e.toString()));
            }
            return leaseLost(owner, reason);
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            // Undo the acquire if it ran: a release that expects one hold more than we had.
            return recipe.release(owner, heldBefore + 1, lease.ms(), true)
                    .whenComplete((r, e) -> log.debug("undo of an unanswered acquire of '{}' by {}: {}", name, owner,
                            e == null ? "reply " + r.value() : e.toString()));
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            // The owner's next acquisition waits for its answer, not only for its send: a
            // give-back refused with NOSCRIPT runs again a round trip later (Leases.acquiring).
            CompletableFuture<Void> back = releaseInOrder(owner, ordered, true);
            return back.exceptionally(e -> {
                log.debug("giving back a late grant of '{}' by {} failed", name, owner, e);
                return null;
            });
        }

        @Override
        public CompletableFuture<?> leave() {
            if (services.leases().holds(name, owner) > 0) {
                return CompletableFuture.completedFuture(null);
            }
            return recipe.leave(owner).exceptionally(e -> {
                log.debug("leaving the wait for '{}' by {} failed", name, owner, e);
                return null;
            });
        }
    }

    /**
     * Gives back a hold its owner's caller never had: a multi-lock's member taken by an
     * acquisition that then failed, ran past its lease, or was abandoned. As a late grant's
     * give-back (sent as a clean-up), not as the owner's unlock: if Redis does not confirm it,
     * nobody will call unlock again for it, so it is not kept as a hold (its renewal has stopped,
     * and the hold ends in Redis with its lease).
     */
    public CompletableFuture<Void> giveBackAsync(long ownerId) {
        services.checkOpen();
        return releaseInOrder(owner(ownerId), Names.owner(services.clientId(), ownerId), true);
    }

    /**
     * Releases one hold of {@code owner}, registered as the owner's release in flight
     * (Leases.releasing, keyed by {@code ordered}) before the hold count changes: an attempt of
     * the owner's that reads the lowered count also finds the release, and waits for its answer
     * before it is sent (LockAttempt.attempt). Registered only after the send, an attempt on
     * another thread could read the lowered count and reach Redis first, which took the hold
     * being released for a re-sent copy of that attempt and granted it, and the release then
     * left the owner holding nothing (AsyncOwnerTest, an unlock beside a re-entry).
     */
    private CompletableFuture<Void> releaseInOrder(String owner, String ordered, boolean cleanup) {
        CompletableFuture<Void> answered = new CompletableFuture<>();
        services.leases().releasing(name, ordered, answered);
        CompletableFuture<Void> released;
        try {
            released = release(owner, cleanup);
        } catch (RuntimeException e) {
            answered.complete(null);
            throw e;
        }
        released.whenComplete((ok, e) -> answered.complete(null));
        return released;
    }

    /**
     * Until when, on this client's clock, the owner's hold is surely still in Redis: from the
     * send of the attempt that granted its fixed lease, the lease; {@code Long.MAX_VALUE} for a
     * watchdog lease; {@code Long.MIN_VALUE} if the owner holds nothing here.
     */
    public long surelyHeldUntil(long ownerId) {
        Lease lease = services.leases().get(name, owner(ownerId));
        if (lease == null || lease.holds <= 0) {
            return Long.MIN_VALUE;
        }
        return lease.watchdog ? Long.MAX_VALUE : lease.sentNanos + TimeUnit.MILLISECONDS.toNanos(lease.leaseMs);
    }

    /** This lock's client's lease table (where a RedLock over it lets an owner's acquisitions take turns). */
    public Leases leaseTable() {
        return services.leases();
    }

    /**
     * Forgets the owner's hold whose last release Redis did not confirm (kept so that the owner
     * can call unlock again), once nobody will: a RedLock unlock that other masters confirmed.
     * Its renewal has stopped, so it ends in Redis with its lease.
     */
    public void forgetUnconfirmed(long ownerId) {
        Lease lease = services.leases().get(name, owner(ownerId));
        if (lease != null && lease.releaseUnconfirmed) {
            services.leases().remove(lease);
        }
    }

    private CompletableFuture<Void> release(long ownerId) {
        services.checkOpen();
        // Until it is answered, the owner's next acquisition of this lock waits for it (keyed as
        // acquisitions are: Leases.acquiring), so it can never run after that acquisition.
        return releaseInOrder(owner(ownerId), Names.owner(services.clientId(), ownerId), false);
    }

    /**
     * Releases one hold of {@code owner}. The owner's own unlock re-sends the release on
     * connection failures within the command timeout (idempotent by hold count). If it still
     * gets no answer, the hold is kept, marked unconfirmed, and the unlock throws
     * RedisUnavailableException: the owner's next unlock sends the same release again and takes
     * "nothing held" as the first one having landed. A final hold stops being renewed before
     * its release is sent, so an unconfirmed final release still ends with the lease.
     */
    private CompletableFuture<Void> release(String owner, boolean cleanup) {
        Lease lease = services.leases().get(name, owner);
        if (lease == null) {
            return CompletableFuture.failedFuture(notHeld(owner, services.leases().takeLostReason(name, owner)));
        }
        int heldBefore = lease.holds;
        boolean unconfirmedBefore = lease.releaseUnconfirmed;
        if (heldBefore <= 1) {
            services.leases().stopRenewing(lease);
        }
        lease.holds = heldBefore - 1;
        return recipe.release(owner, heldBefore, lease.leaseMs, cleanup).<CompletableFuture<Void>>handle((delivered, error) -> {
            if (error != null) {
                Throwable cause = Failures.unwrap(error);
                if (cause instanceof ReplicaSyncException) {
                    // Ran on the master; too few replicas have it yet. What it answered decides:
                    // a release (the hold is over: not to be called again) or a lost lease.
                    Object reply = ReplicaShortfall.replyOf(cause);
                    if (reply instanceof CommandExecutor.Delivered<?> ran && ran.value() instanceof Long left) {
                        settle(lease, owner, heldBefore, unconfirmedBefore, new CommandExecutor.Delivered<>(left, ran.resent()));
                    } else if (heldBefore <= 1) {
                        services.leases().released(lease, recipe.kind());
                    }
                    throw Failures.doNotRetry(cause);
                }
                if (!Failures.isConnectionFailure(cause)) {
                    lease.holds = heldBefore;
                    throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause);
                }
                if (cleanup && heldBefore <= 1) {
                    // A give-back of a grant its caller never took: nobody will call unlock again
                    // for it. Its renewal has stopped, so if it did not land the hold ends in Redis
                    // with its lease; kept here it would be counted, and re-entered by the owner's
                    // next acquisition, for ever (the simulation found it, read-write seed 584).
                    services.leases().released(lease, recipe.kind());
                    throw new RedisUnavailableException("giving back a late grant of " + recipe + " '" + name
                            + "' by " + owner + " could not be confirmed: " + cause.getMessage()
                            + "; renewal has stopped, so the hold ends with its lease", cause);
                }
                lease.holds = heldBefore;
                lease.releaseUnconfirmed = true;
                throw new RedisUnavailableException("unlock of " + recipe + " '" + name + "' by " + owner
                        + " could not be confirmed: " + cause.getMessage() + "; the hold is kept, and calling unlock "
                        + "again completes the release" + (heldBefore <= 1
                        ? " (renewal has stopped, so the lock also ends when its lease runs out)" : ""), cause);
            }
            long left = delivered.value();
            if (heldBefore <= 1 && left > 0) {
                Lease now = services.leases().get(name, owner);
                if (now != null && now != lease) {
                    // A newer lease of the owner's: a re-entry sent before this unlock and granted
                    // first (Redis ran it first). The holds left are that lease's, counted there;
                    // given back as strays, they would be taken from under their caller (the
                    // multi-lock storm's finding).
                    services.leases().released(lease, recipe.kind());
                    return CompletableFuture.<Void>completedFuture(null);
                }
                // The owner's last hold is released, yet Redis keeps holds for it: nobody's (a late
                // copy of an earlier acquisition of the owner's landed during this hold). Given back
                // now, before the unlock returns; left, the watchdog-less hold would keep the lock
                // until its lease ran out, and a watchdog one for ever (the simulation's
                // million-seed run found it, lock seed 103548).
                return giveBackStray(lease, owner, (int) left, 0);
            }
            settle(lease, owner, heldBefore, unconfirmedBefore, delivered);
            return CompletableFuture.<Void>completedFuture(null);
        }).thenCompose(done -> done);
    }

    /**
     * Releases the holds Redis keeps for {@code owner} beyond its calls', one at a time (each
     * release is idempotent by the count it states), then forgets the lease. Bounded: at most the
     * number of stray holds, and each release by the command timeout.
     */
    private CompletableFuture<Void> giveBackStray(Lease lease, String owner, int holds, int round) {
        if (holds <= 0 || round > 1_000) {
            services.leases().released(lease, recipe.kind());
            return CompletableFuture.completedFuture(null);
        }
        return recipe.release(owner, holds, lease.leaseMs, true).handle((delivered, error) -> {
            if (error != null || delivered.value() < 0) {
                // Not confirmed, or nothing held: its renewal has stopped, so what is left ends with its lease.
                services.leases().released(lease, recipe.kind());
                return CompletableFuture.<Void>completedFuture(null);
            }
            return giveBackStray(lease, owner, (int) (long) delivered.value(), round + 1);
        }).thenCompose(done -> done);
    }

    /**
     * What a release's reply means for the hold: holds left (the last one released), or nothing
     * held, which is a release that had landed before (a re-sent copy, or a call again after an
     * unconfirmed unlock) or else a lost lease, reported and thrown as LeaseLostException.
     */
    private void settle(Lease lease, String owner, int heldBefore, boolean unconfirmedBefore,
                        CommandExecutor.Delivered<Long> delivered) {
        long left = delivered.value();
        if (left >= 0) {
            lease.releaseUnconfirmed = false;
            if (left == 0) {
                services.leases().released(lease, recipe.kind());
            } else {
                // The owner's own count, as it stands now (other unlocks sent since lowered it,
                // a re-entry granted since raised it): holds Redis keeps beyond it are nobody's
                // (see giveBackStray).
                lease.holds = (int) Math.min(left, lease.holds);
            }
            return;
        }
        if (heldBefore == 1 && (delivered.resent() || unconfirmedBefore)) {
            services.leases().released(lease, recipe.kind());
            log.debug("release of '{}' by {} found nothing held: an earlier copy of it released the lock", name, owner);
            return;
        }
        String reason = "its lease expired or the lock was deleted before unlock";
        services.leases().lostOnRelease(lease, heldBefore - 1, reason);
        throw leaseLost(owner, reason);
    }

    /** Why an owner with no lease here cannot release or update: its lease was lost ({@code lostReason}), or it never held. */
    private RuntimeException notHeld(String owner, String lostReason) {
        return lostReason != null ? leaseLost(owner, lostReason)
                : new IllegalMonitorStateException(recipe + " '" + name + "' is not held by owner " + owner);
    }

    private LeaseLostException leaseLost(String owner, String reason) {
        return new LeaseLostException(name, "lock '" + name + "' was held by " + owner + " but its lease was lost: " + reason);
    }

    @Override
    public String toString() {
        return "BatonLock{" + name + ", " + recipe + "}";
    }

    /** try-with-resources handle for one hold. */
    private final class Hold implements LockHold {
        private final long ownerId;
        private final CloseOnce once = new CloseOnce();

        Hold(long ownerId) {
            this.ownerId = ownerId;
        }

        @Override
        public String lockName() {
            return name;
        }

        @Override
        public void close() {
            once.close(() -> Blocking.join(release(ownerId)));
        }
    }
}
