package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Jepsen-style lost-update workload with a recorded history: 2 clients x 4 threads take a
 * synchronizer, do an unsynchronized read-modify-write, and log [acquired, released) with the
 * grant's fencing token where there is one. The history is then checked: exclusive kinds never
 * had two holders at once, the semaphores never more holders than permits, fencing tokens rose
 * in grant order, and the counter equals the number of critical sections.
 */
@ExtendWith(RedisExtension.class)
class TortureTest {
    private static final int THREADS = 8;
    private static final int ROUNDS = 120;
    private static final int PERMITS = 3;

    private final RedisServer redis;
    private long counter; // unsynchronized on purpose: only the synchronizer guards it

    TortureTest(RedisServer redis) {
        this.redis = redis;
    }

    /** One critical section as observed: when it began and ended, and its token (or 0). */
    record Section(long start, long end, long token) {
    }

    /** Enter and leave the synchronizer under test; enter returns the grant's token or 0. */
    private interface Guard {
        long enter() throws Exception;

        void leave() throws Exception;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"lock", "fairLock", "writeLock", "fencedLock", "semaphore", "expirableSemaphore"})
    void historyHasNoViolation(String kind) throws Exception {
        redis.command("FLUSHALL");
        boolean exclusive = !kind.endsWith("emaphore");
        ConcurrentLinkedQueue<Section> history = new ConcurrentLinkedQueue<>();
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try (Clients clients = new Clients()) {
            List<Baton> batons = List.of(clients.open(redis), clients.open(redis));
            batons.get(0).semaphore("torture-sem").trySetPermits(PERMITS);
            batons.get(0).permitExpirableSemaphore("torture-x").trySetPermits(PERMITS);
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                Baton baton = batons.get(t % 2);
                workers.add(pool.submit(() -> {
                    Guard guard = guard(kind, baton);
                    for (int i = 0; i < ROUNDS; i++) {
                        long token = guard.enter();
                        long start = System.nanoTime();
                        if (exclusive) {
                            long read = counter;
                            Thread.yield();
                            counter = read + 1;
                        } else {
                            Thread.sleep(2); // hold the permit, so holders overlap and an extra one is seen
                        }
                        long end = System.nanoTime();
                        guard.leave();
                        history.add(new Section(start, end, token));
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(3, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        List<Section> sections = new ArrayList<>(history);
        assertEquals(THREADS * ROUNDS, sections.size());
        int most = mostAtOnce(sections);
        if (exclusive) {
            assertEquals(1, most, "two holders of an exclusive lock at once");
            assertEquals((long) THREADS * ROUNDS, counter, "lost update");
        } else {
            assertEquals(PERMITS, most, "every permit in use at once, never more holders than permits");
        }
        if (kind.equals("fencedLock")) {
            sections.sort(Comparator.comparingLong(Section::start));
            for (int i = 1; i < sections.size(); i++) {
                assertTrue(sections.get(i).token() > sections.get(i - 1).token(), "tokens did not rise at grant " + i);
            }
        }
    }

    @org.junit.jupiter.api.Test
    void theHistoryCheckerSeesOverlapsAndOnlyThem() {
        assertEquals(1, mostAtOnce(List.of(new Section(0, 10, 0), new Section(11, 20, 0), new Section(21, 30, 0))));
        assertEquals(2, mostAtOnce(List.of(new Section(0, 10, 0), new Section(5, 20, 0), new Section(21, 30, 0))));
        assertEquals(2, mostAtOnce(List.of(new Section(0, 10, 0), new Section(10, 20, 0))), "touching counts as overlap");
        assertEquals(3, mostAtOnce(List.of(new Section(0, 30, 0), new Section(5, 20, 0), new Section(6, 7, 0))));
    }

    private static Guard guard(String kind, Baton baton) {
        switch (kind) {
            case "semaphore": {
                BatonSemaphore s = baton.semaphore("torture-sem");
                return new Guard() {
                    public long enter() throws Exception {
                        s.acquire();
                        return 0;
                    }

                    public void leave() {
                        s.release();
                    }
                };
            }
            case "expirableSemaphore": {
                BatonPermitExpirableSemaphore s = baton.permitExpirableSemaphore("torture-x");
                String[] id = new String[1];
                return new Guard() {
                    public long enter() throws Exception {
                        id[0] = s.acquire(30, TimeUnit.SECONDS);
                        return 0;
                    }

                    public void leave() {
                        s.release(id[0]);
                    }
                };
            }
            case "fencedLock": {
                BatonFencedLock lock = baton.fencedLock("torture");
                return new Guard() {
                    public long enter() {
                        return lock.lockAndGetToken();
                    }

                    public void leave() {
                        lock.unlock();
                    }
                };
            }
            default: {
                BatonLock lock = switch (kind) {
                    case "fairLock" -> baton.fairLock("torture");
                    case "writeLock" -> baton.readWriteLock("torture").writeLock();
                    default -> baton.lock("torture");
                };
                return new Guard() {
                    public long enter() {
                        lock.lock();
                        return 0;
                    }

                    public void leave() {
                        lock.unlock();
                    }
                };
            }
        }
    }

    /** The largest number of sections whose [start, end] intervals overlap at one instant. */
    static int mostAtOnce(List<Section> sections) {
        List<long[]> events = new ArrayList<>();
        for (Section s : sections) {
            events.add(new long[] {s.start(), 1});
            events.add(new long[] {s.end(), -1});
        }
        // At equal times count the start first: touching intervals count as overlapping (strict).
        events.sort(Comparator.<long[]>comparingLong(e -> e[0]).thenComparingLong(e -> -e[1]));
        int now = 0;
        int most = 0;
        for (long[] e : events) {
            now += (int) e[1];
            most = Math.max(most, now);
        }
        return most;
    }
}
