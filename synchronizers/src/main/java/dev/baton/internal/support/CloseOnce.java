package dev.baton.internal.support;

import dev.baton.RedisUnavailableException;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The close of a try-with-resources handle ({@code LockHold}, {@code ExpirablePermit}): it
 * releases until a release has been answered, and then does nothing. A release that Redis did not
 * confirm ({@link RedisUnavailableException}) leaves the handle open, so closing it again sends
 * the release again; that is safe because every release a handle makes is idempotent (a hold
 * count, a permit id). Any other outcome, success or a definite refusal, closes it.
 */
public final class CloseOnce {
    private final AtomicBoolean closed = new AtomicBoolean();

    public void close(Runnable release) {
        if (closed.get()) {
            return;
        }
        try {
            release.run();
            closed.set(true);
        } catch (RedisUnavailableException e) {
            throw e; // still open: the next close() sends the release again
        } catch (RuntimeException e) {
            closed.set(true);
            throw e;
        }
    }
}
