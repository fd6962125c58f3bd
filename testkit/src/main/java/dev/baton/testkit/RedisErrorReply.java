package dev.baton.testkit;

/** Redis answered a command with an error reply; the message is Redis's own text. */
public class RedisErrorReply extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with Redis's error text. */
    public RedisErrorReply(String message) {
        super(message);
    }
}
