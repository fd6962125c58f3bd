package dev.baton.internal.lease;

// Over 300 lines on purpose: the table of held leases, the memory of lost ones and the turns of
// one owner's acquisitions of a key (acquiring) change together, key by key; split, they would
// share that state through seams a reader must keep in mind at once.

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.baton.BatonObserver;
import dev.baton.LeaseLostListener;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Observer;
import dev.baton.internal.time.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The client's table of held leases, keyed by (Redis key, owner id), and the memory of leases
 * that were lost. A lost lease is moved out of the live table into a bounded, expiring Caffeine
 * cache so that the owner's next unlock can say "your lease was lost" rather than "you never
 * held this", without keeping entries forever for owners that never call unlock again.
 */
public final class Leases {
    private static final Logger log = LoggerFactory.getLogger(Leases.class);

    /** How long a lost lease is remembered for the owner's next unlock. */
    static final Duration LOST_MEMORY = Duration.ofMinutes(10);

    private record Key(String key, String owner) {
    }

    /** Why a lease was lost, and how many of its owner's holds have not reported it yet. */
    private record LostHolds(String reason, int unreported) {
    }

    private final ConcurrentHashMap<Key, Lease> live = new ConcurrentHashMap<>();
    /**
     * Each owner's acquisitions of each lock that have not settled yet (their clean-up not yet
     * dispatched), registered when they start; see {@link #acquiring}.
     */
    private final ConcurrentHashMap<Key, List<Turn>> acquiring = new ConcurrentHashMap<>();
    /**
     * Each owner's unlocks of each lock still waiting for their answer (changed only inside the
     * map's compute); see {@link #releasing}.
     */
    private final ConcurrentHashMap<Key, Set<CompletableFuture<?>>> releasing = new ConcurrentHashMap<>();

    /** One acquisition in its owner's line for a lock, and the turn it waits for (null: it started at once). */
    private static final class Turn {
        final AcquireEngine.Acquisition acquisition;
        /** Completed when its turn comes; null: it started at once. */
        final CompletableFuture<Void> turn;
        /** Whether it may have asked Redis (started at once, or its turn was given); read and written inside the map's compute only. */
        boolean started;

        Turn(AcquireEngine.Acquisition acquisition, CompletableFuture<Void> turn) {
            this.acquisition = acquisition;
            this.turn = turn;
            this.started = turn == null;
        }
    }
    private final Cache<Key, LostHolds> lost = Caffeine.newBuilder()
            .expireAfterWrite(LOST_MEMORY)
            .maximumSize(10_000)
            .build();
    private final Scheduler scheduler;
    private final LeaseLostListener listener;
    private final Observer observer;
    private volatile RenewalRegistry registry;
    /** When fixed leases that ran out are next looked for (at most once a second on grants). */
    private volatile long nextPurgeNanos;
    private static final long PURGE_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

    public Leases(Scheduler scheduler, LeaseLostListener listener) {
        this(scheduler, listener, Observer.NONE);
    }

    public Leases(Scheduler scheduler, LeaseLostListener listener, Observer observer) {
        this.observer = observer;
        this.scheduler = scheduler;
        this.listener = listener;
    }

    public void attach(RenewalRegistry registry) {
        this.registry = registry;
    }

    /** The share of a lease lease-scoped work keeps back for clock drift (BatonOptions.clockDriftAllowance). */
    private volatile double driftAllowance = 0.01;

    /** Sets the clock-drift allowance of the leases granted from now on (the client's option). */
    public void clockDriftAllowance(double share) {
        this.driftAllowance = share;
    }

    /** The clock-drift allowance (BatonOptions.clockDriftAllowance): a rate limiter's sleeps add it too. */
    public double clockDriftAllowance() {
        return driftAllowance;
    }

    /** What lease-scoped work keeps back of a lease of {@code leaseNanos}: the drift allowance of it and 25 ms (LeaseScope). */
    public long scopeMarginNanos(long leaseNanos) {
        return Lease.marginNanos(leaseNanos, driftAllowance);
    }

    /** The owner's live lease on {@code key}, or {@code null}. */
    public Lease get(String key, String owner) {
        return live.get(new Key(key, owner));
    }

    /** How many holds the owner has on {@code key} as far as this client knows. */
    public int holds(String key, String owner) {
        Lease lease = get(key, owner);
        // A fixed lease that ran out is held no more, purged or not yet.
        return lease == null || ranOut(lease, scheduler.nanoTime()) ? 0 : lease.holds;
    }

    /**
     * Records a grant that leaves the owner with {@code holds} holds, renewed in the given way,
     * by an attempt sent at {@code sentNanos}.
     */
    public Lease granted(String key, String owner, int holds, long leaseMs, boolean watchdog, Lease.Renewal renewal,
                         long sentNanos) {
        Key k = new Key(key, owner);
        lost.invalidate(k);
        long now = scheduler.nanoTime();
        purgeExpired(now, false);
        Lease lease = live.get(k);
        if (lease == null || ranOut(lease, now) || lease.holds == 0) {
            // A fixed lease that ran out is not continued by a new grant: a fresh lease replaces
            // it, so a purge racing with this grant removes only the old one. So is a lease whose
            // final release is still in flight (a give-back of a cancelled acquisition's late
            // grant, say): that release's answer forgets its own record, never this new hold's.
            Lease replaced = lease;
            lease = new Lease(key, owner, renewal, holds, leaseMs, watchdog, now);
            lease.driftAllowance = driftAllowance;
            lease.leaseFrom(now);
            lease.sentNanos = sentNanos;
            lease.validFromNanos = sentNanos;
            live.put(k, lease);
            if (replaced != null) {
                tellLoss(replaced, "its hold ended and a new one replaced it");
            }
            if (watchdog) {
                registry.register(lease);
            }
            return lease;
        }
        lease.holds = holds;
        lease.leaseMs = leaseMs;
        lease.sentNanos = sentNanos;
        if (leaseMs < lease.shortestLeaseMs) {
            lease.shortestLeaseMs = leaseMs; // a re-entry's own lease may run after a later renewal
        }
        lease.releaseUnconfirmed = false;
        if (watchdog) {
            // Also after a final release that could not be confirmed stopped its renewal.
            lease.watchdog = true;
            registry.register(lease);
        }
        lease.leaseFrom(now);
        return lease;
    }

    /**
     * A new acquisition of {@code key} by {@code owner} (made by {@code prepare}, not started yet)
     * joins its owner's line for that lock and is started, by the rule that an owner's
     * acquisitions of one lock take turns. It waits for two things:
     *
     * <ul>
     * <li>{@code after}: an earlier acquisition of the same owner and lock that the caller has
     * given up on (its future completed by a cancel, a timeout, by hand, or an interrupt) may
     * still have an attempt in flight whose grant it will give back by owner id; the new one
     * waits until that clean-up is on the wire (the old one has settled: at most one command
     * timeout), so the give-back reaches Redis first and can never undo the new hold. This wait
     * is bounded, and the new acquisition still attempts once after it, however short its wait.
     * <li>its turn: earlier acquisitions of the same owner and lock still running (async calls
     * with one owner id, even started at the same moment from two threads). Their clean-ups (an
     * undo, a fair waiter's leave) count holds by owner and could take a hold another one was
     * granted; so the new one starts when every earlier one in the line has settled, and if its
     * own wait ends first it ends without asking Redis (false, or its cancellation). When an
     * earlier one was granted, the new one re-enters. One whose grant has been delivered is not
     * waited for (it only has its settling left), nor is one still waiting for its own turn (it
     * has asked Redis nothing; a new one that starts at once goes before it in the line), so a
     * re-entry from the grant's callback asks Redis at once.
     * </ul>
     *
     * <p>The line is changed only inside the map's per-key compute, so two acquisitions started
     * at once see each other; an entry leaves the line when its acquisition settles, and that
     * wakes the next ones whose earlier entries have all settled (nothing stays attached to an
     * acquisition that ended while waiting). The earlier acquisition counts as given up as soon
     * as its future is completed, before any callback has run, so a caller that retries from a
     * callback of the old future (which runs before the engine's own) is ordered all the same.
     */
    public AcquireEngine.Acquisition acquiring(String key, String owner, Supplier<AcquireEngine.Acquisition> prepare) {
        Key k = new Key(key, owner);
        AcquireEngine.Acquisition acquisition = prepare.get();
        List<AcquireEngine.Acquisition> givenUp = new ArrayList<>();
        Turn[] mine = new Turn[1];
        acquiring.compute(k, (x, line) -> {
            List<Turn> l = line == null ? new ArrayList<>() : line;
            boolean waits = false;
            int notStarted = l.size();
            for (int i = 0; i < l.size(); i++) {
                Turn t = l.get(i);
                AcquireEngine.Acquisition earlier = t.acquisition;
                if (earlier.settled().isDone()) {
                    continue; // leaving the line
                }
                if (!t.started) {
                    // It and everything behind it have not asked Redis yet: they hold nothing back.
                    notStarted = Math.min(notStarted, i);
                } else if (earlier.givenUp()) {
                    givenUp.add(earlier);
                } else if (!earlier.grantDelivered()) {
                    waits = true;
                }
            }
            mine[0] = new Turn(acquisition, waits ? new CompletableFuture<>() : null);
            // One that starts at once goes before those still waiting for their turn (a re-entry
            // from a grant's callback must not wait behind them); one that waits joins the end.
            l.add(waits ? l.size() : notStarted, mine[0]);
            return l;
        });
        List<CompletableFuture<?>> before = new ArrayList<>();
        // The owner's unlocks of this lock still unanswered: each must run before this
        // acquisition's first attempt, which Redis would otherwise take for a re-sent copy of an
        // acquisition the owner holds (a hold count already at the one it expects + 1), leaving
        // it holding nothing once the release runs after it. Lettuce keeps one connection's
        // commands in order, but a release refused with NOSCRIPT runs again as EVAL a round trip
        // later, behind an acquire whose script was cached (the simulation found it, multi-lock
        // seed 67: a multi-lock's give-back, then its owner's next multi-lock).
        CompletableFuture<?> releases = releasesInFlight(key, owner);
        if (releases != null) {
            before.add(releases);
        }
        for (AcquireEngine.Acquisition earlier : givenUp) {
            // Stop it now rather than when its own callback comes (after the caller's, which may
            // be this very call): it settles as soon as no attempt is in flight.
            earlier.cancel();
            before.add(earlier.settled());
        }
        acquisition.settled().whenComplete((ok, e) -> leave(k, acquisition));
        CompletableFuture<?> after = before.isEmpty() ? null : CompletableFuture.allOf(before.toArray(CompletableFuture[]::new));
        acquisition.start(after, mine[0].turn);
        return acquisition;
    }

    /**
     * An unlock of {@code key} by {@code owner} was sent and is not answered yet: the owner's
     * acquisitions of that lock that start before its answer wait for it (see {@link #acquiring}).
     * It is bounded as every unlock is (answered, or failed within the command timeout).
     */
    public void releasing(String key, String owner, CompletableFuture<?> release) {
        if (release.isDone()) {
            return;
        }
        Key k = new Key(key, owner);
        releasing.compute(k, (x, inFlight) -> {
            Set<CompletableFuture<?>> set = inFlight == null ? new HashSet<>() : inFlight;
            set.add(release);
            return set;
        });
        release.whenComplete((ok, e) -> releasing.computeIfPresent(k, (x, inFlight) -> {
            inFlight.remove(release);
            return inFlight.isEmpty() ? null : inFlight;
        }));
    }

    /**
     * The owner's releases of {@code key} sent and not answered yet, as one future that completes
     * (never exceptionally) when all are answered or failed; {@code null} when there are none.
     */
    public CompletableFuture<?> releasesInFlight(String key, String owner) {
        List<CompletableFuture<?>> pending = new ArrayList<>();
        releasing.computeIfPresent(new Key(key, owner), (x, inFlight) -> {
            inFlight.forEach(f -> pending.add(f.handle((ok, e) -> null)));
            return inFlight;
        });
        return pending.isEmpty() ? null : CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new));
    }

    /** A settled acquisition leaves its owner's line; the ones whose earlier entries have all settled get their turn. */
    private void leave(Key k, AcquireEngine.Acquisition settled) {
        List<CompletableFuture<Void>> turns = new ArrayList<>();
        acquiring.computeIfPresent(k, (x, line) -> {
            line.removeIf(t -> t.acquisition == settled);
            boolean blocked = false;
            for (Turn t : line) {
                if (!blocked && !t.started) {
                    t.started = true;
                    turns.add(t.turn);
                }
                blocked |= !t.acquisition.settled().isDone();
            }
            return line.isEmpty() ? null : line;
        });
        turns.forEach(t -> t.complete(null)); // outside the compute: starting may send, settle, and leave again
    }

    /** An owner-checked update, sent at {@code sentNanos}, gave a fixed lease {@code leaseMs} from now. */
    public void updated(Lease lease, long leaseMs, long sentNanos) {
        lease.leaseMs = leaseMs;
        lease.sentNanos = sentNanos;
        lease.confirmed(sentNanos, leaseMs);
        lease.leaseFrom(scheduler.nanoTime());
    }

    /** Whether {@code lease} is still the live record of its owner's hold (not released, not lost, not replaced). */
    boolean isLive(Lease lease) {
        return live.get(new Key(lease.key, lease.owner)) == lease;
    }

    /** Now on the client's clock (the one leases are measured on). */
    public long nanoTime() {
        return scheduler.nanoTime();
    }

    /** How many leases this client holds now (one per lock and owner); fixed leases that ran out are not held. */
    public int size() {
        purgeExpired(scheduler.nanoTime(), true);
        return live.size();
    }

    /** The leases held now (fixed ones that ran out are forgotten first). */
    public List<Lease> snapshot() {
        purgeExpired(scheduler.nanoTime(), true);
        return List.copyOf(live.values());
    }

    private static boolean ranOut(Lease lease, long now) {
        return !lease.watchdog && !lease.releaseUnconfirmed && now - lease.expiresNanos > 0;
    }

    /** A fixed lease whose last release was never confirmed, kept {@link #LOST_MEMORY} past its end for a retried unlock. */
    private static boolean unconfirmedLongAgo(Lease lease, long now) {
        return !lease.watchdog && lease.releaseUnconfirmed && now - lease.expiresNanos > LOST_MEMORY.toNanos();
    }

    /**
     * Forgets the fixed leases that ran out without a release: Redis has let them expire, and
     * nothing else would ever remove them (a ShedLock task's lock kept for {@code lockAtLeastFor}
     * is one). Their owners' unlocks, within {@link #LOST_MEMORY}, still report the loss. Not
     * reported to the listener: a fixed lease ends at its time by design. A lease whose release
     * was not confirmed is kept {@link #LOST_MEMORY} longer, so its owner's retried unlock is
     * recognised, then forgotten.
     */
    private void purgeExpired(long now, boolean always) {
        if (!always && now - nextPurgeNanos < 0) {
            return;
        }
        nextPurgeNanos = now + PURGE_EVERY_NANOS;
        for (Lease lease : live.values()) {
            if (ranOut(lease, now) && live.remove(new Key(lease.key, lease.owner), lease)) {
                lost.put(new Key(lease.key, lease.owner), new LostHolds("its lease of " + lease.leaseMs
                        + " ms ran out before it was released", Math.max(1, lease.holds)));
            } else if (unconfirmedLongAgo(lease, now)) {
                // Its owner never called unlock again (a ShedLock unlock is not retried): Redis let
                // it expire long ago; forget it without a verdict.
                live.remove(new Key(lease.key, lease.owner), lease);
            }
        }
    }

    /** The owner released its last hold: forgets the lease and tells the observer how long it was held. */
    public void released(Lease lease, BatonObserver.Kind kind) {
        remove(lease);
        observer.released(kind, lease.key, scheduler.nanoTime() - lease.grantedNanos);
    }

    /** Forgets a lease whose last hold was released (or that Redis says is gone), and stops renewing it. */
    public void remove(Lease lease) {
        if (live.remove(new Key(lease.key, lease.owner), lease)) {
            tellLoss(lease, "its hold was released or given back while the work ran");
        }
        registry.unregister(lease);
    }

    /**
     * Stops renewing a lease whose last hold is being released, before the release is sent, so
     * a renewal racing with it cannot find the lock gone and report a loss that did not happen.
     */
    public void stopRenewing(Lease lease) {
        registry.unregister(lease);
    }

    /**
     * Why the owner's lease on {@code key} was lost, or {@code null}; every hold the owner had
     * gets this answer once (its unlocks each report the loss), then it is forgotten.
     */
    public String takeLostReason(String key, String owner) {
        Key k = new Key(key, owner);
        LostHolds[] taken = new LostHolds[1];
        lost.asMap().computeIfPresent(k, (key2, holds) -> {
            taken[0] = holds;
            return holds.unreported() > 1 ? new LostHolds(holds.reason(), holds.unreported() - 1) : null;
        });
        return taken[0] == null ? null : taken[0].reason();
    }

    /** Why the owner's lease on {@code key} was lost, or {@code null}, without using up the answer. */
    public String lostReason(String key, String owner) {
        LostHolds holds = lost.getIfPresent(new Key(key, owner));
        return holds == null ? null : holds.reason();
    }

    /**
     * A release found the owner's lease gone: the unlock that found it reports it, and the
     * owner's other {@code otherHolds} holds report it on their unlocks.
     */
    public void lostOnRelease(Lease lease, int otherHolds, String reason) {
        Key k = new Key(lease.key, lease.owner);
        if (live.remove(k, lease)) {
            observer.leaseLost(lease.key, BatonObserver.LossCause.GONE);
            tellLoss(lease, "a release found it gone from Redis: " + reason);
            gone(lease);
        }
        registry.unregister(lease);
        if (otherHolds > 0) {
            lost.put(k, new LostHolds(reason, otherHolds));
        }
    }

    /** The hold is gone from Redis: its kind's hook wakes this client's waiters for it (Lease.onGone). */
    private static void gone(Lease lease) {
        Runnable hook = lease.onGone;
        if (hook != null) {
            try {
                hook.run();
            } catch (RuntimeException e) {
                log.warn("waking the waiters of '{}' after its loss failed", lease.key, e);
            }
        }
    }

    /** Tells the lease-scoped work under {@code lease} that it is not held any more, and why. */
    private static void tellLoss(Lease lease, String reason) {
        for (Consumer<String> watcher : lease.watchers()) {
            try {
                watcher.accept(reason);
            } catch (RuntimeException e) {
                log.warn("stopping lease-scoped work under '{}' failed", lease.key, e);
            }
        }
    }

    /** Redis no longer has a held lease: move it to the lost memory and say so loudly. */
    public void lost(Lease lease, String reason) {
        lost(lease, BatonObserver.LossCause.GONE, reason);
    }

    /** A held lease was lost for {@code cause}: move it to the lost memory and say so loudly. */
    public void lost(Lease lease, BatonObserver.LossCause cause, String reason) {
        // Renewed no more, whoever found the loss (the watchdog's own finding has unregistered it
        // already; a re-entry or an updateLease that found it gone has not): a lost lease still
        // renewed would keep alive, for nobody and for ever, a hold that a late copy of one of
        // its owner's acquisitions wrote again (the simulation found it, read-write seed 405).
        registry.unregister(lease);
        Key k = new Key(lease.key, lease.owner);
        if (!live.remove(k, lease)) {
            return;
        }
        observer.leaseLost(lease.key, cause);
        lost.put(k, new LostHolds(reason, Math.max(1, lease.holds)));
        log.warn("Lease lost: lock '{}' held by {}: {}", lease.key, lease.owner, reason);
        tellLoss(lease, "Baton found it lost: " + reason);
        gone(lease);
        if (listener != null) {
            try {
                listener.leaseLost(lease.key, lease.owner, reason);
            } catch (RuntimeException e) {
                log.warn("LeaseLostListener threw", e);
            }
        }
    }

    /**
     * Scoped work under a hold that is not a lease of this table (an expirable permit): told,
     * as every lease's work is, when the client closes, since its timer closes with the client.
     */
    private final Set<Consumer<String>> closeWatchers = ConcurrentHashMap.newKeySet();
    private volatile boolean cleared;

    /** Tells {@code onClose} when the client closes (at once if it has). */
    public void watchClose(Consumer<String> onClose) {
        closeWatchers.add(onClose);
        if (cleared && closeWatchers.remove(onClose)) {
            onClose.accept(CLOSED);
        }
    }

    public void unwatchClose(Consumer<String> onClose) {
        closeWatchers.remove(onClose);
    }

    private static final String CLOSED = "the client was closed, so nothing renews it";

    /** Forgets everything (the client is closing). */
    public void clear() {
        // Removed first, then told, as everywhere: work that starts watching meanwhile finds its
        // lease gone when it checks.
        cleared = true;
        List<Lease> closing = new ArrayList<>(live.values());
        live.clear();
        for (Lease lease : closing) {
            tellLoss(lease, CLOSED);
        }
        for (Consumer<String> watcher : List.copyOf(closeWatchers)) {
            if (closeWatchers.remove(watcher)) {
                watcher.accept("the client was closed, so its timer stopped and the permit can no longer be given back");
            }
        }
        lost.invalidateAll();
    }
}
