package dev.baton;

/**
 * Told when Baton finds that a lease it was keeping alive is gone. Register one with
 * {@link BatonOptions.Builder#leaseLostListener(LeaseLostListener)}.
 *
 * <p>Called on one of Baton's internal threads; it must return quickly and must not block on
 * Redis. Every loss is also logged at WARN level, whether or not a listener is registered.
 */
@FunctionalInterface
public interface LeaseLostListener {
    /**
     * A held lease was lost.
     *
     * @param lockName the synchronizer's name
     * @param ownerId  the owner that held it, as stored in Redis: {@code "<clientId>:<threadId>"}
     *                 (the thread id, or the {@code ownerId} given to an async method); a write
     *                 lock's owner ends in {@code ":write"}, as in Redisson's layout
     * @param reason   what Baton observed, in words
     */
    void leaseLost(String lockName, String ownerId, String reason);
}
