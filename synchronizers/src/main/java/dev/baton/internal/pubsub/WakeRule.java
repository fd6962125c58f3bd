package dev.baton.internal.pubsub;

/**
 * How a message on a channel wakes the local waiters on it. Waking means ringing a waiter, which
 * then tries its script again: a message is a hint, Redis stays the truth.
 */
public enum WakeRule {
    /** A lock release: one waiter, the oldest (it competes for the lock with everybody else). */
    ONE {
        @Override
        int wakes(String message) {
            return 1;
        }
    },
    /** Every waiter: a latch at zero, a read-write lock whose release may let several in. */
    ALL {
        @Override
        int wakes(String message) {
            return Integer.MAX_VALUE;
        }
    },
    /**
     * Only the waiters the message names by tag (a fair lock names the waiter it handed the lock
     * to: its owner id, or its owner id, '#' and its ticket); nobody else sees the message.
     */
    TAGGED {
        @Override
        int wakes(String message) {
            return Integer.MAX_VALUE;
        }
    },
    /**
     * A semaphore's new count: up to that many waiters, enough to use every permit; a count of
     * zero or less (a deletion, a drain) or one that cannot be read wakes everybody to re-check.
     */
    BY_COUNT {
        @Override
        int wakes(String message) {
            try {
                long count = Long.parseLong(message.trim());
                return count <= 0 ? Integer.MAX_VALUE : (int) Math.min(Integer.MAX_VALUE, count);
            } catch (NumberFormatException | NullPointerException e) {
                return Integer.MAX_VALUE;
            }
        }
    };

    /** How many waiters without a pending ring this message rings, oldest first. */
    abstract int wakes(String message);
}
