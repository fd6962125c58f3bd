package dev.baton;

/**
 * The root of Baton's own exceptions: something went wrong talking to Redis or with what Redis
 * holds. Misuse of a synchronizer is reported with the JDK's exceptions instead
 * ({@link IllegalArgumentException}, {@link NullPointerException},
 * {@link IllegalMonitorStateException} and its subtype {@link LeaseLostException}).
 */
public class BatonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message. */
    public BatonException(String message) {
        super(message);
    }

    /** Creates an exception with a message and the cause it wraps. */
    public BatonException(String message, Throwable cause) {
        super(message, cause);
    }
}
