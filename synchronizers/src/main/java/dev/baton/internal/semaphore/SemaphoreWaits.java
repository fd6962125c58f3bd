package dev.baton.internal.semaphore;

import dev.baton.SynchronizerDeletedException;

import java.util.concurrent.TimeUnit;

/** What both semaphores share: the re-check bound and telling deletion apart. */
final class SemaphoreWaits {
    /** Re-check bound for a waiter whose wake-up message was lost. */
    static final long RECHECK_MS = TimeUnit.SECONDS.toMillis(5);

    private SemaphoreWaits() {
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
