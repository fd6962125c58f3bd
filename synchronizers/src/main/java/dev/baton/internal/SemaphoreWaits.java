package dev.baton.internal;

import dev.baton.SynchronizerDeletedException;

import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

/** What both semaphores share: argument checks, the wake rule, and telling deletion apart. */
final class SemaphoreWaits {
    /** Re-check bound for a waiter whose wake-up message was lost. */
    static final long RECHECK_MS = TimeUnit.SECONDS.toMillis(5);

    /**
     * A message carries the new count: wake up to that many waiters (they can all be served).
     * A count of zero or less (a deletion, a drain) wakes everybody to re-check.
     */
    static final ToIntFunction<String> WAKE_BY_COUNT = message -> {
        try {
            long count = Long.parseLong(message.trim());
            return count <= 0 ? Integer.MAX_VALUE : (int) Math.min(Integer.MAX_VALUE, count);
        } catch (NumberFormatException e) {
            return Integer.MAX_VALUE;
        }
    };

    private SemaphoreWaits() {
    }

    static int requirePermits(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits);
        }
        return permits;
    }

    static long waitNanos(long timeout, TimeUnit unit) {
        return Blocking.waitNanos(timeout, unit, "timeout");
    }

    /**
     * A waiter saw the semaphore exist, and now it is gone: it was deleted. (One that never
     * existed keeps the waiter waiting for permits to be set.)
     */
    static final class DeletionWatch {
        private boolean seen;

        void check(String name, boolean exists) {
            if (exists) {
                seen = true;
            } else if (seen) {
                throw new SynchronizerDeletedException(name, "semaphore '" + name
                        + "' was deleted while this caller was waiting for permits");
            }
        }
    }
}
