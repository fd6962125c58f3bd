package dev.baton;

/**
 * A call failed in a way that calling it again would repeat what it did: the change it made has
 * landed on the master, or Baton will finish it on its own. <b>Do not call the method again</b>
 * after this exception; a retry policy (Spring Retry, Resilience4j, a hand-written loop) should
 * retry {@link RedisUnavailableException} and stop at this one.
 *
 * <p>It is thrown by the releases that cannot be told apart from a second release:
 * <ul>
 *   <li>a semaphore's {@code release(n)} or {@code addPermits(n)}, or a latch's
 *       {@code countDown()}, that Redis did not confirm within the command timeout: Baton keeps
 *       sending the same request in the background (it counts once), and a second call would be
 *       a second release;</li>
 *   <li>any release (an unlock included) that landed on the master but that too few replicas
 *       acknowledged, with replica sync set to fail: its cause is the
 *       {@link ReplicaSyncException}.</li>
 * </ul>
 * Everything else Baton throws for an unreachable Redis is a {@link RedisUnavailableException},
 * after which calling again is safe: an acquire whose reply never came was undone, an
 * unconfirmed {@code unlock()} kept its hold and the next one completes it, a handle's
 * {@code close()} and a release by permit id recognise a release that had landed.
 */
public class DoNotRetryException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message and the cause it wraps. */
    public DoNotRetryException(String message, Throwable cause) {
        super(message, cause);
    }
}
