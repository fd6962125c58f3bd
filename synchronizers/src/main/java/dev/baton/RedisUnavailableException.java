package dev.baton;

/**
 * Redis did not answer: the connection is down, refused, or a command got no reply within
 * {@link BatonOptions#commandTimeout()}. The outcome of a state change that failed this way is
 * unknown to the caller; Baton's own follow-up (see each method's documentation) makes sure it
 * leaves no hold behind.
 */
public class RedisUnavailableException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message and the cause it wraps. */
    public RedisUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
