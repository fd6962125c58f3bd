package dev.baton.internal.lock;

import dev.baton.BatonFencedLock;
import dev.baton.internal.Services;
import dev.baton.internal.lease.Lease;
import dev.baton.internal.support.Args;
import dev.baton.internal.support.Names;

import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/** The fenced lock: the lock plumbing with the fenced recipe, plus token accessors. */
public final class RedisFencedLock extends RedisLock implements BatonFencedLock {

    public RedisFencedLock(Services services, String name) {
        super(services, name, n -> new FencedRecipe(services.executor(), n));
    }

    @Override
    public long lockAndGetToken() {
        lock();
        return getToken();
    }

    @Override
    public long lockAndGetToken(long leaseTime, TimeUnit unit) {
        lock(leaseTime, unit);
        return getToken();
    }

    @Override
    public OptionalLong tryLockAndGetToken() {
        return tryLock() ? OptionalLong.of(getToken()) : OptionalLong.empty();
    }

    @Override
    public OptionalLong tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return tryLock(waitTime, leaseTime, unit) ? OptionalLong.of(getToken()) : OptionalLong.empty();
    }

    @Override
    public long getToken() {
        return tokenOf(Names.threadOwner());
    }

    @Override
    public CompletionStage<Long> lockAndGetTokenAsync(long ownerId) {
        // Derived from the acquisition itself, so cancelling this future abandons the wait.
        return start(-1, watchdog(), ownerId).resultAs(ok -> tokenOf(ownerId));
    }

    @Override
    public CompletionStage<OptionalLong> tryLockAndGetTokenAsync(long waitTime, long leaseTime, TimeUnit unit, long ownerId) {
        return start(Args.waitNanos(waitTime, unit), lease(leaseTime, unit), ownerId)
                .resultAs(got -> got ? OptionalLong.of(tokenOf(ownerId)) : OptionalLong.empty());
    }

    private long tokenOf(long ownerId) {
        Lease lease = services.leases().get(name, owner(ownerId));
        if (lease == null) {
            throw new IllegalMonitorStateException("fenced lock '" + name + "' is not held by owner " + owner(ownerId));
        }
        return lease.token;
    }
}
