package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every Java snippet of the per-primitive guides (docs/guide/), compiled and run on a real Redis.
 * The text between a "snippet NAME begins" and "snippet NAME ends" comment is the snippet the
 * guide shows under {@code <!-- snippet: NAME -->}; {@link DocSnippetsTest} checks they match.
 */
class GuideExamplesTest extends TwoClientsTest {

    GuideExamplesTest(RedisServer redis) {
        super(redis);
    }

    private final List<String> report = new ArrayList<>();

    private void runNightlyReport() {
        report.add("ran");
    }

    @Test
    void lock() throws Exception {
        Baton baton = a;
        // snippet lock-basic begins
        BatonLock lock = baton.lock("nightly-report");

        // Watchdog mode: held until unlocked, renewed while this process lives.
        try (LockHold held = lock.acquire()) {
            runNightlyReport();
        }

        // Wait at most 2 s; hold for at most 30 s (a fixed lease, never renewed).
        if (lock.tryLock(2, 30, TimeUnit.SECONDS)) {
            try {
                runNightlyReport();
                lock.updateLease(Duration.ofMinutes(2)); // needs more time: owner-checked
                runNightlyReport();
            } finally {
                lock.unlock();
            }
        }
        // snippet lock-basic ends
        assertEquals(3, report.size());
        assertFalse(lock.isLocked());
    }

    @Test
    void lockScoped() throws Exception {
        Baton baton = a;
        List<String> entries = List.of("invoice-1", "invoice-2", "invoice-3");
        List<String> ledger = new ArrayList<>();
        // snippet lock-scoped begins
        BatonLock lock = baton.lock("ledger");
        int posted = lock.withLock(scope -> {
            int count = 0;
            for (String entry : entries) {
                scope.checkValid(); // LeaseLostException once the lease is not known to be held
                ledger.add(entry);
                count++;
            }
            return count;
        }); // released here; stopped (interrupted) if the lease is lost meanwhile
        // snippet lock-scoped ends
        assertEquals(3, posted);
        assertEquals(entries, ledger);
        assertFalse(lock.isLocked());
    }

    @Test
    void lockAsync() throws Exception {
        Baton baton = a;
        // snippet lock-async begins
        BatonLock lock = baton.lock("orders:42");
        long owner = Baton.newOwnerId(); // names this piece of work; never the id of a thread

        CompletableFuture<Void> done = lock.tryLockAsync(5, 30, TimeUnit.SECONDS, owner)
                .thenCompose(acquired -> {
                    if (!acquired) {
                        return CompletableFuture.<Void>completedFuture(null);
                    }
                    return CompletableFuture.runAsync(this::runNightlyReport)
                            .thenCompose(ignored -> lock.unlockAsync(owner));
                })
                .toCompletableFuture();
        done.get(10, TimeUnit.SECONDS); // a timed wait on Baton's own future
        // snippet lock-async ends
        assertEquals(1, report.size());
        assertEquals(0, lock.getHoldCount(owner));
    }

    @Test
    void fairLock() throws Exception {
        Baton baton = a;
        BatonLock held = b.fairLock("printer");
        java.util.concurrent.CountDownLatch locked = new java.util.concurrent.CountDownLatch(1);
        Future<?> releaser = threads.submit(() -> {
            held.lock();
            locked.countDown();
            dev.baton.testkit.Await.until(Duration.ofSeconds(5), () -> "a queued waiter", () -> held.waiterCount() == 1);
            held.unlock();
            return null;
        });
        assertTrue(locked.await(5, TimeUnit.SECONDS));
        // snippet fair-lock begins
        BatonLock printer = baton.fairLock("printer");
        if (printer.tryLock(10, TimeUnit.SECONDS)) { // queued behind earlier waiters
            try {
                System.out.println("waiting after us: " + printer.waiterCount());
            } finally {
                printer.unlock(); // handed straight to the next live waiter
            }
        }
        // snippet fair-lock ends
        releaser.get(10, TimeUnit.SECONDS);
        assertFalse(printer.isLocked());
    }

    @Test
    void readWriteLock() {
        Baton baton = a;
        // snippet read-write-lock begins
        BatonReadWriteLock prices = baton.readWriteLock("price-table");

        prices.readLock().lock();      // many readers at once, in every process
        try {
            // read the table
        } finally {
            prices.readLock().unlock();
        }

        prices.writeLock().lock();     // one writer, no readers
        try {
            // rewrite the table, then downgrade: keep reading without letting a writer in
            prices.readLock().lock();
        } finally {
            prices.writeLock().unlock();
        }
        try {
            // read what was written
        } finally {
            prices.readLock().unlock();
        }
        // snippet read-write-lock ends
        assertFalse(prices.writeLock().isLocked());
    }

    private final AtomicLong partnerCalls = new AtomicLong();

    private void callPartner() {
        partnerCalls.incrementAndGet();
    }

    @Test
    void rateLimiter() throws Exception {
        Baton baton = a;
        // snippet rate-limiter begins
        // At most 49 calls start in any second, fleet-wide (49 + a burst of 1 = the partner's 50),
        // and at most 4 run at once.
        BatonRateLimiter rate = baton.rateLimiter("partner-api:rate", RateLimit.perSecond(49));
        BatonSemaphore concurrent = baton.semaphore("partner-api");
        concurrent.trySetPermits(4);

        rate.acquire(); // sleeps until this call's slot, then goes
        try (SemaphorePermits permit = concurrent.acquirePermits(1)) {
            callPartner();
        }

        // A request handler that must answer quickly: go now, or say "busy".
        if (rate.tryAcquire()) {
            callPartner();
        }

        // A job that may wait a little: false at once if its slot is more than 2 s away.
        if (rate.tryAcquire(1, 2, TimeUnit.SECONDS)) {
            callPartner();
        }
        // snippet rate-limiter ends
        // The first went; the second finds no permit unless 20 ms passed since; the third waits its slot.
        assertTrue(partnerCalls.get() >= 2, partnerCalls.get() + " calls");
        assertEquals(4, concurrent.availablePermits());
    }

    private static final int SHARDS = 3;
    private final String hostName = "host-1";
    private final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(GuideExamplesTest.class);

    /** The nightly schedule of the leader-election example: a first run at once, then none (until interrupted). */
    private final class Schedule {
        private int runs;

        void awaitNextRun() throws InterruptedException {
            if (runs++ > 0) {
                Thread.sleep(Long.MAX_VALUE);
            }
        }
    }

    /** The store of the example: keeps the highest epoch it has seen and refuses a lower one. */
    private static final class Jobs {
        private long highest;
        private final java.util.Map<Integer, Long> assigned = new java.util.concurrent.ConcurrentHashMap<>();

        synchronized void assign(int shard, long epoch) {
            if (epoch < highest) {
                throw new IllegalStateException("epoch " + epoch + " is below " + highest + ": a deposed leader");
            }
            highest = epoch;
            assigned.put(shard, epoch);
        }
    }

    private final Schedule schedule = new Schedule();
    private final Jobs jobs = new Jobs();

    @Test
    void leaderElection() throws Exception {
        Baton baton = a;
        // The workers, on the other client: wait for the shards, count each down.
        BatonCountDownLatch workers = b.countDownLatch("nightly-billing:done");
        threads.submit(() -> {
            for (int i = 0; i < SHARDS; i++) {
                while (jobs.assigned.size() <= i) {
                    Thread.sleep(5);
                }
                workers.countDown();
            }
            return null;
        });
        // snippet leader-election begins
        BatonLeaderElection election = baton.leaderElection("nightly-billing");
        Candidacy candidacy = election.join("billing@" + hostName, leadership -> {
            while (true) {                                  // leads until interrupted (lost, handed on, closed)
                schedule.awaitNextRun();                    // an interrupt ends the wait
                BatonCountDownLatch done = baton.countDownLatch("nightly-billing:done");
                done.trySetCount(SHARDS);                   // the workers await the shards and count down
                for (int shard = 0; shard < SHARDS; shard++) {
                    leadership.checkValid();                // LeaseLostException once not known to lead
                    jobs.assign(shard, leadership.epoch()); // the store refuses an epoch below the highest it saw
                }
                done.await();
            }
        });
        // snippet leader-election ends
        assertTrue(candidacy.awaitLeadership(10, TimeUnit.SECONDS));
        dev.baton.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> "the round's three shards to be done",
                () -> jobs.assigned.size() == SHARDS && workers.getCount() == 0);
        // snippet leader-election-state begins
        ElectionState state = election.state();
        state.leader().ifPresent(leader -> log.info("{} leads since {} (epoch {})",
                leader.identity(), leader.since(), leader.epoch()));

        candidacy.close(); // on shutdown: stops the work, hands leadership to the next candidate
        // snippet leader-election-state ends
        assertEquals("billing@host-1", state.leader().orElseThrow().identity());
        assertEquals(jobs.highest, state.leader().get().epoch(), "the epoch the store saw is the one anyone reads");
        assertFalse(candidacy.isLeader());
        assertTrue(election.state().leader().isEmpty(), "the closed candidacy handed leadership on");
    }

    @Test
    void semaphore() throws Exception {
        Baton baton = a;
        // snippet semaphore begins
        BatonSemaphore partner = baton.semaphore("partner-api");
        partner.trySetPermits(4); // once for the fleet; does nothing if already set

        try (SemaphorePermits permit = partner.acquirePermits(1)) {
            callPartner();
        }

        if (partner.tryAcquire(1, 500, TimeUnit.MILLISECONDS)) {
            try {
                callPartner();
            } finally {
                partner.release(1);
            }
        }
        // snippet semaphore ends
        assertEquals(2, partnerCalls.get());
        assertEquals(4, partner.availablePermits());
    }

    @Test
    void permitExpirableSemaphore() throws Exception {
        Baton baton = a;
        // snippet permit-expirable-semaphore begins
        BatonPermitExpirableSemaphore slots = baton.permitExpirableSemaphore("render-slots");
        slots.trySetPermits(8);

        // One permit with a 60 s lease: if this process dies, it comes back by itself.
        try (ExpirablePermit permit = slots.acquirePermit(60, TimeUnit.SECONDS)) {
            callPartner();
        }

        // Three permits at once (all or none), each with its own id.
        List<String> ids = slots.tryAcquire(3, 2, 60, TimeUnit.SECONDS);
        try {
            for (String id : ids) {
                slots.updateLeaseTime(id, 5, TimeUnit.MINUTES); // a long job: more time
            }
            callPartner();
        } finally {
            for (String id : ids) {
                slots.release(id);
            }
        }
        // snippet permit-expirable-semaphore ends
        assertEquals(3, ids.size());
        assertEquals(8, slots.availablePermits());
    }

    @Test
    void permitScoped() throws Exception {
        Baton baton = a;
        baton.permitExpirableSemaphore("render-slots").trySetPermits(8);
        // snippet permit-scoped begins
        BatonPermitExpirableSemaphore slots = baton.permitExpirableSemaphore("render-slots");
        String rendered = slots.withPermit(30, TimeUnit.SECONDS, scope -> {
            scope.checkValid();      // LeaseLostException once the permit's lease is not known to run
            return renderPage(scope.remaining());
        });                          // the permit is back; the work was interrupted had it run out
        // snippet permit-scoped ends
        assertTrue(rendered.startsWith("page rendered"), rendered);
        assertEquals(8, slots.availablePermits());
    }

    private static String renderPage(Duration budget) {
        return "page rendered within " + budget.toSeconds() + " s";
    }

    @Test
    void countDownLatch() throws Exception {
        Baton baton = a;
        Baton otherProcess = b;
        int workers = 3;
        ConcurrentLinkedQueue<Integer> processed = new ConcurrentLinkedQueue<>();
        // snippet count-down-latch begins
        BatonCountDownLatch batchDone = baton.countDownLatch("batch-2026-11-24");
        batchDone.trySetCount(workers); // the coordinator arms it

        for (int i = 0; i < workers; i++) {   // workers, here threads; usually other processes
            int part = i;
            threads.submit(() -> {
                processed.add(part);
                otherProcess.countDownLatch("batch-2026-11-24").countDown();
            });
        }

        if (!batchDone.await(1, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the batch did not finish in a minute");
        }
        // snippet count-down-latch ends
        assertEquals(workers, processed.size());
        assertEquals(0, batchDone.getCount());
    }

    /** A stand-in for a storage service that remembers the highest token it has seen. */
    static final class Storage {
        private long highest;

        synchronized void write(String what, long token) {
            if (token < highest) {
                throw new IllegalStateException("stale token " + token + " < " + highest + " for " + what);
            }
            highest = token;
        }
    }

    @Test
    void fencedLock() {
        Baton baton = a;
        Storage storage = new Storage();
        // snippet fenced-lock begins
        BatonFencedLock lock = baton.fencedLock("ledger");
        long token = lock.lockAndGetToken();
        try {
            storage.write("ledger entry", token); // the storage rejects tokens lower than it has seen
        } finally {
            lock.unlock();
        }
        // snippet fenced-lock ends
        long next = lock.lockAndGetToken();
        lock.unlock();
        assertTrue(next > token);
    }

    @Test
    void multiLock() throws Exception {
        Baton baton = a;
        // snippet multi-lock begins
        BatonMultiLock transfer = Baton.multiLock(baton.lock("account:17"), baton.lock("account:42"));
        if (transfer.tryLock(5, 30, TimeUnit.SECONDS)) { // all or none, deadlock-free order
            try {
                // move money between the two accounts
            } finally {
                transfer.unlock();
            }
        }
        // snippet multi-lock ends
        assertFalse(baton.lock("account:17").isLocked());
    }

    @Test
    void multiLockScoped() throws Exception {
        Baton baton = a;
        // snippet multi-lock-scoped begins
        BatonMultiLock transfer = Baton.multiLock(baton.lock("account:17"), baton.fencedLock("account:42"));
        long token = transfer.withLock(scope -> {
            scope.checkValid();                                  // every lock still known to be held
            return scope.members().get(1).fencingToken().orElseThrow(); // account:42's own token
        });                                                      // all released, in reverse order
        // snippet multi-lock-scoped ends
        assertTrue(token > 0);
        assertFalse(baton.lock("account:17").isLocked());
    }

    @Test
    void redLock() throws Exception {
        try (RedisServer m1 = RedisServer.start(); RedisServer m2 = RedisServer.start(); RedisServer m3 = RedisServer.start();
             Baton c1 = Baton.create(m1.uri()); Baton c2 = Baton.create(m2.uri()); Baton c3 = Baton.create(m3.uri())) {
            List<Baton> masters = List.of(c1, c2, c3);
            // snippet red-lock begins
            BatonRedLock lock = Baton.redLock("invoice-run", masters); // one client per independent master
            if (lock.tryLock(2, 10, TimeUnit.SECONDS)) {
                try {
                    if (lock.validityMillis() > 1_000) {
                        // enough validity left for the next step
                    }
                } finally {
                    lock.unlock();
                }
            }
            // snippet red-lock ends
            Optional<Baton> holder = masters.stream().filter(m -> m.lock("invoice-run").isLocked()).findAny();
            assertTrue(holder.isEmpty(), "released on every master");

            // snippet red-lock-scoped begins
            String run = lock.withLock(10, TimeUnit.SECONDS, scope -> {
                scope.checkValid();     // within the validity on this client's clock
                return "invoice run done with " + scope.remaining().toSeconds() + " s to spare";
            });                         // released on every master; interrupted had the validity run out
            // snippet red-lock-scoped ends
            assertTrue(run.startsWith("invoice run done"), run);
            assertTrue(masters.stream().noneMatch(m -> m.lock("invoice-run").isLocked()), "released on every master");
        }
    }
}
