package dev.baton.internal.composite;

// Over 300 lines on purpose: a round's asks on every master, its validity and its give-back are
// one attempt of the engine, and the fixed-validity scoped work watches the same hold.

import dev.baton.BatonLock;
import dev.baton.BatonObserver;
import dev.baton.BatonRedLock;
import dev.baton.DoNotRetryException;
import dev.baton.LeaseLostException;
import dev.baton.LeaseWork;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.command.Failures;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.lease.LeaseScopedWork;
import dev.baton.internal.lease.Leases;
import dev.baton.internal.lock.RedisLock;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.internal.support.Args;
import dev.baton.internal.support.Names;
import dev.baton.internal.time.Scheduler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongBinaryOperator;
import java.util.function.Supplier;

/*
 * RedLock over independent masters, as its author described it, with every master asked at
 * once instead of one after another (same result, less waiting):
 *
 *   start = now
 *   ask every master for the lock with the lease, each bounded by the per-node timeout
 *   elapsed = now - start;  validity = lease - elapsed - drift   (drift = 1 % of lease + 2 ms)
 *   majority granted and validity > 0  ->  held until start + lease - drift
 *   otherwise release on every master, pause at random, and try again while the wait allows
 *
 * A master that does not answer in time has its attempt cancelled: the acquire engine gives back
 * a grant that arrives after the cancel, so a slow master keeps nothing.
 *
 * The loop is the acquire engine's, like every other wait: one round is one Attempt, a refused
 * round has already released what it got and asks to be tried again after the random pause, and
 * the engine handles the deadline, cancellation and interrupts as for any lock (a grant that
 * lands after the caller gave up is released everywhere). No channel: the masters are separate
 * servers, so nothing announces a release to a RedLock waiter; it tries again after each pause.
 */
public final class RedLock implements BatonRedLock {
    private static final long MIN_PAUSE_MS = 20;
    private static final long MAX_PAUSE_MS = 120;
    /** What an interrupted wait may take to stop beyond one node timeout: dispatching the releases. */
    private static final long SETTLE_SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private final String name;
    private final List<BatonLock> nodes;
    private final long nodeTimeoutNanos;
    private final int quorum;
    private final AcquireEngine engine;
    private final Scheduler scheduler;
    private final Map<Long, Long> validUntilNanos = new ConcurrentHashMap<>();
    /**
     * Per owner, the scoped work running under this object's hold (withLock): an unlock through
     * this object stops it as the unlock starts; a re-entry that cuts the validity re-arms its
     * stop for the new end.
     */
    private final Map<Long, List<LeaseScopedWork>> scopes = new ConcurrentHashMap<>();

    /** The owner's validity changed (cut by a re-entry): its running scopes check it again. */
    private void validityChanged(long ownerId) {
        List<LeaseScopedWork> running = scopes.get(ownerId);
        if (running != null) {
            running.forEach(LeaseScopedWork::recheck);
        }
    }
    private final LongBinaryOperator random;
    /** Where an owner's acquisitions of this name take turns: the first master's client's lease table. */
    private final Leases lines;

    /**
     * @param nodes  the lock of this name on each master (the entry point checked the masters
     *               and the timeout, and made these)
     * @param engine an engine without a pub/sub service: RedLock waits are told of nothing
     */
    public RedLock(String name, List<BatonLock> nodes, Duration nodeTimeout, AcquireEngine engine, Scheduler scheduler) {
        this(name, nodes, nodeTimeout, engine, scheduler, (from, to) -> ThreadLocalRandom.current().nextLong(from, to));
    }

    /** As above, with the source of the random pause between rounds ({@code from} inclusive, {@code to} exclusive). */
    public RedLock(String name, List<BatonLock> nodes, Duration nodeTimeout, AcquireEngine engine, Scheduler scheduler,
                   LongBinaryOperator random) {
        this.random = random;
        this.lines = nodes.get(0) instanceof RedisLock own ? own.leaseTable() : new Leases(scheduler, null);
        this.name = name;
        this.nodes = List.copyOf(nodes);
        this.nodeTimeoutNanos = nodeTimeout.toNanos();
        this.quorum = nodes.size() / 2 + 1;
        this.engine = engine;
        this.scheduler = scheduler;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long waitNanos = Args.waitNanos(waitTime, unit);
        long leaseMs = Args.validityMs(leaseTime, unit);
        long owner = Names.threadOwner();
        return Blocking.awaitInterruptibly(() -> start(waitNanos, leaseMs, owner), nodeTimeoutNanos + SETTLE_SLACK_NANOS);
    }

    @Override
    public void unlock() {
        Blocking.join(unlockAsync(Names.threadOwner()).toCompletableFuture());
    }

    @Override
    public long validityMillis() {
        return validityMillis(Names.threadOwner());
    }

    @Override
    public long validityMillis(long ownerId) {
        Long until = validUntilNanos.get(ownerId);
        return until == null ? 0 : Math.max(0, TimeUnit.NANOSECONDS.toMillis(until - scheduler.nanoTime()));
    }

    /** What a scope's validity keeps back beyond the round's drift (1 % in whole ms + 2 ms): at least 1 % + 25 ms (LeaseScope). */
    private static final long SCOPE_EXTRA_MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(24); // 23 + the drift's rounding to whole ms

    @Override
    public <T, E extends Exception> T withLock(long leaseTime, TimeUnit unit, LeaseWork<T, E> work)
            throws E, InterruptedException {
        Objects.requireNonNull(work, "work");
        long leaseMs = Args.validityMs(leaseTime, unit);
        long owner = Names.threadOwner();
        if (!Blocking.awaitInterruptibly(() -> start(-1, leaseMs, owner), nodeTimeoutNanos + SETTLE_SLACK_NANOS)) {
            throw new IllegalStateException("RedLock '" + name + "': a wait with no limit ended without the lock");
        }
        LeaseScopedWork.Held held = new LeaseScopedWork.Held() {
            @Override
            public boolean isLive() {
                return validUntilNanos.containsKey(owner);
            }

            @Override
            public long validUntilNanos() {
                Long until = validUntilNanos.get(owner);
                return until == null ? scheduler.nanoTime() : until - SCOPE_EXTRA_MARGIN_NANOS;
            }

            @Override
            public String holder() {
                return "owner " + owner;
            }
        };
        LeaseScopedWork scope = new LeaseScopedWork(name, held, scheduler, false, Thread.currentThread());
        scopes.computeIfAbsent(owner, o -> new CopyOnWriteArrayList<>()).add(scope);
        try {
            return scope.run(work, stopped -> { // the scope has finished: this unlock's stop of it does nothing
                try {
                    unlock();
                    return null;
                } catch (RuntimeException e) {
                    return e;
                }
            });
        } finally {
            scopes.computeIfPresent(owner, (o, list) -> {
                list.remove(scope);
                return list.isEmpty() ? null : list;
            });
        }
    }

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        long waitNanos = Args.waitNanos(waitTime, unit);
        long leaseMs = Args.validityMs(leaseTime, unit);
        return start(waitNanos, leaseMs, ownerId).result();
    }

    /**
     * Starts an acquisition. An owner's acquisitions of a RedLock take turns, as a lock's do
     * (Leases.acquiring): each master's hold is counted by owner, so an acquisition that overlaps
     * an earlier one of the same owner would re-enter the holds that one still has, and its
     * give-back would then take the new acquisition's. One given up (cancelled, timed out by its
     * caller) is stopped and waited for until its give-back is sent (at most a node timeout); one
     * still running is waited for as a turn (this one ends without asking if its wait ends first).
     * The line is the first master's client's, keyed by the RedLock's name, so every RedLock
     * object over that client and name shares it (Baton.redLock makes a new object per call); a
     * first master given as a view Baton cannot reach through (a Spring lazy view) has a line per
     * object.
     */
    private AcquireEngine.Acquisition start(long waitNanos, long leaseMs, long ownerId) {
        Supplier<AcquireEngine.Acquisition> prepare =
                () -> engine.prepare(new Round(leaseMs, ownerId), null, WakeRule.ONE, waitNanos);
        return lines.acquiring("redlock\u0000" + name, Long.toString(ownerId), prepare);
    }

    /** One round: every master asked at once; granted with a majority and validity left. */
    private final class Round implements AcquireEngine.Attempt {
        private final long leaseMs;
        private final long ownerId;
        /** The masters that granted this round's latest attempt: what its give-back releases. */
        private volatile List<BatonLock> granted = List.of();
        /** The owner's validity when the latest attempt began (a re-entry's outer hold), or null. */
        private volatile Long outer;
        /** Until when the latest attempt's leases are valid (start + lease - drift). */
        private volatile long attemptValidUntil;

        Round(long leaseMs, long ownerId) {
            this.leaseMs = leaseMs;
            this.ownerId = ownerId;
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            long start = scheduler.nanoTime();
            granted = List.of();
            outer = validUntilNanos.get(ownerId);
            attemptValidUntil = start + TimeUnit.MILLISECONDS.toNanos(leaseMs) - TimeUnit.MILLISECONDS.toNanos(leaseMs / 100 + 2);
            // A re-entry: a lock keeps one expiry (Redisson's layout), so each master that grants
            // it keeps the outer hold only for this lease. The owner's validity is cut to it now,
            // before any master is asked, never lengthened.
            if (outer != null) {
                validUntilNanos.computeIfPresent(ownerId, (k, v) -> Math.min(v, attemptValidUntil));
                validityChanged(ownerId);
            }
            List<CompletableFuture<Boolean>> asks = new ArrayList<>();
            for (BatonLock node : nodes) {
                CompletableFuture<Boolean> ask = node.tryLockAsync(0, leaseMs, TimeUnit.MILLISECONDS, ownerId)
                        .toCompletableFuture();
                Scheduler.Cancellable timeout = scheduler.schedule(() -> ask.cancel(false), nodeTimeoutNanos,
                        TimeUnit.NANOSECONDS);
                asks.add(ask.handle((got, e) -> {
                    timeout.cancel();
                    return e == null && got;
                }));
            }
            return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).thenCompose(all -> {
                List<BatonLock> got = new ArrayList<>();
                for (int i = 0; i < nodes.size(); i++) {
                    if (asks.get(i).join()) {
                        got.add(nodes.get(i));
                    }
                }
                granted = List.copyOf(got);
                long drift = TimeUnit.MILLISECONDS.toNanos(leaseMs / 100 + 2);
                long validUntil = start + TimeUnit.MILLISECONDS.toNanos(leaseMs) - drift;
                if (got.size() >= quorum && validUntil > scheduler.nanoTime()) {
                    validUntilNanos.put(ownerId, validUntil);
                    return CompletableFuture.completedFuture(AcquireEngine.Outcome.GRANTED);
                }
                long pauseMs = random.applyAsLong(MIN_PAUSE_MS, MAX_PAUSE_MS);
                // Only what this round got (a master whose ask was cancelled at the node timeout
                // gives a late grant back itself), so an owner that already held the RedLock
                // keeps its holds. Sent, not awaited: the next round's ask on each master waits
                // for that master's give-back to be answered (Leases.releasing), and this round
                // ends within the node timeout.
                giveBack(got, ownerId);
                return CompletableFuture.completedFuture(new AcquireEngine.Outcome(false, pauseMs));
            });
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            return giveBack(granted, ownerId);
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            if (outer == null) {
                validUntilNanos.remove(ownerId); // the grant nobody took
            } else {
                validUntilNanos.put(ownerId, Math.min(outer, attemptValidUntil)); // the outer hold, cut as above
            }
            return giveBack(granted, ownerId);
        }

        @Override
        public BatonObserver.Kind kind() {
            return BatonObserver.Kind.RED_LOCK;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return "acquiring RedLock '" + name + "'";
        }
    }

    /**
     * Gives back the owner's hold on {@code granted}, holds its caller never had (a refused or
     * abandoned round): as clean-ups, so one a master does not confirm is not kept (it ends with
     * its lease).
     */
    private static CompletableFuture<Void> giveBack(List<BatonLock> granted, long ownerId) {
        List<CompletableFuture<?>> releases = new ArrayList<>();
        for (BatonLock node : granted) {
            CompletableFuture<Void> release;
            try {
                release = node instanceof RedisLock own ? own.giveBackAsync(ownerId) : node.unlockAsync(ownerId).toCompletableFuture();
            } catch (RuntimeException e) {
                release = CompletableFuture.failedFuture(e); // its client closed: the hold ends with its lease
            }
            releases.add(release.handle((ok, e) -> null));
        }
        return CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new));
    }

    @Override
    public CompletionStage<Void> unlockAsync(long ownerId) {
        validUntilNanos.remove(ownerId);
        List<LeaseScopedWork> ended = scopes.get(ownerId);
        if (ended != null) {
            ended.forEach(scope -> scope.stop("its holder released it"));
        }
        List<CompletableFuture<Throwable>> releases = new ArrayList<>();
        for (BatonLock node : nodes) {
            CompletableFuture<Void> release;
            try {
                release = node.unlockAsync(ownerId).toCompletableFuture();
            } catch (RuntimeException e) { // that master's client is closed: the others are still released
                release = CompletableFuture.failedFuture(e);
            }
            releases.add(release.handle((ok, e) -> e == null ? null : Failures.unwrap(e)));
        }
        return CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)).thenApply(all -> {
            // A release that landed with too few replicas acknowledging it is released too.
            long released = releases.stream()
                    .filter(r -> r.join() == null || r.join() instanceof DoNotRetryException).count();
            if (released > 0) {
                // Released: nobody will call unlock again, so a master whose release was not
                // confirmed does not keep its hold counted here (it ends with its lease).
                for (int i = 0; i < nodes.size(); i++) {
                    if (nodes.get(i) instanceof RedisLock own && Failures.isConnectionFailure(releases.get(i).join())) {
                        own.forgetUnconfirmed(ownerId);
                    }
                }
                return null;
            }
            // Nothing released: either held nowhere, or every master that holds it did not
            // answer (each kept its hold, so calling unlock again completes it).
            Throwable unreachable = releases.stream().map(CompletableFuture::join)
                    .filter(Failures::isConnectionFailure).findFirst().orElse(null);
            if (unreachable != null) {
                throw new RedisUnavailableException("unlock of RedLock '" + name + "' by owner " + ownerId
                        + " was confirmed by no master: " + unreachable.getMessage()
                        + "; the holds are kept, and calling unlock again completes them", unreachable);
            }
            // Held, but every hold's lease ran out before its release landed: lost, not never held.
            Throwable lost = releases.stream().map(CompletableFuture::join)
                    .filter(e -> e instanceof LeaseLostException).findFirst().orElse(null);
            if (lost != null) {
                throw new LeaseLostException(name, "RedLock '" + name + "' held by owner " + ownerId
                        + " was lost before unlock: " + lost.getMessage());
            }
            throw new IllegalMonitorStateException("RedLock '" + name + "' is not held by owner " + ownerId);
        });
    }

    @Override
    public String toString() {
        return "BatonRedLock{" + name + ", masters=" + nodes.size() + ", quorum=" + quorum + "}";
    }
}
