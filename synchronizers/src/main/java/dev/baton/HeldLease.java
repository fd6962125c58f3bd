package dev.baton;

/**
 * One lease a client holds, as {@link Baton#heldLeases()} lists it.
 *
 * @param name        the lock's name
 * @param ownerId     the owner as stored in Redis: {@code "<clientId>:<threadId>"} (or the
 *                    {@code ownerId} given to an async method)
 * @param holds       how many holds the owner has (reentrant acquisitions not yet released)
 * @param watchdog    whether the watchdog renews it; false for a fixed lease
 * @param leaseMillis the lease: the watchdog timeout, or the fixed lease last set
 */
public record HeldLease(String name, String ownerId, int holds, boolean watchdog, long leaseMillis) {
}
