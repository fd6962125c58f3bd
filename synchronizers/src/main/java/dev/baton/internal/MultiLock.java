package dev.baton.internal;

import dev.baton.BatonLock;
import dev.baton.BatonMultiLock;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/*
 * All-or-nothing over several locks, deadlock-free by taking them in one canonical order (name,
 * then the Redis they live on) whatever order the caller gave. Each lock does its own waiting
 * (engine, leases, renewal); this class only sequences them and undoes a partial acquisition,
 * in reverse order, on every failure path: refused, timed out, interrupted, Redis unavailable.
 */
final class MultiLock implements BatonMultiLock {

    /** One lock-taking step; false = refused (time ran out). */
    private interface Take {
        boolean take(BatonLock lock) throws InterruptedException;
    }

    private final List<BatonLock> locks;

    MultiLock(List<? extends BatonLock> given) {
        Objects.requireNonNull(given, "locks");
        if (given.isEmpty()) {
            throw new IllegalArgumentException("locks must not be empty");
        }
        Set<String> seen = new HashSet<>();
        for (BatonLock lock : given) {
            Objects.requireNonNull(lock, "locks element");
            if (!seen.add(orderKey(lock))) {
                throw new IllegalArgumentException("lock '" + lock.getName() + "' is named twice");
            }
        }
        List<BatonLock> ordered = new ArrayList<>(given);
        ordered.sort(Comparator.comparing(MultiLock::orderKey));
        this.locks = List.copyOf(ordered);
    }

    /** Name first, then where it lives: the same for every process that names the same locks. */
    private static String orderKey(BatonLock lock) {
        String where = lock instanceof RedisLock r ? r.services.target() : "";
        return lock.getName() + "\u0000" + where + "\u0000" + lock.getClass().getSimpleName();
    }

    @Override
    public List<BatonLock> locks() {
        return locks;
    }

    @Override
    public void lock() {
        takeUninterruptibly(l -> {
            l.lock();
            return true;
        });
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        takeUninterruptibly(l -> {
            l.lock(leaseTime, unit);
            return true;
        });
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        takeAll(l -> {
            l.lockInterruptibly();
            return true;
        });
    }

    @Override
    public boolean tryLock() {
        return takeUninterruptibly(BatonLock::tryLock);
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + RedisLock.waitNanos(waitTime, unit);
        return takeAll(l -> l.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + RedisLock.waitNanos(waitTime, unit);
        RedisLock.leaseMs(leaseTime, unit);
        return takeAll(l -> l.tryLock(Math.max(0, deadline - System.nanoTime()),
                unit.toNanos(leaseTime), TimeUnit.NANOSECONDS));
    }

    @Override
    public void unlock() {
        RuntimeException first = null;
        for (int i = locks.size() - 1; i >= 0; i--) {
            try {
                locks.get(i).unlock();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private boolean takeUninterruptibly(Take take) {
        try {
            return takeAll(take);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during an uninterruptible acquire", e);
        }
    }

    private boolean takeAll(Take take) throws InterruptedException {
        List<BatonLock> taken = new ArrayList<>();
        try {
            for (BatonLock lock : locks) {
                if (!take.take(lock)) {
                    releaseInReverse(taken, null);
                    return false;
                }
                taken.add(lock);
            }
            return true;
        } catch (InterruptedException | RuntimeException e) {
            releaseInReverse(taken, e);
            throw e;
        }
    }

    private static void releaseInReverse(List<BatonLock> taken, Throwable cause) {
        for (int i = taken.size() - 1; i >= 0; i--) {
            try {
                taken.get(i).unlock();
            } catch (RuntimeException e) {
                if (cause != null) {
                    cause.addSuppressed(e);
                }
            }
        }
    }

    // ---- asynchronous twins ----------------------------------------------------------------

    @Override
    public CompletionStage<Void> lockAsync(long ownerId) {
        return takeAllAsync(0, ownerId, (l, i) -> l.lockAsync(ownerId).thenApply(ok -> true)).thenApply(ok -> null);
    }

    @Override
    public CompletionStage<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        long deadline = System.nanoTime() + RedisLock.waitNanos(waitTime, unit);
        return takeAllAsync(0, ownerId, (l, i) -> {
            long remaining = Math.max(0, deadline - System.nanoTime());
            return leaseTime < 0
                    ? l.tryLockAsync(remaining, TimeUnit.NANOSECONDS, ownerId)
                    : l.tryLockAsync(remaining, unit.toNanos(leaseTime), TimeUnit.NANOSECONDS, ownerId);
        });
    }

    private interface AsyncTake {
        CompletionStage<Boolean> take(BatonLock lock, int index);
    }

    private CompletableFuture<Boolean> takeAllAsync(int from, long ownerId, AsyncTake take) {
        if (from == locks.size()) {
            return CompletableFuture.completedFuture(true);
        }
        BatonLock lock = locks.get(from);
        return take.take(lock, from).toCompletableFuture().handle((got, error) -> {
            if (error != null || !got) {
                return releaseAsync(from - 1, ownerId).handle((ok, e) -> {
                    if (error != null) {
                        throw new java.util.concurrent.CompletionException(CommandExecutor.unwrap(error));
                    }
                    return false;
                });
            }
            return takeAllAsync(from + 1, ownerId, take);
        }).thenCompose(next -> next);
    }

    @Override
    public CompletionStage<Void> unlockAsync(long ownerId) {
        return releaseAsync(locks.size() - 1, ownerId);
    }

    private CompletableFuture<Void> releaseAsync(int from, long ownerId) {
        if (from < 0) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> here = locks.get(from).unlockAsync(ownerId).toCompletableFuture();
        return here.handle((ok, error) -> releaseAsync(from - 1, ownerId).handle((rest, restError) -> {
            Throwable e = error != null ? error : restError;
            if (e != null) {
                throw new java.util.concurrent.CompletionException(CommandExecutor.unwrap(e));
            }
            return (Void) null;
        })).thenCompose(next -> next);
    }

    @Override
    public String toString() {
        List<String> names = new ArrayList<>();
        locks.forEach(l -> names.add(l.getName()));
        return "BatonMultiLock" + names;
    }
}
