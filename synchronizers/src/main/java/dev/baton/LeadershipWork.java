package dev.baton;

/** What a candidate does while it leads ({@link BatonLeaderElection#join}). */
@FunctionalInterface
public interface LeadershipWork {
    /**
     * Leads: runs as long as this candidate wants to lead. It is interrupted when leadership is
     * lost (see {@link Leadership}), relinquished or the candidacy closed; returning or throwing
     * hands leadership on.
     *
     * @param leadership this leadership: its epoch, how long it is known to hold
     * @throws Exception as the work does; logged at WARN, and leadership is handed on
     */
    void lead(Leadership leadership) throws Exception;
}
