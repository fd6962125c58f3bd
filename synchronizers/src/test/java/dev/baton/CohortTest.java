package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cohort waiting (guarantees.md, "Threads of one client on one lock"): threads of one client
 * waiting for the same lock queue in the client and send nothing; a release hands the lock to
 * the oldest of them in place with one script call; a client's turn ends after 8 hand-offs or
 * 4 ms when another client listens, with an ordinary release and its message.
 */
@ExtendWith(RedisExtension.class)
class CohortTest {
    private static final String CHANNEL = "redisson_lock__channel:{hot}";

    private final RedisServer redis;
    private final Clients clients = new Clients();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    /** Released once per lock acquisition started by the client under test (a signal, not a sleep). */
    private final Semaphore started = new Semaphore(0);
    private Baton baton;

    CohortTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        baton = clients.open(Clients.defaults(redis).observer(new BatonObserver() {
            @Override
            public Object acquisitionStarted(Kind kind, String name) {
                if (kind == Kind.LOCK) {
                    started.release();
                }
                return null;
            }
        }).build());
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        clients.close();
    }

    private long scripts() {
        return redis.calls("evalsha") + redis.calls("eval");
    }

    /** Loads every script the test counts, so no NOSCRIPT retry is counted as a call. */
    private void warmUp() throws Exception {
        BatonLock lock = baton.lock("warm");
        lock.lock();
        started.acquire();
        Future<?> waiter = threads.submit(() -> {
            baton.lock("warm").lock();
            baton.lock("warm").unlock();
            return null;
        });
        assertTrue(started.tryAcquire(10, TimeUnit.SECONDS));
        lock.unlock(); // a hand-off
        waiter.get(10, TimeUnit.SECONDS); // an ordinary release
    }

    @Test
    void queuedThreadsSendNothingAndEachGetsTheLockInPlaceInArrivalOrder() throws Exception {
        warmUp();
        BatonLock lock = baton.lock("hot");
        lock.lock();
        started.acquire();
        long scriptsBefore = scripts();
        long publishedBefore = redis.calls("publish");
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            int id = i;
            waiters.add(threads.submit(() -> {
                BatonLock mine = baton.lock("hot");
                assertTrue(mine.tryLock(10, TimeUnit.SECONDS));
                order.add(id);
                mine.unlock();
                return null;
            }));
            assertTrue(started.tryAcquire(10, TimeUnit.SECONDS), "waiter " + i + " started");
        }
        assertEquals(scriptsBefore, scripts(), "queued threads sent no script");
        assertEquals(0L, redis.subscribers(CHANNEL), "and subscribed to nothing");
        lock.unlock();
        for (Future<?> w : waiters) {
            w.get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of(0, 1, 2, 3), order, "oldest first");
        // Five releases (four hand-offs and the last, ordinary one) and not one acquire script.
        assertEquals(scriptsBefore + 5, scripts(), "one script per acquisition");
        assertEquals(publishedBefore + 1, redis.calls("publish"), "only the last release published");
        assertEquals(0L, redis.command("EXISTS", "hot"), "nothing left");
    }

    @Test
    void aTurnEndsAfterEightHandOffsWhileAnotherClientListens() throws Exception {
        int[] grantsAndReleases = contendWhileAnotherClientListens(0);
        int grants = grantsAndReleases[0];
        int releases = grantsAndReleases[1];
        System.out.println("[cohort] fast holds: " + grants + " grants, " + releases + " releases to everybody");
        // A turn is the grant from Redis plus at most 8 hand-offs; every turn ends with a release.
        assertTrue(releases >= (grants - 9) / 9, grants + " grants in only " + releases + " turns");
    }

    @Test
    void aTurnEndsAfterFourMillisecondsWhileAnotherClientListens() throws Exception {
        int[] grantsAndReleases = contendWhileAnotherClientListens(3);
        int grants = grantsAndReleases[0];
        int releases = grantsAndReleases[1];
        System.out.println("[cohort] 3 ms holds: " + grants + " grants, " + releases + " releases to everybody");
        // Holds of 3 ms or more: a turn passes the lock in place only while under 4 ms have gone by
        // since its first grant, so at most once (at 3 ms; the release at 6 ms ends the turn):
        // 2 grants a turn.
        assertTrue(releases >= (grants - 2) / 2, grants + " grants in only " + releases + " turns");
    }

    /**
     * 4 threads of the client take and release the lock 200 times in all, holding it
     * {@code holdMs} each time, while a raw subscriber listens on the lock's channel (to Redis it
     * is another client waiting). Returns the grants and the messages the listener got.
     */
    private int[] contendWhileAnotherClientListens(long holdMs) throws Exception {
        try (RespClient listener = new RespClient(redis.host(), redis.port(), 30_000)) {
            listener.call("SUBSCRIBE", CHANNEL);
            long publishedBefore = redis.calls("publish");
            AtomicInteger grants = new AtomicInteger();
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                workers.add(threads.submit(() -> {
                    BatonLock mine = baton.lock("hot");
                    for (int i = 0; i < 50; i++) {
                        mine.lock();
                        grants.incrementAndGet();
                        if (holdMs > 0) {
                            Thread.sleep(holdMs); // the critical section's length is what is tested
                        }
                        mine.unlock();
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(60, TimeUnit.SECONDS);
            }
            long published = redis.calls("publish") - publishedBefore;
            // Every release to everybody reached the listener; count them.
            int messages = 0;
            for (long i = 0; i < published; i++) {
                Object reply = listener.readReply();
                assertEquals("0", ((List<?>) reply).get(2));
                messages++;
            }
            assertEquals(200, grants.get());
            return new int[] {grants.get(), messages};
        }
    }

    @Test
    void twoClientsContendingTakeTurnsAndNeitherStarvesTheOther() throws Exception {
        // Without turns the first client to get the lock would hand it among its own 4 threads
        // until they were done, and the other would wait for all of it: a share of 100 %.
        Baton other = clients.open(redis);
        List<Baton> both = List.of(baton, other);
        int perThread = 100;
        int perClient = 4 * perThread;
        int[] grantedTo = new int[2 * perClient];
        AtomicInteger grants = new AtomicInteger();
        long[] longestWaitNanos = new long[8];
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            int client = t % 2;
            int me = t;
            workers.add(threads.submit(() -> {
                BatonLock mine = both.get(client).lock("hot");
                go.await();
                for (int i = 0; i < perThread; i++) {
                    long asked = System.nanoTime();
                    assertTrue(mine.tryLock(30, TimeUnit.SECONDS), "waited 30 s");
                    longestWaitNanos[me] = Math.max(longestWaitNanos[me], System.nanoTime() - asked);
                    grantedTo[grants.getAndIncrement()] = client; // in grant order: written while held
                    mine.unlock();
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> w : workers) {
            w.get(120, TimeUnit.SECONDS);
        }
        // Count the grants until one client made its last acquisition: until then both asked.
        int[] taken = new int[2];
        int counted = 0;
        while (counted < grantedTo.length && ++taken[grantedTo[counted++]] < perClient) {
            // counting
        }
        double largestShare = Math.max(taken[0], taken[1]) / (double) counted;
        long longestWaitMs = TimeUnit.NANOSECONDS.toMillis(java.util.Arrays.stream(longestWaitNanos).max().orElse(0));
        System.out.printf("[cohort] two clients x 4 threads: largest share of one client while both asked %.0f %% of %d "
                + "grants (%d and %d), longest wait of one thread %d ms%n", largestShare * 100, counted, taken[0], taken[1],
                longestWaitMs);
        assertTrue(largestShare <= 0.75, "one client took " + Math.round(largestShare * 100)
                + " % of the grants while the other also asked (" + taken[0] + " and " + taken[1] + ")");
    }

    @Test
    void aQueuedTimedWaitAsksRedisAtItsDeadlineAndAQueuedLockFailsWithItsLeader() throws Exception {
        warmUp();
        BatonLock lock = baton.lock("hot");
        lock.lock();
        long scriptsBefore = scripts();
        Future<Boolean> timed = threads.submit(() -> baton.lock("hot").tryLock(300, TimeUnit.MILLISECONDS));
        assertFalse(timed.get(10, TimeUnit.SECONDS), "held by another thread: timed out");
        assertEquals(scriptsBefore + 1, scripts(), "one last attempt at the deadline went to Redis");
        lock.unlock();

        // A leader whose call Redis does not answer takes the unlimited waits queued behind it
        // down with it, at its own failure, not one command timeout later per queued thread.
        Baton other = clients.open(redis);
        other.lock("hot").lock(1_500, TimeUnit.MILLISECONDS);
        Future<Long> leader = threads.submit(() -> failureTime(baton.lock("hot")));
        redis.awaitSubscribers(CHANNEL, 1); // refused twice: parked until the holder's TTL
        started.drainPermits();
        Future<Long> queued = threads.submit(() -> failureTime(baton.lock("hot")));
        assertTrue(started.tryAcquire(10, TimeUnit.SECONDS));
        assertEquals(1L, redis.subscribers(CHANNEL), "the queued thread did not subscribe");
        redis.pause();
        try {
            long leaderFailed = leader.get(15, TimeUnit.SECONDS);
            long queuedFailed = queued.get(15, TimeUnit.SECONDS);
            long apartMs = TimeUnit.NANOSECONDS.toMillis(Math.abs(queuedFailed - leaderFailed));
            System.out.println("[cohort] the queued lock() failed " + apartMs + " ms from its leader");
            assertTrue(apartMs <= 300, "the queued lock() failed " + apartMs + " ms from its leader");
        } finally {
            redis.resume();
        }
    }

    @Test
    void closingTheClientEndsTheWaitsQueuedInIt() throws Exception {
        BatonLock lock = baton.lock("hot");
        lock.lock();
        started.acquire();
        Future<?> queued = threads.submit(() -> {
            baton.lock("hot").lock();
            return null;
        });
        assertTrue(started.tryAcquire(10, TimeUnit.SECONDS));
        long closing = System.nanoTime();
        baton.close();
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> queued.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException, String.valueOf(e.getCause()));
        assertTrue(System.nanoTime() - closing < TimeUnit.SECONDS.toNanos(1), "ended at the close");
    }

    /** Calls lock() and returns when it failed with RedisUnavailableException (nanoTime). */
    private static long failureTime(BatonLock lock) {
        assertThrows(RedisUnavailableException.class, lock::lock);
        return System.nanoTime();
    }
}
