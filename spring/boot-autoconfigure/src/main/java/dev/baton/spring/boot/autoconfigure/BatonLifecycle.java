package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.context.SmartLifecycle;

/**
 * Closes the auto-configured client when the context stops, right before the Lettuce connection
 * factory it depends on stops and shuts the application's client down (a connection factory is a
 * lifecycle bean, stopped before any bean is destroyed).
 *
 * <p>Its phase is the lowest, so everything that stops in phases (a web server's graceful
 * shutdown, a leader initiator, schedulers) has released its locks through the client before it
 * closes; depending on the factory bean makes Spring stop it before the factory all the same. A
 * stopped context does not reopen the client: {@code start()} after {@code stop()} (a restart or
 * a checkpoint and restore) is not supported by the auto-configured client.
 */
final class BatonLifecycle implements SmartLifecycle {
    private Baton baton;
    private boolean running;
    private boolean stopped;

    /**
     * The client was opened; if the context has stopped meanwhile, it is closed at once.
     *
     * @return {@code baton}
     */
    synchronized Baton created(Baton baton) {
        this.baton = baton;
        if (stopped) {
            baton.close();
        }
        return baton;
    }

    /** The client once the lazy bean was created, else null. */
    synchronized Baton created() {
        return baton;
    }

    @Override
    public synchronized void start() {
        running = true;
    }

    @Override
    public synchronized void stop() {
        running = false;
        stopped = true;
        if (baton != null) {
            baton.close();
        }
    }

    @Override
    public synchronized boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return Integer.MIN_VALUE;
    }
}
