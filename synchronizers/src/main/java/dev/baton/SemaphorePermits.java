package dev.baton;

/**
 * Permits taken from a {@link BatonSemaphore}, for try-with-resources: {@link #close()} gives
 * them back, exactly once however often it is called. The release carries one request id, so
 * a close that threw {@link RedisUnavailableException} may simply be called again: it waits for
 * the same release (which Baton keeps sending in the background) instead of sending another.
 */
public interface SemaphorePermits extends AutoCloseable {
    /** How many permits this handle holds. */
    int permits();

    /**
     * Releases the permits; once they are released, further calls do nothing.
     *
     * @throws RedisUnavailableException if Redis did not confirm the release within the command
     *                                   timeout; it is still being sent, and calling
     *                                   {@code close()} again waits for it (again at most the
     *                                   command timeout)
     */
    @Override
    void close();
}
