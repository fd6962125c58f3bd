package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.context.SmartLifecycle;

/**
 * Closes the auto-configured client when the context stops, before the Lettuce connection factory
 * it depends on stops and shuts the application's client down (a connection factory is a
 * lifecycle bean, stopped before any bean is destroyed). Depending on the factory bean makes
 * Spring stop this one first.
 */
final class BatonLifecycle implements SmartLifecycle {
    private volatile Baton baton;
    private volatile boolean running;

    void created(Baton baton) {
        this.baton = baton;
    }

    /** The client once the lazy bean was created, else null. */
    Baton created() {
        return baton;
    }

    @Override
    public void start() {
        running = true;
    }

    @Override
    public void stop() {
        running = false;
        Baton created = baton;
        if (created != null) {
            created.close();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
