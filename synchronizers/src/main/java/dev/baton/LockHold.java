package dev.baton;

/**
 * A held lock as a resource, for try-with-resources:
 * <pre>{@code
 * try (LockHold held = lock.acquire()) {
 *     // critical section
 * }
 * }</pre>
 * {@link #close()} releases the one hold this handle stands for; once it has, calling it again
 * does nothing. A close that threw {@link RedisUnavailableException} did not confirm the
 * release: calling it again completes it (see {@link BatonLock#unlock()}). It releases on behalf
 * of the owner that acquired it, so it may be closed from another thread.
 */
public interface LockHold extends AutoCloseable {
    /** The name of the held lock. */
    String lockName();

    /**
     * Releases this hold; after a successful release, further calls do nothing.
     *
     * @throws LeaseLostException        if the lease was lost while held
     * @throws RedisUnavailableException if Redis did not confirm the release in time; the hold
     *                                   is kept and calling {@code close()} again completes it
     */
    @Override
    void close();
}
