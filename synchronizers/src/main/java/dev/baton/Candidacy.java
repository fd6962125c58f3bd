package dev.baton;

import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One candidate in a {@link BatonLeaderElection}, from {@link BatonLeaderElection#join}. It waits
 * for its turn, leads (runs its work), hands leadership on when the work ends and waits again,
 * until it is closed.
 */
public interface Candidacy extends AutoCloseable {

    /** The identity it joined with. */
    String identity();

    /** The election's name. */
    String electionName();

    /**
     * Whether this candidate leads now: it was elected and its leadership is still known to hold
     * ({@link Leadership#isValid()}). No round trip.
     */
    boolean isLeader();

    /** The current leadership, if this candidate leads (valid or not yet revoked). */
    Optional<Leadership> leadership();

    /**
     * Waits until this candidate leads.
     *
     * <p>How the wait can end: {@code true} as soon as it leads; {@code false} when the timeout
     * elapses first, or at once if the candidacy is closed; {@link InterruptedException} if the
     * calling thread is interrupted.
     *
     * @throws IllegalArgumentException if the timeout is negative
     */
    boolean awaitLeadership(long timeout, TimeUnit unit) throws InterruptedException;

    /**
     * Hands leadership to the next candidate in line, if this one leads: interrupts the work,
     * waits for it to return and for Redis to confirm the release, and returns; this candidate
     * then joins the line again at its end (alone, it leads again at once). The next live
     * candidate leads within 200 ms of the return.
     *
     * <p>How the wait can end: {@code true} once leadership was handed on (or, if Redis did not
     * confirm the release within the command timeout, once Baton gave it up, and Redis lets it
     * expire within the watchdog timeout); {@code false} at once if this candidate did not lead;
     * {@link InterruptedException} if the calling thread is interrupted (the hand-over goes on).
     * Work that ignores interruption delays the return until it ends.
     *
     * @throws IllegalStateException if called from the work itself: return from the work instead
     */
    boolean relinquish() throws InterruptedException;

    /**
     * Asynchronous {@link #relinquish()}: the stage completes with {@code true} once leadership was
     * handed on, {@code false} at once if this candidate did not lead. Usable from the work itself
     * (the stage then completes after the work has returned).
     */
    CompletionStage<Boolean> relinquishAsync();

    /**
     * Adds a listener, called on the candidate's thread: {@code elected} before the work starts,
     * {@code revoked} after it ended and the release was tried. A listener's exception is logged
     * and ignored.
     */
    void addListener(LeadershipListener listener);

    /** Removes a listener; whether it was there. */
    boolean removeListener(LeadershipListener listener);

    /**
     * Leaves the election: stops the work if this candidate leads, hands leadership on, and leaves
     * the line. Returns once the work has returned, the release is answered (or given up after the
     * command timeout) and Redis no longer lists the candidate in line: when Redis does not answer,
     * within twice the command timeout (the wait's attempt in flight, then its leaving) plus what
     * a work that ignores interruption takes. If the calling thread is interrupted meanwhile,
     * returns with its interrupt status set while the candidacy ends on its own.
     * Closing the client closes its candidacies the same way. Idempotent.
     */
    @Override
    void close();

    /**
     * Asynchronous {@link #close()}: starts leaving and returns a stage that completes when the
     * candidacy has ended (work returned, leadership handed on, the line left).
     */
    CompletionStage<Void> closeAsync();
}
