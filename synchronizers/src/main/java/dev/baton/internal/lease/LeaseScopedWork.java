package dev.baton.internal.lease;

// Over 300 lines on purpose: one run of scoped work, every way it is stopped (a loss, a release,
// its validity's end, the client closing) and the blocking form's interrupt bookkeeping are read
// together; the async form and the fixed-validity holds (Held) share them.

import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.LeaseWork;
import dev.baton.internal.time.Scheduler;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * One run of lease-scoped work ({@code BatonLock.withLock}): the {@link LeaseScope} the work is
 * given, and what stops the work when its lease is lost (the lease table tells {@link Lease#watch};
 * a hold nobody renews, {@link Held}, only ends)
 * or its validity runs out on the client's clock (a timer at {@link Lease#validUntilNanos()},
 * re-armed while renewals move that on, on the scheduler's {@link Scheduler#stops() stop timer},
 * which runs nothing else).
 *
 * <p>The blocking form stops the work by interrupting its thread. The interrupt is given only
 * while the work runs: {@link #finish()} and {@link #stop(String)} take one lock, so a stop
 * that comes after the work returned does nothing. {@link #finish()} leaves the thread's
 * interrupt status as it was before the stop: it clears the stop's interrupt, and sets it again
 * if the thread was interrupted already when the stop came, or if work around this one (scoped
 * work the same thread runs this inside) has been stopped too, whose interrupt this one's
 * clearing would otherwise take away. An interrupt from elsewhere that comes after the stop is
 * taken for the stop's.
 */
public final class LeaseScopedWork implements LeaseScope {
    private final String lockName;
    private final Held held;
    private final Scheduler scheduler;
    private final boolean fenced;
    /** The thread that runs blocking work, or null for async work (whose stage is cancelled instead). */
    private final Thread worker;
    /** The stage async work returned, once it has; cancelled by a stop. */
    private CompletableFuture<?> stage;
    private final ReentrantLock guard = new ReentrantLock();
    /** The scoped work each thread runs now, innermost last (only the blocking form's threads). */
    private static final ThreadLocal<ArrayDeque<LeaseScopedWork>> RUNNING = ThreadLocal.withInitial(ArrayDeque::new);
    /**
     * Threads whose interrupt status a scope's stop set and no finish has cleared yet: another
     * scope's stop on the same thread must not take that interrupt for one from elsewhere.
     */
    private static final Set<Thread> INTERRUPTED_BY_A_STOP = ConcurrentHashMap.newKeySet();
    private final Consumer<String> onLoss = this::stop;
    /** Why the work was stopped, or null; written under {@link #guard}. */
    private volatile String stopped;
    private boolean finished;
    private boolean interruptedBefore;
    private Scheduler.Cancellable timer;

    /**
     * What a scope watches: a lease of the lease table (the locks'), or a hold with a validity
     * of its own and no renewal (a RedLock's, an expirable permit's), which only its end or its
     * release ends.
     */
    public interface Held {
        /** Whether the client still knows it as held: not found lost, not released. */
        boolean isLive();

        /** Until when, on the scheduler's clock, it is known to be held; read again at every check. */
        long validUntilNanos();

        /** Calls {@code onLoss}, with why, when the hold is found lost; a hold nobody renews is never told. */
        default void watch(Consumer<String> onLoss) {
        }

        default void unwatch(Consumer<String> onLoss) {
        }

        /** Who holds it, for messages. */
        String holder();

        /** Its fencing token, if {@code fenced}. */
        default long token() {
            return 0;
        }
    }

    /** A lease of the lease table, as a {@link Held}. */
    static Held held(Lease lease, Leases leases) {
        return new Held() {
            @Override
            public boolean isLive() {
                return leases.isLive(lease);
            }

            @Override
            public long validUntilNanos() {
                return lease.validUntilNanos();
            }

            @Override
            public void watch(Consumer<String> onLoss) {
                lease.watch(onLoss);
            }

            @Override
            public void unwatch(Consumer<String> onLoss) {
                lease.unwatch(onLoss);
            }

            @Override
            public String holder() {
                return String.valueOf(lease.owner);
            }

            @Override
            public long token() {
                return lease.token;
            }
        };
    }

    public LeaseScopedWork(String lockName, Lease lease, Leases leases, Scheduler scheduler, boolean fenced, Thread worker) {
        this(lockName, held(lease, leases), scheduler, fenced, worker);
    }

    public LeaseScopedWork(String lockName, Held held, Scheduler scheduler, boolean fenced, Thread worker) {
        this.lockName = lockName;
        this.held = held;
        this.scheduler = scheduler;

        this.fenced = fenced;
        this.worker = worker;
    }

    /** Starts watching (on the work's thread, for blocking work): from now a loss or the end of the validity stops the work. */
    public void watch() {
        if (worker != null) {
            RUNNING.get().addLast(this);
        }
        held.watch(onLoss);
        check();
    }

    /** How blocking scoped work gives its hold back. */
    public interface Release {
        /**
         * Releases the hold once the work has ended.
         *
         * @param stopped whether the work was stopped
         * @return what the release threw, or null
         */
        RuntimeException release(boolean stopped);
    }

    /**
     * Runs blocking work under this scope in the calling thread (the {@code worker}): watches,
     * runs the work unless a loss came first, finishes, releases, and ends by {@link #outcome}.
     */
    public <T, E extends Exception> T run(LeaseWork<T, E> work, Release release) throws E {
        watch();
        T result = null;
        Throwable failure = null;
        try {
            if (!isStopped()) { // lost between the grant and the watch: the work does not start
                result = work.run(this);
            }
        } catch (Throwable t) {
            failure = t;
        }
        String stopped = finish();
        Throwable outcome = outcome(stopped, failure, release.release(stopped != null));
        if (outcome != null) {
            throw LeaseScopedWork.<E>rethrow(outcome);
        }
        return result;
    }

    /** Whether the work has been stopped (it may already be before it starts: a loss before {@link #watch()} ended). */
    public boolean isStopped() {
        return stopped != null;
    }

    /** Stops the work at once if its lease is gone or its validity has run out; else re-arms the timer for its end. */
    private void check() {
        // Read and armed under the guard: a check that read an older, longer validity (a timer
        // that fired just as a re-entry cut it) cannot replace the timer the shorter one armed.
        guard.lock();
        try {
            if (finished || stopped != null) {
                return;
            }
            if (!held.isLive()) {
                stop("Baton found it lost, or it ended");
                return;
            }
            long left = held.validUntilNanos() - scheduler.nanoTime();
            if (left <= 0) {
                stop("its validity ran out on this client's clock: no renewal was confirmed for the lease less its margin "
                        + "(Redis unreachable or paused?), so Redis may let it expire");
                return;
            }
            if (timer != null) {
                timer.cancel(); // re-armed early (recheck): one timer at a time
            }
            timer = scheduler.stops().schedule(this::check, left, TimeUnit.NANOSECONDS);
        } finally {
            guard.unlock();
        }
    }

    /** The hold's validity may have moved (a RedLock re-entry cut it): stops at once if it has run out, else re-arms the timer. */
    public void recheck() {
        check();
    }

    /** Stops the work (once, and only while it runs): interrupts its thread, or cancels its stage. */
    public void stop(String why) {
        CompletableFuture<?> cancel = null;
        guard.lock();
        try {
            if (finished || stopped != null) {
                return;
            }
            stopped = why;
            if (worker != null) {
                interruptedBefore = worker.isInterrupted() && !INTERRUPTED_BY_A_STOP.contains(worker);
                INTERRUPTED_BY_A_STOP.add(worker);
                worker.interrupt();
            } else {
                cancel = stage;
            }
        } finally {
            guard.unlock();
        }
        if (cancel != null) {
            // Not on this thread (the renewal's, the timer's, a closing one): the stage's
            // callbacks, the release and the caller's own callbacks would run on it.
            CompletableFuture<?> work = cancel;
            scheduler.offload(() -> work.cancel(false));
        }
    }

    /** The stage the async work returned: cancelled at once if the work was stopped before it came back. */
    public void workStage(CompletableFuture<?> returned) {
        boolean cancel;
        guard.lock();
        try {
            stage = returned;
            cancel = stopped != null && !finished;
        } finally {
            guard.unlock();
        }
        if (cancel) {
            scheduler.offload(() -> returned.cancel(false));
        }
    }

    /**
     * The work has ended: stops watching and, if blocking work was stopped, clears the interrupt
     * the stop gave. Called by the work's thread (for blocking work).
     *
     * @return why the work was stopped, or null if it was not
     */
    public String finish() {
        held.unwatch(onLoss);
        ArrayDeque<LeaseScopedWork> running = worker == null ? new ArrayDeque<>() : RUNNING.get();
        running.remove(this);
        if (running.isEmpty() && worker != null) {
            RUNNING.remove();
        }
        guard.lock();
        try {
            finished = true;
            if (timer != null) {
                timer.cancel();
            }
            if (stopped != null && worker != null) {
                Thread.interrupted();
                boolean outerStopped = running.stream().anyMatch(LeaseScopedWork::isStopped);
                if (interruptedBefore || outerStopped) {
                    worker.interrupt();
                }
                if (!outerStopped) {
                    INTERRUPTED_BY_A_STOP.remove(worker);
                }
            }
            return stopped;
        } finally {
            guard.unlock();
        }
    }

    @Override
    public String lockName() {
        return lockName;
    }

    @Override
    public Duration remaining() {
        if (stopped != null || !held.isLive()) {
            return Duration.ZERO;
        }
        long left = held.validUntilNanos() - scheduler.nanoTime();
        return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
    }

    @Override
    public boolean isValid() {
        return !remaining().isZero();
    }

    @Override
    public void checkValid() {
        if (!isValid()) {
            throw lost(null);
        }
    }

    /** The exception for a lease that is not known to be held, with {@code cause} (may be null). */
    public LeaseLostException lost(Throwable cause) {
        String why = stopped;
        if (why == null) {
            why = held.isLive() ? "its validity ran out on this client's clock" : "Baton found it lost, or it ended";
        }
        LeaseLostException e = new LeaseLostException(lockName, "the lease of '" + lockName + "' held by " + held.holder()
                + " is not known to be held any more: " + why + "; another holder may have overlapped the work");
        if (cause != null) {
            e.initCause(cause);
        }
        return e;
    }

    @Override
    public OptionalLong fencingToken() {
        return fenced ? OptionalLong.of(held.token()) : OptionalLong.empty();
    }

    /**
     * What finished work ends with, both forms alike: null for the work's result; else what to
     * throw. A stopped work ends with {@link LeaseLostException} (the work's own failure as its
     * cause, unless that was the stop's cancellation; an {@link Error} is thrown as it is, the
     * loss suppressed); otherwise the work's failure (the release's added as suppressed), or the
     * release's.
     *
     * @param stopped        why the work was stopped ({@link #finish()}), or null
     * @param failure        what the work threw, unwrapped, or null
     * @param releaseFailure what the release threw, unwrapped, or null
     */
    public Throwable outcome(String stopped, Throwable failure, Throwable releaseFailure) {
        if (stopped != null) {
            LeaseLostException lost = failure instanceof LeaseLostException own && lockName.equals(own.lockName()) ? own
                    : lost(failure instanceof CancellationException || failure instanceof Error ? null : failure);
            if (releaseFailure != null && !(releaseFailure instanceof LeaseLostException)) {
                lost.addSuppressed(releaseFailure);
            }
            if (failure instanceof Error error) {
                error.addSuppressed(lost);
                return error;
            }
            return lost;
        }
        if (failure != null) {
            if (releaseFailure != null && releaseFailure != failure) {
                failure.addSuppressed(releaseFailure);
            }
            return failure;
        }
        return releaseFailure;
    }

    /**
     * {@code failure} to throw from a method declared to throw {@code E}: unchecked as it is, or
     * else the work's own checked {@code E} (the only checked exception the work could throw).
     */
    @SuppressWarnings("unchecked")
    public static <E extends Exception> E rethrow(Throwable failure) throws E {
        if (failure instanceof RuntimeException e) {
            throw e;
        }
        if (failure instanceof Error e) {
            throw e;
        }
        throw (E) failure;
    }

    @Override
    public String toString() {
        return "LeaseScope{" + lockName + ", remaining " + remaining().toMillis() + " ms}";
    }
}
