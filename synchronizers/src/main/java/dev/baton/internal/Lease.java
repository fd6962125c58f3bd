package dev.baton.internal;

import java.util.concurrent.TimeUnit;

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
final class Lease {
    final String key;
    final String owner;
    volatile int holds;
    volatile long leaseMs;
    volatile boolean watchdog;
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
    volatile long sentNanos;

    /** The lease, as it now stands (watchdog or {@link #leaseMs}), starts at {@code nowNanos}. */
    void leaseFrom(long nowNanos) {
        expiresNanos = watchdog ? Long.MAX_VALUE : nowNanos + TimeUnit.MILLISECONDS.toNanos(leaseMs);
    }
    /** When the owner's first hold was granted (the observer's hold time). */
    final long grantedNanos;
    /** The fencing token of the current hold (fenced locks only; 0 otherwise). */
    volatile long token;
    /**
     * The owner's last release got no answer: it may or may not have landed. The hold is kept
     * so the owner can call unlock again; that call takes "nothing held" as this release.
     */
    volatile boolean releaseUnconfirmed;
    /** How the watchdog renews it: which script, by the kind of lock. */
    final LockRecipe.Renewal renewal;

    Lease(String key, String owner, LockRecipe.Renewal renewal, int holds, long leaseMs, boolean watchdog, long nowNanos) {
        this.key = key;
        this.renewal = renewal;
        this.owner = owner;
        this.holds = holds;
        this.leaseMs = leaseMs;
        this.watchdog = watchdog;
        this.lastRenewedNanos = nowNanos;
        this.grantedNanos = nowNanos;
    }

    @Override
    public String toString() {
        return "Lease{" + key + " by " + owner + ", holds=" + holds + (watchdog ? ", watchdog" : ", lease=" + leaseMs + "ms") + "}";
    }
}
