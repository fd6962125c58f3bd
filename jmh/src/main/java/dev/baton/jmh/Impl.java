package dev.baton.jmh;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * The one facade every benchmark goes through: the same scenario code runs against Baton or
 * Redisson, chosen by a JMH {@code @Param}, on the same redis-server in the same run.
 */
public enum Impl {
    BATON {
        @Override
        public Client connect(String uri) {
            Baton baton = Baton.create(BatonOptions.create(uri));
            return new Client() {
                @Override
                public Lock lock(String name) {
                    return baton.lock(name);
                }

                @Override
                public Lock fairLock(String name) {
                    return baton.fairLock(name);
                }

                @Override
                public void lockWithLease(Lock lock, long leaseMs) {
                    ((dev.baton.BatonLock) lock).lock(leaseMs, TimeUnit.MILLISECONDS);
                }

                @Override
                public Lock readLock(String name) {
                    return baton.readWriteLock(name).readLock();
                }

                @Override
                public java.util.concurrent.CompletableFuture<Void> lockAsync(String name, long ownerId) {
                    return baton.lock(name).lockAsync(ownerId).toCompletableFuture();
                }

                @Override
                public java.util.concurrent.CompletableFuture<Void> unlockAsync(String name, long ownerId) {
                    return baton.lock(name).unlockAsync(ownerId).toCompletableFuture();
                }

                @Override
                public Latch latch(String name) {
                    dev.baton.BatonCountDownLatch l = baton.countDownLatch(name);
                    return new Latch() {
                        @Override
                        public void arm() {
                            l.trySetCount(1);
                        }

                        @Override
                        public void await() throws InterruptedException {
                            l.await();
                        }

                        @Override
                        public void countDown() {
                            l.countDown();
                        }
                    };
                }

                @Override
                public Permits semaphore(String name) {
                    dev.baton.BatonSemaphore s = baton.semaphore(name);
                    return new Permits() {
                        @Override
                        public void acquire() throws InterruptedException {
                            s.acquire();
                        }

                        @Override
                        public void release() {
                            s.release();
                        }

                        @Override
                        public void trySetPermits(int permits) {
                            s.trySetPermits(permits);
                        }
                    };
                }

                @Override
                public void close() {
                    baton.close();
                }
            };
        }
    },
    REDISSON {
        @Override
        public Client connect(String uri) {
            Config config = new Config();
            config.useSingleServer().setAddress(uri);
            RedissonClient redisson = Redisson.create(config);
            return new Client() {
                @Override
                public Lock lock(String name) {
                    return redisson.getLock(name);
                }

                @Override
                public Lock fairLock(String name) {
                    return redisson.getFairLock(name);
                }

                @Override
                public void lockWithLease(Lock lock, long leaseMs) {
                    ((org.redisson.api.RLock) lock).lock(leaseMs, TimeUnit.MILLISECONDS);
                }

                @Override
                public Lock readLock(String name) {
                    return redisson.getReadWriteLock(name).readLock();
                }

                @Override
                public java.util.concurrent.CompletableFuture<Void> lockAsync(String name, long ownerId) {
                    return redisson.getLock(name).lockAsync(ownerId).toCompletableFuture();
                }

                @Override
                public java.util.concurrent.CompletableFuture<Void> unlockAsync(String name, long ownerId) {
                    return redisson.getLock(name).unlockAsync(ownerId).toCompletableFuture();
                }

                @Override
                public Latch latch(String name) {
                    org.redisson.api.RCountDownLatch l = redisson.getCountDownLatch(name);
                    return new Latch() {
                        @Override
                        public void arm() {
                            l.trySetCount(1);
                        }

                        @Override
                        public void await() throws InterruptedException {
                            l.await();
                        }

                        @Override
                        public void countDown() {
                            l.countDown();
                        }
                    };
                }

                @Override
                public Permits semaphore(String name) {
                    org.redisson.api.RSemaphore s = redisson.getSemaphore(name);
                    return new Permits() {
                        @Override
                        public void acquire() throws InterruptedException {
                            s.acquire();
                        }

                        @Override
                        public void release() {
                            s.release();
                        }

                        @Override
                        public void trySetPermits(int permits) {
                            s.trySetPermits(permits);
                        }
                    };
                }

                @Override
                public void close() {
                    redisson.shutdown();
                }
            };
        }
    };

    /** A connected client of one implementation. */
    public interface Client extends AutoCloseable {
        /** The implementation's reentrant lock. */
        Lock lock(String name);

        /** The implementation's fair lock. */
        Lock fairLock(String name);

        /** Locks with a fixed lease (no watchdog). */
        void lockWithLease(Lock lock, long leaseMs);

        /** The read side of the implementation's read-write lock. */
        Lock readLock(String name);

        /** Waits for the lock without a thread, as owner {@code ownerId} (a thread id of the caller's choosing). */
        java.util.concurrent.CompletableFuture<Void> lockAsync(String name, long ownerId);

        /** Releases a hold taken with {@link #lockAsync}. */
        java.util.concurrent.CompletableFuture<Void> unlockAsync(String name, long ownerId);

        /** The implementation's (plain) semaphore. */
        Permits semaphore(String name);

        /** The implementation's count-down latch. */
        Latch latch(String name);

        @Override
        void close();
    }

    /** The semaphore operations the benchmarks use. */
    public interface Permits {
        void acquire() throws InterruptedException;

        void release();

        void trySetPermits(int permits);
    }

    /** The count-down-latch operations the benchmarks use. */
    public interface Latch {
        void arm();

        void await() throws InterruptedException;

        void countDown();
    }

    public abstract Client connect(String uri);
}
