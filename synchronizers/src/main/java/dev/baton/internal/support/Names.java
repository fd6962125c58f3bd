package dev.baton.internal.support;

import dev.baton.lua.Layout;

/**
 * Owner ids: what the client writes into a lock as its holder. Key and channel names are spelled
 * in {@link Layout}.
 */
public final class Names {
    private Names() {
    }

    /** The owner id of the calling thread, as the blocking API uses it: the thread's id. */
    public static long threadOwner() {
        return Thread.currentThread().getId();
    }

    /** An owner id as stored in Redis: {@code <clientId>:<ownerId>}. */
    public static String owner(String clientId, long ownerId) {
        return clientId + ":" + ownerId;
    }
}
