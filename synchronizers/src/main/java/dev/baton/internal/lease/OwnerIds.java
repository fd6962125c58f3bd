package dev.baton.internal.lease;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The owner ids Baton makes for work that is not a thread's ({@code Baton.newOwnerId()}, the
 * scoped work of {@code withLockAsync}): -1, -2, ..., unique in this JVM and below every thread
 * id, which is positive, so such an owner never re-enters or releases a hold a thread took.
 */
public final class OwnerIds {
    private static final AtomicLong LAST = new AtomicLong();

    private OwnerIds() {
    }

    /** The next id: below every id made before it and every thread id. */
    public static long next() {
        return LAST.decrementAndGet();
    }
}
