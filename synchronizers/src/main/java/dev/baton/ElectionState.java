package dev.baton;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A leader election as Redis has it ({@link BatonLeaderElection#state()}).
 *
 * @param leader     who leads, if anyone does
 * @param candidates the identities of the live candidates waiting in line, first in line first
 *                   (a candidate whose process died stays listed until the fair-lock waiter
 *                   timeout after its last call)
 */
public record ElectionState(Optional<Leader> leader, List<String> candidates) {

    /**
     * The leader.
     *
     * @param identity  the identity it joined with
     * @param epoch     its leadership's epoch; 0 for the moment (a round trip) between a hand-off
     *                  and the new leader's claim
     * @param since     when it was elected, on the Redis server's clock
     * @param leaseLeft how long the lease has left in Redis (renewed by the leader's watchdog)
     */
    public record Leader(String identity, long epoch, Instant since, Duration leaseLeft) {
    }

    public ElectionState {
        candidates = List.copyOf(candidates);
    }
}
