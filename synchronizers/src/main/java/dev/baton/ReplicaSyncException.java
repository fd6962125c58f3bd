package dev.baton;

/**
 * A state change reached the master but fewer replicas than
 * {@link BatonOptions#replicaSyncReplicas()} acknowledged it within
 * {@link BatonOptions#replicaSyncTimeout()}, with {@link BatonOptions#replicaSyncFailure()} set
 * to {@code FAIL}. An acquire that failed this way has been undone, so calling it again is safe,
 * as after any {@link RedisUnavailableException}. A release that failed this way has landed on
 * the master: it throws {@link DoNotRetryException} with this exception as its cause.
 */
public class ReplicaSyncException extends RedisUnavailableException {
    private static final long serialVersionUID = 1L;

    private final long acknowledged;
    private final int required;

    /** Creates an exception saying how many replicas acknowledged and how many were required. */
    public ReplicaSyncException(String message, long acknowledged, int required) {
        super(message, null);
        this.acknowledged = acknowledged;
        this.required = required;
    }

    /** How many replicas acknowledged the change in time. */
    public long acknowledged() {
        return acknowledged;
    }

    /** How many were required. */
    public int required() {
        return required;
    }
}
