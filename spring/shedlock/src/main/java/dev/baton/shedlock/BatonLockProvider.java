package dev.baton.shedlock;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.RedisUnavailableException;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A ShedLock {@code LockProvider} on Baton's locks: a scheduled task's lock is a Baton lock named
 * {@code <keyPrefix><task name>} (by default {@code shedlock:<task name>}).
 *
 * <ul>
 *   <li>{@code lockAtMostFor} is the lock's lease: if the node dies, Redis frees the lock when it
 *       runs out. The lease is counted from the moment ShedLock created the lock configuration.</li>
 *   <li>{@code lockAtLeastFor} is kept on unlock: a task that ends sooner leaves the lock held
 *       until then (its lease is shortened to what is left), so a node whose clock or schedule is
 *       slightly late does not run the task again.</li>
 *   <li>Locks can be extended (ShedLock's {@code LockExtender}, or {@code KeepAliveLockProvider}
 *       from another thread): the lease is replaced in one owner-checked script call; an extension
 *       of a lock whose lease already ran out returns empty.</li>
 *   <li>{@code lock} never waits: it answers at once whether this node got the lock. It throws
 *       {@link dev.baton.RedisUnavailableException} if Redis does not answer within the client's
 *       command timeout; ShedLock then does not run the task.</li>
 * </ul>
 *
 * <p>A task that runs longer than {@code lockAtMostFor} has lost its lock when it ends: its unlock
 * logs a WARN (a fixed lease running out is not a loss the client's {@code LeaseLostListener}
 * hears of) and does not throw, and it never touches a lock another node took since. An unlock
 * that Redis does not confirm within the command timeout also logs a WARN and does not throw: the
 * lock then ends at {@code lockAtMostFor} at the latest.
 *
 * <p>Each lock is owned by its own acquisition, not by a thread, so it may be unlocked and extended
 * from any thread, and two acquisitions in one JVM exclude each other as two nodes do.
 */
public final class BatonLockProvider implements ExtensibleLockProvider {
    /** The default prefix of lock names. */
    public static final String DEFAULT_KEY_PREFIX = "shedlock:";

    private static final Logger log = LoggerFactory.getLogger(BatonLockProvider.class);
    /** Owner ids of acquisitions, far above any thread id so they never share an owner with a thread. */
    private static final AtomicLong OWNERS = new AtomicLong(1L << 62);

    private final Baton baton;
    private final String keyPrefix;

    /** A provider whose lock names are {@code shedlock:<task name>}. */
    public BatonLockProvider(Baton baton) {
        this(baton, DEFAULT_KEY_PREFIX);
    }

    /**
     * A provider whose lock names are {@code keyPrefix + task name}.
     *
     * @throws NullPointerException if an argument is null
     */
    public BatonLockProvider(Baton baton, String keyPrefix) {
        this.baton = Objects.requireNonNull(baton, "baton");
        this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
    }

    /**
     * Takes the task's lock if no node holds it, without waiting.
     *
     * @return the lock, or empty if another node (or another acquisition here) holds it
     * @throws dev.baton.RedisUnavailableException if Redis did not answer within the command timeout
     */
    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        Objects.requireNonNull(configuration, "configuration");
        BatonLock lock = baton.lock(keyPrefix + configuration.getName());
        long owner = OWNERS.incrementAndGet();
        long lease = leaseMillis(configuration.getLockAtMostUntil(), configuration);
        boolean acquired = await(lock.tryLockAsync(0, lease, TimeUnit.MILLISECONDS, owner));
        return acquired ? Optional.of(new BatonSimpleLock(configuration, lock, owner)) : Optional.empty();
    }

    @Override
    public String toString() {
        return "BatonLockProvider{" + keyPrefix + "*}";
    }

    private static long leaseMillis(Instant until, LockConfiguration configuration) {
        long left = Duration.between(ClockProvider.now(), until).toMillis();
        if (left <= 0) {
            throw new IllegalArgumentException("lockAtMostFor of '" + configuration.getName()
                    + "' has already passed: " + configuration);
        }
        return left;
    }

    private static <T> T await(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** One acquisition; after an extension it is replaced by a new one with the same owner. */
    private static final class BatonSimpleLock extends AbstractSimpleLock {
        private final BatonLock lock;
        private final long owner;

        BatonSimpleLock(LockConfiguration configuration, BatonLock lock, long owner) {
            super(configuration);
            this.lock = lock;
            this.owner = owner;
        }

        @Override
        protected void doUnlock() {
            Duration keep = Duration.between(ClockProvider.now(), lockConfiguration.getLockAtLeastUntil());
            try {
                if (keep.toMillis() > 0) {
                    await(lock.updateLeaseAsync(Duration.ofMillis(keep.toMillis()), owner));
                } else {
                    await(lock.unlockAsync(owner));
                }
            } catch (IllegalMonitorStateException e) { // LeaseLostException, or a lease already forgotten
                log.warn("ShedLock task '{}' ended after its lock was lost (it ran longer than lockAtMostFor {}, "
                        + "or the lock was deleted): {}", lockConfiguration.getName(),
                        lockConfiguration.getLockAtMostFor(), e.getMessage());
            } catch (RedisUnavailableException e) {
                log.warn("ShedLock task '{}': its unlock was not confirmed by Redis; the lock ends at lockAtMostFor "
                        + "({}) at the latest: {}", lockConfiguration.getName(), lockConfiguration.getLockAtMostUntil(),
                        e.getMessage());
            } catch (dev.baton.DoNotRetryException e) {
                // Released on the master; too few replicas acknowledged it (replica sync set to fail).
                log.warn("ShedLock task '{}': its unlock ran on the master, but too few replicas acknowledged it: {}",
                        lockConfiguration.getName(), e.getMessage());
            }
        }

        @Override
        protected Optional<SimpleLock> doExtend(LockConfiguration extended) {
            long lease = leaseMillis(extended.getLockAtMostUntil(), extended);
            try {
                await(lock.updateLeaseAsync(Duration.ofMillis(lease), owner));
            } catch (IllegalMonitorStateException e) { // LeaseLostException, or a lease already forgotten
                return Optional.empty();
            }
            return Optional.of(new BatonSimpleLock(extended, lock, owner));
        }
    }
}
