package dev.baton.internal;

import dev.baton.ReplicaSyncException;

/**
 * A {@link ReplicaSyncException} that keeps the script's reply: the change ran on the master, and
 * what it answered still decides what happened (a release that found its lease gone reports the
 * loss, not "landed").
 */
final class ReplicaShortfall extends ReplicaSyncException {
    private static final long serialVersionUID = 1L;

    private final transient Object reply;

    ReplicaShortfall(String message, long acknowledged, int required, Object reply) {
        super(message, acknowledged, required);
        this.reply = reply;
    }

    /** The master's reply behind {@code e}, or null if it did not keep one. */
    static Object replyOf(Throwable e) {
        return e instanceof ReplicaShortfall shortfall ? shortfall.reply : null;
    }
}
