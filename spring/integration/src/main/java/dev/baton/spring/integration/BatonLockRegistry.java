package dev.baton.spring.integration;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.RedisUnavailableException;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A Spring Integration lock registry on Baton's locks. {@link #obtain(Object)} returns one cached
 * lock per key, a Baton lock named {@code <registryKey>:<key>} (so a Redisson client, or Baton
 * directly, can take the same lock).
 *
 * <p>One class for Spring Integration 6.5 (Spring Boot 3.5) and 7.x (Boot 4): it implements the
 * registry interfaces as 6.5 declares them (without 7.x's lock type parameter) and adds what 7.x
 * added. On 7.x every lock it returns is also a
 * {@code org.springframework.integration.support.locks.DistributedLock} ({@code lock(Duration)},
 * {@code tryLock(Duration, Duration)}: a hold with its own fixed lease); cast to use those, or
 * assign the registry to a {@code LockRegistry<DistributedLock>} (an unchecked conversion).
 *
 * <p>Unlike a polling registry, a waiting thread is woken by Baton's pub/sub message when the lock
 * is released, and it waits without a busy loop. By default a held lock is kept alive by Baton's
 * watchdog for as long as its holder runs; the loss of such a lease (deleted, Redis lost its data)
 * is logged and reported to the client's {@code LeaseLostListener} as the watchdog finds it. With
 * {@link Builder#leaseTime(Duration)} every hold has a fixed lease instead, renewed only by
 * {@link #renewLock(Object)}. Any lost lease is thrown from {@code unlock()} as a
 * {@link dev.baton.LeaseLostException}.
 *
 * <p>How each wait can end is as for {@link BatonLock}: {@code lock()} waits until acquired;
 * {@code lockInterruptibly()} also ends with {@link InterruptedException}; {@code tryLock(time,
 * unit)} returns {@code false} when the time passes. Any of them throws
 * {@link RedisUnavailableException} if Redis does not answer within the client's command timeout.
 * Locks are owned by threads: the thread that locked is the one that unlocks.
 *
 * <pre>{@code
 * BatonLockRegistry registry = BatonLockRegistry.builder(baton, "orders").build();
 * Lock lock = registry.obtain("order-42");
 * }</pre>
 */
@SuppressWarnings("rawtypes") // 6.5's interfaces have no type parameter: raw, the one class file serves both lines
public final class BatonLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry {

    /** Spring Integration 7's lock interface, or null on 6.5. */
    private static final Class<?> DISTRIBUTED_LOCK = distributedLockType();

    private final Baton baton;
    private final String registryKey;
    private final boolean fair;
    private final Duration leaseTime;
    private final Map<String, RegistryLock> locks = new ConcurrentHashMap<>();

    private BatonLockRegistry(Builder b) {
        this.baton = b.baton;
        this.registryKey = b.registryKey;
        this.fair = b.fair;
        this.leaseTime = b.leaseTime;
    }

    /**
     * A builder for a registry on {@code baton} whose locks are named {@code registryKey + ":" + key}.
     *
     * @throws NullPointerException     if an argument is null
     * @throws IllegalArgumentException if {@code registryKey} is empty
     */
    public static Builder builder(Baton baton, String registryKey) {
        return new Builder(baton, registryKey);
    }

    /**
     * The lock for {@code lockKey}, the same instance for the same key until it is expired by
     * {@link #expireUnusedOlderThan(long)}.
     *
     * @throws IllegalArgumentException if {@code lockKey} is not a non-empty {@link String}
     */
    @Override
    public Lock obtain(Object lockKey) {
        String key = key(lockKey);
        RegistryLock lock = locks.computeIfAbsent(key, k -> new RegistryLock(lockOf(registryKey + ":" + k)));
        lock.touch();
        return lock.view;
    }

    /**
     * Drops from the cache every lock that no thread of this registry holds or waits for and that
     * was last obtained, locked or unlocked more than {@code age} milliseconds ago. A dropped lock
     * keeps working; the next {@link #obtain(Object)} for its key returns a new instance.
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.currentTimeMillis();
        locks.values().removeIf(lock -> !lock.inUseHere() && now - lock.lastUsed > age);
    }

    /**
     * Baton renews held locks itself, so this registry needs no scheduler: with the watchdog (no
     * {@link Builder#leaseTime(Duration)}) every held lock is kept alive for as long as its
     * holder's client runs, and this call changes nothing. A registry with a fixed lease refuses
     * it, rather than seem to renew: its holds are renewed only by {@link #renewLock(Object)}.
     *
     * @throws UnsupportedOperationException if the registry has a fixed lease time
     */
    @Override
    public void setRenewalTaskScheduler(org.springframework.scheduling.TaskScheduler taskScheduler) {
        if (leaseTime != null) {
            throw new UnsupportedOperationException("this registry's locks have a fixed lease (" + leaseTime
                    + "), renewed only by renewLock(...); build it without leaseTime and Baton's watchdog keeps "
                    + "every held lock alive, with no scheduler");
        }
    }

    /**
     * Renews the current thread's hold of the lock for {@code lockKey} from now: by the registry's
     * lease time if it has one, else by the lease the hold was taken with ({@code lock(Duration)}
     * or {@code tryLock(Duration, Duration)}); a hold kept by the watchdog needs no renewal, and
     * this only checks that the current thread holds it.
     *
     * @throws IllegalArgumentException     if {@code lockKey} is not a non-empty string
     * @throws IllegalMonitorStateException if the current thread does not hold the lock (a
     *                                      {@link dev.baton.LeaseLostException} if Baton knows
     *                                      its fixed lease was lost)
     * @throws RedisUnavailableException    if Redis did not answer within the command timeout
     */
    @Override
    public void renewLock(Object lockKey) {
        RegistryLock lock = cached(lockKey);
        Duration lease = leaseTime != null ? leaseTime : lock.leaseOfCurrentThread();
        if (lease == null) {
            if (!lock.lock.isHeldByCurrentThread()) {
                throw new IllegalMonitorStateException("the current thread does not hold " + lockName(lockKey));
            }
            return;
        }
        lock.lock.updateLease(lease);
    }

    /**
     * Gives the current thread's hold of the lock for {@code lockKey} a new fixed lease of
     * {@code timeToLive} from now. A hold kept by the watchdog cannot be switched to a fixed
     * lease: that throws {@link IllegalStateException}.
     *
     * @throws IllegalArgumentException     if {@code lockKey} is not a non-empty string, or
     *                                      {@code timeToLive} is not positive
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     * @throws IllegalStateException        if the hold is renewed by the watchdog
     * @throws dev.baton.LeaseLostException if its lease had already been lost
     * @throws RedisUnavailableException    if Redis did not answer within the command timeout
     */
    // Spring Integration 7's RenewableLockRegistry declares it; on 6.5 it is this class's own.
    public void renewLock(Object lockKey, Duration timeToLive) {
        Objects.requireNonNull(timeToLive, "timeToLive");
        cached(lockKey).lock.updateLease(timeToLive);
    }

    /** How many locks the registry caches now. */
    public int size() {
        return locks.size();
    }

    @Override
    public String toString() {
        return "BatonLockRegistry{" + registryKey + (fair ? ", fair" : "")
                + (leaseTime == null ? ", watchdog" : ", lease " + leaseTime) + "}";
    }

    private RegistryLock cached(Object lockKey) {
        RegistryLock lock = locks.get(key(lockKey));
        if (lock == null) {
            throw new IllegalMonitorStateException("the current thread does not hold " + lockName(lockKey)
                    + ": the registry has no lock for it");
        }
        lock.touch();
        return lock;
    }

    private String lockName(Object lockKey) {
        return "'" + registryKey + ":" + lockKey + "'";
    }

    private BatonLock lockOf(String name) {
        return fair ? baton.fairLock(name) : baton.lock(name);
    }

    private static Class<?> distributedLockType() {
        try {
            return Class.forName(BatonLockRegistryRuntimeHints.DISTRIBUTED_LOCK, false,
                    LockRegistry.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    private static String key(Object lockKey) {
        if (!(lockKey instanceof String key)) {
            throw new IllegalArgumentException("a lock key must be a String, not "
                    + (lockKey == null ? "null" : lockKey.getClass().getName()));
        }
        if (key.isEmpty()) {
            throw new IllegalArgumentException("a lock key must not be empty");
        }
        return key;
    }

    /**
     * One cached lock: Baton's lock with the registry's lease policy, and per thread of this
     * process its hold count (so a held lock is never expired from the cache) and the fixed lease
     * its holds were taken with (for {@link #renewLock(Object)}).
     */
    private final class RegistryLock implements Lock {
        final BatonLock lock;
        /**
         * What {@link #obtain(Object)} returns: this lock on Spring Integration 6.5; on 7.x the
         * same lock as a {@code DistributedLock}, an interface this class cannot name while it
         * loads on 6.5 (a proxy whose every call is this lock's method of the same signature).
         */
        final Lock view;
        final Map<Long, Integer> holds = new ConcurrentHashMap<>();
        final Map<Long, Duration> leases = new ConcurrentHashMap<>();
        /** Threads of this registry waiting for the lock now: a lock they wait on stays cached. */
        final java.util.concurrent.atomic.AtomicInteger waiting = new java.util.concurrent.atomic.AtomicInteger();
        volatile long lastUsed;

        RegistryLock(BatonLock lock) {
            this.lock = lock;
            this.view = DISTRIBUTED_LOCK == null ? this : (Lock) Proxy.newProxyInstance(DISTRIBUTED_LOCK.getClassLoader(),
                    new Class<?>[] {DISTRIBUTED_LOCK}, this::dispatch);
        }

        /** A call on {@link #view} as a {@code DistributedLock}. */
        private Object dispatch(Object proxy, Method method, Object[] args) throws Throwable {
            Class<?>[] types = method.getParameterTypes();
            String signature = method.getName() + "/" + types.length;
            switch (signature) {
                case "lock/0":
                    lock();
                    return null;
                case "lock/1":
                    lock((Duration) args[0]);
                    return null;
                case "lockInterruptibly/0":
                    lockInterruptibly();
                    return null;
                case "tryLock/0":
                    return tryLock();
                case "tryLock/2":
                    return types[0] == Duration.class ? tryLock((Duration) args[0], (Duration) args[1])
                            : tryLock((Long) args[0], (TimeUnit) args[1]);
                case "unlock/0":
                    unlock();
                    return null;
                case "newCondition/0":
                    return newCondition();
                case "toString/0":
                    return toString();
                case "hashCode/0":
                    return System.identityHashCode(proxy);
                case "equals/1":
                    return proxy == args[0];
                default:
                    if (method.isDefault()) {
                        return InvocationHandler.invokeDefault(proxy, method, args);
                    }
                    throw new UnsupportedOperationException("not supported by " + this + ": " + method);
            }
        }

        void touch() {
            lastUsed = System.currentTimeMillis();
        }

        /** Whether a thread of this registry holds the lock or waits for it. */
        boolean inUseHere() {
            return !holds.isEmpty() || waiting.get() > 0;
        }

        /** The fixed lease the current thread's holds were taken with, or null under the watchdog. */
        Duration leaseOfCurrentThread() {
            return leases.get(Thread.currentThread().getId());
        }

        private boolean held(boolean acquired, Duration lease) {
            if (acquired) {
                long thread = Thread.currentThread().getId();
                holds.merge(thread, 1, Integer::sum);
                if (lease == null) {
                    leases.remove(thread);
                } else {
                    leases.put(thread, lease);
                }
            }
            touch();
            return acquired;
        }

        /** One hold of the current thread ended (released, or found lost). */
        private void releasedOne() {
            long thread = Thread.currentThread().getId();
            if (holds.computeIfPresent(thread, (t, n) -> n > 1 ? n - 1 : null) == null) {
                leases.remove(thread);
            }
        }

        @Override
        public void lock() {
            waiting.incrementAndGet();
            try {
                if (leaseTime == null) {
                    lock.lock();
                } else {
                    lock.lock(leaseTime.toMillis(), TimeUnit.MILLISECONDS);
                }
                held(true, leaseTime);
            } finally {
                waiting.decrementAndGet();
            }
        }

        /** Spring Integration 7's {@code DistributedLock.lock(Duration)}: a hold with a fixed lease of {@code ttl}. */
        public void lock(Duration ttl) {
            long ms = millis(ttl, "ttl");
            waiting.incrementAndGet();
            try {
                lock.lock(ms, TimeUnit.MILLISECONDS);
                held(true, ttl);
            } finally {
                waiting.decrementAndGet();
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            waiting.incrementAndGet();
            try {
                if (leaseTime == null) {
                    lock.lockInterruptibly();
                } else {
                    lock.lockInterruptibly(leaseTime.toMillis(), TimeUnit.MILLISECONDS);
                }
                held(true, leaseTime);
            } finally {
                waiting.decrementAndGet();
            }
        }

        /** Takes the lock if it is free, without waiting and, as {@code Lock.tryLock()} says, whatever the interrupt status. */
        @Override
        public boolean tryLock() {
            if (leaseTime == null) {
                return held(lock.tryLock(), null);
            }
            CompletableFuture<Boolean> attempt = lock.tryLockAsync(0, leaseTime.toMillis(), TimeUnit.MILLISECONDS,
                    Thread.currentThread().getId()).toCompletableFuture();
            try {
                return held(attempt.join(), leaseTime);
            } catch (CompletionException e) {
                if (e.getCause() instanceof RuntimeException cause) {
                    throw cause;
                }
                throw e;
            }
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            waiting.incrementAndGet();
            try {
                if (leaseTime == null) {
                    return held(lock.tryLock(time, unit), null);
                }
                return held(lock.tryLock(unit.toMillis(time), leaseTime.toMillis(), TimeUnit.MILLISECONDS), leaseTime);
            } finally {
                waiting.decrementAndGet();
            }
        }

        /** Spring Integration 7's {@code DistributedLock.tryLock(Duration, Duration)}. */
        public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
            long waitMs = millis(waitTime, "waitTime");
            long ttlMs = millis(ttl, "ttl");
            waiting.incrementAndGet();
            try {
                return held(lock.tryLock(waitMs, ttlMs, TimeUnit.MILLISECONDS), ttl);
            } finally {
                waiting.decrementAndGet();
            }
        }

        /**
         * Releases one hold. A lost lease is thrown as {@link dev.baton.LeaseLostException} (the
         * hold is gone either way); a release Redis did not confirm keeps the hold, as in Baton.
         */
        @Override
        public void unlock() {
            try {
                lock.unlock();
                releasedOne();
            } catch (RedisUnavailableException e) {
                throw e;
            } catch (dev.baton.DoNotRetryException e) {
                releasedOne(); // released on the master, too few replicas acknowledged it: the hold is over
                throw e;
            } catch (IllegalMonitorStateException e) {
                releasedOne(); // lost, or not held at all: either way this thread has one hold fewer
                throw e;
            } finally {
                touch();
            }
        }

        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("a Baton lock has no conditions: " + lock.getName());
        }

        @Override
        public String toString() {
            return "BatonLockRegistry.lock{" + lock.getName() + "}";
        }
    }

    private static long millis(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative()) {
            throw new IllegalArgumentException(what + " must not be negative: " + d);
        }
        return d.toMillis();
    }

    /** Options of a {@link BatonLockRegistry}. */
    public static final class Builder {
        private final Baton baton;
        private final String registryKey;
        private boolean fair;
        private Duration leaseTime;

        private Builder(Baton baton, String registryKey) {
            this.baton = Objects.requireNonNull(baton, "baton");
            this.registryKey = Objects.requireNonNull(registryKey, "registryKey");
            if (registryKey.isEmpty()) {
                throw new IllegalArgumentException("registryKey must not be empty");
            }
        }

        /** Fair locks (first come, first served) instead of the default non-fair ones. */
        public Builder fair(boolean fair) {
            this.fair = fair;
            return this;
        }

        /**
         * A fixed lease for every hold instead of the watchdog: a hold ends {@code leaseTime}
         * after it was taken unless it is renewed with {@link #renewLock(Object)}; {@code null}
         * (the default) means the watchdog keeps a hold alive while its client runs.
         *
         * @throws IllegalArgumentException if {@code leaseTime} is zero or negative
         */
        public Builder leaseTime(Duration leaseTime) {
            if (leaseTime != null && (leaseTime.isZero() || leaseTime.isNegative())) {
                throw new IllegalArgumentException("leaseTime must be positive: " + leaseTime);
            }
            this.leaseTime = leaseTime;
            return this;
        }

        /** The registry. */
        public BatonLockRegistry build() {
            return new BatonLockRegistry(this);
        }
    }
}
