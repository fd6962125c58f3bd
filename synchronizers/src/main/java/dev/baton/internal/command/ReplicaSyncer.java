package dev.baton.internal.command;

import dev.baton.RedisUnavailableException;
import dev.baton.ReplicaSyncException;
import dev.baton.internal.support.Durations;
import dev.baton.internal.time.Scheduler;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import static dev.baton.internal.command.Failures.translate;
import static dev.baton.internal.command.Failures.unwrap;

/**
 * Replica sync for the command executor: after a state change, Redis WAIT on the connection the
 * change was written on, so the replicas have it too before the caller hears it was made.
 */
public final class ReplicaSyncer {
    private static final Logger log = LoggerFactory.getLogger(ReplicaSyncer.class);

    /** Replica acknowledgement after state changes (Redis WAIT); replicas = 0 means off. */
    public record Config(int replicas, Duration timeout, boolean failWhenShort) {
        public static final Config OFF = new Config(0, Duration.ZERO, false);
    }

    /** The executor's bound on a future (the command timeout or another), with its error translation. */
    interface Bounder {
        CompletableFuture<Long> bound(CompletableFuture<Long> sent, String what, String key, long boundNanos,
                                      Runnable onTimeout);
    }

    /** How long WAIT waits while the replicas are known to be short. */
    private static final long SHORT_WAIT_MS = 10;
    /** How often, while they are short, one WAIT waits the full replica-sync timeout. */
    private static final long FULL_WAIT_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Config config;
    private final Scheduler scheduler;
    private final long timeoutNanos;
    private final Bounder bounder;
    private final AtomicBoolean waitUnsupported = new AtomicBoolean();
    private volatile boolean replicasShort;
    private volatile long nextFullWait;
    /**
     * The commands of the connection a change of a key was written on, where WAIT must run (it
     * counts the acknowledgements of that connection's writes): the one connection outside a
     * cluster; in a cluster, the connection to the master that owns the key's slot.
     */
    private final Function<String, CompletableFuture<RedisClusterAsyncCommands<String, String>>> waitRoute;

    public ReplicaSyncer(Config config, Scheduler scheduler, long timeoutNanos, Bounder bounder,
                         Function<String, CompletableFuture<RedisClusterAsyncCommands<String, String>>> route) {
        this.config = config;
        this.scheduler = scheduler;
        this.timeoutNanos = timeoutNanos;
        this.bounder = bounder;
        this.waitRoute = route;
    }

    /** Whether state changes wait for replicas at all. */
    boolean on() {
        return config.replicas() > 0;
    }

    /** Whether too few acknowledgements fail the change (otherwise they are logged and accepted). */
    boolean failWhenShort() {
        return config.failWhenShort();
    }

    /**
     * WAIT after a state change, on the same connection, so the replicas have it too. Fewer
     * acknowledgements than asked for is a ReplicaSyncException (a RedisUnavailableException,
     * so an acquire is undone by the engine) unless the options accept it. A server or proxy
     * that refuses WAIT is reported once and not asked again.
     *
     * WAIT blocks the connection it runs on, and every client command shares that connection:
     * if the replicas are gone, a full WAIT after every change would hold up everything behind
     * it (renewals included, until leases were wrongly given up). So after a WAIT comes back
     * short, the next ones wait at most SHORT_WAIT_MS, except for one full wait a second that
     * finds out whether the replicas are back; a WAIT that gets its acknowledgements ends this.
     * The script and its WAIT together end within the script's timeout, the replica-sync
     * timeout and one more command timeout (for WAIT's own answer).
     */
    <T> CompletableFuture<T> await(T reply, String what, String key, boolean failWhenShort) {
        if (waitUnsupported.get()) {
            return CompletableFuture.completedFuture(reply);
        }
        long now = scheduler.nanoTime();
        boolean probe = !replicasShort || now >= nextFullWait;
        if (probe && replicasShort) {
            nextFullWait = now + FULL_WAIT_EVERY_NANOS;
        }
        long waitMs = probe ? config.timeout().toMillis() : Math.min(SHORT_WAIT_MS, config.timeout().toMillis());
        CompletableFuture<Long> acked;
        try {
            CompletableFuture<Long> sent = waitRoute.apply(key)
                    .thenCompose(node -> node.waitForReplication(config.replicas(), waitMs).toCompletableFuture());
            long bound = TimeUnit.MILLISECONDS.toNanos(waitMs) + timeoutNanos;
            acked = bounder.bound(sent, "WAIT after " + what, what, bound, () -> sent.cancel(false));
        } catch (RuntimeException e) {
            acked = CompletableFuture.failedFuture(e);
        }
        return acked.handle((count, error) -> {
            Throwable e = error == null ? null : unwrap(error);
            if (e != null && e.getCause() instanceof RedisCommandExecutionException
                    && !(e instanceof RedisUnavailableException)) {
                if (waitUnsupported.compareAndSet(false, true)) {
                    log.warn("{}; replica sync is off for this client", e.getMessage());
                }
                return reply;
            }
            if (e != null) {
                throw e instanceof RuntimeException re ? re : translate(e, "WAIT after " + what, what);
            }
            if (count < config.replicas()) {
                if (!replicasShort) {
                    replicasShort = true;
                    nextFullWait = scheduler.nanoTime() + FULL_WAIT_EVERY_NANOS;
                    log.warn("only {} of {} replicas acknowledged {} within {} ms; until they do again, "
                            + "replica sync waits at most {} ms (one full wait a second)", count, config.replicas(),
                            what, waitMs, SHORT_WAIT_MS);
                }
                String message = "only " + count + " of " + config.replicas() + " replicas acknowledged " + what
                        + " within " + Durations.readableNanos(TimeUnit.MILLISECONDS.toNanos(waitMs));
                if (failWhenShort) {
                    throw new ReplicaShortfall(message, count, config.replicas(), reply);
                }
                log.debug("{}; accepted as configured", message);
            } else if (replicasShort && probe) {
                replicasShort = false;
                log.info("the replicas acknowledge again; replica sync waits up to {} ms", waitMs);
            }
            return reply;
        });
    }
}
