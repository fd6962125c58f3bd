package dev.baton.interop.storm;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.BatonRedLock;
import dev.baton.LeaseLostException;
import dev.baton.testkit.RedisMasters;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Storm written blind (public API and docs only): two applications, each with its own Baton
 * clients on three independent masters, run RedLock-scoped work that overruns its lease (it polls
 * every millisecond until stopped), while the other application competes with {@code tryLock} and
 * {@code withLock}.
 *
 * <p>Promise under test (BatonRedLock.withLock; multi-lock-and-redlock.md: the work is stopped,
 * by interrupting its thread, "when that validity less 24 ms has passed on this client's clock (so
 * at least 1 % of the lease and 25 ms before the lease's end, from the round's start), before any
 * master can let its key expire"; guarantees.md: "no two owners are ever inside their validity at
 * once", stopped "then, not before"): no scoped work still runs (its stop not yet seen) once
 * another owner has been granted the RedLock, and no work is stopped before its scope's promised
 * end. Every hold is recorded as [grant seen, end] (scoped work: the moment the work saw its
 * interrupt or its scope invalid; a tryLock hold: the moment before its unlock), and any two
 * holds of different owners that overlap are a violation.
 */
class RedLockScopedWorkStormTest {

    private static final String NAME = "storm-redlock";
    private static final int MAX_DESCRIBED = 8;
    /** remaining() is whole milliseconds at best: a stop this much before the promised end is early. */
    private static final long EARLY_SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    /** guarantees.md checks the stop "within it + 300 ms". */
    private static final long LATE_BOUND_NANOS = TimeUnit.MILLISECONDS.toNanos(300);

    /** One hold as its thread saw it. */
    record Hold(String app, String thread, String kind, long leaseMs, long grantAt, long endAt,
                long promisedEnd, String endedBy, long lastPollAt, long lastValidAt) {
        boolean scoped() {
            return promisedEnd != 0;
        }
    }

    private final ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
    private final AtomicLong attempts = new AtomicLong();
    private final AtomicLong hammerCalls = new AtomicLong();
    private final AtomicLong hammerNanos = new AtomicLong();
    private final AtomicLong violations = new AtomicLong();
    private final ConcurrentLinkedQueue<String> described = new ConcurrentLinkedQueue<>();
    private volatile boolean stop;
    /** The promised end of each application's running scoped work, for the aimed hammer. */
    private volatile long app1ScopeEnd;
    private volatile long app2ScopeEnd;

    @Test
    void overrunningScopedWorkIsStoppedBeforeAnotherApplicationIsGranted() throws Exception {
        long seconds = Long.getLong("baton.storm.seconds", 2);
        long t0 = System.nanoTime();
        List<Baton> all = new ArrayList<>();
        try (RedisMasters masters = RedisMasters.start(3)) {
            List<Baton> app1 = new ArrayList<>();
            List<Baton> app2 = new ArrayList<>();
            try {
                for (RedisServer s : masters.servers()) {
                    app1.add(open(s, all));
                }
                for (RedisServer s : masters.servers()) {
                    app2.add(open(s, all));
                }
                BatonRedLock lock1 = Baton.redLock(NAME, app1);
                BatonRedLock lock2 = Baton.redLock(NAME, app2);
                long deadline = t0 + TimeUnit.SECONDS.toNanos(seconds);
                List<Thread> threads = List.of(
                        new Thread(() -> scopedLoop("app1", lock1, deadline), "app1-scoped"),
                        new Thread(() -> competeLoop("app1", lock1, deadline), "app1-compete"),
                        new Thread(() -> scopedLoop("app2", lock2, deadline), "app2-scoped"),
                        new Thread(() -> competeLoop("app2", lock2, deadline), "app2-compete"));
                threads.forEach(Thread::start);
                for (Thread t : threads) {
                    // Each iteration ends by itself within a lease (300 ms) + a wait (300 ms).
                    t.join(TimeUnit.SECONDS.toMillis(seconds + 20));
                    if (t.isAlive()) {
                        violation(t.getName() + " did not finish within the storm + 20 s");
                        stop = true;
                        t.interrupt();
                        t.join(5_000);
                    }
                }
            } finally {
                stop = true;
                all.forEach(Baton::close);
            }
        }
        judge(seconds);
    }

    private static Baton open(RedisServer server, List<Baton> all) {
        Baton b = Baton.create(BatonOptions.create(server.uri()));
        all.add(b);
        return b;
    }

    /** Scoped work that overruns its lease: polls every 1 ms until interrupted or its scope is invalid. */
    private void scopedLoop(String app, BatonRedLock lock, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (!stop && System.nanoTime() < deadline) {
            long lease = 200 + rnd.nextInt(101);
            long[] rec = new long[5]; // grantAt, endAt, promisedEnd, last poll before the stop, last isValid() true
            String[] endedBy = new String[1];
            attempts.incrementAndGet();
            try {
                lock.withLock(lease, TimeUnit.MILLISECONDS, scope -> {
                    long grant = System.nanoTime();
                    long remainingNanos = scope.remaining().toNanos();
                    rec[0] = grant;
                    rec[2] = grant + remainingNanos;
                    if ("app1".equals(app)) {
                        app1ScopeEnd = rec[2];
                    } else {
                        app2ScopeEnd = rec[2];
                    }
                    while (true) {
                        long now = System.nanoTime();
                        if (Thread.currentThread().isInterrupted()) {
                            rec[1] = now;
                            endedBy[0] = "interrupt seen";
                            break;
                        }
                        if (!scope.isValid()) {
                            rec[1] = now;
                            endedBy[0] = "scope invalid";
                            break;
                        }
                        rec[4] = now;
                        rec[3] = now;
                        try {
                            Thread.sleep(1);
                        } catch (InterruptedException e) {
                            rec[1] = System.nanoTime();
                            endedBy[0] = "interrupted in sleep";
                            Thread.currentThread().interrupt();
                            break;
                        }
                    }
                    return null;
                });
            } catch (LeaseLostException e) {
                // expected: the work was stopped
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                violation(app + " scoped withLock(" + lease + " ms) threw " + e);
            }
            // The work cleared nothing: restore a clean interrupt status for the next call.
            Thread.interrupted();
            // Let the other owners in now and then (else this thread mostly re-wins at once).
            if (rnd.nextBoolean()) {
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5 + rnd.nextInt(26)));
            }
            if (rec[0] != 0) {
                if (rec[1] == 0) {
                    violation(app + " scoped work with lease " + lease + " ms ended without seeing a stop");
                } else {
                    holds.add(new Hold(app, Thread.currentThread().getName(), "withLock(" + lease + " ms)", lease,
                            rec[0], rec[1], rec[2], endedBy[0], rec[3], rec[4]));
                }
            }
        }
    }

    /** The competitor: tryLock with a short hold, or scoped work that finishes in time. */
    private void competeLoop(String app, BatonRedLock lock, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (!stop && System.nanoTime() < deadline) {
            long lease = 100 + rnd.nextInt(201);
            attempts.incrementAndGet();
            try {
                int pick = rnd.nextInt(10);
                int mode = pick < 6 ? 0 : pick < 8 ? 1 : 2;
                if (mode < 2) {
                    long wait = rnd.nextInt(601);
                    boolean got;
                    String kind;
                    if (mode == 0) {
                        // A hammer: one round every ~0.5 ms for up to `wait`, so a grant follows a
                        // release (or an expiry) within about a round. Half the time it is aimed:
                        // it starts 2 ms before the other application's running scoped work is
                        // promised to end, and hammers for 100 ms from there.
                        kind = "tryLock(0, " + lease + " ms) hammered";
                        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(wait);
                        long target = "app1".equals(app) ? app2ScopeEnd : app1ScopeEnd;
                        long now = System.nanoTime();
                        if (rnd.nextBoolean() && target - now > TimeUnit.MILLISECONDS.toNanos(2)) {
                            kind = "tryLock(0, " + lease + " ms) hammered at the other's scope end";
                            java.util.concurrent.locks.LockSupport.parkNanos(target - now - TimeUnit.MILLISECONDS.toNanos(2));
                            until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(100);
                        }
                        do {
                            long c0 = System.nanoTime();
                            got = lock.tryLock(0, lease, TimeUnit.MILLISECONDS);
                            hammerCalls.incrementAndGet();
                            hammerNanos.addAndGet(System.nanoTime() - c0);
                            if (!got) {
                                java.util.concurrent.locks.LockSupport.parkNanos(200_000);
                            }
                        } while (!got && !stop && System.nanoTime() < until);
                    } else {
                        kind = "tryLock(" + wait + ", " + lease + " ms)";
                        got = lock.tryLock(wait, lease, TimeUnit.MILLISECONDS);
                    }
                    if (got) {
                        long grant = System.nanoTime();
                        long validity = lock.validityMillis();
                        long holdMicros = rnd.nextInt(3000);
                        if (TimeUnit.MICROSECONDS.toMillis(holdMicros) + 5 < validity) {
                            java.util.concurrent.locks.LockSupport.parkNanos(holdMicros * 1000);
                        }
                        long end = System.nanoTime();
                        holds.add(new Hold(app, Thread.currentThread().getName(), kind, lease, grant, end, 0, "unlock", 0, 0));
                        if (TimeUnit.NANOSECONDS.toMillis(end - grant) >= validity) {
                            // Not the lock's fault: this thread ran past its own validity.
                            System.out.println("  note: " + app + " tryLock hold outlived its validity of " + validity + " ms");
                        }
                        try {
                            lock.unlock();
                        } catch (LeaseLostException e) {
                            // the hold ran out before the unlock landed: reported, not a violation here
                        }
                    }
                } else {
                    long[] rec = new long[2];
                    lock.withLock(lease, TimeUnit.MILLISECONDS, scope -> {
                        rec[0] = System.nanoTime();
                        java.util.concurrent.locks.LockSupport.parkNanos(rnd.nextInt(3_000_000));
                        rec[1] = System.nanoTime();
                        return null;
                    });
                    holds.add(new Hold(app, Thread.currentThread().getName(), "short withLock(" + lease + " ms)", lease,
                            rec[0], rec[1], 0, "returned", 0, 0));
                }
            } catch (InterruptedException e) {
                return;
            } catch (LeaseLostException e) {
                violation(app + " competitor: a short hold (at most 3 ms of a " + lease + " ms lease) reported " + e);
            } catch (RuntimeException e) {
                violation(app + " competitor threw " + e);
            }
        }
    }

    private void judge(long seconds) {
        List<Hold> list = new ArrayList<>(holds);
        list.sort(Comparator.comparingLong(Hold::grantAt));
        long checks = 0;
        long overrunStops = 0;
        long early = 0;
        long pastExpiry = 0;
        long ownReGrants = 0;
        long validPast = 0;
        List<Long> lateness = new ArrayList<>();
        List<Long> margins = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            Hold h = list.get(i);
            // Overlap with any later grant of another owner (another thread; so also the other app).
            for (int j = i + 1; j < list.size(); j++) {
                Hold o = list.get(j);
                checks++;
                if (o.grantAt() >= h.endAt()) {
                    // Sorted by grant: every later hold starts later still. When the next grant
                    // after the stop went to another owner, the gap is the margin left.
                    if (h.scoped()) {
                        if (o.thread().equals(h.thread())) {
                            ownReGrants++;
                        } else {
                            margins.add(o.grantAt() - h.endAt());
                        }
                    }
                    break;
                }
                if (!o.thread().equals(h.thread())) {
                    violation(String.format("%s %s %s (%s) still running %d us after %s %s %s was granted"
                                    + " (granted %d us after it; its scope promised %s)", h.app(), h.thread(), h.kind(),
                            h.endedBy(), us(h.endAt() - o.grantAt()), o.app(), o.thread(), o.kind(),
                            us(o.grantAt() - h.grantAt()),
                            h.scoped() ? "to end " + us(h.promisedEnd() - o.grantAt()) + " us after that grant; the work's"
                                    + " last poll was " + us(h.endAt() - h.lastPollAt()) + " us before it saw the stop, its"
                                    + " last isValid()==true " + us(h.lastValidAt() - h.promisedEnd())
                                    + " us after the promised end" : "-"));
                }
            }
            if (h.scoped()) {
                overrunStops++;
                long late = h.endAt() - h.promisedEnd();
                lateness.add(late);
                checks++;
                if (late > h.leaseMs() * 10_000 + TimeUnit.MILLISECONDS.toNanos(24)) {
                    pastExpiry++; // past round start + lease at the earliest: a master may have let it go
                }
                if (late > LATE_BOUND_NANOS) {
                    violation(String.format("%s %s %s stopped (%s) %d us after its scope's promised end,"
                                    + " past the documented bound of 300 ms", h.app(), h.thread(), h.kind(), h.endedBy(),
                            us(late)));
                }
                if (h.lastValidAt() - h.promisedEnd() > EARLY_SLACK_NANOS) {
                    validPast++;
                    violation(String.format("%s %s %s: isValid() still true %d us after the end remaining() had"
                                    + " promised at the start (stop seen %d us after it, %s)", h.app(), h.thread(), h.kind(),
                            us(h.lastValidAt() - h.promisedEnd()), us(late), h.endedBy()));
                }
                if (late < -EARLY_SLACK_NANOS) {
                    early++;
                    violation(String.format("%s %s %s stopped (%s) %d us BEFORE its scope's promised end"
                                    + " (remaining() at the start said %d us)", h.app(), h.thread(), h.kind(), h.endedBy(),
                            us(-late), us(h.promisedEnd() - h.grantAt())));
                }
            }
        }
        Collections.sort(lateness);
        Collections.sort(margins);
        System.out.printf("RedLockScopedWorkStorm: %d s, rounds=%d (acquire attempts), holds=%d (overrunning"
                        + " scoped works stopped=%d), checks=%d, violations=%d (early stops=%d, valid past the promised end=%d)%n",
                seconds, attempts.get(), list.size(), overrunStops, checks, violations.get(), early, validPast);
        System.out.println("  stop seen - scope end promised by remaining(), us: " + distribution(lateness)
                + "; stops later than 1 % of the lease + 24 ms after it (a master may have let the key expire): " + pastExpiry);
        System.out.println("  next grant, when it went to another owner, - stop seen, us: " + distribution(margins)
                + " (the stopped owner itself got the next grant " + ownReGrants + " times)");
        System.out.println("  hammer: " + hammerCalls.get() + " tryLock(0) rounds, mean "
                + us(hammerNanos.get() / Math.max(1, hammerCalls.get())) + " us each");
        described.forEach(d -> System.out.println("  VIOLATION " + d));
        assertTrue(overrunStops > 0 || seconds < 1, "no scoped work ran at all");
        assertTrue(violations.get() == 0, violations.get() + " violations, first: " + described.peek());
    }

    private static String distribution(List<Long> sorted) {
        if (sorted.isEmpty()) {
            return "none";
        }
        return String.format("n=%d min=%d p50=%d p90=%d p99=%d max=%d", sorted.size(), us(sorted.get(0)),
                us(sorted.get(sorted.size() / 2)), us(sorted.get(sorted.size() * 9 / 10)),
                us(sorted.get(Math.min(sorted.size() - 1, sorted.size() * 99 / 100))), us(sorted.get(sorted.size() - 1)));
    }

    private void violation(String what) {
        violations.incrementAndGet();
        if (described.size() < MAX_DESCRIBED) {
            described.add(what);
        }
    }

    private static long us(long nanos) {
        return TimeUnit.NANOSECONDS.toMicros(nanos);
    }
}
