package dev.baton;

import dev.baton.testkit.RedisServer;

/** The lock contract for the fair lock. */
class FairLockContractTest extends LockContractTest {
    FairLockContractTest(RedisServer redis) {
        super(redis);
    }

    @Override
    BatonLock lock(Baton baton, String name) {
        return baton.fairLock(name);
    }

    @Override
    String channel(String name) {
        return "baton_fair_lock:{" + name + "}";
    }
}
