package dev.baton;

/**
 * The Redis key a synchronizer uses holds a value of another type (for example a lock name
 * that is already a string or a list). Baton never overwrites such a key; rename the
 * synchronizer or remove the key.
 */
public class WrongTypeException extends BatonException {
    private static final long serialVersionUID = 1L;

    private final String key;

    /** Creates an exception naming the offending key. */
    public WrongTypeException(String key, String message, Throwable cause) {
        super(message, cause);
        this.key = key;
    }

    /** The Redis key that holds a value of another type. */
    public String key() {
        return key;
    }
}
