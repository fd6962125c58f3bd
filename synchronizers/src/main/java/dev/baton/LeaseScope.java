package dev.baton;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;

/**
 * The lease that a piece of lease-scoped work runs under ({@link BatonLock#withLock(LeaseWork)}):
 * how long it is still known to be held, and its fencing token where the lock has one.
 *
 * <p>"Known to be held" is measured on this client's clock from what Redis has confirmed: the
 * send of the acquisition, or of the last confirmed renewal, plus the lease, less a margin of 1 %
 * of the lease and 25 ms: the 1 % is the allowance for this client's clock running slower than
 * Redis's (a drift of up to 1 % of the elapsed time; {@link BatonOptions.Builder#clockDriftAllowance}
 * sets another share, from 0 to a half), the 25 ms for Redis's expiry resolution, the
 * stop's timer (a thread of Baton's own that runs nothing else) and the work's thread being
 * scheduled. A clock that drifts more than that, or a thread the JVM does not run for longer, can
 * see the stop after Redis let the lease go. Redis set the lease after that send, so until then Redis cannot have let it
 * expire, whatever the network or a pause of this process did since; a renewal still in flight
 * does not count until it is answered. What it cannot see is Redis losing the lock itself (a
 * restart without its data, a failover to a replica that had not received it, a delete): Baton
 * finds that at the next renewal, within a third of the watchdog timeout. A re-entry of the same
 * lock with a shorter fixed lease inside the work shortens the validity to that lease.
 *
 * <p>Check {@link #checkValid()} before each side effect that another holder must not overlap.
 * That narrows the window, it does not close it: a pause (a long GC, a stopped VM) between the
 * check and the write can outlast the lease. A fencing token checked by the resource written to
 * closes it ({@link BatonFencedLock}, docs/fencing.md).
 */
public interface LeaseScope {
    /**
     * The name of the lock the work holds; a multi-lock's scope gives its locks' names in the
     * order taken, separated by {@code ", "}.
     */
    String lockName();

    /**
     * How much longer the lease is known to be held, as above; {@link Duration#ZERO} once it is
     * not (its validity ran out on this client's clock, or Baton found it lost).
     */
    Duration remaining();

    /** Whether the lease is still known to be held: {@link #remaining()} is not zero. */
    boolean isValid();

    /**
     * Returns if the lease is still known to be held.
     *
     * @throws LeaseLostException if it is not: it was found lost, or its validity ran out on this
     *                            client's clock
     */
    void checkValid();

    /**
     * The fencing token of this hold (a {@link BatonFencedLock}'s grant); empty for a lock
     * without tokens and for a multi-lock (see {@link #members()}).
     */
    OptionalLong fencingToken();

    /**
     * The scopes this one is made of: a multi-lock's ({@link BatonMultiLock#withLock(LeaseWork)})
     * gives each lock's own, in the order taken (a fenced lock's token is found there; the
     * multi-lock's own {@link #fencingToken()} is empty); a single lock's is this scope alone.
     */
    default List<LeaseScope> members() {
        return List.of(this);
    }
}
