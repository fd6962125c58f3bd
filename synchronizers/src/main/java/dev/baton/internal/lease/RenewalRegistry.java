package dev.baton.internal.lease;

import dev.baton.BatonObserver;
import dev.baton.internal.command.Failures;
import dev.baton.internal.engine.Observer;
import dev.baton.internal.time.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

/*
 * The renewal registry keeps every watchdog lease of one Baton client alive with a single
 * timer. Every third of the watchdog timeout a tick takes a snapshot of the registered leases,
 * groups them by cluster slot (one group in standalone Redis), cuts each group into batches
 * and renews each batch with one script call (lock_renew.lua). So 10,000 held locks cost 100
 * script calls per tick, not 10,000, and no batch ever mixes slots (Redisson's CROSSSLOT
 * errors).
 *
 * A lease is registered when its owner's first watchdog hold is granted and unregistered
 * before the owner's last hold is released (before, so that a renewal racing with the release
 * cannot find the lock gone and report a loss that did not happen). A reply that says a lease
 * is gone is acted on only if the lease is still registered, by identity: a lease that was
 * released, or released and taken again meanwhile, is never reported. This is what keeps
 * renewal from outliving unlock (Redisson's cancel-versus-schedule races): there is no
 * per-lease task to cancel.
 *
 * A lost lease is reported loudly: a WARN log, the client's LeaseLostListener, and the
 * owner's next unlock throws LeaseLostException. A lease is lost when Redis says its owner no
 * longer holds the key, or when renewals have failed (Redis unreachable) for longer than the
 * watchdog timeout, after which Redis has let it expire in any case.
 */
public final class RenewalRegistry implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RenewalRegistry.class);

    /** Renews one batch; completes with one flag per lease, true = still held and renewed. */
    interface Renewer {
        CompletableFuture<List<Boolean>> renew(List<Lease> batch, long leaseMs);
    }

    /** Told about each lost lease. */
    public interface LossHandler {
        void lost(Lease lease, BatonObserver.LossCause cause, String reason);
    }

    private final Set<Lease> leases = ConcurrentHashMap.newKeySet();
    private final Renewer renewer;
    private final LossHandler onLost;
    private final Scheduler scheduler;
    private final ToIntFunction<String> slotOf;
    private final long watchdogMs;
    private final long periodNanos;
    private final int batchSize;
    private final Observer observer;
    private volatile boolean closed;
    private volatile Scheduler.Cancellable nextTick;

    /**
     * @param slotOf the cluster slot of a key, or a constant in standalone Redis
     */
    public RenewalRegistry(Renewer renewer, LossHandler onLost, Scheduler scheduler, ToIntFunction<String> slotOf,
                           long watchdogMs, int batchSize) {
        this(renewer, onLost, scheduler, slotOf, watchdogMs, batchSize, Observer.NONE);
    }

    /**
     * @param slotOf   the cluster slot of a key, or a constant in standalone Redis
     * @param observer told how long each renewal call took
     */
    public RenewalRegistry(Renewer renewer, LossHandler onLost, Scheduler scheduler, ToIntFunction<String> slotOf,
                           long watchdogMs, int batchSize, Observer observer) {
        this.observer = observer;
        this.renewer = renewer;
        this.onLost = onLost;
        this.scheduler = scheduler;
        this.slotOf = slotOf;
        this.watchdogMs = watchdogMs;
        this.periodNanos = TimeUnit.MILLISECONDS.toNanos(watchdogMs) / 3;
        this.batchSize = batchSize;
    }

    /** Starts the periodic tick. */
    public void start() {
        scheduleNext();
    }

    /** Keeps {@code lease} alive from now on. */
    void register(Lease lease) {
        lease.lastRenewedNanos = scheduler.nanoTime();
        leases.add(lease);
    }

    /** Stops renewing {@code lease}; a renewal already in flight will not report it. */
    void unregister(Lease lease) {
        leases.remove(lease);
    }

    /** How many leases are being renewed. */
    public int size() {
        return leases.size();
    }

    /** Renews every registered lease once; what the timer runs. Package-private for tests. */
    CompletableFuture<Void> tick() {
        List<CompletableFuture<?>> calls = new ArrayList<>();
        for (List<Lease> batch : batches()) {
            long sent = scheduler.nanoTime();
            calls.add(renewer.renew(batch, watchdogMs)
                    .handle((renewed, error) -> {
                        observer.renewal(batch.size(), error == null, scheduler.nanoTime() - sent);
                        settle(batch, renewed, error, sent);
                        return null;
                    }));
        }
        return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new));
    }

    private List<List<Lease>> batches() {
        Map<Integer, List<Lease>> bySlot = new LinkedHashMap<>();
        for (Lease lease : leases) {
            bySlot.computeIfAbsent(slotOf.applyAsInt(lease.key), s -> new ArrayList<>()).add(lease);
        }
        List<List<Lease>> batches = new ArrayList<>();
        for (List<Lease> group : bySlot.values()) {
            for (int from = 0; from < group.size(); from += batchSize) {
                batches.add(group.subList(from, Math.min(group.size(), from + batchSize)));
            }
        }
        return batches;
    }

    private void settle(List<Lease> batch, List<Boolean> renewed, Throwable error, long sentNanos) {
        long now = scheduler.nanoTime();
        if (error != null) {
            log.debug("renewing {} leases failed: {}", batch.size(), error.toString());
            for (Lease lease : batch) {
                long silentMs = TimeUnit.NANOSECONDS.toMillis(now - lease.lastRenewedNanos);
                if (silentMs >= watchdogMs) {
                    lost(lease, BatonObserver.LossCause.UNREACHABLE, "the watchdog could not renew it for " + silentMs + " ms (longer than the "
                            + watchdogMs + " ms lease), so Redis has let it expire; last error: "
                            + Failures.unwrap(error).getMessage());
                }
            }
            return;
        }
        for (int i = 0; i < batch.size(); i++) {
            Lease lease = batch.get(i);
            if (Boolean.TRUE.equals(renewed.get(i))) {
                lease.lastRenewedNanos = now;
                lease.confirmed(sentNanos, watchdogMs);
            } else {
                lost(lease, BatonObserver.LossCause.GONE, "the watchdog found the lock no longer held by its owner in Redis (it was deleted, "
                        + "force-unlocked, expired, or Redis lost its data)");
            }
        }
    }

    private void lost(Lease lease, BatonObserver.LossCause cause, String reason) {
        if (leases.remove(lease)) {
            onLost.lost(lease, cause, reason);
        }
    }

    private void scheduleNext() {
        if (closed) {
            return;
        }
        nextTick = scheduler.schedule(() -> {
            try {
                tick();
            } catch (RuntimeException e) {
                log.warn("renewal tick failed", e);
            } finally {
                scheduleNext();
            }
        }, periodNanos, TimeUnit.NANOSECONDS);
    }

    /** Stops renewing; held leases then expire in Redis on their own. */
    @Override
    public void close() {
        closed = true;
        Scheduler.Cancellable t = nextTick;
        if (t != null) {
            t.cancel();
        }
        leases.clear();
    }
}
