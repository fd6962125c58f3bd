package dev.baton.reactor;

import dev.baton.Baton;
import reactor.util.context.Context;

import java.util.Objects;
import java.util.function.Function;

/**
 * Baton's synchronizers as Reactor publishers, from one {@link Baton} client.
 *
 * <p>A reactive pipeline hops threads and many pipelines share one event loop thread, so a lock's
 * holder here is never a thread. The scoped form, {@link ReactiveLock#withLock}, holds the lock
 * for the subscription itself: nothing else to set up. The separate {@link ReactiveLock#lock()}
 * and {@link ReactiveLock#unlock()} find their owner in the subscriber's {@link Context}, under
 * {@link #OWNER}; {@link #newOwner()} puts one there for each subscription:
 * <pre>{@code
 * lock.lock()
 *     .then(work())                       // may run on any thread
 *     .then(lock.unlock())                // the same owner: the same subscription's Context
 *     .contextWrite(ReactiveBaton.newOwner());
 * }</pre>
 *
 * <p>Every publisher is cold: nothing is sent to Redis before a subscription, and each
 * subscription sends again. Cancelling a subscription abandons what it waits for, as cancelling
 * the future of Baton's asynchronous API does; the scoped forms ({@link ReactiveLock#withLock},
 * {@link ReactiveSemaphore#withPermits}) never leave a hold or permits behind, however the
 * subscription ends. Publishers signal on a Reactor scheduler, never on Baton's own I/O or timer
 * threads.
 */
public final class ReactiveBaton {
    /** The Context key of the owner id that {@link ReactiveLock#lock()} and {@link ReactiveLock#unlock()} act for. */
    public static final String OWNER = "dev.baton.reactor.owner";

    private final Baton baton;

    private ReactiveBaton(Baton baton) {
        this.baton = Objects.requireNonNull(baton, "baton");
    }

    /** The reactive view of {@code baton}; closing stays with the client. */
    public static ReactiveBaton of(Baton baton) {
        return new ReactiveBaton(baton);
    }

    /**
     * A Context change that gives each subscription an owner id of its own
     * ({@link Baton#newOwnerId()}), replacing any the Context had: put it at the end of the
     * pipeline whose {@code lock()} and {@code unlock()} belong together. Operators above it
     * (inside the pipeline) share the owner, so a {@code retry()} there re-enters as the same
     * owner; a pipeline nested in another gets its own.
     */
    public static Function<Context, Context> newOwner() {
        return context -> context.put(OWNER, Baton.newOwnerId());
    }

    /** The reentrant lock {@code name} ({@link Baton#lock(String)}). */
    public ReactiveLock lock(String name) {
        return new ReactiveLock(baton.lock(name));
    }

    /** The fair lock {@code name} ({@link Baton#fairLock(String)}). */
    public ReactiveLock fairLock(String name) {
        return new ReactiveLock(baton.fairLock(name));
    }

    /** The fenced lock {@code name} ({@link Baton#fencedLock(String)}); the scope carries its tokens. */
    public ReactiveLock fencedLock(String name) {
        return new ReactiveLock(baton.fencedLock(name));
    }

    /** The read side of the read-write lock {@code name} ({@link Baton#readWriteLock(String)}). */
    public ReactiveLock readLock(String name) {
        return new ReactiveLock(baton.readWriteLock(name).readLock());
    }

    /** The write side of the read-write lock {@code name}. */
    public ReactiveLock writeLock(String name) {
        return new ReactiveLock(baton.readWriteLock(name).writeLock());
    }

    /** The semaphore {@code name} ({@link Baton#semaphore(String)}). */
    public ReactiveSemaphore semaphore(String name) {
        return new ReactiveSemaphore(baton.semaphore(name));
    }

    /** The leader election {@code name} ({@link Baton#leaderElection(String)}). */
    public ReactiveLeaderElection leaderElection(String name) {
        return new ReactiveLeaderElection(baton.leaderElection(name));
    }

    /** The rate limiter {@code name} ({@link Baton#rateLimiter(String, dev.baton.RateLimit)}). */
    public ReactiveRateLimiter rateLimiter(String name, dev.baton.RateLimit limit) {
        return new ReactiveRateLimiter(baton.rateLimiter(name, limit));
    }

    /** The count-down latch {@code name} ({@link Baton#countDownLatch(String)}). */
    public ReactiveCountDownLatch countDownLatch(String name) {
        return new ReactiveCountDownLatch(baton.countDownLatch(name));
    }
}
