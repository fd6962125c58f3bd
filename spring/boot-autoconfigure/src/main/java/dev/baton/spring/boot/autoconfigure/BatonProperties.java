package dev.baton.spring.boot.autoconfigure;

import dev.baton.BatonOptions;
import org.springframework.boot.context.properties.ConfigurationProperties;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The {@code baton.*} properties: one for each {@link BatonOptions} setting (an unset one keeps
 * Baton's default), and the options of the integrations. The Redis connection itself is the
 * application's ({@code spring.data.redis.*}).
 */
@ConfigurationProperties("baton")
public class BatonProperties {

    /** Whether to auto-configure a Baton client on the application's Lettuce connection factory. */
    private boolean enabled = true;

    /** How long a Redis command may take before it fails (Baton's default: 3s). */
    private Duration commandTimeout;

    /** The lease of a lock held without a lease time, renewed by the watchdog every third of it (default: 30s). */
    private Duration watchdogTimeout;

    /** How many held leases one renewal script call renews at most (default: 100). */
    private Integer renewalBatchSize;

    /** How long a fair-lock waiter's place in the queue lasts without being refreshed (default: 10s, at least 300ms). */
    private Duration fairLockWaiterTimeout;

    /**
     * The share of a lease that lease-scoped work keeps back for clocks running at different
     * rates (default: 0.01, that is 1 %; from 0 to 0.5).
     */
    private Double clockDriftAllowance;

    private final ReplicaSync replicaSync = new ReplicaSync();

    private final Metrics metrics = new Metrics();

    private final Integration integration = new Integration();
    private final Leader leader = new Leader();

    private final Shedlock shedlock = new Shedlock();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Duration getCommandTimeout() {
        return commandTimeout;
    }

    public void setCommandTimeout(Duration commandTimeout) {
        this.commandTimeout = commandTimeout;
    }

    public Duration getWatchdogTimeout() {
        return watchdogTimeout;
    }

    public void setWatchdogTimeout(Duration watchdogTimeout) {
        this.watchdogTimeout = watchdogTimeout;
    }

    public Integer getRenewalBatchSize() {
        return renewalBatchSize;
    }

    public void setRenewalBatchSize(Integer renewalBatchSize) {
        this.renewalBatchSize = renewalBatchSize;
    }

    public Duration getFairLockWaiterTimeout() {
        return fairLockWaiterTimeout;
    }

    public void setFairLockWaiterTimeout(Duration fairLockWaiterTimeout) {
        this.fairLockWaiterTimeout = fairLockWaiterTimeout;
    }

    public Double getClockDriftAllowance() {
        return clockDriftAllowance;
    }

    public void setClockDriftAllowance(Double clockDriftAllowance) {
        this.clockDriftAllowance = clockDriftAllowance;
    }

    public ReplicaSync getReplicaSync() {
        return replicaSync;
    }

    public Metrics getMetrics() {
        return metrics;
    }

    public Leader getLeader() {
        return leader;
    }

    public Integration getIntegration() {
        return integration;
    }

    public Shedlock getShedlock() {
        return shedlock;
    }

    /** The options these properties give, on top of Baton's defaults. */
    BatonOptions.Builder apply(BatonOptions.Builder builder) {
        if (commandTimeout != null) {
            builder.commandTimeout(commandTimeout);
        }
        if (watchdogTimeout != null) {
            builder.watchdogTimeout(watchdogTimeout);
        }
        if (renewalBatchSize != null) {
            builder.renewalBatchSize(renewalBatchSize);
        }
        if (fairLockWaiterTimeout != null) {
            builder.fairLockWaiterTimeout(fairLockWaiterTimeout);
        }
        if (clockDriftAllowance != null) {
            builder.clockDriftAllowance(clockDriftAllowance);
        }
        if (replicaSync.replicas > 0) {
            builder.replicaSync(replicaSync.replicas, replicaSync.timeout, replicaSync.failure);
        }
        return builder;
    }

    /** Waiting for replicas to acknowledge each state change (WAIT), off by default. */
    public static class ReplicaSync {
        /** How many replicas must acknowledge each state change; 0 turns the wait off. */
        private int replicas;

        /** How long to wait for the replicas' acknowledgements. */
        private Duration timeout = Duration.ofSeconds(1);

        /** What happens when fewer replicas acknowledge in time: FAIL (undo an acquire and throw) or ACCEPT. */
        private BatonOptions.ReplicaSyncFailure failure = BatonOptions.ReplicaSyncFailure.FAIL;

        public int getReplicas() {
            return replicas;
        }

        public void setReplicas(int replicas) {
            this.replicas = replicas;
        }

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        public BatonOptions.ReplicaSyncFailure getFailure() {
            return failure;
        }

        public void setFailure(BatonOptions.ReplicaSyncFailure failure) {
            this.failure = failure;
        }
    }

    /** Micrometer meters (with baton-micrometer and Micrometer on the class path). */
    public static class Metrics {
        /** Whether to register Baton's meters. */
        private boolean enabled = true;

        /** Synchronizer names that become a "name" tag; every other name is tagged "other". */
        private Set<String> tagNames = new LinkedHashSet<>();

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Set<String> getTagNames() {
            return tagNames;
        }

        public void setTagNames(Set<String> tagNames) {
            this.tagNames = tagNames;
        }
    }

    /** The Spring Integration LockRegistry (with baton-spring-integration on the class path). */
    public static class Integration {
        /** The prefix of the registry's lock names: a key "k" is the lock "registry-key:k". */
        private String registryKey = "lock-registry";

        /** Whether the registry's locks are fair (first come, first served). */
        private boolean fair;

        /** A fixed lease for every hold instead of the watchdog; unset means the watchdog. */
        private Duration leaseTime;

        public String getRegistryKey() {
            return registryKey;
        }

        public void setRegistryKey(String registryKey) {
            this.registryKey = registryKey;
        }

        public boolean isFair() {
            return fair;
        }

        public void setFair(boolean fair) {
            this.fair = fair;
        }

        public Duration getLeaseTime() {
            return leaseTime;
        }

        public void setLeaseTime(Duration leaseTime) {
            this.leaseTime = leaseTime;
        }
    }

    /** This application's candidacy in a Baton leader election (a {@code BatonLeader} bean). */
    public static class Leader {
        /** The election's name; unset (the default), no candidacy is made. */
        private String election;

        /**
         * How everyone sees this instance in the election; unset means
         * {@code <spring.application.name>@<host name>}.
         */
        private String identity;

        public String getElection() {
            return election;
        }

        public void setElection(String election) {
            this.election = election;
        }

        public String getIdentity() {
            return identity;
        }

        public void setIdentity(String identity) {
            this.identity = identity;
        }
    }

    /** The ShedLock LockProvider (with baton-shedlock on the class path). */
    public static class Shedlock {
        /** The prefix of a scheduled task's lock name. */
        private String keyPrefix = "shedlock:";

        public String getKeyPrefix() {
            return keyPrefix;
        }

        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }
    }
}
