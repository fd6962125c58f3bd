package dev.baton.internal.election;

import dev.baton.Candidacy;
import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.Leadership;
import dev.baton.LeadershipListener;
import dev.baton.LeadershipListener.Revocation;
import dev.baton.LeadershipWork;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.Services;
import dev.baton.internal.lock.RedisLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/*
 * One candidacy: a daemon thread that loops until closed. Each turn waits for the election's
 * lock (a fair lock in election mode: candidates lead in the order they queued) with
 * RedisLock.withLock, so the work runs as lease-scoped work: stopped by an interrupt when the
 * lease is found lost or its validity runs out, released (handed to the next live candidate)
 * however it ends. A relinquish or a close interrupts the thread; the turn's Term records which
 * of them asked, so the revocation names the reason, and completes when the turn is over (work
 * returned, release tried), which is what relinquish() and close() wait for.
 *
 * The thread's owner id (its thread id) is the lock's owner; a turn never re-enters. A release
 * Redis did not confirm leaves the hold to the thread; it unlocks again (once a second) before
 * it queues again, so it never re-enters its own unconfirmed leadership.
 */
final class Candidate implements Candidacy {
    private static final Logger log = LoggerFactory.getLogger(Candidate.class);
    private static final long RETRY_MS = 1000;

    private final Services services;
    private final String election;
    private final RedisLock lock;
    private final String identity;
    private final LeadershipWork work;
    private final Thread thread;
    private final List<LeadershipListener> listeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private final Runnable onClientClose = this::closeForClient;
    private final Object monitor = new Object();
    private volatile Term term;

    /** One leadership: its scope, who asked to end it, and when it was over. */
    private static final class Term {
        final Elected leadership;
        final AtomicReference<Revocation> requested = new AtomicReference<>();
        final CompletableFuture<Void> over = new CompletableFuture<>();

        Term(Elected leadership) {
            this.leadership = leadership;
        }
    }

    Candidate(Services services, String election, RedisLock lock, String identity, LeadershipWork work) {
        this.services = services;
        this.election = election;
        this.lock = lock;
        this.identity = identity;
        this.work = work;
        this.thread = new Thread(this::run, "baton-candidate-" + election);
        this.thread.setDaemon(true);
    }

    void start() {
        services.lifecycle().beforeClose(onClientClose);
        thread.start();
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
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (monitor) {
            while (!isLeader()) {
                long left = deadline - System.nanoTime();
                if (closed.get() || left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(monitor, left);
            }
            return true;
        }
    }

    @Override
    public boolean relinquish() throws InterruptedException {
        if (Thread.currentThread() == thread) {
            throw new IllegalStateException("relinquish() was called from the leadership work of '" + election
                    + "': return from the work instead, which hands leadership on the same way");
        }
        Term t = term;
        if (t == null) {
            return false;
        }
        t.requested.compareAndSet(null, Revocation.RELINQUISHED);
        thread.interrupt();
        try {
            t.over.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        return true;
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
        stop();
        if (Thread.currentThread() == thread) {
            return;
        }
        try {
            ended.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /** The client closes: like close(), but waits at most the command timeout + 1 s for work that ignores interrupts. */
    private void closeForClient() {
        stop();
        try {
            ended.get(services.commandTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn("the candidacy of {} in leader election '{}' did not end within the command timeout + 1 s of the"
                    + " client's close (its work ignores interruption?); its leadership expires in Redis on its own", identity, election);
        }
    }

    private void stop() {
        if (closed.compareAndSet(false, true)) {
            Term t = term;
            if (t != null) {
                t.requested.compareAndSet(null, Revocation.CLOSED);
            }
            thread.interrupt();
            synchronized (monitor) {
                monitor.notifyAll();
            }
        }
    }

    private void setTerm(Term t) {
        synchronized (monitor) {
            term = t;
            monitor.notifyAll();
        }
    }

    // ---- the candidate's thread ---------------------------------------------------------------

    private void run() {
        boolean outage = false;
        try {
            while (!closed.get()) {
                Term[] started = new Term[1];
                Revocation why = null;
                try {
                    lock.<Void, Exception>withLock(scope -> {
                        Term t = new Term(new Elected(scope, identity, election));
                        started[0] = t;
                        setTerm(t);
                        log.info("{} leads '{}' (epoch {})", identity, election, t.leadership.epoch());
                        for (LeadershipListener listener : listeners) {
                            try {
                                listener.elected(t.leadership);
                            } catch (RuntimeException e) {
                                log.warn("a leadership listener of '{}' failed on elected", election, e);
                            }
                        }
                        if (!closed.get()) {
                            work.lead(t.leadership);
                        }
                        return null;
                    });
                    outage = false;
                } catch (LeaseLostException e) {
                    why = Revocation.LOST;
                } catch (InterruptedException e) {
                    // While waiting: a close (the loop ends) or a late interrupt of a relinquish; after
                    // being elected: the work ended by an interrupt, the revocation says whose.
                } catch (RedisUnavailableException e) {
                    if (started[0] == null) {
                        if (!outage) {
                            log.warn("candidate {} of leader election '{}' cannot reach Redis; it tries again every {} ms",
                                    identity, election, RETRY_MS, e);
                            outage = true;
                        }
                        pause();
                    } else {
                        unlockUnconfirmed();
                    }
                } catch (Exception e) {
                    if (started[0] != null && started[0].requested.get() == null) {
                        log.warn("the leadership work of {} in '{}' failed; leadership is handed on, and the candidate"
                                + " queues again in {} ms", identity, election, RETRY_MS, e);
                        pause();
                    } else if (started[0] == null) {
                        log.warn("candidate {} of leader election '{}' failed while waiting; it tries again", identity, election, e);
                        pause();
                    }
                } finally {
                    Thread.interrupted();
                    Term t = started[0];
                    if (t != null) {
                        end(t, why);
                    }
                }
            }
        } finally {
            services.lifecycle().forget(onClientClose);
            Term t = term;
            if (t != null) {
                end(t, Revocation.CLOSED);
            }
            ended.complete(null);
        }
    }

    private void end(Term t, Revocation lost) {
        Revocation why = lost != null ? lost : t.requested.get() != null ? t.requested.get() : Revocation.WORK_ENDED;
        setTerm(null);
        if (why == Revocation.LOST) {
            log.warn("{} lost the leadership of '{}' (epoch {})", identity, election, t.leadership.epoch());
        } else {
            log.info("{} no longer leads '{}' (epoch {}): {}", identity, election, t.leadership.epoch(), why);
        }
        for (LeadershipListener listener : listeners) {
            try {
                listener.revoked(t.leadership, why);
            } catch (RuntimeException e) {
                log.warn("a leadership listener of '{}' failed on revoked", election, e);
            }
        }
        t.over.complete(null);
    }

    /** Waits before trying again, unless closed meanwhile. */
    private void pause() {
        try {
            Thread.sleep(RETRY_MS);
        } catch (InterruptedException e) {
            // closed, or a late interrupt: the loop looks
        }
    }

    /** The release after a turn was not confirmed: the thread still holds it; unlock until Redis answers. */
    private void unlockUnconfirmed() {
        while (lock.isHeldByCurrentThread()) {
            try {
                lock.unlock();
            } catch (RedisUnavailableException e) {
                pause();
            } catch (IllegalMonitorStateException e) {
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "candidate " + identity + " of leader election '" + election + "'";
    }

    /** A leadership: the turn's lease scope, its epoch (the grant's token) and who leads. */
    private record Elected(LeaseScope scope, String identity, String electionName) implements Leadership {
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
            return scope.remaining();
        }

        @Override
        public boolean isValid() {
            return scope.isValid();
        }

        @Override
        public void checkValid() {
            scope.checkValid();
        }

        @Override
        public OptionalLong fencingToken() {
            return scope.fencingToken();
        }
    }
}
