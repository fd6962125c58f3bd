package dev.baton.internal;

import dev.baton.BatonLock;
import dev.baton.BatonRedLock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/*
 * RedLock over independent masters, as its author described it, with every master asked at
 * once instead of one after another (same result, less waiting):
 *
 *   start = now
 *   ask every master for the lock with the lease, each bounded by the per-node timeout
 *   elapsed = now - start;  validity = lease - elapsed - drift   (drift = 1 % of lease + 2 ms)
 *   majority granted and validity > 0  ->  held until start + lease - drift
 *   otherwise release on every master, pause at random, and try again while the wait allows
 *
 * A master that does not answer in time has its attempt cancelled: the acquire engine gives back
 * a grant that arrives after the cancel, so a slow master keeps nothing.
 */
final class RedLock implements BatonRedLock {
    private static final long MIN_PAUSE_MS = 20;
    private static final long MAX_PAUSE_MS = 120;

    private final String name;
    private final List<BatonLock> nodes;
    private final long nodeTimeoutNanos;
    private final int quorum;
    private final Map<Long, Long> validUntilNanos = new ConcurrentHashMap<>();

    /**
     * @param nodes the lock of this name on each master (the entry point checked the masters
     *              and the timeout, and made these)
     */
    RedLock(String name, List<BatonLock> nodes, Duration nodeTimeout) {
        this.name = name;
        this.nodes = List.copyOf(nodes);
        this.nodeTimeoutNanos = nodeTimeout.toNanos();
        this.quorum = nodes.size() / 2 + 1;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        CompletableFuture<Boolean> result = tryLockAsync(waitTime, leaseTime, unit, RedisLock.ownerOfCurrentThread())
                .toCompletableFuture();
        try {
            return result.get();
        } catch (InterruptedException e) {
            if (!result.cancel(false) && Boolean.TRUE.equals(result.getNow(false))) {
                unlock();
            }
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = CommandExecutor.unwrap(e.getCause());
            throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause);
        }
    }

    @Override
    public void unlock() {
        Blocking.join(unlockAsync(RedisLock.ownerOfCurrentThread()).toCompletableFuture());
    }

    @Override
    public long validityMillis() {
        return validityMillis(RedisLock.ownerOfCurrentThread());
    }

    @Override
    public long validityMillis(long ownerId) {
        Long until = validUntilNanos.get(ownerId);
        return until == null ? 0 : Math.max(0, TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime()));
    }

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        long waitNanos = RedisLock.waitNanos(waitTime, unit);
        long leaseMs = RedisLock.leaseMs(leaseTime, unit).ms();
        return round(System.nanoTime() + waitNanos, leaseMs, ownerId);
    }

    private CompletableFuture<Boolean> round(long deadline, long leaseMs, long ownerId) {
        long start = System.nanoTime();
        List<CompletableFuture<Boolean>> asks = new ArrayList<>();
        for (BatonLock node : nodes) {
            CompletableFuture<Boolean> ask = node.tryLockAsync(0, leaseMs, TimeUnit.MILLISECONDS, ownerId)
                    .toCompletableFuture();
            CompletableFuture.delayedExecutor(nodeTimeoutNanos, TimeUnit.NANOSECONDS).execute(() -> ask.cancel(false));
            asks.add(ask.handle((granted, e) -> e == null && granted));
        }
        return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).thenCompose(all -> {
            int granted = 0;
            for (CompletableFuture<Boolean> ask : asks) {
                if (ask.join()) {
                    granted++;
                }
            }
            long drift = TimeUnit.MILLISECONDS.toNanos(leaseMs / 100 + 2);
            long validUntil = start + TimeUnit.MILLISECONDS.toNanos(leaseMs) - drift;
            if (granted >= quorum && validUntil > System.nanoTime()) {
                validUntilNanos.put(ownerId, validUntil);
                return CompletableFuture.completedFuture(true);
            }
            return releaseEverywhere(ownerId).thenCompose(released -> {
                long pause = TimeUnit.MILLISECONDS.toNanos(ThreadLocalRandom.current().nextLong(MIN_PAUSE_MS, MAX_PAUSE_MS));
                if (System.nanoTime() + pause >= deadline) {
                    return CompletableFuture.completedFuture(false);
                }
                return CompletableFuture.supplyAsync(() -> null,
                                CompletableFuture.delayedExecutor(pause, TimeUnit.NANOSECONDS))
                        .thenCompose(ignored -> round(deadline, leaseMs, ownerId));
            });
        });
    }

    /** Releases the owner's hold on every master that has one; completes with how many had. */
    private CompletableFuture<Integer> releaseEverywhere(long ownerId) {
        validUntilNanos.remove(ownerId);
        List<CompletableFuture<Boolean>> releases = new ArrayList<>();
        for (BatonLock node : nodes) {
            releases.add(node.unlockAsync(ownerId).toCompletableFuture().handle((ok, e) -> e == null));
        }
        return CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new))
                .thenApply(all -> (int) releases.stream().filter(CompletableFuture::join).count());
    }

    @Override
    public CompletionStage<Void> unlockAsync(long ownerId) {
        return releaseEverywhere(ownerId).thenApply(released -> {
            if (released == 0) {
                throw new IllegalMonitorStateException("RedLock '" + name + "' is not held by owner " + ownerId);
            }
            return null;
        });
    }

    @Override
    public String toString() {
        return "BatonRedLock{" + name + ", masters=" + nodes.size() + ", quorum=" + quorum + "}";
    }
}
