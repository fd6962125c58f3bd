package dev.baton;

/** What the interleaving checks read inside a client (the internals are not exported). */
public final class Inside {
    private Inside() {
    }

    /** How many semaphore acquisitions {@code baton} granted by handing released permits over in the client. */
    public static long semaphoreHandOffs(Baton baton) {
        return DefaultBaton.runtime(baton).semaphoreHandOffs();
    }
}
