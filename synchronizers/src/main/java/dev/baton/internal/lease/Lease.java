package dev.baton.internal.lease;


import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;

/**
 * What this client knows about one owner's hold on one lock: how many times the owner holds it
 * (the count the scripts compare against, which makes re-sent commands harmless), the lease the
 * holds were taken with, and whether the watchdog keeps it alive. Redis stays the truth; this
 * is only what the client needs to renew and to release.
 *
 * <p>The hold count is only written by the owner's own operations, which run one after
 * another; the renewal thread only reads {@link #key} and {@link #owner} and writes
 * {@link #lastRenewedNanos}.
 */
public final class Lease {
    /** How the watchdog renews a lease: which renewal script, for what a kind of lock holds. */
    public enum Renewal {
        /** The owner's field in the lock hash: {@code lock_renew.lua}. */
        HASH_FIELD,
        /** A read hold: the hash and each per-hold timeout key: {@code rwlock_read_renew.lua}. */
        READ_HOLDS
    }

    public final String key;
    public final String owner;
    public volatile int holds;
    public volatile long leaseMs;
    public volatile boolean watchdog;
    volatile long lastRenewedNanos;
    /**
     * When a fixed lease runs out at the latest, on the client's clock (the grant's or update's
     * reply, which Redis sent after setting the expiry); {@code Long.MAX_VALUE} under the watchdog.
     */
    volatile long expiresNanos = Long.MAX_VALUE;

    /**
     * When the attempt that granted the current fixed lease was sent, on the client's clock: Redis
     * set the lease after that, so it runs at least until this + {@link #leaseMs} (what a
     * multi-lock checks before it reports its set held).
     */
    public volatile long sentNanos;

    /**
     * From when the lease's validity ({@link #validUntilNanos()}) counts: the send of the grant
     * that made this record, or of the last confirmed renewal or update, whichever is latest.
     * A re-entry does not move it: not every kind's re-entry sets the whole lock's expiry (a
     * read hold refreshes only its own timeout key).
     */
    volatile long validFromNanos;
    /**
     * The shortest lease any grant, renewal or update set on this record: a command confirmed
     * earlier may still run after a later one (another connection), so only the shortest is
     * sure to last from {@link #validFromNanos}.
     */
    volatile long shortestLeaseMs;

    /**
     * Lease-scoped work watching this lease, told once, with the reason, when it is lost or this
     * record stops being the live one; null until some work watches (most leases never are, and
     * a grant should not allocate for them).
     */
    private volatile CopyOnWriteArrayList<Consumer<String>> onLoss;
    private static final AtomicReferenceFieldUpdater<Lease, CopyOnWriteArrayList> ON_LOSS =
            AtomicReferenceFieldUpdater.newUpdater(Lease.class, CopyOnWriteArrayList.class, "onLoss");

    /** Tells {@code watcher} when the lease is lost or stops being the live one. */
    void watch(Consumer<String> watcher) {
        ON_LOSS.compareAndSet(this, null, new CopyOnWriteArrayList<Consumer<String>>());
        onLoss.add(watcher);
    }

    /** Stops telling {@code watcher}. */
    void unwatch(Consumer<String> watcher) {
        List<Consumer<String>> watchers = onLoss;
        if (watchers != null) {
            watchers.remove(watcher);
        }
    }

    /** The watchers now (empty if none ever watched). */
    List<Consumer<String>> watchers() {
        List<Consumer<String>> watchers = onLoss;
        return watchers == null ? List.of() : watchers;
    }

    /** A fixed part of what {@link #validUntilNanos()} leaves out: Redis's expiry resolution and the client's timer tick (10 ms), with room. */
    static final long MARGIN_FIXED_NANOS = TimeUnit.MILLISECONDS.toNanos(25);

    /**
     * The share of the lease that {@link #validUntilNanos()} leaves out for clocks that run at
     * different rates (BatonOptions.clockDriftAllowance, 1 % by default); set by Leases.
     */
    volatile double driftAllowance = 0.01;

    /** What a scope keeps back of a lease of {@code leaseNanos}: {@code drift} of it and 25 ms. */
    static long marginNanos(long leaseNanos, double drift) {
        return (long) (leaseNanos * drift) + MARGIN_FIXED_NANOS;
    }

    /**
     * Until when, on the client's clock, Redis surely still has this lease: from
     * {@link #validFromNanos} (Redis set the lease after that send), {@link #shortestLeaseMs},
     * less the clock-drift allowance (1 % of it by default) and 25 ms. Only what this client has confirmed
     * counts, so a renewal in flight does not extend it.
     */
    long validUntilNanos() {
        long lease = TimeUnit.MILLISECONDS.toNanos(shortestLeaseMs);
        return validFromNanos + lease - marginNanos(lease, driftAllowance);
    }

    /** A confirmed renewal or update, sent at {@code sentNanos}, set a lease of {@code leaseMs}. */
    void confirmed(long sentNanos, long leaseMs) {
        if (sentNanos - validFromNanos > 0) {
            validFromNanos = sentNanos;
        }
        if (leaseMs < shortestLeaseMs) {
            shortestLeaseMs = leaseMs;
        }
    }

    /** The lease, as it now stands (watchdog or {@link #leaseMs}), starts at {@code nowNanos}. */
    void leaseFrom(long nowNanos) {
        expiresNanos = watchdog ? Long.MAX_VALUE : nowNanos + TimeUnit.MILLISECONDS.toNanos(leaseMs);
    }
    /** When the owner's first hold was granted (the observer's hold time). */
    final long grantedNanos;
    /** The fencing token of the current hold (fenced locks only; 0 otherwise). */
    public volatile long token;
    /**
     * The owner's last release got no answer: it may or may not have landed. The hold is kept
     * so the owner can call unlock again; that call takes "nothing held" as this release.
     */
    public volatile boolean releaseUnconfirmed;
    /**
     * Run when the lease table finds this hold gone from Redis (a renewal or a release found it
     * gone, a re-entry was refused): the lock may be free, and this client's own waiters for it
     * should try at once rather than at their timers (the kind sets it at the grant).
     */
    public volatile Runnable onGone;
    /** How the watchdog renews it: which script, by the kind of lock. */
    final Lease.Renewal renewal;

    public Lease(String key, String owner, Lease.Renewal renewal, int holds, long leaseMs, boolean watchdog, long nowNanos) {
        this.key = key;
        this.renewal = renewal;
        this.owner = owner;
        this.holds = holds;
        this.leaseMs = leaseMs;
        this.watchdog = watchdog;
        this.lastRenewedNanos = nowNanos;
        this.grantedNanos = nowNanos;
        this.validFromNanos = nowNanos;
        this.shortestLeaseMs = leaseMs;
    }

    @Override
    public String toString() {
        return "Lease{" + key + " by " + owner + ", holds=" + holds + (watchdog ? ", watchdog" : ", lease=" + leaseMs + "ms") + "}";
    }
}
