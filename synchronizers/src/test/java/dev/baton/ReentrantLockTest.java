package dev.baton;

import dev.baton.testkit.RedisServer;

/** The lock contract for the reentrant lock. */
class ReentrantLockTest extends LockContractTest {
    ReentrantLockTest(RedisServer redis) {
        super(redis);
    }

    @Override
    BatonLock lock(Baton baton, String name) {
        return baton.lock(name);
    }

    @Override
    String channel(String name) {
        return "redisson_lock__channel:{" + name + "}";
    }
}
