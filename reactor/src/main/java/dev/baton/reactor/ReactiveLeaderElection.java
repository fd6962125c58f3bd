package dev.baton.reactor;

import dev.baton.BatonLeaderElection;
import dev.baton.Candidacy;
import dev.baton.ElectionState;
import dev.baton.Leadership;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import java.util.Objects;
import java.util.function.Function;

/**
 * A Baton leader election as Reactor publishers ({@link ReactiveBaton}): a subscription to
 * {@link #lead} is a candidacy, and each leadership runs a publisher of the caller's.
 */
public final class ReactiveLeaderElection {
    private final BatonLeaderElection election;

    ReactiveLeaderElection(BatonLeaderElection election) {
        this.election = election;
    }

    /** The election's name. */
    public String name() {
        return election.getName();
    }

    /**
     * A candidacy for as long as the returned Mono is subscribed: each time this candidate is
     * elected, {@code work} is called with the leadership and its publisher subscribed; when it
     * completes (or errors), leadership is handed on and the candidate queues again, as
     * {@link BatonLeaderElection#joinAsync} does. The work's subscription is cancelled when
     * leadership is lost or the Mono's subscription is cancelled; cancelling the Mono closes the
     * candidacy (the work stopped, leadership handed on, the line left). The Mono completes only
     * by that cancel, or fails with {@link IllegalStateException} if the client is closed.
     *
     * @param identity how everyone sees this candidate ({@link BatonLeaderElection#join})
     * @param work     what the leader does, for as long as its publisher runs
     */
    public Mono<Void> lead(String identity, Function<? super Leadership, ? extends Publisher<?>> work) {
        Objects.requireNonNull(work, "work");
        return Mono.<Void>create(sink -> {
            Candidacy candidacy;
            try {
                candidacy = election.joinAsync(identity, leadership ->
                        Mono.defer(() -> Mono.from(work.apply(leadership)).then()).toFuture());
            } catch (RuntimeException e) {
                sink.error(e);
                return;
            }
            sink.onDispose(candidacy::closeAsync);
        }).publishOn(Schedulers.parallel());
    }

    /** Who leads and who waits ({@link BatonLeaderElection#state()}). */
    public Mono<ElectionState> state() {
        return ReactiveSemaphore.call(election::stateAsync, false);
    }

    @Override
    public String toString() {
        return "ReactiveLeaderElection{" + election.getName() + "}";
    }
}
