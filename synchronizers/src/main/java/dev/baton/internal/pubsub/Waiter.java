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
    /** The messages whose arrivals this waiter places ({@link #watch}), or null. */
    private volatile String[] watched;
    /** For each watched message, the channel's count of messages heard ({@code PubSubService}) when it last came; 0: never. */
    private final java.util.concurrent.atomic.AtomicLongArray heardOf = new java.util.concurrent.atomic.AtomicLongArray(2);
    /** The channel's count of messages heard when this waiter last saw any message; 0: none yet. */
    private volatile long heard;
    /** The channel's count of messages heard at the latest re-subscription (messages before it may be lost); 0: none. */
    private volatile long lostBefore;

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
        this.heard = heard;
        String[] w = watched;
        if (w != null) {
            for (int i = 0; i < w.length; i++) {
                if (message.equals(w[i])) {
                    heardOf.set(i, heard);
                }
            }
        }
    }

    /** From now on, remembers where in the channel's stream each of {@code messages} (at most two) last came ({@link #heardOf}). */
    public void watch(String... messages) {
        if (messages.length > heardOf.length()) {
            throw new IllegalArgumentException("at most " + heardOf.length() + " watched messages");
        }
        watched = messages.clone();
    }

    /** The channel was subscribed again after a reconnect, at {@code heard}: messages published before may be lost. */
    public void lostBefore(long heard) {
        lostBefore = heard;
    }

    /** Where the latest gap in this waiter's messages ends (a re-subscription); 0 if there was none. */
    public long lostBefore() {
        return lostBefore;
    }

    /** The channel's count of messages heard when this waiter last saw a message; 0 if it has not. */
    public long heard() {
        return heard;
    }

    /** The channel's count of messages heard when the watched {@code message} last came to this waiter; 0 if it has not. */
    public long heardOf(String message) {
        String[] w = watched;
        if (w != null) {
            for (int i = 0; i < w.length; i++) {
                if (w[i].equals(message)) {
                    return heardOf.get(i);
                }
            }
        }
        return 0;
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
