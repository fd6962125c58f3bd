package dev.baton;

import java.util.concurrent.CompletionStage;

/**
 * A leader election: candidates in any number of processes join under one name; one at a time
 * leads, in the order they joined, and runs its {@link LeadershipWork} while it leads.
 *
 * <pre>{@code
 * BatonLeaderElection election = baton.leaderElection("nightly-billing");
 * Candidacy candidacy = election.join("billing@" + host, leadership -> {
 *     long epoch = leadership.epoch();      // rises with every new leader, pass it to storage
 *     runNightlyJob(epoch, leadership);     // interrupted when leadership is lost
 * });
 * ...
 * candidacy.close();                        // leaves; a leader hands leadership on first
 * }</pre>
 *
 * <p>Leadership is a lock held with the watchdog (the client's watchdog timeout is its lease):
 * the work runs as lease-scoped work ({@link BatonLock#withLock(LeaseWork)}), with a
 * {@link Leadership} that says how long leadership is known to hold and is stopped, by
 * interrupting its thread, when it is found lost or its validity runs out on this client's clock
 * (before Redis can let it go and elect another). Each leadership gets an <em>epoch</em>: the
 * larger of the last epoch + 1 and the Redis server's clock in microseconds, so epochs keep
 * rising across a restart of Redis without its data (the fenced lock's token rule). Storage that
 * refuses writes with an epoch lower than the highest it saw keeps a deposed leader that did not
 * notice (a long pause of its process) from doing harm.
 *
 * <p>Bounds (docs/guide/leader-election.md, each tested): after a leader relinquishes, or its
 * work returns, the next live candidate leads within 200 ms; after a leader's process dies, within
 * the watchdog timeout + 200 ms; a leader cut off from Redis has its work stopped before another
 * candidate can be elected.
 *
 * <p>Not interoperable with Redisson, which has no leader election. Keys: docs/data-layout.md.
 */
public interface BatonLeaderElection {

    /** The election's name. */
    String getName();

    /**
     * Joins the election as a candidate, and returns at once: the candidate waits for its turn
     * without a thread, and runs {@code work} on a daemon thread of its own (named
     * {@code baton-candidate-<name>}) each time it is elected. When the work returns (or throws), the
     * candidate gives leadership to the next candidate in line and joins the line again at its
     * end; {@link Candidacy#close()} ends the candidacy.
     *
     * <p>While Redis cannot be reached, the candidate keeps trying, once a second, and does not
     * lead; a failure is logged once per outage at WARN.
     *
     * @param identity how everyone sees this candidate ({@link #state()}, the CLI): an application
     *                 name and host, say; 1 to 200 characters
     * @param work     what the leader does; it should run as long as it wants to lead, and end
     *                 when interrupted
     * @throws IllegalArgumentException if the identity is empty, blank or longer than 200 characters
     * @throws IllegalStateException    if the client is closed
     */
    Candidacy join(String identity, LeadershipWork work);

    /**
     * Joins the election with asynchronous work: when elected, {@code work} is called with the
     * leadership (on the default asynchronous executor of {@link java.util.concurrent.CompletableFuture},
     * never on one of Baton's I/O or timer threads) and should return at once; the candidate leads
     * until the stage it returned completes, then hands leadership on and joins the line again, as
     * {@link #join} does. The stage is cancelled when leadership is lost, relinquished or the
     * candidacy closed (cancelling a stage does not stop code already running for it: check
     * {@link Leadership#isValid()}); no thread of its own waits. For a caller that does its waiting
     * in stages, as a reactive pipeline or a coroutine does.
     *
     * @throws IllegalArgumentException if the identity is empty, blank or longer than 200 characters
     * @throws IllegalStateException    if the client is closed
     */
    Candidacy joinAsync(String identity,
                        java.util.function.Function<? super Leadership, ? extends CompletionStage<?>> work);

    /**
     * Who leads and who waits, as Redis has it now: one round trip.
     *
     * @throws RedisUnavailableException if Redis does not answer within the command timeout
     */
    ElectionState state();

    /** Asynchronous {@link #state()}. */
    CompletionStage<ElectionState> stateAsync();
}
