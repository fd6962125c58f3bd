package dev.baton;

/**
 * One permit of a {@link BatonPermitExpirableSemaphore}, for try-with-resources: {@link #close()}
 * returns it (unless it expired meanwhile); a second close does nothing.
 */
public interface ExpirablePermit extends AutoCloseable {
    /** The permit's id, as stored in Redis. */
    String id();

    /** Returns the permit; a second call does nothing. */
    @Override
    void close();
}
