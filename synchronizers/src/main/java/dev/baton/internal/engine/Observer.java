package dev.baton.internal.engine;

import dev.baton.BatonObserver;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.command.Failures;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CancellationException;

/**
 * The application's {@link BatonObserver}, called so that it can never change an operation's
 * outcome: whatever it throws is logged at WARN and dropped. One per client, made by the
 * client's runtime and given to the engine, the lease table and the renewal registry.
 */
public final class Observer {
    private static final Logger log = LoggerFactory.getLogger(Observer.class);

    /** Hears nothing: what a client without an observer uses. */
    public static final Observer NONE = new Observer(null);

    private final BatonObserver observer;

    public Observer(BatonObserver observer) {
        this.observer = observer;
    }

    /** How a wait that ended with {@code granted} or {@code error} is told. */
    public static BatonObserver.Outcome outcome(boolean granted, Throwable error) {
        if (error == null) {
            return granted ? BatonObserver.Outcome.ACQUIRED : BatonObserver.Outcome.TIMED_OUT;
        }
        Throwable cause = Failures.unwrap(error);
        if (cause instanceof CancellationException || cause instanceof InterruptedException) {
            return BatonObserver.Outcome.INTERRUPTED;
        }
        return cause instanceof RedisUnavailableException ? BatonObserver.Outcome.REDIS_UNAVAILABLE
                : BatonObserver.Outcome.FAILED;
    }

    /** Tells the start of an acquisition; returns what the observer returned (null if it threw). */
    public Object acquisitionStarted(BatonObserver.Kind kind, String name) {
        if (observer == null || kind == null) {
            return null;
        }
        try {
            return observer.acquisitionStarted(kind, name);
        } catch (RuntimeException e) {
            log.warn("BatonObserver threw; ignored", e);
            return null;
        }
    }

    public void acquisitionEnded(BatonObserver.Kind kind, String name, BatonObserver.Outcome outcome, long waitedNanos,
                                 Object started) {
        if (observer != null && kind != null) {
            safely(() -> observer.acquisitionEnded(kind, name, outcome, waitedNanos, started));
        }
    }

    public void released(BatonObserver.Kind kind, String name, long heldNanos) {
        if (observer != null) {
            safely(() -> observer.released(kind, name, heldNanos));
        }
    }

    public void leaseLost(String name, BatonObserver.LossCause cause) {
        if (observer != null) {
            safely(() -> observer.leaseLost(name, cause));
        }
    }

    public void renewal(int leases, boolean succeeded, long tookNanos) {
        if (observer != null) {
            safely(() -> observer.renewal(leases, succeeded, tookNanos));
        }
    }

    public void elected(String election, long epoch) {
        if (observer != null) {
            safely(() -> observer.elected(election, epoch));
        }
    }

    public void leadershipEnded(String election, dev.baton.LeadershipListener.Revocation why, long ledNanos) {
        if (observer != null) {
            safely(() -> observer.leadershipEnded(election, why, ledNanos));
        }
    }

    private static void safely(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            log.warn("BatonObserver threw; ignored", e);
        }
    }
}
