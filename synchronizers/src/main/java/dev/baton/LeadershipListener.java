package dev.baton;

/** Told when a candidate is elected and when its leadership ends ({@link Candidacy#addListener}). */
public interface LeadershipListener {

    /** Why a leadership ended. */
    enum Revocation {
        /** {@link Candidacy#relinquish()} handed it on. */
        RELINQUISHED,
        /** The work returned, or threw: leadership was handed on. */
        WORK_ENDED,
        /**
         * It was lost: Baton found the lease gone from Redis, or its validity ran out on this
         * client's clock (Redis unreachable); another candidate may lead now.
         */
        LOST,
        /** The candidacy (or the client) was closed. */
        CLOSED
    }

    /** This candidate leads; called before its work starts. */
    default void elected(Leadership leadership) {
    }

    /** This candidate's leadership ended, for {@code why}; called after its work ended. */
    default void revoked(Leadership leadership, Revocation why) {
    }
}
