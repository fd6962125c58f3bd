package dev.baton;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * A read-write lock shared by every process that uses the same name on the same Redis: many
 * readers or one writer, both sides reentrant, stored like Redisson's {@code RReadWriteLock} so
 * Baton and Redisson clients keep the read/write rules together.
 * <ul>
 *   <li><b>Downgrade</b>: the writer may take the read lock and then release the write lock,
 *       keeping the read; waiting readers are woken when it does.</li>
 *   <li><b>Upgrade</b> (asking for the write lock while holding only read locks) can never
 *       succeed, so it fails at once with {@link IllegalMonitorStateException}, from
 *       {@code lock()} and {@code tryLock()} alike (Redisson's would wait forever).</li>
 *   <li><b>No writer starvation</b>: a waiting writer keeps new Baton readers out until it gets
 *       in. Redisson's readers do not see that mark, so with Redisson readers on the same lock a
 *       writer can still be delayed by a continuous stream of them.</li>
 *   <li>Each read hold has its own lease: a crashed reader's hold expires on its own while the
 *       other readers keep theirs. The watchdog renews only this client's holds.</li>
 * </ul>
 * Each side offers the full {@link BatonLock} API; how a wait ends is as described there.
 * {@code forceUnlock()} on a side deletes the lock only if it is held in that side's mode.
 */
public interface BatonReadWriteLock extends ReadWriteLock {

    /** The lock's name, which is also its Redis key. */
    String getName();

    /** The read side. */
    @Override
    BatonLock readLock();

    /** The write side. */
    @Override
    BatonLock writeLock();
}
