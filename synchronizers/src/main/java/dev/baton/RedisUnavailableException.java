package dev.baton;

/**
 * Redis did not answer: the connection is down, refused, reset, or a command got no reply
 * within {@link BatonOptions#commandTimeout()}. It is thrown no later than the command timeout
 * + 150 ms after the command that failed was sent (a wait with a wait time: its wait time + the
 * timeout + 150 ms), and its message says what was being done and how long it took, e.g.
 * {@code acquiring lock 'orders' failed after 3.01 s: Redis did not answer ...}.
 *
 * <p>Calling the method again after this exception is always safe (the retry rule,
 * guarantees.md): an acquire whose answer never came was undone by Baton; an unconfirmed
 * {@code unlock()}, a handle's {@code close()} and a release by permit id recognise on the next
 * call a release that had landed, and complete it otherwise. A release that a second call would
 * repeat (a semaphore's {@code release(n)}, a latch's {@code countDown()}) never throws this:
 * it throws {@link DoNotRetryException}.
 */
public class RedisUnavailableException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message and the cause it wraps. */
    public RedisUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
