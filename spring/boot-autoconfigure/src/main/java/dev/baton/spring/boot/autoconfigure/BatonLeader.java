package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.Candidacy;
import dev.baton.Leadership;
import dev.baton.LeadershipListener;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * This application's candidacy in a Baton leader election, as a Spring bean (made when
 * {@code baton.leader.election} is set): it joins when the context starts and leaves (handing
 * leadership on) when it stops, and publishes a {@link Granted} event when this instance is
 * elected and a {@link Revoked} event when its leadership ends, which an {@code @EventListener}
 * receives the way Spring Integration's {@code OnGrantedEvent}/{@code OnRevokedEvent} are.
 *
 * <p>Listeners of {@link Granted} run on the candidacy's own thread while it leads: one that
 * returns keeps leadership (the thread then waits until leadership ends); the leadership's
 * {@link Leadership#epoch()} is the fencing token to pass to storage. {@link Revoked} says why
 * it ended (see {@link LeadershipListener.Revocation}). {@link #relinquish()} hands leadership to
 * the next instance in line.
 */
public final class BatonLeader implements SmartLifecycle {
    private final Baton baton;
    private final String election;
    private final String identity;
    private final ApplicationEventPublisher events;
    private volatile Candidacy candidacy;

    /** A leadership of this instance began. */
    public static final class Granted extends ApplicationEvent {
        private final transient Leadership leadership;

        Granted(BatonLeader source, Leadership leadership) {
            super(source);
            this.leadership = leadership;
        }

        /** The leadership: its epoch, how long it is known to hold. */
        public Leadership getLeadership() {
            return leadership;
        }
    }

    /** A leadership of this instance ended. */
    public static final class Revoked extends ApplicationEvent {
        private final transient Leadership leadership;
        private final LeadershipListener.Revocation why;

        Revoked(BatonLeader source, Leadership leadership, LeadershipListener.Revocation why) {
            super(source);
            this.leadership = leadership;
            this.why = why;
        }

        /** The leadership that ended. */
        public Leadership getLeadership() {
            return leadership;
        }

        /** Why it ended. */
        public LeadershipListener.Revocation getWhy() {
            return why;
        }
    }

    BatonLeader(Baton baton, String election, String identity, ApplicationEventPublisher events) {
        this.baton = Objects.requireNonNull(baton, "baton");
        this.election = Objects.requireNonNull(election, "election");
        this.identity = Objects.requireNonNull(identity, "identity");
        this.events = Objects.requireNonNull(events, "events");
    }

    /** The election's name ({@code baton.leader.election}). */
    public String getElection() {
        return election;
    }

    /** The identity this instance joined with ({@code baton.leader.identity}). */
    public String getIdentity() {
        return identity;
    }

    /** Whether this instance leads now ({@link Candidacy#isLeader()}); false while not started. */
    public boolean isLeader() {
        Candidacy c = candidacy;
        return c != null && c.isLeader();
    }

    /** The current leadership, if this instance leads. */
    public Optional<Leadership> getLeadership() {
        Candidacy c = candidacy;
        return c == null ? Optional.empty() : c.leadership();
    }

    /**
     * Hands leadership to the next instance in line ({@link Candidacy#relinquish()}); false if this
     * instance did not lead.
     */
    public boolean relinquish() throws InterruptedException {
        Candidacy c = candidacy;
        return c != null && c.relinquish();
    }

    @Override
    public void start() {
        if (candidacy != null) {
            return;
        }
        Candidacy c = baton.leaderElection(election).join(identity, leadership -> {
            events.publishEvent(new Granted(this, leadership));
            TimeUnit.DAYS.sleep(Long.MAX_VALUE); // leads until interrupted: lost, relinquished or stopped
        });
        c.addListener(new LeadershipListener() {
            @Override
            public void revoked(Leadership leadership, Revocation why) {
                events.publishEvent(new Revoked(BatonLeader.this, leadership, why));
            }
        });
        candidacy = c;
    }

    @Override
    public void stop() {
        Candidacy c = candidacy;
        candidacy = null;
        if (c != null) {
            c.close();
        }
    }

    @Override
    public boolean isRunning() {
        return candidacy != null;
    }

    /** Late in the start, early in the stop: the rest of the application is up while it leads. */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 100;
    }

    @Override
    public String toString() {
        return "BatonLeader{" + identity + " in '" + election + "'}";
    }
}
