package dev.baton.internal.command;

import dev.baton.ReplicaSyncException;

/**
 * A {@link ReplicaSyncException} that keeps the script's reply: the change ran on the master, and
 * what it answered still decides what happened (a release that found its lease gone reports the
 * loss, not "landed").
 */
public final class ReplicaShortfall extends ReplicaSyncException {
    private static final long serialVersionUID = 1L;

    private final transient Object reply;

    public ReplicaShortfall(String message, long acknowledged, int required, Object reply) {
        super(message, acknowledged, required);
        this.reply = reply;
    }

    /**
     * This shortfall with its reply marked as possibly re-sent: an earlier copy of the same call,
     * whose reply never came, may have run before the copy that answered (so a release that
     * finds nothing held is that earlier copy's work, not a lost lease).
     */
    ReplicaShortfall resent() {
        if (reply instanceof CommandExecutor.Delivered<?> d && !d.resent()) {
            ReplicaShortfall marked = new ReplicaShortfall(getMessage(), acknowledged(), required(),
                    new CommandExecutor.Delivered<>(d.value(), true));
            marked.setStackTrace(getStackTrace());
            return marked;
        }
        return this;
    }

    /** The master's reply behind {@code e}, or null if it did not keep one. */
    public static Object replyOf(Throwable e) {
        return e instanceof ReplicaShortfall shortfall ? shortfall.reply : null;
    }
}
