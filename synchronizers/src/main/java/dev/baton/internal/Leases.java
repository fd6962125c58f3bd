package dev.baton.internal;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.baton.BatonObserver;
import dev.baton.LeaseLostListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The client's table of held leases, keyed by (Redis key, owner id), and the memory of leases
 * that were lost. A lost lease is moved out of the live table into a bounded, expiring Caffeine
 * cache so that the owner's next unlock can say "your lease was lost" rather than "you never
 * held this", without keeping entries forever for owners that never call unlock again.
 */
final class Leases {
    private static final Logger log = LoggerFactory.getLogger(Leases.class);

    /** How long a lost lease is remembered for the owner's next unlock. */
    static final Duration LOST_MEMORY = Duration.ofMinutes(10);

    private record Key(String key, String owner) {
    }

    /** Why a lease was lost, and how many of its owner's holds have not reported it yet. */
    private record LostHolds(String reason, int unreported) {
    }

    private final ConcurrentHashMap<Key, Lease> live = new ConcurrentHashMap<>();
    private final Cache<Key, LostHolds> lost = Caffeine.newBuilder()
            .expireAfterWrite(LOST_MEMORY)
            .maximumSize(10_000)
            .build();
    private final Scheduler scheduler;
    private final LeaseLostListener listener;
    private final Observer observer;
    private volatile RenewalRegistry registry;

    Leases(Scheduler scheduler, LeaseLostListener listener) {
        this(scheduler, listener, Observer.NONE);
    }

    Leases(Scheduler scheduler, LeaseLostListener listener, Observer observer) {
        this.observer = observer;
        this.scheduler = scheduler;
        this.listener = listener;
    }

    void attach(RenewalRegistry registry) {
        this.registry = registry;
    }

    /** The owner's live lease on {@code key}, or {@code null}. */
    Lease get(String key, String owner) {
        return live.get(new Key(key, owner));
    }

    /** How many holds the owner has on {@code key} as far as this client knows. */
    int holds(String key, String owner) {
        Lease lease = get(key, owner);
        return lease == null ? 0 : lease.holds;
    }

    /** Records a grant that leaves the owner with {@code holds} holds, renewed in the given way. */
    Lease granted(String key, String owner, int holds, long leaseMs, boolean watchdog, LockRecipe.Renewal renewal) {
        Key k = new Key(key, owner);
        lost.invalidate(k);
        Lease lease = live.get(k);
        if (lease == null) {
            lease = new Lease(key, owner, renewal, holds, leaseMs, watchdog, scheduler.nanoTime());
            live.put(k, lease);
            if (watchdog) {
                registry.register(lease);
            }
            return lease;
        }
        lease.holds = holds;
        lease.leaseMs = leaseMs;
        lease.releaseUnconfirmed = false;
        if (watchdog) {
            // Also after a final release that could not be confirmed stopped its renewal.
            lease.watchdog = true;
            registry.register(lease);
        }
        return lease;
    }

    /** How many leases this client holds now (one per lock and owner). */
    int size() {
        return live.size();
    }

    /** The owner released its last hold: forgets the lease and tells the observer how long it was held. */
    void released(Lease lease, BatonObserver.Kind kind) {
        remove(lease);
        observer.released(kind, lease.key, scheduler.nanoTime() - lease.grantedNanos);
    }

    /** Forgets a lease whose last hold was released (or that Redis says is gone), and stops renewing it. */
    void remove(Lease lease) {
        live.remove(new Key(lease.key, lease.owner), lease);
        registry.unregister(lease);
    }

    /**
     * Stops renewing a lease whose last hold is being released, before the release is sent, so
     * a renewal racing with it cannot find the lock gone and report a loss that did not happen.
     */
    void stopRenewing(Lease lease) {
        registry.unregister(lease);
    }

    /**
     * Why the owner's lease on {@code key} was lost, or {@code null}; every hold the owner had
     * gets this answer once (its unlocks each report the loss), then it is forgotten.
     */
    String takeLostReason(String key, String owner) {
        Key k = new Key(key, owner);
        LostHolds[] taken = new LostHolds[1];
        lost.asMap().computeIfPresent(k, (key2, holds) -> {
            taken[0] = holds;
            return holds.unreported() > 1 ? new LostHolds(holds.reason(), holds.unreported() - 1) : null;
        });
        return taken[0] == null ? null : taken[0].reason();
    }

    /** Why the owner's lease on {@code key} was lost, or {@code null}, without using up the answer. */
    String lostReason(String key, String owner) {
        LostHolds holds = lost.getIfPresent(new Key(key, owner));
        return holds == null ? null : holds.reason();
    }

    /**
     * A release found the owner's lease gone: the unlock that found it reports it, and the
     * owner's other {@code otherHolds} holds report it on their unlocks.
     */
    void lostOnRelease(Lease lease, int otherHolds, String reason) {
        Key k = new Key(lease.key, lease.owner);
        if (live.remove(k, lease)) {
            observer.leaseLost(lease.key, BatonObserver.LossCause.GONE);
        }
        registry.unregister(lease);
        if (otherHolds > 0) {
            lost.put(k, new LostHolds(reason, otherHolds));
        }
    }

    /** Redis no longer has a held lease: move it to the lost memory and say so loudly. */
    void lost(Lease lease, String reason) {
        lost(lease, BatonObserver.LossCause.GONE, reason);
    }

    /** A held lease was lost for {@code cause}: move it to the lost memory and say so loudly. */
    void lost(Lease lease, BatonObserver.LossCause cause, String reason) {
        Key k = new Key(lease.key, lease.owner);
        if (!live.remove(k, lease)) {
            return;
        }
        observer.leaseLost(lease.key, cause);
        lost.put(k, new LostHolds(reason, Math.max(1, lease.holds)));
        log.warn("Lease lost: lock '{}' held by {}: {}", lease.key, lease.owner, reason);
        if (listener != null) {
            try {
                listener.leaseLost(lease.key, lease.owner, reason);
            } catch (RuntimeException e) {
                log.warn("LeaseLostListener threw", e);
            }
        }
    }

    /** Forgets everything (the client is closing). */
    void clear() {
        live.clear();
        lost.invalidateAll();
    }
}
