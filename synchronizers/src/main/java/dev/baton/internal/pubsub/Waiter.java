package dev.baton.internal.pubsub;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One waiting acquisition's doorbell. A pub/sub message rings it ({@link #signal()}); the
 * acquisition {@link #park() parks} on it between attempts. A ring that arrives while the
 * acquisition is busy with an attempt is kept, so the next park returns at once: no wake-up is
 * lost, at the price of an occasional extra attempt.
 */
public final class Waiter {
    private final String tag;
    private final long arrival;
    private final AtomicBoolean pending = new AtomicBoolean();
    private volatile CompletableFuture<Void> parked;
    private volatile String lastMessage;
    /** The message whose arrivals this waiter counts ({@link #watch}), or null. */
    private volatile String watched;
    /** The channel's count of messages heard ({@code PubSubService}) when the watched message last came; 0: never. */
    private volatile long watchedHeard;

    /**
     * @param tag     what a tagged channel's messages name this waiter by (e.g. its owner id;
     *                the channel also matches a message made of the tag, '#' and a suffix such
     *                as a hand-off ticket), or {@code null}
     * @param arrival this waiter's place among its channel's waiters (larger: later)
     */
    public Waiter(String tag, long arrival) {
        this.tag = tag;
        this.arrival = arrival;
    }

    public String tag() {
        return tag;
    }

    public long arrival() {
        return arrival;
    }

    /**
     * Remembers the latest message the channel showed this waiter, whether or not it rang it,
     * and, for the watched message, where in the channel's stream it came ({@code heard}: the
     * channel's count of messages heard, this one included).
     */
    public void saw(String message, long heard) {
        lastMessage = message;
        if (message.equals(watched)) {
            watchedHeard = heard;
        }
    }

    /** From now on, remembers where in the channel's stream {@code message} last came ({@link #watchedHeard}). */
    public void watch(String message) {
        watched = message;
    }

    /** The channel's count of messages heard when the watched message last came to this waiter; 0 if it has not. */
    public long watchedHeard() {
        return watchedHeard;
    }

    /** The latest message seen since the last {@link #takeMessage()}, or {@code null}; leaves it. */
    public String peekMessage() {
        return lastMessage;
    }

    /** The latest message seen since the last call, or {@code null}; clears it. */
    public String takeMessage() {
        String m = lastMessage;
        lastMessage = null;
        return m;
    }

    /**
     * Rings the bell.
     *
     * @return {@code true} if this ring is new, {@code false} if one was already pending (so the
     *         caller may ring someone else instead)
     */
    public boolean signal() {
        if (!pending.compareAndSet(false, true)) {
            return false;
        }
        CompletableFuture<Void> p = parked;
        if (p != null) {
            p.complete(null);
        }
        return true;
    }

    /** Whether a ring is pending that nobody has consumed yet. */
    public boolean hasPendingSignal() {
        return pending.get();
    }

    /** A future completed by the next ring (at once if one is pending). */
    public CompletableFuture<Void> park() {
        CompletableFuture<Void> p = new CompletableFuture<>();
        parked = p;
        if (pending.get()) {
            p.complete(null);
        }
        return p;
    }

    /** Clears the pending ring before the next attempt; rings after this are kept. */
    public void consume() {
        pending.set(false);
    }
}
