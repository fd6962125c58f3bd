package dev.baton;

/**
 * Thrown by an unlock when the caller did hold the lock but its lease is gone: the lease ran
 * out, the watchdog found the lock missing (Redis restarted without its data, the key was
 * deleted or force-unlocked), or renewal could not reach Redis for longer than the lease. The
 * caller's critical section may have overlapped another holder's.
 *
 * <p>It is an {@link IllegalMonitorStateException}, so code written against
 * {@link java.util.concurrent.locks.Lock} keeps working, but it says that the lease was lost,
 * not that the lock was never held.
 */
public class LeaseLostException extends IllegalMonitorStateException {
    private static final long serialVersionUID = 1L;

    private final String lockName;

    /** Creates an exception for the named lock with a message saying why the lease was lost. */
    public LeaseLostException(String lockName, String message) {
        super(message);
        this.lockName = lockName;
    }

    /** The name of the lock whose lease was lost. */
    public String lockName() {
        return lockName;
    }
}
