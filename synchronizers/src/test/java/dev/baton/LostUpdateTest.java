package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The lost-update workload, for the reentrant, fair and write locks: 2 Baton clients x 4 threads
 * each do an unsynchronized
 * read-modify-write of a shared counter inside the lock. Without mutual exclusion updates are
 * lost (the read and the write are separated by a yield to widen the window) and the overlap
 * detector sees two holders at once.
 */
@ExtendWith(RedisExtension.class)
class LostUpdateTest {
    private static final int CLIENTS = 2;
    private static final int THREADS_PER_CLIENT = 4;
    private static final int ACQUISITIONS_PER_THREAD = 1_250; // 10,000 in all

    private final RedisServer redis;
    private long counter; // deliberately unsynchronized: the distributed lock is the only guard
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger maxInside = new AtomicInteger();

    LostUpdateTest(RedisServer redis) {
        this.redis = redis;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"lock", "fairLock", "writeLock"})
    void noUpdateIsLostOverTenThousandAcquisitions(String kind) throws Exception {
        redis.command("FLUSHALL");
        ExecutorService pool = Executors.newFixedThreadPool(CLIENTS * THREADS_PER_CLIENT);
        try (Clients clients = new Clients()) {
            List<Future<?>> workers = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                Baton baton = clients.open(redis);
                BatonLock lock = switch (kind) {
                    case "fairLock" -> baton.fairLock("ledger");
                    case "writeLock" -> baton.readWriteLock("ledger").writeLock();
                    default -> baton.lock("ledger");
                };
                for (int t = 0; t < THREADS_PER_CLIENT; t++) {
                    workers.add(pool.submit(() -> {
                        for (int i = 0; i < ACQUISITIONS_PER_THREAD; i++) {
                            lock.lock();
                            try {
                                criticalSection();
                            } finally {
                                lock.unlock();
                            }
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> worker : workers) {
                worker.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals((long) CLIENTS * THREADS_PER_CLIENT * ACQUISITIONS_PER_THREAD, counter);
        assertEquals(1, maxInside.get(), "two holders were inside the critical section at once");
        assertEquals(0L, redis.command("EXISTS", "ledger"));
        assertEquals(List.of(), redis.command("KEYS", "*ledger*"), "no key left behind");
    }

    private void criticalSection() {
        int now = inside.incrementAndGet();
        maxInside.accumulateAndGet(now, Math::max);
        long read = counter;
        Thread.yield();
        counter = read + 1;
        inside.decrementAndGet();
    }
}
