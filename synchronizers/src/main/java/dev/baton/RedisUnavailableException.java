package dev.baton;

/**
 * Redis did not answer: the connection is down, refused, reset, or a command got no reply
 * within {@link BatonOptions#commandTimeout()}. It is thrown no later than the command timeout
 * + 150 ms after the command that failed was sent (a wait with a wait time: its wait time + the
 * timeout + 150 ms), and its message says what was being done and how long it took, e.g.
 * {@code acquiring lock 'orders' failed after 3.01 s: Redis did not answer ...}.
 *
 * <p>What it means for the state in Redis is said by each method: an acquire whose answer never
 * came is undone by Baton; an unconfirmed unlock keeps its hold for a second {@code unlock()};
 * an unconfirmed semaphore release or latch countDown is finished by Baton in the background and
 * counted once, and must not be repeated.
 */
public class RedisUnavailableException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message and the cause it wraps. */
    public RedisUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
