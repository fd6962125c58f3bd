package dev.baton;

/**
 * The synchronizer a caller was waiting on was deleted while it waited (for example a
 * count-down latch deleted with {@code delete()}), so the wait can never end the normal way.
 */
public class SynchronizerDeletedException extends BatonException {
    private static final long serialVersionUID = 1L;

    private final String name;

    /** Creates an exception for the named synchronizer. */
    public SynchronizerDeletedException(String name, String message) {
        super(message);
        this.name = name;
    }

    /** The deleted synchronizer's name. */
    public String name() {
        return name;
    }
}
