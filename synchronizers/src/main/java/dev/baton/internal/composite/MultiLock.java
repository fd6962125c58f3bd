package dev.baton.internal.composite;

// Over 300 lines on purpose: the one asynchronous sequence over the locks, its undo on every
// failure path and the scoped work nested over the locks share the sequence's state; the
// blocking methods are thin waits on it.

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.baton.BatonLock;
import dev.baton.BatonMultiLock;
import dev.baton.LeaseScope;
import dev.baton.LeaseWork;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.lease.OwnerIds;
import dev.baton.internal.command.Failures;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.lease.LeaseScopedWork;
import dev.baton.internal.lock.RedisLock;
import dev.baton.internal.support.Args;
import dev.baton.internal.support.CallerEndedFuture;
import dev.baton.internal.support.Names;
import dev.baton.internal.time.Scheduler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/*
 * All-or-nothing over several locks, deadlock-free by taking them in one canonical order (by
 * name; a name may appear once) whatever order the caller gave. Each lock does its own waiting
 * through its client's acquire engine (leases, renewal, wake-ups); this class only sequences
 * those acquisitions, one after the other within one wait budget, and undoes a partial
 * acquisition, in reverse order, on every failure path: refused, timed out, cancelled
 * (interrupt), Redis unavailable. There is one sequence, asynchronous; the blocking methods wait
 * on it like every other lock's (an interrupt cancels the acquisition in progress, and the locks
 * already taken are given back before InterruptedException is thrown).
 */
public final class MultiLock implements BatonMultiLock {

    /** One lock-taking step for the lock at an index; completes false when refused (time ran out). */
    private interface Step {
        /**
         * Starts taking one lock: the lock's own future (so cancelling it abandons that lock's
         * wait); completed normally with {@code null} or {@code true} it was granted.
         */
        CompletionStage<?> take(BatonLock lock);
    }

    /** What an interrupted wait may take to give back what it took, at most. */
    private static final long SETTLE_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final List<BatonLock> locks;
    private final Scheduler clock;
    /**
     * Per multi-lock (its names) and owner, the members whose release Redis did not confirm at
     * the owner's last unlock (each kept its hold, as a lock's unconfirmed unlock does), and what
     * else that unlock met (a lost lease): the owner's next unlock of the same names releases only
     * those members, so calling unlock again after a RedisUnavailableException completes it, never
     * meets the members already released, and still reports the loss. Shared by every instance
     * over the same names (a retry may build the multi-lock again), dropped when the owner starts
     * a new acquisition of them, forgotten an hour after an unlock nobody called again.
     */
    private static final Cache<String, Pending> UNCONFIRMED = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofHours(1)).maximumSize(10_000).build();

    /** What the owner's next unlock must still do: the members to release, and a loss to report. */
    private record Pending(List<Integer> members, Throwable reported) {
    }

    private final String names;

    public MultiLock(List<? extends BatonLock> given, Scheduler clock) {
        this.clock = clock;
        Objects.requireNonNull(given, "locks");
        if (given.isEmpty()) {
            throw new IllegalArgumentException("locks must not be empty");
        }
        Set<String> seen = new HashSet<>();
        for (BatonLock lock : given) {
            Objects.requireNonNull(lock, "locks element");
            if (!seen.add(orderKey(lock))) {
                throw new IllegalArgumentException("lock '" + lock.getName() + "' is named twice: a multi-lock takes each "
                        + "name once (for one name on several Redis deployments, use a RedLock)");
            }
        }
        List<BatonLock> ordered = new ArrayList<>(given);
        ordered.sort(Comparator.comparing(MultiLock::orderKey));
        this.locks = List.copyOf(ordered);
        List<String> each = new ArrayList<>();
        ordered.forEach(l -> each.add(l.getName()));
        this.names = String.join("\u0000", each);
    }

    /**
     * The canonical order: by name alone, which every process sees the same whatever object
     * stands for a lock (the client's own, or a view of a client not opened yet, as Spring's
     * auto-configured bean gives out). A name may appear once: two locks of one name (two kinds
     * on one Redis share the key; the same name on two Redis deployments is what a RedLock is
     * for) would have no order every process agrees on.
     */
    private static String orderKey(BatonLock lock) {
        return lock.getName();
    }

    @Override
    public List<BatonLock> locks() {
        return locks;
    }

    @Override
    public void lock() {
        Blocking.join(lockAsync(Names.threadOwner()).toCompletableFuture());
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        checkLease(leaseTime, unit);
        long owner = Names.threadOwner();
        long leaseNanos = Args.noLease(leaseTime, unit) ? -1 : unit.toNanos(leaseTime);
        Blocking.join(new Sequence<>(owner, leaseNanos, false, 0, l -> l.lockAsync(leaseTime, unit, owner), ok -> ok).start());
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        long owner = Names.threadOwner();
        await(new Sequence<>(owner, -1, false, 0, l -> l.lockAsync(owner), ok -> ok));
    }

    @Override
    public boolean tryLock() {
        long owner = Names.threadOwner();
        return Blocking.join(new Sequence<>(owner, -1, true, clock.nanoTime(), l -> l.tryLockAsync(owner), ok -> ok).start());
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        return await(timed(waitTime, -1, unit, Names.threadOwner()));
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        checkLease(leaseTime, unit);
        return await(timed(waitTime, leaseTime, unit, Names.threadOwner()));
    }

    @Override
    public void unlock() {
        Blocking.join(unlockAsync(Names.threadOwner()).toCompletableFuture());
    }

    // ---- asynchronous twins ----------------------------------------------------------------

    @Override
    public CompletionStage<Void> lockAsync(long ownerId) {
        // The sequence's own stage, as a Void: the caller's completion of it (cancel, orTimeout,
        // by hand) gives the set back before any callback of the caller's runs (SetResult).
        return new Sequence<Void>(ownerId, -1, false, 0, l -> l.lockAsync(ownerId), ok -> null).start();
    }

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        checkLease(leaseTime, unit);
        return timed(waitTime, leaseTime, unit, ownerId).start();
    }

    @Override
    public CompletionStage<Void> unlockAsync(long ownerId) {
        String key = pendingKey(ownerId);
        Pending pending = UNCONFIRMED.asMap().remove(key);
        List<Integer> order = new ArrayList<>();
        if (pending != null) {
            order.addAll(pending.members());
        } else {
            for (int i = locks.size() - 1; i >= 0; i--) {
                order.add(i);
            }
        }
        Throwable reportedBefore = pending == null ? null : pending.reported();
        return releaseEach(order, ownerId, false).thenApply(errors -> {
            List<Integer> notConfirmed = new ArrayList<>();
            List<String> names = new ArrayList<>();
            Throwable first = reportedBefore;
            for (int index : order) {
                Throwable e = errors[index];
                if (e == null) {
                    continue;
                }
                if (Failures.isConnectionFailure(e)) {
                    notConfirmed.add(index);
                    names.add(locks.get(index).getName());
                    continue;
                }
                if (first == null) {
                    first = e;
                } else if (first != e) {
                    first.addSuppressed(e);
                }
            }
            if (!notConfirmed.isEmpty()) {
                // Whatever else this unlock met (a lost lease) is thrown by the call that completes it.
                UNCONFIRMED.put(key, new Pending(notConfirmed, first));
                Throwable unconfirmedCause = errors[notConfirmed.get(0)];
                throw new RedisUnavailableException("unlock of " + this + " by owner " + ownerId
                        + " could not be confirmed for " + names + " (the other members are released); those keep"
                        + " their holds, and calling unlock again on these names completes them", unconfirmedCause);
            }
            if (first != null) {
                throw first instanceof RuntimeException re ? re : new CompletionException(first);
            }
            return null;
        });
    }

    /** A lease as every member reads it: negative means watchdog leases, zero is refused. */
    private static void checkLease(long leaseTime, TimeUnit unit) {
        if (!Args.noLease(leaseTime, unit)) {
            Args.leaseMs(leaseTime, unit);
        }
    }

    /** Every lock within one wait budget; {@code leaseTime < 0} means watchdog leases. */
    private Sequence<Boolean> timed(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        // Capped so that now + the wait cannot overflow (a quarter of the long range: 73 years).
        long deadline = clock.nanoTime() + Math.min(Args.waitNanos(waitTime, unit), Long.MAX_VALUE / 4);
        return new Sequence<>(ownerId, leaseTime < 0 ? -1 : unit.toNanos(leaseTime), true, deadline, l -> {
            long remaining = Math.max(0, deadline - clock.nanoTime());
            return leaseTime < 0
                    ? l.tryLockAsync(remaining, TimeUnit.NANOSECONDS, ownerId)
                    : l.tryLockAsync(remaining, unit.toNanos(leaseTime), TimeUnit.NANOSECONDS, ownerId);
        }, ok -> ok);
    }

    /**
     * Waits for a sequence interruptibly: an interrupt cancels the lock acquisition in progress,
     * the locks already taken are given back, and then {@link InterruptedException} is thrown
     * (unless the whole set had been taken already: then it is kept and the flag restored).
     */
    private static boolean await(Sequence<Boolean> sequence) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        CompletableFuture<Boolean> result = sequence.start();
        try {
            return result.get();
        } catch (InterruptedException e) {
            if (!result.cancel(false) && !result.isCompletedExceptionally() && Boolean.TRUE.equals(result.getNow(false))) {
                Thread.currentThread().interrupt();
                return true;
            }
            try {
                sequence.givenBack.get(SETTLE_NANOS, TimeUnit.NANOSECONDS);
            } catch (Exception ignored) {
                // given back in the background; the interrupt is what the caller hears
            }
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = Failures.unwrap(e.getCause());
            throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause);
        }
    }

    /**
     * One multi-lock acquisition: the locks taken one after the other in canonical order, each
     * waiting within what is left of the wait time; once it has run out (at once for a wait of
     * zero or less), the locks not yet taken get one attempt each, all at once (none waits, so
     * no order is needed, and the call ends within one command timeout of the deadline, not one
     * per lock). The result completes true when all are held; false, or exceptionally, once the
     * locks taken so far have their give-backs sent (not answered: the owner's next acquisition
     * of any of them waits for that answer, Leases.releasing, so it is never undone by them).
     * Completing the result from outside (the caller's cancel, orTimeout, by hand, an interrupt)
     * abandons it before any callback of the caller's runs ({@link SetResult}): the lock
     * acquisitions in progress are cancelled, and the locks held (taken earlier, or granted just
     * as the caller gave up) have their give-backs sent, so an acquisition the caller starts from
     * its callback waits for them.
     *
     * <p>The states of one member's grant, moved under {@link #state}: a take in progress
     * ({@link #round}) is GRANTED by its future, then either HELD (moved into {@link #held} by
     * the round's end, if the sequence was not abandoned) or GIVEN BACK; from HELD it is given
     * back by whoever takes {@link #held} (abandon, a failure, a lease check) or kept by the
     * caller with the set. A grant in progress when the caller abandons is given back by abandon
     * itself once its future is known to be done, claimed in {@link Round#claimed} so that the
     * round's end does not give it back a second time.
     *
     * <p>With a fixed lease, the set is reported held only if every member's lease surely runs on
     * (counted from the send of the attempt that granted it, less a drift): otherwise a member's
     * lease may have run out while the others were taken, so the set is given back and taken
     * again while the wait lasts (the simulation found grants of sets whose first member Redis no
     * longer held, multi-lock seed 56). A lease shorter than taking the set takes never succeeds.
     */
    private final class Sequence<T> {
        private final long ownerId;
        private final Step step;
        /** The fixed lease of every member, in ns; negative: watchdog leases (no validity to check). */
        private final long leaseNanos;
        /** Whether the wait has a deadline, and when it runs out (compared by difference). */
        private final boolean limited;
        private final long deadline;
        private final SetResult<T> result;
        /** Completes when a sequence that did not finish has given back every lock it took. */
        final CompletableFuture<Void> givenBack = new CompletableFuture<>();
        /** Completes when the lock acquisitions in progress at an abandon have settled (and grants they raced are given back). */
        private final CompletableFuture<Void> inProgressSettled = new CompletableFuture<>();
        /** Guards {@link #round}, {@link #held} and {@link #abandoned} (no monitor: virtual threads). */
        private final ReentrantLock state = new ReentrantLock();
        /** The lock acquisitions in progress, or null between rounds; guarded by state. */
        private Round round;
        /** The members this sequence holds, in the order taken; guarded by state. */
        private final List<Integer> held = new ArrayList<>();
        /** The result was completed from outside; guarded by state. */
        private boolean abandoned;
        /** When each member's acquisition was started (a lower bound of its lease's start). */
        private final long[] startedAt = new long[locks.size()];

        /** One round's takes: the members' indexes, their futures, and which grants abandon gave back itself. */
        private record Round(List<Integer> indexes, List<CompletableFuture<?>> takes, boolean[] claimed) {
        }

        Sequence(long ownerId, long leaseNanos, boolean limited, long deadline, Step step, Function<Boolean, T> value) {
            this.ownerId = ownerId;
            this.leaseNanos = leaseNanos;
            this.limited = limited;
            this.deadline = deadline;
            this.step = step;
            this.result = new SetResult<>(value, this::abandon);
        }

        CompletableFuture<T> start() {
            UNCONFIRMED.invalidate(pendingKey(ownerId));
            next(0);
            return result;
        }

        /**
         * The result was completed from outside (before its callbacks run): stop the acquisitions
         * in progress and send the give-backs of what is held now, grants that came just now
         * included, so that the owner's next acquisition of any member waits for them. All of it
         * under {@link #state}, which every path that takes members out of {@link #held} or claims
         * a grant also holds until its give-backs are sent: when this returns, every give-back
         * decided so far is in flight (registered with Leases.releasing), whichever thread
         * decided it (a review found a failure's give-back decided but not yet sent as the
         * caller's callbacks ran).
         */
        private void abandon() {
            state.lock();
            try {
                if (abandoned) {
                    return;
                }
                abandoned = true;
                List<Integer> back = reversed(held);
                held.clear();
                Round stop = round;
                if (stop == null) {
                    inProgressSettled.complete(null);
                } else {
                    // After a cancel a take is done: cancelled (the lock's engine gives back a
                    // grant that comes later, and the owner's next acquisition waits for that), or
                    // granted already, which is given back here, now, and claimed so the round's
                    // end does not. (A cancel may run the round's end on this thread: it finds
                    // the sequence abandoned and claims what it gives back itself.)
                    stop.takes().forEach(f -> f.cancel(false));
                    for (int k = stop.takes().size() - 1; k >= 0; k--) {
                        if (granted(stop.takes().get(k)) && !stop.claimed()[k]) {
                            stop.claimed()[k] = true;
                            back.add(stop.indexes().get(k));
                        }
                    }
                }
                CompletableFuture.allOf(giveBack(back), inProgressSettled).whenComplete((ok, e) -> givenBack.complete(null));
            } finally {
                state.unlock();
            }
        }

        private void next(int index) {
            if (index == locks.size()) {
                complete();
                return;
            }
            List<Integer> indexes = new ArrayList<>();
            boolean atOnce = waitRanOut();
            for (int i = index; i < (atOnce ? locks.size() : index + 1); i++) {
                indexes.add(i);
            }
            Round here;
            state.lock();
            try {
                if (abandoned) {
                    return; // abandon() found nothing in progress and gave back what was held
                }
                // Started under the state lock, so that an abandon waits until they are known
                // and can be cancelled (a lock's first call may open its client, a lazy view: an
                // abandon then waits for that too).
                List<CompletableFuture<?>> takes = new ArrayList<>();
                for (int i : indexes) {
                    startedAt[i] = clock.nanoTime();
                    CompletableFuture<?> taking;
                    try {
                        taking = step.take(locks.get(i)).toCompletableFuture();
                    } catch (RuntimeException e) {
                        taking = CompletableFuture.failedFuture(e);
                    }
                    takes.add(taking);
                }
                here = new Round(List.copyOf(indexes), takes, new boolean[takes.size()]);
                round = here;
            } finally {
                state.unlock();
            }
            AtomicReference<Throwable> error = new AtomicReference<>();
            List<CompletableFuture<?>> settled = new ArrayList<>();
            for (CompletableFuture<?> take : here.takes()) {
                settled.add(take.handle((value, e) -> {
                    Throwable cause = e == null ? null : Failures.unwrap(e);
                    if (cause != null && !(cause instanceof CancellationException)) {
                        error.compareAndSet(null, cause);
                    }
                    return null;
                }));
            }
            CompletableFuture.allOf(settled.toArray(CompletableFuture[]::new)).whenComplete((x, y) -> roundEnded(here, error.get()));
        }

        /** Every take of {@code here} has settled: keep the grants and go on, or give them back. */
        private void roundEnded(Round here, Throwable error) {
            boolean all;
            boolean wasAbandoned;
            state.lock();
            try {
                if (round == here) {
                    round = null;
                }
                wasAbandoned = abandoned;
                List<Integer> grantedNow = new ArrayList<>();
                List<Integer> unclaimed = new ArrayList<>();
                for (int k = 0; k < here.takes().size(); k++) {
                    if (granted(here.takes().get(k))) {
                        grantedNow.add(here.indexes().get(k));
                        if (!here.claimed()[k]) {
                            here.claimed()[k] = true;
                            unclaimed.add(here.indexes().get(k));
                        }
                    }
                }
                all = grantedNow.size() == here.indexes().size();
                if (wasAbandoned) {
                    // Granted as the wait was abandoned and not given back by abandon() itself.
                    giveBack(reversed(unclaimed)).whenComplete((ok, e) -> inProgressSettled.complete(null));
                    return;
                }
                held.addAll(grantedNow); // from here on, whoever takes held gives them back
                if (!all) {
                    giveBack(takeHeld()).whenComplete((ok, e) -> givenBack.complete(null)); // sent under the lock
                }
            } finally {
                state.unlock();
            }
            if (all) {
                next(here.indexes().get(here.indexes().size() - 1) + 1);
            } else {
                result.settle(error != null ? error : Boolean.FALSE);
            }
        }

        /** Whether a take's future completed with a grant ({@code null} from lockAsync, {@code true} from tryLockAsync). */
        private static boolean granted(CompletableFuture<?> take) {
            if (!take.isDone() || take.isCompletedExceptionally()) {
                return false;
            }
            Object value = take.getNow(null);
            return value == null || Boolean.TRUE.equals(value);
        }

        /**
         * The members this sequence holds, now handed to the caller to give back, last taken
         * first (none once abandoned: abandon() gave back what was held).
         */
        private List<Integer> takeHeld() {
            state.lock();
            try {
                List<Integer> mine = abandoned ? List.of() : reversed(held);
                held.clear();
                return mine;
            } finally {
                state.unlock();
            }
        }

        /** Whether the wait has run out (never, for a wait without a deadline). */
        private boolean waitRanOut() {
            return limited && deadline - clock.nanoTime() <= 0;
        }

        /**
         * Every lock is held: with a fixed lease, checks that every member's lease surely runs on
         * (from the send of the attempt that granted it, on this client's clock, less a drift of 1 %
         * + 2 ms, as the RedLock counts), then completes the result.
         */
        private void complete() {
            if (leaseNanos >= 0 && !leasesRunOn()) {
                // A member's lease may have run out while the others were taken: give the set
                // back (sent; the next acquisitions of its members wait for the answers) and take
                // it again while the wait lasts.
                CompletableFuture<Void> back;
                state.lock();
                try {
                    List<Integer> mine = takeHeld();
                    if (mine.isEmpty()) {
                        return; // abandoned meanwhile: abandon() gave back what was held
                    }
                    back = giveBack(mine); // sent under the lock (see abandon)
                } finally {
                    state.unlock();
                }
                if (waitRanOut()) {
                    back.whenComplete((ok, e) -> givenBack.complete(null));
                    result.settle(Boolean.FALSE);
                } else {
                    next(0);
                }
                return;
            }
            result.settle(Boolean.TRUE); // lost to the caller's completion: abandon() gave the set back
        }

        private boolean leasesRunOn() {
            long now = clock.nanoTime();
            long drift = leaseNanos / 100 + TimeUnit.MILLISECONDS.toNanos(2);
            for (int i = 0; i < locks.size(); i++) {
                long until = locks.get(i) instanceof RedisLock own ? own.surelyHeldUntil(ownerId) : startedAt[i] + leaseNanos;
                if (until == Long.MIN_VALUE) {
                    return false; // its lease ran out here already (and was forgotten)
                }
                if (until != Long.MAX_VALUE && until - drift - now <= 0) {
                    return false;
                }
            }
            return true;
        }

        /** Gives back the locks at {@code indexes} (sent at once, in that order); completes when all are answered or failed. */
        private CompletableFuture<Void> giveBack(List<Integer> indexes) {
            if (indexes.isEmpty()) {
                return CompletableFuture.completedFuture(null);
            }
            return releaseEach(indexes, ownerId, true).thenApply(errors -> null);
        }
    }

    /**
     * The stage a multi-lock acquisition returns. Baton completes it through {@link #settle};
     * anybody else who completes it (the caller's cancel, {@code orTimeout},
     * {@code completeOnTimeout}, a complete by hand, an interrupted blocking twin's cancel) runs
     * the sequence's abandon first, before any callback of the stage runs: a callback that starts
     * the same owner's next acquisition of a member then finds the give-backs in flight and waits
     * for them, instead of re-entering a hold that is about to be given back (a storm found
     * grants Redis did not hold, issue 45). Baton's outcome and the caller's completion race once,
     * for {@link #decision}: whoever sets it first decides; a caller that comes second completes
     * the stage with Baton's outcome first, so its own completion fails as it would on any
     * completed future.
     */
    private static final class SetResult<T> extends CallerEndedFuture<T> {
        private static final Object ABANDONED = new Object();
        private final Function<Boolean, T> value;
        private final Runnable abandon;
        /** null until decided; then Boolean.TRUE / FALSE or a Throwable (Baton's), or ABANDONED (the caller's). */
        private final AtomicReference<Object> decision = new AtomicReference<>();

        SetResult(Function<Boolean, T> value, Runnable abandon) {
            this.value = value;
            this.abandon = abandon;
        }

        /** Baton's outcome: TRUE, FALSE or a Throwable. Whether it decided (false: the caller had abandoned). */
        boolean settle(Object outcome) {
            if (!decision.compareAndSet(null, outcome)) {
                return false;
            }
            apply(outcome);
            return true;
        }

        private void apply(Object outcome) {
            if (outcome instanceof Throwable failure) {
                failByOwner(failure);
            } else {
                T mapped;
                try {
                    mapped = value.apply((Boolean) outcome);
                } catch (RuntimeException e) {
                    failByOwner(e);
                    return;
                }
                completeByOwner(mapped);
            }
        }

        @Override
        protected void endedByCaller(String how) {
            if (decision.compareAndSet(null, ABANDONED)) {
                abandon.run();
                return;
            }
            Object decided = decision.get();
            if (decided != ABANDONED) {
                apply(decided); // Baton decided first: its outcome is the stage's
            }
        }
    }

    private static List<Integer> reversed(List<Integer> indexes) {
        List<Integer> out = new ArrayList<>(indexes);
        Collections.reverse(out);
        return out;
    }

    /**
     * Releases the members at {@code order}: every unlock is sent at once, in that order (one
     * client's commands reach Redis in the order sent), so the whole release takes one command
     * timeout at most, not one per member; each is tried whatever the others do. Completes with
     * what each threw, by index (null: released). {@code giveBack}: holds the caller never had
     * (RedisLock.giveBackAsync: one Redis does not confirm is not kept); otherwise the owner's
     * unlock (kept, and completed by unlock again).
     */
    private CompletableFuture<Throwable[]> releaseEach(List<Integer> order, long ownerId, boolean giveBack) {
        Throwable[] errors = new Throwable[locks.size()];
        List<CompletableFuture<Void>> all = new ArrayList<>(order.size());
        for (int index : order) {
            CompletableFuture<Void> here;
            try {
                BatonLock lock = locks.get(index);
                here = giveBack && lock instanceof RedisLock own ? own.giveBackAsync(ownerId)
                        : lock.unlockAsync(ownerId).toCompletableFuture();
            } catch (RuntimeException e) {
                here = CompletableFuture.failedFuture(e);
            }
            all.add(here.handle((ok, error) -> {
                errors[index] = error == null ? null : Failures.unwrap(error);
                return null;
            }));
        }
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(ignored -> errors);
    }

    @Override
    public <T, E extends Exception> T withLock(LeaseWork<T, E> work) throws E, InterruptedException {
        Objects.requireNonNull(work, "work");
        try {
            return nested(0, List.of(), work);
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw LeaseScopedWork.<E>rethrow(e); // unchecked, or the work's own E
        }
    }

    /**
     * The work under the locks from {@code index} on, the ones before held with {@code taken}'s
     * scopes: each lock's own scoped work holds the rest, so each stops the whole on its loss and
     * the releases run in reverse order as the nesting unwinds.
     */
    private <T> T nested(int index, List<LeaseScope> taken, LeaseWork<T, ? extends Exception> work) throws Exception {
        // A lock taken earlier may have been lost while this one was awaited (a grant that won
        // the race with the stop's interrupt): go no further, with that lock's loss.
        taken.forEach(LeaseScope::checkValid);
        if (index == locks.size()) {
            return work.run(new SetScope(taken));
        }
        return locks.get(index).<T, Exception>withLock(scope -> nested(index + 1, with(taken, scope), work));
    }

    @Override
    public <T> CompletionStage<T> withLockAsync(Function<? super LeaseScope, ? extends CompletionStage<T>> work) {
        return withLockAsync(OwnerIds.next(), work);
    }

    @Override
    public <T> CompletionStage<T> withLockAsync(long ownerId, Function<? super LeaseScope, ? extends CompletionStage<T>> work) {
        Objects.requireNonNull(work, "work");
        return nestedAsync(0, ownerId, List.of(), work);
    }

    /**
     * {@link #nested}'s asynchronous form: a lock's work stage is the next lock's scoped call
     * (from the second on, as a stage that completes only once that call's release has been
     * answered), so a stop cancels it, and each lock is released after the ones taken after it.
     */
    private <T> CompletionStage<T> nestedAsync(int index, long ownerId, List<LeaseScope> taken,
                                              Function<? super LeaseScope, ? extends CompletionStage<T>> work) {
        taken.forEach(LeaseScope::checkValid); // an earlier lock lost, or the caller gone, meanwhile: no further
        if (index == locks.size()) {
            return work.apply(new SetScope(taken));
        }
        CompletionStage<T> call = locks.get(index).withLockAsync(ownerId,
                scope -> nestedAsync(index + 1, ownerId, with(taken, scope), work));
        return index == 0 ? call : new AfterRelease<>(call.toCompletableFuture(), RedisLock.settled(call));
    }

    /**
     * An inner lock's scoped call as the outer lock's work stage: completes as the call did, but
     * only once the call's release has been answered; cancelling it cancels the call (which
     * stops its work and releases its lock) and lets it complete then.
     */
    private static final class AfterRelease<T> extends CompletableFuture<T> {
        private final CompletableFuture<T> call;

        AfterRelease(CompletableFuture<T> call, CompletableFuture<Void> settled) {
            this.call = call;
            settled.whenComplete((ok, ignored) -> call.whenComplete((value, failure) -> {
                if (failure == null) {
                    complete(value);
                } else {
                    completeExceptionally(Failures.unwrap(failure));
                }
            }));
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            call.cancel(mayInterruptIfRunning);
            return true;
        }
    }

    private static List<LeaseScope> with(List<LeaseScope> taken, LeaseScope scope) {
        List<LeaseScope> all = new ArrayList<>(taken);
        all.add(scope);
        return List.copyOf(all);
    }

    /** The scope of work under the whole set: valid while each lock's is; a check throws the first lost lock's exception. */
    private static final class SetScope implements LeaseScope {
        private final List<LeaseScope> members;

        SetScope(List<LeaseScope> members) {
            this.members = members;
        }

        @Override
        public String lockName() {
            List<String> each = new ArrayList<>();
            members.forEach(m -> each.add(m.lockName()));
            return String.join(", ", each);
        }

        @Override
        public Duration remaining() {
            Duration least = null;
            for (LeaseScope member : members) {
                Duration left = member.remaining();
                if (least == null || left.compareTo(least) < 0) {
                    least = left;
                }
            }
            return least;
        }

        @Override
        public boolean isValid() {
            return !remaining().isZero();
        }

        @Override
        public void checkValid() {
            members.forEach(LeaseScope::checkValid);
        }

        @Override
        public OptionalLong fencingToken() {
            return OptionalLong.empty();
        }

        @Override
        public List<LeaseScope> members() {
            return members;
        }

        @Override
        public String toString() {
            return "LeaseScope{" + lockName() + ", remaining " + remaining().toMillis() + " ms}";
        }
    }

    private String pendingKey(long ownerId) {
        return names + "\u0000" + ownerId;
    }

    @Override
    public String toString() {
        List<String> names = new ArrayList<>();
        locks.forEach(l -> names.add(l.getName()));
        return "BatonMultiLock" + names;
    }
}
