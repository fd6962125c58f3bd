package dev.baton;

import dev.baton.testkit.RedisServer;

/** The lock contract for the write side of the read-write lock (an exclusive lock). */
class WriteLockContractTest extends LockContractTest {
    WriteLockContractTest(RedisServer redis) {
        super(redis);
    }

    @Override
    BatonLock lock(Baton baton, String name) {
        return baton.readWriteLock(name).writeLock();
    }

    @Override
    String channel(String name) {
        return "redisson_rwlock:{" + name + "}";
    }

    @Override
    String field(String owner) {
        return owner + ":write";
    }
}
