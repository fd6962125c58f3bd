package dev.baton;

/**
 * Permits taken from a {@link BatonSemaphore}, for try-with-resources: {@link #close()} gives
 * them back; a second close does nothing.
 */
public interface SemaphorePermits extends AutoCloseable {
    /** How many permits this handle holds. */
    int permits();

    /** Releases the permits; a second call does nothing. */
    @Override
    void close();
}
