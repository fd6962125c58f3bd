package dev.baton.internal.election;

import dev.baton.Candidacy;
import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.Leadership;
import dev.baton.LeadershipListener;
import dev.baton.LeadershipListener.Revocation;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.Services;
import dev.baton.internal.lock.RedisLock;
import dev.baton.internal.command.Failures;
import dev.baton.internal.time.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/*
 * One candidacy, driven by completions: each turn is one RedisLock.withLockAsync on the
 * election's lock (a fair lock in election mode: candidates lead in the order they queued), for
 * an owner id of the turn's own, so the work runs as async lease-scoped work: its stage is
 * cancelled when the lease is found lost or its validity runs out, and the release (a hand-off
 * to the next live candidate) follows however the stage ends. When the turn is over the next one
 * starts, until the candidacy is closed. Nothing here blocks: the simulation drives it on virtual
 * time, and the reactive and coroutine forms use it as it is.
 *
 * A Runner runs the user's work for a term: a blocking LeadershipWork on a worker thread of the
 * candidacy's own (stopped by interrupting that thread), or an async one whose stage is cancelled.
 * A blocking work stopped by a loss may still run when the stage is cancelled and the lock is
 * released: the next turn waits until it has returned (one worker, one work at a time).
 *
 * A relinquish or a close records on the term who asked (the revocation names it) and stops the
 * work; the term's `over` completes when the turn has ended (work returned, release tried), which
 * is what relinquish() and close() wait for. Each turn has a fresh owner id, so a hold whose
 * release Redis did not confirm (Baton forgets it; it expires unrenewed) is never re-entered.
 */
final class Candidate implements Candidacy {
    private static final Logger log = LoggerFactory.getLogger(Candidate.class);
    static final long RETRY_MS = 1000;

    /** Runs the user's work for one term, and the listeners' calls on the work's thread. */
    interface Runner {
        /**
         * Starts the work, calling {@code first} (the elected listeners) just before it on the
         * same thread, unless the term was stopped before it began (then neither runs); the stage
         * completes when the work has ended (its result is ignored).
         */
        CompletableFuture<Void> start(Term term, Runnable first);

        /** Stops the work of {@code term} if it still runs (interrupt, or cancel its stage). */
        void stop(Term term);

        /**
         * Runs {@code call} where listeners run: a blocking work's thread, after the work that
         * runs there has returned; for async work, the default asynchronous executor. Never on
         * one of Baton's I/O or timer threads.
         */
        void onWorkThread(Runnable call);

        /** Whether the calling thread runs a term's work (a blocking relinquish/close there would wait for itself). */
        boolean isWorkThread();

        /** The candidacy ended: release any thread. */
        void shutdown();
    }

    private final Services services;
    private final String election;
    private final RedisLock lock;
    private final String identity;
    private final Runner runner;
    private final Scheduler scheduler;
    private final List<LeadershipListener> listeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private final java.util.function.Supplier<CompletableFuture<?>> onClientClose = this::closeForClient;
    private final ReentrantLock stateLock = new ReentrantLock();
    private final Condition changed = stateLock.newCondition();
    private volatile Term term;
    /** The turn in flight (waiting or leading), cancelled by a close while waiting. */
    private volatile CompletableFuture<Void> turn;
    /** Whether the current outage was logged already (read and written by whichever thread ends a turn). */
    private volatile boolean outage;

    /** One leadership: its scope, who asked to end it, the work's stage, and when the term was over. */
    static final class Term {
        final Elected leadership;
        final AtomicReference<Revocation> requested = new AtomicReference<>();
        final CompletableFuture<Void> over = new CompletableFuture<>();
        /** When it began, on the client's scheduler's clock. */
        long startedNanos;
        volatile CompletableFuture<Void> work;
        /** Set when the elected listeners were called: the revoked ones are called then too. */
        volatile boolean told;
        /** Set when the work has ended (or is stopped before it starts): no longer claims to lead. */
        volatile boolean ending;

        Term(LeaseScope scope, String identity, String election) {
            this.leadership = new Elected(scope, identity, election, this);
        }

        Leadership leadership() {
            return leadership;
        }
    }

    private final java.util.function.LongSupplier ownerIds;

    Candidate(Services services, String election, RedisLock lock, String identity, Runner runner,
              java.util.function.LongSupplier ownerIds) {
        this.services = services;
        this.ownerIds = ownerIds;
        this.election = election;
        this.lock = lock;
        this.identity = identity;
        this.runner = runner;
        this.scheduler = services.executor().scheduler();
    }

    void start() {
        services.lifecycle().beforeClose(onClientClose);
        if (services.lifecycle().isClosed()) {
            // The client closed between join's check and the hook: nothing will close this candidacy.
            closed.set(true);
            finish();
            return;
        }
        campaign();
    }

    @Override
    public String identity() {
        return identity;
    }

    @Override
    public String electionName() {
        return election;
    }

    @Override
    public boolean isLeader() {
        Term t = term;
        return t != null && t.leadership.isValid();
    }

    @Override
    public Optional<Leadership> leadership() {
        Term t = term;
        return t == null ? Optional.empty() : Optional.of(t.leadership);
    }

    @Override
    public boolean awaitLeadership(long timeout, TimeUnit unit) throws InterruptedException {
        if (timeout < 0) {
            throw new IllegalArgumentException("timeout must not be negative: " + timeout);
        }
        long left = unit.toNanos(timeout);
        stateLock.lock();
        try {
            while (!isLeader()) {
                if (closed.get() || left <= 0) {
                    return false;
                }
                left = changed.awaitNanos(left);
            }
            return true;
        } finally {
            stateLock.unlock();
        }
    }

    @Override
    public boolean relinquish() throws InterruptedException {
        if (runner.isWorkThread()) {
            throw new IllegalStateException("relinquish() was called from the leadership work of '" + election
                    + "': return from the work instead, which hands leadership on the same way");
        }
        try {
            return relinquishAsync().toCompletableFuture().get();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public CompletionStage<Boolean> relinquishAsync() {
        Term t = term;
        if (t == null || (t.ending && t.requested.get() == null)) {
            return CompletableFuture.completedFuture(false); // not leading, or its leadership is being lost
        }
        if (t.requested.compareAndSet(null, Revocation.RELINQUISHED)) {
            runner.stop(t);
            return t.over.thenApply(ok -> true);
        }
        // Another relinquish or a close is handing it on: so does this call. A work that returned
        // on its own hands it on too, but leads no more (its leadership is not valid): false.
        return t.requested.get() == Revocation.WORK_ENDED ? CompletableFuture.completedFuture(false)
                : t.over.thenApply(ok -> true);
    }

    @Override
    public void addListener(LeadershipListener listener) {
        listeners.add(java.util.Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public boolean removeListener(LeadershipListener listener) {
        return listeners.remove(listener);
    }

    @Override
    public void close() {
        CompletableFuture<Void> done = closeAsync().toCompletableFuture();
        if (runner.isWorkThread()) {
            return; // the work closes its own candidacy: it ends when the work returns
        }
        try {
            done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public CompletionStage<Void> closeAsync() {
        if (closed.compareAndSet(false, true)) {
            Term t = term;
            if (t != null) {
                t.requested.compareAndSet(null, Revocation.CLOSED);
                runner.stop(t);
            } else {
                CompletableFuture<Void> waiting = turn;
                if (waiting != null) {
                    waiting.cancel(false); // abandons the wait (a grant racing it is given back)
                }
            }
            signal();
        }
        return ended.copy();
    }

    /**
     * The client closes: starts closing; the client waits for the stage (all its candidacies at
     * once) at most the command timeout + 1 s, and says so here if a work ignores interruption.
     * Closed from the work itself, the stage cannot complete before the work returns: not waited for.
     */
    private CompletableFuture<?> closeForClient() {
        CompletableFuture<Void> done = closeAsync().toCompletableFuture();
        if (runner.isWorkThread()) {
            return CompletableFuture.completedFuture(null);
        }
        services.executor().scheduler().schedule(() -> {
            if (!done.isDone()) {
                log.warn("the candidacy of {} in leader election '{}' did not end within the command timeout + 1 s of the"
                        + " client's close (its work ignores interruption?); its leadership expires in Redis on its own",
                        identity, election);
            }
        }, services.commandTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        return done;
    }

    private void signal() {
        stateLock.lock();
        try {
            changed.signalAll();
        } finally {
            stateLock.unlock();
        }
    }

    private void setTerm(Term t) {
        stateLock.lock();
        try {
            term = t;
            changed.signalAll();
        } finally {
            stateLock.unlock();
        }
    }

    // ---- the turns -------------------------------------------------------------------------------

    private void campaign() {
        if (closed.get()) {
            finish();
            return;
        }
        AtomicReference<Term> elected = new AtomicReference<>();
        CompletableFuture<Void> next;
        try {
            next = lock.<Void>withLockAsync(ownerIds.getAsLong(), scope -> elected(scope, elected)).toCompletableFuture();
        } catch (RuntimeException e) {
            next = CompletableFuture.failedFuture(e);
        }
        turn = next;
        if (closed.get()) {
            next.cancel(false);
        }
        // Once the turn has ended and what it left in Redis is gone: the hold's release answered,
        // or a wait given up has left the line (so close() returns with the candidate out of it).
        CompletableFuture<Void> turnOver = next;
        next.whenComplete((ok, error) -> RedisLock.settled(turnOver).whenComplete((s, e) -> afterTurn(elected.get(), error)));
    }

    /** Elected: the term begins; its work's stage is what the lease-scoped work follows. */
    private CompletionStage<Void> elected(LeaseScope scope, AtomicReference<Term> elected) {
        Term t = new Term(scope, identity, election);
        elected.set(t);
        if (closed.get()) {
            // Closed while the grant came: handed on at once, and nobody is told of it.
            t.requested.compareAndSet(null, Revocation.CLOSED);
            t.ending = true;
            return CompletableFuture.completedFuture(null);
        }
        t.startedNanos = scheduler.nanoTime();
        services.engine().observer().elected(election, t.leadership.epoch()); // before isLeader() says so
        setTerm(t);
        outage = false;
        log.info("{} leads '{}' (epoch {})", identity, election, t.leadership.epoch());
        CompletableFuture<Void> work = runner.start(t, () -> {
            t.told = true;
            for (LeadershipListener listener : listeners) {
                try {
                    listener.elected(t.leadership);
                } catch (RuntimeException e) {
                    log.warn("a leadership listener of '{}' failed on elected", election, e);
                }
            }
        });
        t.work = work;
        // The stage the lease-scoped work follows completes only after the term is marked ending:
        // from the moment the work has ended this candidate no longer claims to lead, before the
        // release is sent (which may hand the lease on before its reply comes, or not be
        // confirmed). A stop by the lease-scoped work (loss, validity) cancels it: the scope is
        // invalid by then, and the cancel reaches the work.
        CompletableFuture<Void> followed = new CompletableFuture<>();
        work.whenComplete((ok, e) -> {
            // It ended on its own, first: not by a stop, nor by its scope's LeaseLostException
            // (checkValid() after the validity ran out, which a stop's timer may come just after).
            if (!followed.isCancelled() && !(e != null && Failures.unwrap(e) instanceof LeaseLostException)) {
                t.requested.compareAndSet(null, Revocation.WORK_ENDED);
            }
            t.ending = true;
            if (e == null) {
                followed.complete(null);
            } else {
                followed.completeExceptionally(e);
            }
        });
        followed.whenComplete((ok, e) -> {
            if (followed.isCancelled()) {
                t.ending = true;
                work.cancel(false);
            }
        });
        if (t.requested.get() != null) {
            runner.stop(t); // a relinquish or close that came while the work was starting
        }
        return followed;
    }

    private void afterTurn(Term t, Throwable error) {
        Throwable cause = error == null ? null : Failures.unwrap(error);
        long pauseMs = 0;
        if (services.lifecycle().isClosed()) {
            closed.set(true); // the client closed under this candidacy: nothing more can be done
        }
        if (t == null) {
            if (cause != null && !closed.get() && !(cause instanceof java.util.concurrent.CancellationException)) {
                if (!outage) {
                    log.warn("candidate {} of leader election '{}' could not wait for its turn; it tries again every {} ms",
                            identity, election, RETRY_MS, cause);
                    outage = cause instanceof RedisUnavailableException;
                }
                pauseMs = RETRY_MS;
            }
        } else {
            Revocation why = t.requested.get();
            if (why == null && closed.get()) {
                why = Revocation.CLOSED;
            }
            if (why == null) {
                why = cause instanceof LeaseLostException ? Revocation.LOST : Revocation.WORK_ENDED;
            }
            if (why == Revocation.WORK_ENDED && cause != null && !(cause instanceof java.util.concurrent.CancellationException)) {
                log.warn("the leadership work of {} in '{}' failed; leadership is handed on, and the candidate queues again"
                        + " in {} ms", identity, election, RETRY_MS, cause);
                pauseMs = RETRY_MS;
            }
            end(t, why);
        }
        long pause = pauseMs;
        // The next turn once this one's listeners were told (after a blocking work has returned).
        CompletionStage<Void> told = t == null ? CompletableFuture.completedFuture(null) : t.over;
        told.whenComplete((ok, e) -> {
            if (pause == 0 || closed.get()) {
                campaign();
            } else {
                scheduler.schedule(this::campaign, pause, TimeUnit.MILLISECONDS);
            }
        });
    }

    /** The term is over: no longer the candidate's; its revoked listeners run where its elected ones did. */
    private void end(Term t, Revocation why) {
        t.ending = true;
        setTerm(null);
        if (t.startedNanos != 0) {
            services.engine().observer().leadershipEnded(election, why, scheduler.nanoTime() - t.startedNanos);
        }
        if (why == Revocation.LOST) {
            log.warn("{} lost the leadership of '{}' (epoch {})", identity, election, t.leadership.epoch());
        } else {
            log.info("{} no longer leads '{}' (epoch {}): {}", identity, election, t.leadership.epoch(), why);
        }
        runner.onWorkThread(() -> {
            try {
                if (t.told) {
                    tell(t, why);
                }
            } finally {
                t.over.complete(null);
            }
        });
    }

    private void tell(Term t, Revocation why) {
        for (LeadershipListener listener : listeners) {
            try {
                listener.revoked(t.leadership, why);
            } catch (RuntimeException e) {
                log.warn("a leadership listener of '{}' failed on revoked", election, e);
            }
        }
    }

    private void finish() {
        services.lifecycle().forget(onClientClose);
        runner.shutdown();
        signal();
        ended.complete(null);
    }

    @Override
    public String toString() {
        return "candidate " + identity + " of leader election '" + election + "'";
    }

    /** A leadership: the turn's lease scope, its epoch (the grant's token) and who leads. */
    record Elected(LeaseScope scope, String identity, String electionName, Term term) implements Leadership {
        @Override
        public long epoch() {
            return scope.fencingToken().orElse(0);
        }

        @Override
        public String lockName() {
            return scope.lockName();
        }

        @Override
        public Duration remaining() {
            return term.ending ? Duration.ZERO : scope.remaining();
        }

        @Override
        public boolean isValid() {
            return !term.ending && scope.isValid();
        }

        @Override
        public void checkValid() {
            if (term.ending) {
                throw new LeaseLostException(scope.lockName(), "the leadership of '" + electionName + "' by " + identity
                        + " has ended: its work returned or was stopped, and it is being handed on");
            }
            scope.checkValid();
        }

        @Override
        public String toString() {
            return "leadership of '" + electionName + "' by " + identity + " (epoch " + epoch() + ")";
        }

        @Override
        public OptionalLong fencingToken() {
            return scope.fencingToken();
        }
    }
}
