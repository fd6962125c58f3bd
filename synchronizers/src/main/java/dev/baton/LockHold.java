package dev.baton;

/**
 * A held lock as a resource, for try-with-resources:
 * <pre>{@code
 * try (LockHold held = lock.acquire()) {
 *     // critical section
 * }
 * }</pre>
 * {@link #close()} releases the one hold this handle stands for; calling it again does
 * nothing. It releases on behalf of the owner that acquired it, so it may be closed from
 * another thread.
 */
public interface LockHold extends AutoCloseable {
    /** The name of the held lock. */
    String lockName();

    /**
     * Releases this hold; a second call does nothing.
     *
     * @throws LeaseLostException        if the lease was lost while held
     * @throws RedisUnavailableException if Redis did not answer in time
     */
    @Override
    void close();
}
