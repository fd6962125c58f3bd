package dev.baton;

/**
 * Hears what a client's synchronizers do, for metrics and tracing, without Baton depending on a
 * monitoring library (the {@code baton-micrometer} module is one implementation). Set one with
 * {@link BatonOptions.Builder#observer(BatonObserver)}; every method has an empty default.
 *
 * <p>Methods are called on Baton's own threads (a Lettuce event loop or Baton's timer), right as
 * the event happens (an acquisition's end before its caller sees the outcome; its start, on the
 * calling thread): they must return quickly, must not block and must not call Baton. An
 * exception thrown by an observer is logged at WARN and otherwise ignored; it never changes the
 * outcome of the operation it was told about. A RedLock's waits are told to the observer of its
 * first master's client; a multi-lock's, as the waits of the locks it is made of. Names are passed as they are: an implementation
 * that turns them into metric tags must bound how many it keeps.
 */
public interface BatonObserver {

    /** The kind of synchronizer an event is about. */
    enum Kind {
        /** The reentrant lock. */
        LOCK,
        /** The fair lock. */
        FAIR_LOCK,
        /** The read side of a read-write lock. */
        READ_LOCK,
        /** The write side of a read-write lock. */
        WRITE_LOCK,
        /** The fenced lock. */
        FENCED_LOCK,
        /** RedLock over several masters. */
        RED_LOCK,
        /** The semaphore. */
        SEMAPHORE,
        /** The permit-expirable semaphore. */
        PERMIT_EXPIRABLE_SEMAPHORE,
        /** The count-down latch (an await). */
        COUNT_DOWN_LATCH,
        /** The rate limiter (an acquisition: admitted, refused, or given up while waiting for its slot). */
        RATE_LIMITER,
        /** A leader election (a candidate's wait to lead). */
        LEADER_ELECTION
    }

    /** How an acquisition (a lock, permits, a latch's await) ended. */
    enum Outcome {
        /** Acquired (for a latch: the count reached zero). */
        ACQUIRED,
        /** Not acquired within the wait time (or refused by a try without wait time). */
        TIMED_OUT,
        /** Interrupted or cancelled; nothing is held. */
        INTERRUPTED,
        /** Redis did not answer in time or could not be reached: {@link RedisUnavailableException}. */
        REDIS_UNAVAILABLE,
        /** Any other exception: deleted while waiting, a wrong-type key, an upgrade refused. */
        FAILED
    }

    /** Why a lease was lost while held. */
    enum LossCause {
        /** Redis no longer had it: expired, deleted, force-unlocked, or Redis lost its data. */
        GONE,
        /** Renewal could not reach Redis for a whole lease, so Redis let it expire. */
        UNREACHABLE
    }

    /**
     * An acquisition ended.
     *
     * @param kind        what was acquired
     * @param name        the synchronizer's name
     * @param outcome     how it ended
     * @param waitedNanos from the call to its outcome
     */
    default void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos) {
    }

    /**
     * An acquisition starts: called on the thread that asked for it (for the blocking API, the
     * thread that will wait), before anything is sent to Redis, so an implementation can pick up
     * that thread's context, such as a tracing span. Whatever it returns is passed to
     * {@link #acquisitionEnded(Kind, String, Outcome, long, Object)} when the acquisition ends, on
     * another thread. Every start is followed by exactly one end.
     *
     * @param kind what is acquired
     * @param name the synchronizer's name
     * @return anything the end of this acquisition needs (by default null)
     */
    default Object acquisitionStarted(Kind kind, String name) {
        return null;
    }

    /**
     * An acquisition ended, with what {@link #acquisitionStarted} returned for it. By default
     * calls {@link #acquisitionEnded(Kind, String, Outcome, long)}; an implementation overrides
     * one of the two.
     *
     * @param kind        what was acquired
     * @param name        the synchronizer's name
     * @param outcome     how it ended
     * @param waitedNanos from the call to its outcome
     * @param started     what {@link #acquisitionStarted} returned (null if it threw)
     */
    default void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos, Object started) {
        acquisitionEnded(kind, name, outcome, waitedNanos);
    }

    /**
     * An owner's last hold on a lock was released (by its owner; a lost lease is reported by
     * {@link #leaseLost} instead).
     *
     * @param kind      the lock's kind
     * @param name      the lock's name
     * @param heldNanos from the grant of the owner's first hold to the release
     */
    default void released(Kind kind, String name, long heldNanos) {
    }

    /**
     * A lease was lost while held; also reported to the {@link LeaseLostListener}.
     *
     * @param name  the lock's name
     * @param cause why it was lost
     */
    default void leaseLost(String name, LossCause cause) {
    }

    /**
     * The watchdog renewed a batch of leases (one script call), or tried to.
     *
     * @param leases    how many leases the call renewed or tried to
     * @param succeeded whether Redis answered (leases it found gone are reported by {@link #leaseLost})
     * @param tookNanos how long the call took
     */
    default void renewal(int leases, boolean succeeded, long tookNanos) {
    }

    /**
     * A candidate of this client was elected ({@link BatonLeaderElection}).
     *
     * @param election the election's name
     * @param epoch    its leadership's epoch
     */
    default void elected(String election, long epoch) {
    }

    /**
     * A leadership of this client's candidate ended.
     *
     * @param election the election's name
     * @param why      why it ended
     * @param ledNanos from its election to its end
     */
    default void leadershipEnded(String election, LeadershipListener.Revocation why, long ledNanos) {
    }
}
