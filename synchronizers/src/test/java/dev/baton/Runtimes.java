package dev.baton;

import dev.baton.internal.runtime.ClientRuntime;

/** The runtime behind a client, for tests that look inside it. */
public final class Runtimes {
    private Runtimes() {
    }

    public static ClientRuntime of(Baton baton) {
        return DefaultBaton.runtime(baton);
    }
}
