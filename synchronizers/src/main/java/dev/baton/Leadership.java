package dev.baton;

/**
 * A candidate's leadership: the {@link LeaseScope} of the election's lease, with the
 * leadership's epoch and the leader's identity. {@link #fencingToken()} is the epoch too.
 */
public interface Leadership extends LeaseScope {

    /**
     * The epoch of this leadership: higher than every earlier leadership's of the same election,
     * across restarts of Redis without its data (as long as the Redis server's clock does not go
     * back). Pass it to storage as a fencing token.
     */
    long epoch();

    /** The identity this candidate joined with. */
    String identity();

    /** The election's name (the scope's {@link #lockName()} is the key of its lock). */
    String electionName();
}
