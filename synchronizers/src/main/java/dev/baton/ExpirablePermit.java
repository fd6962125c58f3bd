package dev.baton;

/**
 * One permit of a {@link BatonPermitExpirableSemaphore}, for try-with-resources: {@link #close()}
 * returns it, and reports a permit that expired before it ({@link LeaseLostException}); once it
 * has, a second close does nothing. A close that
 * threw {@link RedisUnavailableException} did not confirm the release: calling it again sends it
 * again (a release by permit id counts once however often it is sent).
 */
public interface ExpirablePermit extends AutoCloseable {
    /** The permit's id, as stored in Redis. */
    String id();

    /**
     * Returns the permit; after a release that Redis answered, further calls do nothing.
     *
     * @throws LeaseLostException       if the permit was no longer held: its lease ran out (or
     *                                   it was released elsewhere) first, so the holder's work
     *                                   may have overlapped another holder's
     * @throws RedisUnavailableException if Redis did not confirm the release in time; call
     *                                   {@code close()} again to send it again
     */
    @Override
    void close();
}
