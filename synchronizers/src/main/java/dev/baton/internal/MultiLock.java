package dev.baton.internal;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.baton.BatonLock;
import dev.baton.BatonMultiLock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

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
final class MultiLock implements BatonMultiLock {

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

    MultiLock(List<? extends BatonLock> given, Scheduler clock) {
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
        Blocking.join(new Sequence(owner, l -> l.lockAsync(leaseTime, unit, owner)).start());
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        long owner = Names.threadOwner();
        await(new Sequence(owner, l -> l.lockAsync(owner)));
    }

    @Override
    public boolean tryLock() {
        long owner = Names.threadOwner();
        return Blocking.join(new Sequence(owner, l -> l.tryLockAsync(owner)).start());
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
        Sequence sequence = new Sequence(ownerId, l -> l.lockAsync(ownerId));
        CompletableFuture<Boolean> result = sequence.start();
        // Derived by hand so that the caller's completion of it (cancel, orTimeout, by hand)
        // reaches the sequence, and a set taken just as the caller gave up is given back.
        CompletableFuture<Void> granted = new CompletableFuture<>();
        result.whenComplete((ok, e) -> {
            if (e != null) {
                granted.completeExceptionally(e);
            } else if (!granted.complete(null) && Boolean.TRUE.equals(ok)) {
                releaseFrom(locks.size() - 1, ownerId);
            }
        });
        granted.whenComplete((ok, e) -> {
            if (!result.isDone()) {
                result.cancel(false);
            }
        });
        return granted;
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
        return releaseEach(order, ownerId).thenApply(errors -> {
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
                throw new dev.baton.RedisUnavailableException("unlock of " + this + " by owner " + ownerId
                        + " could not be confirmed for " + names + " (the other members are released); those keep"
                        + " their holds, and calling unlock again on these names completes them", unconfirmedCause);
            }
            if (first != null) {
                throw first instanceof RuntimeException re ? re : new java.util.concurrent.CompletionException(first);
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
    private Sequence timed(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        long deadline = clock.nanoTime() + Args.waitNanos(waitTime, unit);
        return new Sequence(ownerId, l -> {
            long remaining = Math.max(0, deadline - clock.nanoTime());
            return leaseTime < 0
                    ? l.tryLockAsync(remaining, TimeUnit.NANOSECONDS, ownerId)
                    : l.tryLockAsync(remaining, unit.toNanos(leaseTime), TimeUnit.NANOSECONDS, ownerId);
        });
    }

    /**
     * Waits for a sequence interruptibly: an interrupt cancels the lock acquisition in progress,
     * the locks already taken are given back, and then {@link InterruptedException} is thrown
     * (unless the whole set had been taken already: then it is kept and the flag restored).
     */
    private static boolean await(Sequence sequence) throws InterruptedException {
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
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = Failures.unwrap(e.getCause());
            throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause);
        }
    }

    /**
     * One multi-lock acquisition: the locks taken one after the other in canonical order. The
     * result completes true when all are held; false, or exceptionally, only after every lock
     * taken so far has been released in reverse order. Cancelling the result cancels the lock
     * acquisition in progress and gives back what was taken.
     */
    private final class Sequence {
        private final long ownerId;
        private final Step step;
        private final CompletableFuture<Boolean> result = new CompletableFuture<>();
        /** Completes when a sequence that did not finish has given back every lock it took. */
        final CompletableFuture<Void> givenBack = new CompletableFuture<>();
        private volatile CompletableFuture<?> current;
        private volatile boolean cancelled;
        /** Set before the sequence completes its result itself. */
        private volatile boolean ending;

        Sequence(long ownerId, Step step) {
            this.ownerId = ownerId;
            this.step = step;
            result.whenComplete((ok, e) -> {
                // Completed by the caller (cancel, orTimeout, by hand), not by the sequence.
                if (!ending) {
                    cancelled = true;
                    CompletableFuture<?> c = current;
                    if (c != null) {
                        c.cancel(false);
                    }
                }
            });
        }

        CompletableFuture<Boolean> start() {
            UNCONFIRMED.invalidate(pendingKey(ownerId));
            next(0);
            return result;
        }

        private void next(int index) {
            if (index == locks.size()) {
                ending = true;
                if (!result.complete(true)) {
                    giveBack(index - 1, null); // cancelled just as the last lock came
                }
                return;
            }
            CompletableFuture<?> taking;
            try {
                taking = step.take(locks.get(index)).toCompletableFuture();
            } catch (RuntimeException e) {
                giveBack(index - 1, e);
                return;
            }
            current = taking;
            if (cancelled) {
                taking.cancel(false);
            }
            taking.whenComplete((value, error) -> {
                boolean got = error == null && (value == null || Boolean.TRUE.equals(value));
                if (got && !cancelled) {
                    next(index + 1);
                    return;
                }
                // A lock granted just as the wait was cancelled is held: give it back too.
                int last = got ? index : index - 1;
                giveBack(last, error == null || error instanceof java.util.concurrent.CancellationException
                        ? null : Failures.unwrap(error));
            });
        }

        /** Releases locks {@code last} down to 0, then ends the sequence without the set. */
        private void giveBack(int last, Throwable error) {
            releaseFrom(last, ownerId).whenComplete((ok, releaseError) -> {
                givenBack.complete(null);
                ending = true;
                if (error != null) {
                    if (releaseError != null) {
                        error.addSuppressed(Failures.unwrap(releaseError));
                    }
                    result.completeExceptionally(error);
                } else {
                    result.complete(false);
                }
            });
        }
    }

    /** Releases locks {@code from} down to 0 for the owner, each tried even if one before failed. */
    private CompletableFuture<Void> releaseFrom(int from, long ownerId) {
        List<Integer> order = new ArrayList<>();
        for (int i = from; i >= 0; i--) {
            order.add(i);
        }
        return releaseEach(order, ownerId).thenApply(errors -> {
            Throwable first = null;
            for (int index : order) {
                Throwable e = errors[index];
                if (e == null) {
                    continue;
                }
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
            if (first != null) {
                throw new java.util.concurrent.CompletionException(first);
            }
            return null;
        });
    }

    /**
     * Releases the members at {@code order}, one after the other, each tried whatever the ones
     * before it did; completes with what each threw, by index (null: released).
     */
    private CompletableFuture<Throwable[]> releaseEach(List<Integer> order, long ownerId) {
        Throwable[] errors = new Throwable[locks.size()];
        CompletableFuture<Void> all = CompletableFuture.completedFuture(null);
        for (int index : order) {
            all = all.thenCompose(ignored -> {
                CompletableFuture<Void> here;
                try {
                    here = locks.get(index).unlockAsync(ownerId).toCompletableFuture();
                } catch (RuntimeException e) {
                    here = CompletableFuture.failedFuture(e);
                }
                return here.handle((ok, error) -> {
                    errors[index] = error == null ? null : Failures.unwrap(error);
                    return null;
                });
            });
        }
        return all.thenApply(ignored -> errors);
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
