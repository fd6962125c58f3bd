package dev.baton;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Settings of a {@link Baton} client. Immutable; start from {@link #builder()} or take the
 * defaults with {@link #create(String)}.
 *
 * <p>Redis is given as Lettuce URIs: {@code redis://host:port} or {@code rediss://} (TLS) for
 * one server, {@code redis-sentinel://host:port,host:port#masterName} for a Sentinel-managed
 * master, and one or more node URIs with {@link Builder#cluster(boolean) cluster(true)} for
 * Redis Cluster. These are ignored when the application passes its own Lettuce client to
 * {@link Baton#create(io.lettuce.core.RedisClient, BatonOptions)}.
 */
public final class BatonOptions {

    /** Default time a command may take before it fails with {@link RedisUnavailableException}. */
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(3);
    /** Default lease of a lock held without a lease time; renewed every third of it. */
    public static final Duration DEFAULT_WATCHDOG_TIMEOUT = Duration.ofSeconds(30);
    /** Default number of leases renewed by one script call. */
    public static final int DEFAULT_RENEWAL_BATCH_SIZE = 100;
    /** Default time after which a fair-lock waiter that stopped checking in is skipped. */
    public static final Duration DEFAULT_FAIR_LOCK_WAITER_TIMEOUT = Duration.ofSeconds(10);
    /** Default share of a lease that lease-scoped work keeps back for clocks running at different rates: 1 %. */
    public static final double DEFAULT_CLOCK_DRIFT_ALLOWANCE = 0.01;

    private final List<String> redisUris;
    private final boolean cluster;
    private final Duration commandTimeout;
    private final Duration watchdogTimeout;
    private final int renewalBatchSize;
    private final Duration fairLockWaiterTimeout;
    private final double clockDriftAllowance;
    private final int replicaSyncReplicas;
    private final Duration replicaSyncTimeout;
    private final ReplicaSyncFailure replicaSyncFailure;
    private final LeaseLostListener leaseLostListener;
    private final BatonObserver observer;

    /** What to do when fewer replicas than required acknowledge a change in time. */
    public enum ReplicaSyncFailure {
        /** Report {@link ReplicaSyncException} (and undo an acquire). */
        FAIL,
        /** Accept the change as it is (it may be lost if the master fails now). */
        ACCEPT
    }

    private BatonOptions(Builder b) {
        this.redisUris = List.copyOf(b.redisUris);
        this.cluster = b.cluster;
        this.commandTimeout = b.commandTimeout;
        this.watchdogTimeout = b.watchdogTimeout;
        this.renewalBatchSize = b.renewalBatchSize;
        this.fairLockWaiterTimeout = b.fairLockWaiterTimeout;
        this.clockDriftAllowance = b.clockDriftAllowance;
        this.replicaSyncReplicas = b.replicaSyncReplicas;
        this.replicaSyncTimeout = b.replicaSyncTimeout;
        this.replicaSyncFailure = b.replicaSyncFailure;
        this.leaseLostListener = b.leaseLostListener;
        this.observer = b.observer;
    }

    /** Options for one Redis URI with every other setting at its default. */
    public static BatonOptions create(String redisUri) {
        return builder().redisUri(redisUri).build();
    }

    /** A builder with every setting at its default and no Redis URI. */
    public static Builder builder() {
        return new Builder();
    }

    /** The Redis URIs; empty when the application supplies its own Lettuce client. */
    public List<String> redisUris() {
        return redisUris;
    }

    /** Whether {@link #redisUris()} are nodes of a Redis Cluster. */
    public boolean cluster() {
        return cluster;
    }

    /** How long one command may take before it fails with {@link RedisUnavailableException}. */
    public Duration commandTimeout() {
        return commandTimeout;
    }

    /** The lease of a lock held without a lease time; the watchdog renews it every third. */
    public Duration watchdogTimeout() {
        return watchdogTimeout;
    }

    /**
     * The share of a lease that lease-scoped work keeps back for this client's clock running
     * slower than Redis's: a {@link LeaseScope} is valid until the send that set the lease + the
     * lease − (this share of it + 25 ms), on this client's clock. See {@link Builder#clockDriftAllowance}.
     */
    public double clockDriftAllowance() {
        return clockDriftAllowance;
    }

    /** How many leases one renewal script call renews at most. */
    public int renewalBatchSize() {
        return renewalBatchSize;
    }

    /**
     * How long a fair-lock waiter may go without checking in (it does so every third of this)
     * before it is considered dead and skipped; also how long a waiter that was handed the lock
     * has to claim it.
     */
    public Duration fairLockWaiterTimeout() {
        return fairLockWaiterTimeout;
    }

    /**
     * How many replicas must acknowledge each state change (acquire, release, renewal,
     * semaphore change) before it counts as done: Redis {@code WAIT}. 0 (the default) = none.
     * In Redis Cluster mode {@code WAIT} runs on the master that owns the name's slot.
     */
    public int replicaSyncReplicas() {
        return replicaSyncReplicas;
    }

    /** How long to wait for replicas to acknowledge. */
    public Duration replicaSyncTimeout() {
        return replicaSyncTimeout;
    }

    /** What to do when too few replicas acknowledge in time. */
    public ReplicaSyncFailure replicaSyncFailure() {
        return replicaSyncFailure;
    }

    /** The listener told about lost leases, or {@code null}. */
    public LeaseLostListener leaseLostListener() {
        return leaseLostListener;
    }

    /** The observer told about acquisitions, releases, lost leases and renewals, or {@code null}. */
    public BatonObserver observer() {
        return observer;
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.redisUris = redisUris;
        b.cluster = cluster;
        b.commandTimeout = commandTimeout;
        b.watchdogTimeout = watchdogTimeout;
        b.renewalBatchSize = renewalBatchSize;
        b.fairLockWaiterTimeout = fairLockWaiterTimeout;
        b.clockDriftAllowance = clockDriftAllowance;
        b.replicaSyncReplicas = replicaSyncReplicas;
        b.replicaSyncTimeout = replicaSyncTimeout;
        b.replicaSyncFailure = replicaSyncFailure;
        b.leaseLostListener = leaseLostListener;
        b.observer = observer;
        return b;
    }

    @Override
    public String toString() {
        // URIs may carry passwords: never print them.
        return "BatonOptions{servers=" + redisUris.size() + ", cluster=" + cluster
                + ", commandTimeout=" + commandTimeout + ", watchdogTimeout=" + watchdogTimeout
                + ", renewalBatchSize=" + renewalBatchSize + ", replicaSync=" + replicaSyncReplicas + "}";
    }

    /** Builds {@link BatonOptions}; every setter checks its argument at once. */
    public static final class Builder {
        private List<String> redisUris = List.of();
        private boolean cluster;
        private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
        private Duration watchdogTimeout = DEFAULT_WATCHDOG_TIMEOUT;
        private int renewalBatchSize = DEFAULT_RENEWAL_BATCH_SIZE;
        private Duration fairLockWaiterTimeout = DEFAULT_FAIR_LOCK_WAITER_TIMEOUT;
        private double clockDriftAllowance = DEFAULT_CLOCK_DRIFT_ALLOWANCE;
        private int replicaSyncReplicas;
        private Duration replicaSyncTimeout = Duration.ofSeconds(1);
        private ReplicaSyncFailure replicaSyncFailure = ReplicaSyncFailure.FAIL;
        private LeaseLostListener leaseLostListener;
        private BatonObserver observer;

        private Builder() {
        }

        /** One Redis URI: a server, or a Sentinel group ({@code redis-sentinel://...}). */
        public Builder redisUri(String uri) {
            return redisUris(List.of(requireUri(uri, "redisUri")));
        }

        /** Several URIs: the seed nodes of a Redis Cluster (with {@link #cluster(boolean)}). */
        public Builder redisUris(List<String> uris) {
            Objects.requireNonNull(uris, "redisUris");
            if (uris.isEmpty()) {
                throw new IllegalArgumentException("redisUris must not be empty");
            }
            for (String uri : uris) {
                requireUri(uri, "redisUris element");
            }
            this.redisUris = List.copyOf(uris);
            return this;
        }

        /** Whether the URIs name Redis Cluster nodes (default {@code false}). */
        public Builder cluster(boolean cluster) {
            this.cluster = cluster;
            return this;
        }

        /** How long one command may take (default 3 s); positive. */
        public Builder commandTimeout(Duration timeout) {
            this.commandTimeout = positive(timeout, "commandTimeout");
            return this;
        }

        /** The watchdog lease (default 30 s); at least 100 ms. */
        public Builder watchdogTimeout(Duration timeout) {
            positive(timeout, "watchdogTimeout");
            if (timeout.toMillis() < 100) {
                throw new IllegalArgumentException("watchdogTimeout must be at least 100 ms, was " + timeout);
            }
            this.watchdogTimeout = timeout;
            return this;
        }

        /**
         * The share of a lease that lease-scoped work ({@code withLock}, {@code withPermit})
         * keeps back for clocks that run at different rates (default 0.01, that is 1 %); from 0
         * to 0.5. A scope is valid until the send that set its lease + the lease − (this share
         * of the lease + 25 ms), on this client's clock, so its work is stopped before Redis can
         * let the lease go as long as this client's clock runs no more than this share slower
         * than Redis's. Raise it where clocks drift more (a VM whose clock is slewed, say); the
         * work then stops earlier. The RedLock's validity and the multi-lock's fixed-lease check
         * keep their algorithm's own 1 % + 2 ms.
         *
         * @throws IllegalArgumentException if {@code share} is not between 0 and 0.5
         */
        public Builder clockDriftAllowance(double share) {
            if (!(share >= 0 && share <= 0.5)) {
                throw new IllegalArgumentException("clockDriftAllowance must be between 0 and 0.5 (a share of the lease), was "
                        + share);
            }
            this.clockDriftAllowance = share;
            return this;
        }

        /** Leases renewed per script call (default 100); between 1 and 10,000. */
        public Builder renewalBatchSize(int size) {
            if (size < 1 || size > 10_000) {
                throw new IllegalArgumentException("renewalBatchSize must be between 1 and 10000, was " + size);
            }
            this.renewalBatchSize = size;
            return this;
        }

        /** The fair-lock waiter timeout (default 10 s); at least 300 ms. */
        public Builder fairLockWaiterTimeout(Duration timeout) {
            positive(timeout, "fairLockWaiterTimeout");
            if (timeout.toMillis() < 300) {
                throw new IllegalArgumentException("fairLockWaiterTimeout must be at least 300 ms, was " + timeout);
            }
            this.fairLockWaiterTimeout = timeout;
            return this;
        }

        /**
         * After each state change, wait until {@code replicas} replicas acknowledged it, at most
         * {@code timeout}; {@code failure} says what happens when fewer do.
         */
        public Builder replicaSync(int replicas, Duration timeout, ReplicaSyncFailure failure) {
            if (replicas < 0) {
                throw new IllegalArgumentException("replicas must not be negative, was " + replicas);
            }
            this.replicaSyncTimeout = positive(timeout, "timeout");
            this.replicaSyncFailure = Objects.requireNonNull(failure, "failure");
            this.replicaSyncReplicas = replicas;
            return this;
        }

        /** The listener told about lost leases (none by default; losses are always logged). */
        public Builder leaseLostListener(LeaseLostListener listener) {
            this.leaseLostListener = Objects.requireNonNull(listener, "leaseLostListener");
            return this;
        }

        /**
         * The observer told what the synchronizers do, for metrics (none by default; see
         * {@link BatonObserver} for the threads it is called on).
         */
        public Builder observer(BatonObserver observer) {
            this.observer = Objects.requireNonNull(observer, "observer");
            return this;
        }

        /** The options. */
        public BatonOptions build() {
            return new BatonOptions(this);
        }

        private static String requireUri(String uri, String what) {
            Objects.requireNonNull(uri, what);
            if (uri.isBlank()) {
                throw new IllegalArgumentException(what + " must not be blank");
            }
            return uri;
        }

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, was " + d);
            }
            return d;
        }
    }
}
