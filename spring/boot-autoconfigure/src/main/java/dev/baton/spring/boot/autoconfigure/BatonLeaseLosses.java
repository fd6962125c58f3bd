package dev.baton.spring.boot.autoconfigure;

import dev.baton.BatonObserver;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Remembers the auto-configured client's lost leases of the last {@link #WINDOW}, for the health
 * indicator: an observer bean, registered with the client like every {@link BatonObserver} bean.
 */
public final class BatonLeaseLosses implements BatonObserver {
    /** How far back losses are counted. */
    public static final Duration WINDOW = Duration.ofMinutes(15);
    private static final int KEPT = 1000;

    private final Clock clock;
    private final Deque<Instant> times = new ArrayDeque<>();
    private String lastName;
    private LossCause lastCause;
    private Instant lastAt;

    /** Losses timed by the system clock. */
    public BatonLeaseLosses() {
        this(Clock.systemUTC());
    }

    BatonLeaseLosses(Clock clock) {
        this.clock = clock;
    }

    @Override
    public synchronized void leaseLost(String name, LossCause cause) {
        Instant now = clock.instant();
        times.addLast(now);
        if (times.size() > KEPT) {
            times.removeFirst();
        }
        lastName = name;
        lastCause = cause;
        lastAt = now;
    }

    /** How many leases were lost in the last {@link #WINDOW} (at most the last 1,000 are kept). */
    public synchronized int recent() {
        Instant since = clock.instant().minus(WINDOW);
        while (!times.isEmpty() && times.peekFirst().isBefore(since)) {
            times.removeFirst();
        }
        return times.size();
    }

    /** The last loss as "name (cause) at instant", or null if none was seen. */
    public synchronized String last() {
        return lastAt == null ? null : "'" + lastName + "' (" + lastCause + ") at " + lastAt;
    }
}
