package dev.baton;

import dev.baton.testkit.RedisServer;

/**
 * The lock contract for the fenced lock (an exclusive lock stored as Redisson's RFencedLock: the
 * lock hash as a reentrant lock's, its token counter beside it), so that "every lock kind" in
 * guarantees.md includes it: wake-ups within 1 s, interrupted, timed-out and cancelled waits
 * leaving no subscription, leases, bad input, a paused Redis.
 */
class FencedLockContractTest extends LockContractTest {
    FencedLockContractTest(RedisServer redis) {
        super(redis);
    }

    @Override
    BatonLock lock(Baton baton, String name) {
        return baton.fencedLock(name);
    }

    @Override
    String channel(String name) {
        return dev.baton.lua.Layout.lockChannel(name);
    }
}
