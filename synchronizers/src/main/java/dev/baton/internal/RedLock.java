package dev.baton.internal;

import dev.baton.BatonLock;
import dev.baton.BatonObserver;
import dev.baton.BatonRedLock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

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
final class RedLock implements BatonRedLock {
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
     * @param nodes  the lock of this name on each master (the entry point checked the masters
     *               and the timeout, and made these)
     * @param engine an engine without a pub/sub service: RedLock waits are told of nothing
     */
    RedLock(String name, List<BatonLock> nodes, Duration nodeTimeout, AcquireEngine engine, Scheduler scheduler) {
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

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        long waitNanos = Args.waitNanos(waitTime, unit);
        long leaseMs = Args.validityMs(leaseTime, unit);
        return start(waitNanos, leaseMs, ownerId).result();
    }

    private AcquireEngine.Acquisition start(long waitNanos, long leaseMs, long ownerId) {
        return engine.acquire(new Round(leaseMs, ownerId), null, WakeRule.ONE, waitNanos);
    }

    /** One round: every master asked at once; granted with a majority and validity left. */
    private final class Round implements AcquireEngine.Attempt {
        private final long leaseMs;
        private final long ownerId;

        Round(long leaseMs, long ownerId) {
            this.leaseMs = leaseMs;
            this.ownerId = ownerId;
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            long start = scheduler.nanoTime();
            List<CompletableFuture<Boolean>> asks = new ArrayList<>();
            for (BatonLock node : nodes) {
                CompletableFuture<Boolean> ask = node.tryLockAsync(0, leaseMs, TimeUnit.MILLISECONDS, ownerId)
                        .toCompletableFuture();
                Scheduler.Cancellable timeout = scheduler.schedule(() -> ask.cancel(false), nodeTimeoutNanos,
                        TimeUnit.NANOSECONDS);
                asks.add(ask.handle((granted, e) -> {
                    timeout.cancel();
                    return e == null && granted;
                }));
            }
            return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).thenCompose(all -> {
                long granted = asks.stream().filter(CompletableFuture::join).count();
                long drift = TimeUnit.MILLISECONDS.toNanos(leaseMs / 100 + 2);
                long validUntil = start + TimeUnit.MILLISECONDS.toNanos(leaseMs) - drift;
                if (granted >= quorum && validUntil > scheduler.nanoTime()) {
                    validUntilNanos.put(ownerId, validUntil);
                    return CompletableFuture.completedFuture(AcquireEngine.Outcome.GRANTED);
                }
                long pauseMs = ThreadLocalRandom.current().nextLong(MIN_PAUSE_MS, MAX_PAUSE_MS);
                return releaseEverywhere(ownerId).thenApply(released -> new AcquireEngine.Outcome(false, pauseMs));
            });
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            return releaseEverywhere(ownerId);
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            return releaseEverywhere(ownerId);
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

    /** Releases the owner's hold on every master that has one; completes with how many had. */
    private CompletableFuture<Integer> releaseEverywhere(long ownerId) {
        validUntilNanos.remove(ownerId);
        List<CompletableFuture<Boolean>> releases = new ArrayList<>();
        for (BatonLock node : nodes) {
            releases.add(node.unlockAsync(ownerId).toCompletableFuture().handle((ok, e) -> e == null));
        }
        return CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new))
                .thenApply(all -> (int) releases.stream().filter(CompletableFuture::join).count());
    }

    @Override
    public CompletionStage<Void> unlockAsync(long ownerId) {
        validUntilNanos.remove(ownerId);
        List<CompletableFuture<Throwable>> releases = new ArrayList<>();
        for (BatonLock node : nodes) {
            releases.add(node.unlockAsync(ownerId).toCompletableFuture().handle((ok, e) -> e == null ? null : Failures.unwrap(e)));
        }
        return CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)).thenApply(all -> {
            // A release that landed with too few replicas acknowledging it is released too.
            long released = releases.stream()
                    .filter(r -> r.join() == null || r.join() instanceof dev.baton.DoNotRetryException).count();
            if (released > 0) {
                return null;
            }
            // Nothing released: either held nowhere, or every master that holds it did not
            // answer (each kept its hold, so calling unlock again completes it).
            Throwable unreachable = releases.stream().map(CompletableFuture::join)
                    .filter(Failures::isConnectionFailure).findFirst().orElse(null);
            if (unreachable != null) {
                throw new dev.baton.RedisUnavailableException("unlock of RedLock '" + name + "' by owner " + ownerId
                        + " was confirmed by no master: " + unreachable.getMessage()
                        + "; the holds are kept, and calling unlock again completes them", unreachable);
            }
            throw new IllegalMonitorStateException("RedLock '" + name + "' is not held by owner " + ownerId);
        });
    }

    @Override
    public String toString() {
        return "BatonRedLock{" + name + ", masters=" + nodes.size() + ", quorum=" + quorum + "}";
    }
}
