package dev.baton.internal.lock;

import dev.baton.BatonLock;
import dev.baton.BatonReadWriteLock;

/** The read-write lock: a read side and a write side on one name, each a lock with its recipe. */
public record RedisReadWriteLock(String getName, BatonLock readLock, BatonLock writeLock) implements BatonReadWriteLock {

    @Override
    public String toString() {
        return "BatonReadWriteLock{" + getName + "}";
    }
}
