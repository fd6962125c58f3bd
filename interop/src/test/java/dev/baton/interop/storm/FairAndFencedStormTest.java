package dev.baton.interop.storm;

import dev.baton.Baton;
import dev.baton.BatonFencedLock;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.LockHold;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Storm written blind (public API and docs only) on the FAIR lock and the FENCED lock: three Baton
 * clients, blocking threads and asynchronous owners contending on two names with every way of
 * waiting (lock(), lease, tryLock with and without wait and lease, handles, lockInterruptibly,
 * async calls bounded by orTimeout / completeOnTimeout / cancel, interrupts of blocking waiters,
 * an async owner reused from its given-up future's own callback).
 *
 * <p><b>Fair lock</b>, promises checked (quotes from the docs):
 * <ul>
 *   <li>guarantees.md: "At most one owner holds a lock at a time, across clients and processes";
 *       checked by an in-JVM holder count, by HGETALL of the lock hash while held (data-layout.md:
 *       "field = owner id, value = hold count") showing only the holder with its exact count, and
 *       by atomic snapshots of the hash (never two fields).</li>
 *   <li>guarantees.md: "Grants follow arrival order across clients and threads; a newcomer never
 *       barges past a queued waiter"; fair-lock.md: "a waiter is served in the order it first
 *       asked; one that leaves (times out, is interrupted) leaves the queue at once";
 *       data-layout.md: queue "member = waiting owner id, score = its ticket (arrival order)".
 *       The rule checked, only for waiters that stayed queued until granted (a call that gave up is
 *       never held to an order): (T) two calls both seen in the queue and both granted in those
 *       calls are granted in ticket order; (N) a call seen in the queue before another call even
 *       started, and granted in its call, is granted before that other call. A queue entry is
 *       attributed to a call only when it cannot be a left-over of the same owner's earlier call
 *       (its earlier call ended with a confirmed unlock, or gave up more than 300 ms before the
 *       snapshot: "An interrupted, timed-out or cancelled wait leaves no hold, no queue entry and
 *       no subscription (its clean-up lands within 300 ms)"), which is also checked for idle
 *       owners.</li>
 *   <li>Bounds, with the margin rule of guarantees.md (d + max(20 % of d, 300 ms)): "tryLock(t)
 *       that cannot get the lock returns false at t, not before" (false: not before t, and by
 *       t + margin); "A wait time of zero or less means 'try once, do not wait' ... answered from
 *       one attempt within the command timeout + 150 ms"; any other end of a timed call "within its
 *       wait + the command timeout + 150 ms (+ the margin)" (the fuzzer's row); "One more T for a
 *       lock call that follows the same owner's abandoned call". A future the storm completes
 *       itself (orTimeout, completeOnTimeout, cancel) runs on the JDK's timer, so only a hang is
 *       judged there (k + T + 150 ms + margin). An overrun no longer than a stall of the whole JVM
 *       or machine, measured by a thread that only parks 2 ms at a time, is counted, not failed (the
 *       host runs other builds). An interrupted or given-up wait holds nothing, read by the same
 *       thread's next command ("Clean-up ... reaches Redis ahead of the caller's next
 *       command").</li>
 *   <li>At the end nothing is held or queued ("The three helper keys are deleted whenever the
 *       queue becomes empty") and every client's leasesHeld() is 0.</li>
 * </ul>
 *
 * <p><b>Fenced lock</b>, promises checked, with Redis restarted empty during the storm:
 * <ul>
 *   <li>BatonFencedLock: "a number that strictly rises each time the lock goes from free to held,
 *       and stays the same on a reentrant acquire"; "Tokens keep rising even if Redis loses its
 *       data (restart without persistence)". Checked on the order of grants that is proven from
 *       outside: a grant whose call started after another grant's call returned must carry a
 *       larger token (across restarts too); a re-entry (tryLockAndGetToken, getToken, the async
 *       re-entry) gives the same token.</li>
 *   <li>fencing.md's storage, "the store refuses a token lower than the highest it saw": each
 *       holder writes (begin, pause, end, each step checked by the storage); no two accepted
 *       writes overlap, and a holder whose unlock returned normally (its lease was not lost) never
 *       has a write refused.</li>
 *   <li>Mutual exclusion as for the fair lock, except across a restart: guarantees.md "Redis losing
 *       its data ... meanwhile others can acquire"; a pair of overlapping holders is excused only
 *       when the first may have been granted before a restart, the second was granted after that
 *       restart began, and the first's unlock reported LeaseLostException (the pair rule of the
 *       nemesis soak). RedisUnavailableException is accepted only from calls that overlap a
 *       restart (+ the command timeout + 150 ms + margin); LeaseLostException only for holds that
 *       span one, or that outlived a fixed lease.</li>
 *   <li>fencing.md's own scenario: now and then a holder takes a 100-200 ms lease and stalls past
 *       it while the others go on. Overlaps with it are excused only for holders granted after its
 *       lease ran out; its late write must be refused if a later holder wrote; its unlock must
 *       report the loss ("its owner's unlock reports the loss once"); and at its lease + 300 ms
 *       the client no longer lists the lease ("the client stops counting it in leasesHeld() as soon
 *       as it has run out (checked at its lease + 300 ms) and keeps no entry for it").</li>
 * </ul>
 * {@code -Dbaton.storm.seconds=N} sets each storm's length (2 s by default).
 */
class FairAndFencedStormTest {

    private static final int MAX_DESCRIBED = 8;
    private static final int CLIENTS = 3;
    private static final int BLOCKING_PER_CLIENT = 3;
    private static final int ASYNC_PER_CLIENT = 2;
    private static final long LEASE_MS = 5_000;
    private static final long MS = 1_000_000L;
    /** Clean-up of a wait that ends without a grant: "landed within 300 ms". */
    private static final long CLEAN_UP_NS = 300 * MS;
    private static final long COMMAND_TIMEOUT_MS = BatonOptions.DEFAULT_COMMAND_TIMEOUT.toMillis();
    private static final long MAX_OPS_PER_WORKER = 2_000_000;
    private static final int MAX_RECORDS = 3_000_000;

    private final AtomicLong violations = new AtomicLong();
    private final ConcurrentLinkedQueue<String> described = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> ops = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> checks = new ConcurrentHashMap<>();
    private volatile boolean stop;
    private final long t0 = System.nanoTime();

    // ------------------------------------------------------------------ shared helpers

    private void violation(String what) {
        violations.incrementAndGet();
        if (described.size() < MAX_DESCRIBED) {
            described.add("[t+" + ms(System.nanoTime() - t0) + " ms, " + Thread.currentThread().getName() + "] " + what);
        }
    }

    private void op(String kind) {
        ops.computeIfAbsent(kind.replaceAll("[0-9]+ ms", "N ms"), k -> new AtomicLong()).incrementAndGet();
    }

    private void check(String kind) {
        checks.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    }

    private static long ms(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    private static long us(long nanos) {
        return TimeUnit.NANOSECONDS.toMicros(nanos);
    }

    /** The margin rule: a promise of d is checked at d + max(20 % of d, 300 ms). */
    private static long withinNs(long promisedNs) {
        return promisedNs + Math.max(promisedNs / 5, 300 * MS);
    }

    /** Owners whose last call was abandoned (interrupted, cancelled, or its future completed by the storm). */
    private final ConcurrentHashMap<String, Boolean> abandoned = new ConcurrentHashMap<>();

    /**
     * The documented bound of a call with a wait budget, by how it ended (guarantees.md): a false
     * "at t, not before" (t + margin); a wait of zero or less "answered from one attempt within the
     * command timeout + 150 ms"; any other end within "its wait + the command timeout + 150 ms (+ the
     * margin)" (the fuzzer's row); "One more T for a lock call that follows the same owner's
     * abandoned call on the same lock".
     */
    private static long boundNs(long waitMs, boolean timedOutFalse, boolean afterAbandoned) {
        long extra = afterAbandoned ? COMMAND_TIMEOUT_MS : 0;
        if (timedOutFalse && waitMs > 0) {
            return withinNs((waitMs + extra) * MS);
        }
        return withinNs((Math.max(0, waitMs) + COMMAND_TIMEOUT_MS + 150 + extra) * MS);
    }

    /** Gaps of the stall ticker: {from, to} when the ticker, parking 2 ms at a time, was not run for over 50 ms. */
    private final CopyOnWriteArrayList<long[]> stalls = new CopyOnWriteArrayList<>();

    /**
     * A thread that only parks 2 ms and looks at the clock: a gap means the JVM or the machine did
     * not run threads (GC, CPU starvation by other processes), which no library can be held to.
     */
    private Thread stallTicker() {
        Thread t = new Thread(() -> {
            long last = System.nanoTime();
            while (!stop) {
                LockSupport.parkNanos(2 * MS);
                long now = System.nanoTime();
                if (now - last > 50 * MS && stalls.size() < 100_000) {
                    stalls.add(new long[]{last, now});
                }
                last = now;
            }
        }, "storm-stall-ticker");
        t.setDaemon(true);
        return t;
    }

    /** How long the ticker saw the JVM or machine stalled within [from, to]. */
    private long stalledWithin(long from, long to) {
        long total = 0;
        for (long[] g : stalls) {
            long a = Math.max(from, g[0]);
            long b = Math.min(to, g[1]);
            if (b > a) {
                total += b - a;
            }
        }
        return total;
    }

    /** A call past its bound is a violation, unless the JVM or machine itself was stalled for the overrun. */
    private void late(long start, long end, long bound, java.util.function.Supplier<String> what) {
        check("bound");
        long over = end - start - bound;
        if (over <= 0) {
            return;
        }
        if (stalledWithin(start, end) >= over) {
            op("late by no more than a measured JVM/machine stall (not counted)");
            return;
        }
        violation(what.get() + " [stall ticker saw " + us(stalledWithin(start, end)) + " us of stall in the call]");
    }

    /**
     * A future the storm itself completes at k ms (orTimeout, completeOnTimeout, cancel) is on the
     * JDK's timer, not Baton's: only a hang is judged, at k + the command timeout + 150 ms + margin.
     */
    private static long ownTimerBound(long k) {
        return withinNs((k + COMMAND_TIMEOUT_MS + 150) * MS);
    }

    private static Throwable unwrap(Throwable e) {
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static void park(ThreadLocalRandom rnd, int maxMicros) {
        int us = rnd.nextInt(maxMicros + 1);
        if (us > 0) {
            LockSupport.parkNanos(us * 1_000L);
        }
    }

    private static Map<String, Long> snapshotOf(Map<String, AtomicLong> m) {
        Map<String, Long> out = new TreeMap<>();
        m.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    private void report(String storm, long seconds, long rounds, long grants) {
        long totalChecks = checks.values().stream().mapToLong(AtomicLong::get).sum();
        long stalledMs = 0;
        long longest = 0;
        for (long[] g : stalls) {
            stalledMs += ms(g[1] - g[0]);
            longest = Math.max(longest, ms(g[1] - g[0]));
        }
        System.out.printf("%s: %d s, rounds=%d, grants=%d, checks=%d %s, violations=%d, JVM/machine stalls seen=%d"
                        + " (%d ms in all, longest %d ms), ops=%s%n",
                storm, seconds, rounds, grants, totalChecks, snapshotOf(checks), violations.get(), stalls.size(),
                stalledMs, longest, snapshotOf(ops));
        described.forEach(d -> System.out.println("  VIOLATION " + d));
        assertTrue(violations.get() == 0, violations.get() + " violations, first: " + described.peek());
    }

    /** A blocking worker thread; the interrupter interrupts it only while it waits interruptibly. */
    static final class Worker {
        static final int IDLE = 0;
        static final int WAITING = 1;
        static final int INTERRUPTING = 2;
        static final int INTERRUPTED = 3;
        final AtomicInteger state = new AtomicInteger(IDLE);
        volatile Thread thread;

        void waiting() {
            state.set(WAITING);
        }

        /** After the call: no interrupt of ours can land from here on, and the flag is cleared. */
        boolean settle() {
            boolean hit = false;
            if (!state.compareAndSet(WAITING, IDLE)) {
                while (state.get() == INTERRUPTING) {
                    Thread.onSpinWait();
                }
                hit = state.get() == INTERRUPTED;
                state.set(IDLE);
            }
            Thread.interrupted();
            return hit;
        }
    }

    private Thread interrupter(List<Worker> workers, long deadline, String name) {
        return new Thread(() -> {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            while (!stop && System.nanoTime() < deadline) {
                LockSupport.parkNanos((1 + rnd.nextInt(8)) * MS);
                Worker w = workers.get(rnd.nextInt(workers.size()));
                if (w.state.compareAndSet(Worker.WAITING, Worker.INTERRUPTING)) {
                    w.thread.interrupt();
                    op("interrupt delivered");
                    w.state.set(Worker.INTERRUPTED);
                }
            }
        }, name);
    }

    private void joinAll(List<Thread> threads, long boundMs, String what) throws InterruptedException {
        long until = System.currentTimeMillis() + boundMs;
        for (Thread t : threads) {
            t.join(Math.max(1, until - System.currentTimeMillis()));
            if (t.isAlive()) {
                StackTraceElement[] st = t.getStackTrace();
                violation(t.getName() + " (" + what + ") did not finish within the storm + " + boundMs / 1000
                        + " s; at " + (st.length > 0 ? st[0] + " / " + (st.length > 1 ? st[1] : "") : "?"));
                t.interrupt();
                t.join(5_000);
            }
        }
    }

    private static RedisCommands<String, String> rawCommands(StatefulRedisConnection<String, String> c) {
        c.setTimeout(Duration.ofSeconds(5));
        return c.sync();
    }

    // ================================================================== the fair lock

    /** One lock name of the fair storm, with its in-JVM view of holders. */
    static final class FairName {
        final String name;
        final String queueKey;
        final AtomicInteger holders = new AtomicInteger();
        final AtomicLong grantSeq = new AtomicLong();
        volatile Call holder;

        FairName(String name) {
            this.name = name;
            this.queueKey = "baton_fair_queue:{" + name + "}";
        }
    }

    /** One acquisition call (not a re-entry) by one owner. */
    static final class Call {
        final long id;
        final FairName fn;
        final String owner;
        final String how;
        /** The owner's last give-up before this call (nanoTime of its end), 0 if none. */
        final long prevGiveUp;
        final boolean tainted;
        final long start;
        volatile long end;
        /** 0 running, 1 granted, 2 ended without a grant. */
        volatile int outcome;
        /** Order of entry into the critical section on this name (= grant order under exclusion). */
        volatile long seq = -1;
        /** nanoTime of the reply of the first snapshot that showed this call's own queue entry. */
        volatile long seenReply;
        volatile long ticket = -1;

        Call(long id, FairName fn, String owner, String how, long prevGiveUp, boolean tainted) {
            this.id = id;
            this.fn = fn;
            this.owner = owner;
            this.how = how;
            this.prevGiveUp = prevGiveUp;
            this.tainted = tainted;
            this.start = System.nanoTime();
        }

        String describe(long t0) {
            return "call#" + id + " " + how + " on " + fn.name + " by " + owner + " (started t+" + us(start - t0)
                    + " us" + (end > 0 ? ", ended t+" + us(end - t0) + " us" : "") + (seq >= 0 ? ", grant #" + seq : "")
                    + (ticket >= 0 ? ", ticket " + ticket + " seen t+" + us(seenReply - t0) + " us" : "")
                    + (prevGiveUp > 0 ? ", owner's previous give-up ended " + us(start - prevGiveUp) + " us before" : "")
                    + ")";
        }
    }

    static final class OwnerState {
        volatile long lastGiveUpEnd;
        volatile boolean tainted;
    }

    private final ConcurrentHashMap<String, OwnerState> fairOwners = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Call> currentByOwner = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Call> allCalls = new ConcurrentLinkedQueue<>();
    private final AtomicLong callIds = new AtomicLong();
    private final AtomicInteger records = new AtomicInteger();

    private Call beginCall(FairName fn, String owner, String how) {
        OwnerState os = fairOwners.computeIfAbsent(owner, k -> new OwnerState());
        Call c = new Call(callIds.incrementAndGet(), fn, owner, how, os.lastGiveUpEnd, os.tainted);
        currentByOwner.put(owner, c);
        if (records.incrementAndGet() < MAX_RECORDS) {
            allCalls.add(c);
        }
        op(how);
        return c;
    }

    private void endGranted(Call c, long end) {
        c.end = end;
        c.outcome = 1;
        op("granted");
    }

    private void endWithoutGrant(Call c, long end) {
        c.end = end;
        c.outcome = 2;
        fairOwners.get(c.owner).lastGiveUpEnd = end;
    }

    private void taint(String owner) {
        fairOwners.computeIfAbsent(owner, k -> new OwnerState()).tainted = true;
    }

    private void fairEnter(Call c) {
        FairName fn = c.fn;
        int h = fn.holders.incrementAndGet();
        check("exclusion");
        if (h != 1) {
            Call other = fn.holder;
            violation("two holders of fair lock " + fn.name + ": " + c.describe(t0) + " entered while "
                    + (other == null ? "another" : other.describe(t0)) + " was inside");
        }
        fn.holder = c;
        c.seq = fn.grantSeq.incrementAndGet();
    }

    private void fairExit(Call c) {
        if (c.fn.holder == c) {
            c.fn.holder = null;
        }
        c.fn.holders.decrementAndGet();
    }

    /** HGETALL while held must show only the holder, with its hold count. */
    private void hgetallCheck(RedisCommands<String, String> raw, String name, String owner, int count, String who) {
        Map<String, String> m = raw.hgetall(name);
        check("hgetall while held");
        if (m.size() != 1 || !String.valueOf(count).equals(m.get(owner))) {
            violation("HGETALL " + name + " while " + who + " holds it " + count + " time(s) as " + owner + ": " + m);
        }
    }

    @Test
    void fairLockExcludesAndGrantsInArrivalOrder() throws Exception {
        long seconds = Long.getLong("baton.storm.seconds", 2);
        FairName[] names = {new FairName("storm-fair-a"), new FairName("storm-fair-b")};
        List<Baton> clients = new ArrayList<>();
        ExecutorService sections = Executors.newFixedThreadPool(4, r -> new Thread(r, "storm-fair-async-section"));
        ScheduledExecutorService cancels = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "storm-fair-cancel"));
        try (RedisServer server = RedisServer.start()) {
            RedisClient rawClient = RedisClient.create(server.uri());
            try (StatefulRedisConnection<String, String> rawConn = rawClient.connect();
                 StatefulRedisConnection<String, String> probeConn = rawClient.connect()) {
                RedisCommands<String, String> raw = rawCommands(rawConn);
                RedisCommands<String, String> probeRaw = rawCommands(probeConn);
                for (int i = 0; i < CLIENTS; i++) {
                    clients.add(Baton.create(BatonOptions.create(server.uri())));
                }
                long stormStart = System.nanoTime();
                long deadline = stormStart + TimeUnit.SECONDS.toNanos(seconds);
                List<Worker> workers = new ArrayList<>();
                List<Thread> threads = workerThreads(clients, workers, "storm-fair",
                        (b, w) -> () -> fairBlockingLoop(b, names, w, raw, deadline),
                        b -> () -> fairAsyncDriver(b, names, raw, sections, cancels, deadline));
                Thread probe = new Thread(() -> fairProbeLoop(probeRaw, names, deadline), "storm-fair-probe");
                Thread intr = interrupter(workers, deadline, "storm-fair-interrupter");
                stallTicker().start();
                threads.forEach(Thread::start);
                probe.start();
                intr.start();

                joinAll(threads, TimeUnit.SECONDS.toMillis(seconds + 40), "worker");
                stop = true;
                joinAll(List.of(probe, intr), 10_000, "probe/interrupter");

                // Nothing held or queued at the end (clean-ups land within 300 ms).
                LockSupport.parkNanos(CLEAN_UP_NS);
                for (FairName fn : names) {
                    long exists = raw.exists(fn.name, fn.queueKey, "baton_fair_waiters:{" + fn.name + "}",
                            "baton_fair_ticket:{" + fn.name + "}");
                    check("end state");
                    if (exists != 0) {
                        violation("at the end, " + exists + " of " + fn.name + "'s keys (lock hash, queue, waiters, ticket)"
                                + " still exist: hash=" + raw.hgetall(fn.name) + " queue="
                                + raw.zrangeWithScores(fn.queueKey, 0, -1));
                    }
                    if (clients.get(0).fairLock(fn.name).isLocked()) {
                        violation("at the end, " + fn.name + " isLocked()");
                    }
                }
                noLeasesLeft(clients);
                judgeFairOrder();
            } finally {
                stop = true;
                clients.forEach(Baton::close);
                rawClient.shutdown();
            }
        } finally {
            stop = true;
            sections.shutdownNow();
            cancels.shutdownNow();
        }
        long grants = allCalls.stream().filter(c -> c.outcome == 1).count();
        report("FairLockStorm", seconds, callIds.get(), grants);
    }

    /** 0 (try once) a quarter of the time, up to 300 ms half, up to 1.5 s a quarter (long waiters fill the queue). */
    private static long fairWait(ThreadLocalRandom rnd) {
        int r = rnd.nextInt(4);
        return r == 0 ? 0 : r == 3 ? 300 + rnd.nextInt(1201) : 1 + rnd.nextInt(300);
    }

    private void fairBlockingLoop(Baton baton, FairName[] names, Worker w, RedisCommands<String, String> raw, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        String owner = baton.clientId() + ":" + Thread.currentThread().getId();
        for (long n = 0; n < MAX_OPS_PER_WORKER && !stop && System.nanoTime() < deadline; n++) {
            FairName fn = names[rnd.nextInt(names.length)];
            BatonLock lock = baton.fairLock(fn.name);
            int kind = rnd.nextInt(7);
            long wait = fairWait(rnd);
            String how = switch (kind) {
                case 0 -> "lock()";
                case 1 -> "lock(lease)";
                case 2 -> "tryLock(wait)";
                case 3 -> "tryLock(wait, lease)";
                case 4 -> "lockInterruptibly()";
                case 5 -> "tryLock()";
                default -> "tryAcquire(wait)";
            };
            Call c = beginCall(fn, owner, how + (kind == 2 || kind == 3 || kind == 6 ? "[" + wait + " ms]" : ""));
            boolean afterAbandoned = abandoned.getOrDefault(owner, false);
            boolean granted = false;
            boolean interrupted = false;
            LockHold hold = null;
            Throwable failure = null;
            if (kind != 5) {
                w.waiting();
            }
            long start = c.start;
            try {
                switch (kind) {
                    case 0 -> {
                        lock.lock();
                        granted = true;
                    }
                    case 1 -> {
                        lock.lock(LEASE_MS, TimeUnit.MILLISECONDS);
                        granted = true;
                    }
                    case 2 -> granted = lock.tryLock(wait, TimeUnit.MILLISECONDS);
                    case 3 -> granted = lock.tryLock(wait, LEASE_MS, TimeUnit.MILLISECONDS);
                    case 4 -> {
                        lock.lockInterruptibly();
                        granted = true;
                    }
                    case 5 -> granted = lock.tryLock();
                    default -> {
                        Optional<LockHold> h = lock.tryAcquire(wait, TimeUnit.MILLISECONDS);
                        granted = h.isPresent();
                        hold = h.orElse(null);
                    }
                }
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (RuntimeException e) {
                failure = e;
            }
            long end = System.nanoTime();
            boolean hit = w.settle();
            if (interrupted) {
                op("interrupted (InterruptedException)");
                if (!hit) {
                    violation(c.describe(t0) + " threw InterruptedException although the storm did not interrupt it");
                }
            }
            abandoned.put(owner, interrupted);
            boolean timed = kind == 2 || kind == 3 || kind == 6 || kind == 5;
            if (timed) {
                long w0 = kind == 5 ? 0 : wait;
                long bound = boundNs(w0, !granted && !interrupted && failure == null, afterAbandoned);
                final boolean g0 = granted;
                final boolean i0 = interrupted;
                late(start, end, bound, () -> c.describe(t0) + " returned " + (g0 ? "granted" : i0 ? "interrupted" : "not granted")
                        + " after " + us(end - start) + " us, past its bound " + us(bound) + " us (wait " + w0
                        + " ms" + (afterAbandoned ? ", after the owner's abandoned call" : "") + ")");
                if (!granted && !interrupted && failure == null && end - start < w0 * MS) {
                    violation(c.describe(t0) + " returned false after " + us(end - start) + " us, before its wait time "
                            + w0 + " ms (\"returns false at t, not before\")");
                }
            }
            if (failure != null) {
                endWithoutGrant(c, end);
                taint(owner);
                violation(c.describe(t0) + " threw " + failure + " on a healthy Redis");
                continue;
            }
            if (!granted) {
                endWithoutGrant(c, end);
                op(interrupted ? "gave up (interrupted)" : "gave up (not granted)");
                if (rnd.nextInt(3) == 0) {
                    check("nothing held after a give-up");
                    try {
                        if (lock.isHeldByCurrentThread()) {
                            violation(c.describe(t0) + " ended without a grant, yet the thread's next command"
                                    + " isHeldByCurrentThread() says it holds the lock");
                        }
                    } catch (RuntimeException e) {
                        violation("isHeldByCurrentThread() threw " + e);
                    }
                }
                continue;
            }
            endGranted(c, end);
            fairEnter(c);
            int count = 1;
            try {
                park(rnd, 3000);
                if (rnd.nextInt(5) == 0) {
                    if (!lock.tryLock()) {
                        violation(c.describe(t0) + ": re-entry tryLock() by the holder returned false");
                    } else {
                        count = 2;
                        op("re-entry");
                    }
                }
                if (rnd.nextInt(3) == 0) {
                    hgetallCheck(raw, fn.name, owner, count, c.describe(t0));
                }
                if (count == 2) {
                    lock.unlock();
                }
            } catch (RuntimeException e) {
                violation(c.describe(t0) + " inside the lock: " + e);
            } finally {
                fairExit(c);
            }
            try {
                if (hold != null) {
                    hold.close();
                } else {
                    lock.unlock();
                }
            } catch (RuntimeException e) {
                taint(owner);
                violation(c.describe(t0) + ": unlock threw " + e + " on a healthy Redis");
            }
        }
    }

    /** Drives asynchronous owners: one episode at a time, each possibly a chain of give-ups. */
    private void fairAsyncDriver(Baton baton, FairName[] names, RedisCommands<String, String> raw,
                                 ExecutorService sections, ScheduledExecutorService cancels, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        long owner = Baton.newOwnerId();
        for (long n = 0; n < MAX_OPS_PER_WORKER && !stop && System.nanoTime() < deadline; n++) {
            if (rnd.nextInt(10) == 0) {
                owner = Baton.newOwnerId();
                op("fresh async owner");
            }
            CompletableFuture<Void> done = new CompletableFuture<>();
            fairAsyncOp(baton, names, raw, sections, cancels, owner, 0, done);
            try {
                done.get(30, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                violation("async owner " + baton.clientId() + ":" + owner + ": an episode (at most 4 bounded calls and an"
                        + " unlock) did not finish in 30 s; current call " + describeCurrent(baton.clientId() + ":" + owner));
                return;
            } catch (InterruptedException e) {
                return;
            } catch (ExecutionException e) {
                violation("episode failed: " + e.getCause());
            }
        }
    }

    private String describeCurrent(String owner) {
        Call c = currentByOwner.get(owner);
        return c == null ? "none" : c.describe(t0);
    }

    private void fairAsyncOp(Baton baton, FairName[] names, RedisCommands<String, String> raw, ExecutorService sections,
                             ScheduledExecutorService cancels, long owner, int depth, CompletableFuture<Void> done) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        FairName fn = names[rnd.nextInt(names.length)];
        BatonLock lock = baton.fairLock(fn.name);
        String ownerKey = baton.clientId() + ":" + owner;
        int kind = rnd.nextInt(6);
        long wait = fairWait(rnd);
        long k = 1 + rnd.nextInt(60);
        String how = switch (kind) {
            case 0 -> "lockAsync().orTimeout(" + k + " ms)";
            case 1 -> "lockAsync(lease) cancelled at " + k + " ms";
            case 2 -> "tryLockAsync(" + wait + " ms)";
            case 3 -> "tryLockAsync(" + wait + " ms, lease).completeOnTimeout(false, " + k + " ms)";
            case 4 -> "tryLockAsync()";
            default -> "tryLockAsync(" + wait + " ms).orTimeout(" + k + " ms)";
        };
        Call c = beginCall(fn, ownerKey, (depth > 0 ? "follow-up " : "") + how);
        boolean afterAbandoned = abandoned.getOrDefault(ownerKey, false);
        long start = c.start;
        CompletableFuture<?> f;
        boolean voidResult = false;
        long bound;
        boolean ours;
        try {
            switch (kind) {
                case 0 -> {
                    f = lock.lockAsync(owner).toCompletableFuture().orTimeout(k, TimeUnit.MILLISECONDS);
                    voidResult = true;
                    bound = ownTimerBound(k);
                    ours = true;
                }
                case 1 -> {
                    CompletableFuture<Void> g = lock.lockAsync(LEASE_MS, TimeUnit.MILLISECONDS, owner).toCompletableFuture();
                    cancels.schedule(() -> g.cancel(true), k, TimeUnit.MILLISECONDS);
                    f = g;
                    voidResult = true;
                    bound = ownTimerBound(k);
                    ours = true;
                }
                case 2 -> {
                    f = lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, owner).toCompletableFuture();
                    bound = -1;
                    ours = false;
                }
                case 3 -> {
                    f = lock.tryLockAsync(wait, LEASE_MS, TimeUnit.MILLISECONDS, owner).toCompletableFuture()
                            .completeOnTimeout(false, k, TimeUnit.MILLISECONDS);
                    bound = k <= wait ? ownTimerBound(k) : -1;
                    ours = true;
                }
                case 4 -> {
                    f = lock.tryLockAsync(owner).toCompletableFuture();
                    wait = 0;
                    bound = -1;
                    ours = false;
                }
                default -> {
                    f = lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, owner).toCompletableFuture()
                            .orTimeout(k, TimeUnit.MILLISECONDS);
                    bound = k <= wait ? ownTimerBound(k) : -1;
                    ours = true;
                }
            }
        } catch (RuntimeException e) {
            endWithoutGrant(c, System.nanoTime());
            violation(c.describe(t0) + " threw at the call: " + e);
            done.complete(null);
            return;
        }
        final boolean isVoid = voidResult;
        final long ourBound = bound;
        final boolean oursAtAll = ours;
        final long theWait = wait;
        f.whenComplete((v, e) -> {
            long end = System.nanoTime();
            Throwable x = e == null ? null : unwrap(e);
            boolean granted = x == null && (isVoid || Boolean.TRUE.equals(v));
            // A false, a TimeoutException or a cancellation may be the storm's own completion.
            boolean mayBeOurs = oursAtAll && !granted;
            abandoned.put(ownerKey, mayBeOurs);
            long theBound = ourBound >= 0 ? ourBound
                    : boundNs(theWait, !granted && !mayBeOurs && x == null, afterAbandoned);
            if (ourBound >= 0 && !mayBeOurs) {
                theBound = Math.max(ourBound, boundNs(theWait, false, afterAbandoned));
            }
            final long b0 = theBound;
            late(start, end, theBound, () -> c.describe(t0) + " completed " + (granted ? "granted" : String.valueOf(x != null ? x : v))
                    + " after " + us(end - start) + " us, past its bound " + us(b0) + " us (with margin"
                    + (afterAbandoned ? ", after the owner's abandoned call" : "") + ")");
            if (granted) {
                endGranted(c, end);
                try {
                    sections.execute(() -> fairAsyncSection(c, lock, owner, raw, done));
                } catch (RuntimeException rejected) {
                    done.complete(null);
                }
                return;
            }
            endWithoutGrant(c, end);
            if (x != null && !(x instanceof TimeoutException) && !(x instanceof CancellationException)) {
                taint(ownerKey);
                violation(c.describe(t0) + " completed with " + x + " on a healthy Redis");
                done.complete(null);
                return;
            }
            op(x != null ? "gave up (" + x.getClass().getSimpleName() + ")" : "gave up (false)");
            if (x == null && !mayBeOurs && end - start < theWait * MS) {
                violation(c.describe(t0) + " completed false after " + us(end - start) + " us, before its wait time "
                        + theWait + " ms");
            }
            if (depth < 3 && !stop && ThreadLocalRandom.current().nextBoolean()) {
                // The same owner at once, from the given-up future's own callback.
                op("follow-up from a give-up callback");
                fairAsyncOp(baton, names, raw, sections, cancels, owner, depth + 1, done);
            } else {
                done.complete(null);
            }
        });
    }

    private void fairAsyncSection(Call c, BatonLock lock, long owner, RedisCommands<String, String> raw,
                                  CompletableFuture<Void> done) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        fairEnter(c);
        int count = 1;
        try {
            park(rnd, 3000);
            if (rnd.nextInt(5) == 0) {
                Boolean again = lock.tryLockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
                if (!Boolean.TRUE.equals(again)) {
                    violation(c.describe(t0) + ": the holder's re-entry tryLockAsync() returned " + again);
                } else {
                    count = 2;
                    op("re-entry");
                }
            }
            if (rnd.nextInt(3) == 0) {
                hgetallCheck(raw, c.fn.name, c.owner, count, c.describe(t0));
            }
            if (count == 2) {
                lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            violation(c.describe(t0) + " inside the lock: " + unwrap(e));
        } finally {
            fairExit(c);
        }
        try {
            lock.unlockAsync(owner).toCompletableFuture().get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            taint(c.owner);
            violation(c.describe(t0) + ": unlockAsync failed: " + unwrap(e));
        }
        done.complete(null);
    }

    /** Atomic snapshots of each name's lock hash and queue (TIME-free: the order is all we use). */
    private static final String SNAPSHOT = "return {redis.call('HGETALL', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')}";

    private void fairProbeLoop(RedisCommands<String, String> raw, FairName[] names, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        int i = 0;
        while (!stop && System.nanoTime() < deadline + TimeUnit.SECONDS.toNanos(1)) {
            FairName fn = names[i++ % names.length];
            long send = System.nanoTime();
            Map<String, Call> before = new HashMap<>(currentByOwner);
            List<Object> reply;
            try {
                reply = raw.eval(SNAPSHOT, ScriptOutputType.MULTI, fn.name, fn.queueKey);
            } catch (RuntimeException e) {
                violation("probe EVAL failed: " + e);
                return;
            }
            long replyAt = System.nanoTime();
            check("snapshot");
            List<?> hash = (List<?>) reply.get(0);
            List<?> queue = (List<?>) reply.get(1);
            if (hash.size() > 2) {
                violation("snapshot of " + fn.name + " shows " + hash.size() / 2 + " owners in the lock hash: " + hash);
            }
            for (int j = 0; j + 1 < queue.size(); j += 2) {
                String member = String.valueOf(queue.get(j));
                long ticket = (long) Double.parseDouble(String.valueOf(queue.get(j + 1)));
                Call c = before.get(member);
                if (c == null || currentByOwner.get(member) != c || c.fn != fn || c.tainted) {
                    continue;
                }
                if (c.outcome == 2 && send - c.end > CLEAN_UP_NS) {
                    violation("queue entry " + member + " (ticket " + ticket + ") of " + fn.name + " still there "
                            + us(send - c.end) + " us after its call gave up: " + c.describe(t0));
                }
                if (c.prevGiveUp != 0 && send - c.prevGiveUp <= CLEAN_UP_NS) {
                    continue; // may still be the owner's previous call's entry
                }
                if (c.ticket < 0) {
                    c.ticket = ticket;
                    c.seenReply = replyAt;
                    check("queue entry attributed");
                } else if (c.ticket != ticket) {
                    op("ticket changed within a call");
                }
            }
            LockSupport.parkNanos((500 + rnd.nextInt(2000)) * 1_000L);
        }
    }

    /** Rules (T) and (N) of the class comment, over every call recorded. */
    private void judgeFairOrder() {
        Map<FairName, List<Call>> granted = new HashMap<>();
        for (Call c : allCalls) {
            if (c.outcome == 1 && c.seq >= 0 && !c.tainted) {
                granted.computeIfAbsent(c.fn, k -> new ArrayList<>()).add(c);
            }
        }
        for (Map.Entry<FairName, List<Call>> e : granted.entrySet()) {
            List<Call> all = e.getValue();
            List<Call> seen = new ArrayList<>();
            for (Call c : all) {
                if (c.ticket >= 0) {
                    seen.add(c);
                }
            }
            // (T): by ticket, grants must come in the same order.
            seen.sort(Comparator.comparingLong(c -> c.ticket));
            for (int i = 1; i < seen.size(); i++) {
                Call a = seen.get(i - 1);
                Call b = seen.get(i);
                check("fifo by ticket");
                if (a.seq > b.seq) {
                    violation("fair lock " + e.getKey().name + " granted out of ticket order: " + b.describe(t0)
                            + " was granted before " + a.describe(t0) + ", which had the earlier ticket and stayed queued"
                            + " until granted");
                }
            }
            // (N): a call seen queued before another call started is granted before it.
            seen.sort(Comparator.comparingLong(c -> c.seenReply));
            long[] seenAt = new long[seen.size()];
            int[] argMax = new int[seen.size()];
            for (int i = 0; i < seen.size(); i++) {
                seenAt[i] = seen.get(i).seenReply;
                argMax[i] = i == 0 || seen.get(i).seq > seen.get(argMax[i - 1]).seq ? i : argMax[i - 1];
            }
            for (Call b : all) {
                int idx = lastBefore(seenAt, b.start);
                if (idx < 0) {
                    continue;
                }
                check("no barging");
                Call a = seen.get(argMax[idx]);
                if (a.seq > b.seq) {
                    violation("fair lock " + e.getKey().name + ": newcomer " + b.describe(t0) + " barged past "
                            + a.describe(t0) + ", which was already queued when the newcomer's call started ("
                            + us(b.start - a.seenReply) + " us after the snapshot) and stayed queued until granted");
                }
            }
        }
    }

    // ================================================================== the fenced lock

    /** One free-to-held grant of the fenced lock, as its owner saw it. */
    static final class Grant {
        final String name;
        final String owner;
        final String how;
        final long start;
        final long returned;
        final long token;
        volatile long unlockEnd;
        volatile boolean lost;
        /** The fixed lease of a holder that stalls past it on purpose, 0 otherwise. */
        volatile long stallLeaseMs;
        volatile int writesRefused;
        volatile int writesAccepted;

        Grant(String name, String owner, String how, long start, long returned, long token) {
            this.name = name;
            this.owner = owner;
            this.how = how;
            this.start = start;
            this.returned = returned;
            this.token = token;
        }

        String describe(long t0) {
            return how + " on " + name + " by " + owner + " (started t+" + us(start - t0) + " us, granted t+"
                    + us(returned - t0) + " us, token " + token + (unlockEnd > 0 ? ", unlocked t+" + us(unlockEnd - t0) + " us" : "")
                    + (lost ? ", its unlock reported LeaseLostException" : "") + ")";
        }
    }

    /** fencing.md's storage: refuses a token lower than the highest it saw. */
    static final class Storage {
        private long highest;
        private long step;
        final List<long[]> accepted = new ArrayList<>(); // {beginStep, endStep, token}

        synchronized long begin(long token) {
            if (token < highest) {
                return -1;
            }
            highest = token;
            return ++step;
        }

        synchronized boolean end(long token, long beginStep) {
            if (token < highest) {
                return false;
            }
            highest = token;
            long endStep = ++step;
            if (accepted.size() < MAX_RECORDS) {
                accepted.add(new long[]{beginStep, endStep, token});
            }
            return true;
        }

        synchronized long highest() {
            return highest;
        }
    }

    static final class FencedName {
        final String name;
        final AtomicInteger holders = new AtomicInteger();
        final Map<Grant, Boolean> inside = new ConcurrentHashMap<>();
        final Storage storage = new Storage();

        FencedName(String name) {
            this.name = name;
        }
    }

    private final ConcurrentLinkedQueue<Grant> grants = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Grant[]> overlaps = new ConcurrentLinkedQueue<>();
    /** {begin, end} of each restart; end is Long.MAX_VALUE while it runs. */
    private final CopyOnWriteArrayList<long[]> restarts = new CopyOnWriteArrayList<>();
    private final AtomicLong fencedCalls = new AtomicLong();

    private static final long UNAVAILABLE_SLACK_NS = withinNs((COMMAND_TIMEOUT_MS + 150) * MS);

    /** Whether [from, to] overlaps a restart, stretched by the time a failure may take to be reported. */
    private boolean nearRestart(long from, long to) {
        for (long[] r : restarts) {
            long end = r[1] == Long.MAX_VALUE ? Long.MAX_VALUE : r[1] + UNAVAILABLE_SLACK_NS;
            if (from < end && to > r[0]) {
                return true;
            }
        }
        return false;
    }

    private boolean spansRestart(long from, long to) {
        for (long[] r : restarts) {
            if (from < r[1] && to > r[0]) {
                return true;
            }
        }
        return false;
    }

    private Grant fencedEnter(FencedName fn, String owner, String how, long start, long returned, long token) {
        Grant g = new Grant(fn.name, owner, how, start, returned, token);
        if (records.incrementAndGet() < MAX_RECORDS) {
            grants.add(g);
        }
        op("granted");
        int h = fn.holders.incrementAndGet();
        check("exclusion");
        if (h != 1) {
            for (Grant other : fn.inside.keySet()) {
                overlaps.add(new Grant[]{other, g});
            }
        }
        fn.inside.put(g, Boolean.TRUE);
        return g;
    }

    private void fencedExit(FencedName fn, Grant g) {
        fn.inside.remove(g);
        fn.holders.decrementAndGet();
    }

    /** Writes to the protected resource through fencing.md's check, one to two times. */
    private void fencedWrites(FencedName fn, Grant g, ThreadLocalRandom rnd) {
        int n = 1 + rnd.nextInt(2);
        for (int i = 0; i < n; i++) {
            long step = fn.storage.begin(g.token);
            boolean ok = step >= 0;
            if (ok) {
                park(rnd, 500);
                ok = fn.storage.end(g.token, step);
            }
            check("storage write");
            if (ok) {
                g.writesAccepted++;
            } else {
                g.writesRefused++;
                op("storage refused a write");
            }
        }
    }

    /** Unlocks, calling again after RedisUnavailableException (documented as safe); true if the lease was reported lost. */
    private void fencedUnlock(Grant g, java.util.function.Supplier<CompletableFuture<Void>> unlock) {
        for (int attempt = 1; ; attempt++) {
            long s = System.nanoTime();
            try {
                unlock.get().get(COMMAND_TIMEOUT_MS * 3, TimeUnit.MILLISECONDS);
                g.unlockEnd = System.nanoTime();
                return;
            } catch (Exception e) {
                Throwable x = unwrap(e);
                long now = System.nanoTime();
                if (x instanceof LeaseLostException) {
                    g.lost = true;
                    g.unlockEnd = now;
                    op("unlock: LeaseLostException");
                    boolean ranOut = g.stallLeaseMs > 0 && now - g.start > g.stallLeaseMs * MS;
                    if (!spansRestart(g.start, now) && !ranOut) {
                        violation(g.describe(t0) + ": unlock threw LeaseLostException though no restart happened during the hold");
                    }
                    return;
                }
                if (x instanceof RedisUnavailableException && nearRestart(s, now) && attempt < 20) {
                    op("unlock: RedisUnavailableException, called again");
                    LockSupport.parkNanos(100 * MS);
                    continue;
                }
                g.unlockEnd = now;
                violation(g.describe(t0) + ": unlock (attempt " + attempt + ") failed with " + x);
                return;
            }
        }
    }

    private static CompletableFuture<Void> run(Runnable r) {
        try {
            r.run();
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private void fencedHgetall(RedisCommands<String, String> raw, Grant g, int count) {
        if (nearRestart(g.start, System.nanoTime()) || !restarts.isEmpty() && restarts.get(restarts.size() - 1)[1] == Long.MAX_VALUE) {
            return;
        }
        Map<String, String> m;
        try {
            m = raw.hgetall(g.name);
        } catch (RuntimeException e) {
            if (!nearRestart(g.start, System.nanoTime())) {
                violation("HGETALL " + g.name + " failed: " + e);
            }
            return;
        }
        if (nearRestart(g.start, System.nanoTime())) {
            return;
        }
        check("hgetall while held");
        if (m.size() != 1 || !String.valueOf(count).equals(m.get(g.owner))) {
            violation("HGETALL " + g.name + " while " + g.describe(t0) + " holds it " + count + " time(s): " + m);
        }
    }

    @Test
    void fencedTokensRiseAndTheStorageNeverAcceptsOverlappingWrites() throws Exception {
        long seconds = Long.getLong("baton.storm.seconds", 2);
        FencedName[] names = {new FencedName("storm-fenced-a"), new FencedName("storm-fenced-b")};
        List<Baton> clients = new ArrayList<>();
        ExecutorService sections = Executors.newFixedThreadPool(4, r -> new Thread(r, "storm-fenced-async-section"));
        ScheduledExecutorService cancels = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "storm-fenced-cancel"));
        try (RedisServer server = RedisServer.start()) {
            RedisClient rawClient = RedisClient.create(server.uri());
            try (StatefulRedisConnection<String, String> rawConn = rawClient.connect()) {
                RedisCommands<String, String> raw = rawCommands(rawConn);
                for (int i = 0; i < CLIENTS; i++) {
                    clients.add(Baton.create(BatonOptions.create(server.uri())));
                }
                long stormStart = System.nanoTime();
                long deadline = stormStart + TimeUnit.SECONDS.toNanos(seconds);
                List<Worker> workers = new ArrayList<>();
                List<Thread> threads = workerThreads(clients, workers, "storm-fenced",
                        (b, w) -> () -> fencedBlockingLoop(b, names, w, raw, deadline),
                        b -> () -> fencedAsyncDriver(b, names, raw, sections, cancels, deadline));
                int planned = seconds < 10 ? 1 : (int) Math.max(2, seconds / 20);
                Thread restarter = new Thread(() -> {
                    for (int r = 1; r <= planned && !stop; r++) {
                        long at = stormStart + TimeUnit.SECONDS.toNanos(seconds) * r / (planned + 1);
                        while (!stop && System.nanoTime() < at) {
                            LockSupport.parkNanos(10 * MS);
                        }
                        if (stop) {
                            return;
                        }
                        long[] mark = {System.nanoTime(), Long.MAX_VALUE};
                        restarts.add(mark);
                        server.restart();
                        mark[1] = System.nanoTime();
                        restarts.set(restarts.size() - 1, mark.clone());
                        op("redis restarted empty");
                    }
                }, "storm-fenced-restarter");
                Thread intr = interrupter(workers, deadline, "storm-fenced-interrupter");
                stallTicker().start();
                threads.forEach(Thread::start);
                restarter.start();
                intr.start();

                joinAll(threads, TimeUnit.SECONDS.toMillis(seconds + 60), "worker");
                stop = true;
                joinAll(List.of(restarter, intr), 30_000, "restarter/interrupter");

                LockSupport.parkNanos(CLEAN_UP_NS);
                for (FencedName fn : names) {
                    check("end state");
                    long exists = raw.exists(fn.name);
                    if (exists != 0) {
                        violation("at the end, " + fn.name + " is still held: " + raw.hgetall(fn.name));
                    }
                }
                noLeasesLeft(clients);
                judgeFenced(names);
            } finally {
                stop = true;
                clients.forEach(Baton::close);
                rawClient.shutdown();
            }
        } finally {
            stop = true;
            sections.shutdownNow();
            cancels.shutdownNow();
        }
        report("FencedLockStorm", seconds, fencedCalls.get(), grants.size());
    }

    /** An unexpected exception from an acquisition, judged against the restart windows. */
    private void fencedCallFailed(String what, long start, long end, Throwable x) {
        if (x instanceof RedisUnavailableException && nearRestart(start, end)) {
            op("RedisUnavailableException near a restart");
            return;
        }
        violation(what + " (started t+" + us(start - t0) + " us) failed after " + us(end - start) + " us with " + x
                + (restarts.isEmpty() ? "" : "; restarts " + describeRestarts()));
    }

    private String describeRestarts() {
        StringBuilder sb = new StringBuilder();
        for (long[] r : restarts) {
            sb.append("[t+").append(us(r[0] - t0)).append(", ").append(r[1] == Long.MAX_VALUE ? "running" : "t+" + us(r[1] - t0)).append(" us]");
        }
        return sb.toString();
    }

    private void fencedBlockingLoop(Baton baton, FencedName[] names, Worker w, RedisCommands<String, String> raw, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        String owner = baton.clientId() + ":" + Thread.currentThread().getId();
        for (long n = 0; n < MAX_OPS_PER_WORKER && !stop && System.nanoTime() < deadline; n++) {
            FencedName fn = names[rnd.nextInt(names.length)];
            BatonFencedLock lock = baton.fencedLock(fn.name);
            int kind = rnd.nextInt(40) == 0 ? 8 : rnd.nextInt(8);
            long wait = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(301);
            String how = switch (kind) {
                case 0 -> "lockAndGetToken()";
                case 1 -> "lockAndGetToken(lease)";
                case 2 -> "tryLockAndGetToken()";
                case 3 -> "tryLockAndGetToken(" + wait + " ms, lease)";
                case 4 -> "lock()+getToken()";
                case 5 -> "tryLock(" + wait + " ms)+getToken()";
                case 6 -> "withLock(scope)";
                case 7 -> "lockInterruptibly()+getToken()";
                default -> "tryLockAndGetToken(300 ms, short lease) then stall past the lease";
            };
            op(how);
            fencedCalls.incrementAndGet();
            if (kind == 6) {
                fencedWithLock(lock, fn, owner, how, w, raw, rnd);
                continue;
            }
            if (kind == 8) {
                fencedStall(baton, lock, fn, owner, how, w, rnd);
                continue;
            }
            boolean afterAbandoned = abandoned.getOrDefault(owner, false);
            long start = System.nanoTime();
            if (kind != 2) {
                w.waiting();
            }
            long token = -1;
            boolean interrupted = false;
            Throwable failure = null;
            try {
                switch (kind) {
                    case 0 -> token = lock.lockAndGetToken();
                    case 1 -> token = lock.lockAndGetToken(LEASE_MS, TimeUnit.MILLISECONDS);
                    case 2 -> token = lock.tryLockAndGetToken().orElse(-1);
                    case 3 -> token = lock.tryLockAndGetToken(wait, LEASE_MS, TimeUnit.MILLISECONDS).orElse(-1);
                    case 4 -> {
                        lock.lock();
                        token = 0;
                    }
                    case 5 -> token = lock.tryLock(wait, TimeUnit.MILLISECONDS) ? 0 : -1;
                    default -> {
                        lock.lockInterruptibly();
                        token = 0;
                    }
                }
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (RuntimeException e) {
                failure = e;
            }
            long end = System.nanoTime();
            boolean hit = w.settle();
            if (interrupted) {
                op("interrupted (InterruptedException)");
                if (!hit) {
                    violation(how + " by " + owner + " threw InterruptedException although the storm did not interrupt it");
                }
            }
            if (failure != null) {
                fencedCallFailed(how + " by " + owner, start, end, failure);
                continue;
            }
            abandoned.put(owner, interrupted);
            if (kind == 2 || kind == 3 || kind == 5) {
                long w0 = kind == 2 ? 0 : wait;
                boolean near = nearRestart(start, end);
                long bound = boundNs(w0, token < 0 && !interrupted && !near, afterAbandoned);
                late(start, end, bound, () -> how + " by " + owner + " (started t+" + us(start - t0) + " us) returned after "
                        + us(end - start) + " us, past its bound " + us(bound) + " us");
                if (token < 0 && !interrupted && end - start < w0 * MS) {
                    violation(how + " by " + owner + " returned empty/false after " + us(end - start)
                            + " us, before its wait time (\"returns false at t, not before\")");
                }
            }
            if (token < 0) {
                op(interrupted ? "gave up (interrupted)" : "gave up (not granted)");
                continue;
            }
            if (token == 0) {
                try {
                    token = lock.getToken();
                } catch (RuntimeException e) {
                    if (!nearRestart(start, System.nanoTime())) {
                        violation(how + " by " + owner + ": getToken() right after the grant threw " + e);
                    }
                    fencedUnlockBlocking(lock, new Grant(fn.name, owner, how, start, end, -1));
                    continue;
                }
            }
            Grant g = fencedEnter(fn, owner, how, start, end, token);
            try {
                fencedInside(fn, g, rnd, raw, () -> {
                    long again = lock.getToken();
                    check("token on re-entry");
                    if (again != g.token) {
                        violation(g.describe(t0) + ": getToken() while holding returned " + again);
                    }
                    if (rnd.nextInt(4) == 0) {
                        OptionalLong re = lock.tryLockAndGetToken();
                        if (re.isEmpty()) {
                            violation(g.describe(t0) + ": the holder's re-entry tryLockAndGetToken() was refused");
                            return 1;
                        }
                        if (re.getAsLong() != g.token) {
                            violation(g.describe(t0) + ": re-entry token " + re.getAsLong() + " differs (\"stays the same on a reentrant acquire\")");
                        }
                        op("re-entry");
                        return 2;
                    }
                    return 1;
                }, lock::unlock);
            } finally {
                fencedExit(fn, g);
            }
            fencedUnlockBlocking(lock, g);
        }
    }

    /**
     * fencing.md's scenario: a holder stalls past its fixed lease, another may take the lock and
     * write; the stale holder then writes again (the storage must refuse it if a later holder wrote,
     * and may never accept two overlapping writes), the client no longer counts the lease
     * ("the client stops counting it in leasesHeld() as soon as it has run out (checked at its
     * lease + 300 ms) and keeps no entry for it"), and the unlock "reports the loss".
     */
    private void fencedStall(Baton baton, BatonFencedLock lock, FencedName fn, String owner, String how, Worker w,
                             ThreadLocalRandom rnd) {
        long lease = 100 + rnd.nextInt(101);
        long start = System.nanoTime();
        w.waiting();
        OptionalLong t;
        try {
            t = lock.tryLockAndGetToken(300, lease, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            w.settle();
            op("interrupted (InterruptedException)");
            return;
        } catch (RuntimeException e) {
            long end = System.nanoTime();
            w.settle();
            fencedCallFailed(how + " by " + owner, start, end, e);
            return;
        }
        long end = System.nanoTime();
        w.settle();
        if (t.isEmpty()) {
            op("gave up (not granted)");
            return;
        }
        Grant g = fencedEnter(fn, owner, how + " [lease " + lease + " ms]", start, end, t.getAsLong());
        g.stallLeaseMs = lease;
        try {
            fencedWrites(fn, g, rnd);
            long until = end + (lease + 300 + rnd.nextInt(100)) * MS;
            for (long now = System.nanoTime(); now < until; now = System.nanoTime()) {
                LockSupport.parkNanos(until - now);
            }
            check("lease no longer counted after it ran out");
            for (dev.baton.HeldLease h : baton.heldLeases()) {
                if (h.name().equals(fn.name) && h.ownerId().equals(owner) && stalledWithin(end, System.nanoTime()) < 100 * MS) {
                    violation(g.describe(t0) + ": " + us(System.nanoTime() - end) + " us after the grant, its fixed lease of "
                            + lease + " ms is still listed by heldLeases(): " + h);
                }
            }
            fencedWrites(fn, g, rnd);
        } finally {
            fencedExit(fn, g);
        }
        fencedUnlockBlocking(lock, g);
        check("stalled holder told at unlock");
        if (!g.lost && !nearRestart(start, System.nanoTime())) {
            violation(g.describe(t0) + ": its fixed lease of " + lease + " ms ran out during a stall, yet unlock()"
                    + " returned normally instead of reporting the loss");
        }
        op(g.writesRefused > 0 ? "stalled holder's write refused" : "stalled holder's writes all accepted");
    }

    private void fencedUnlockBlocking(BatonFencedLock lock, Grant g) {
        fencedUnlock(g, () -> run(lock::unlock));
    }

    interface ReEntry {
        int run();
    }

    /** The critical section: hold, re-entry, storage writes, HGETALL; leaves one hold to release. */
    private void fencedInside(FencedName fn, Grant g, ThreadLocalRandom rnd, RedisCommands<String, String> raw,
                              ReEntry reEntry, Runnable extraUnlock) {
        int count = 1;
        try {
            count = reEntry.run();
            fencedWrites(fn, g, rnd);
            park(rnd, 2000);
            if (rnd.nextInt(3) == 0) {
                fencedHgetall(raw, g, count);
            }
        } catch (RuntimeException e) {
            if (!nearRestart(g.start, System.nanoTime())) {
                violation(g.describe(t0) + " inside the lock: " + e);
            }
        } finally {
            if (count == 2) {
                try {
                    extraUnlock.run();
                } catch (RuntimeException e) {
                    if (!(e instanceof LeaseLostException || e instanceof RedisUnavailableException) || !nearRestart(g.start, System.nanoTime())) {
                        violation(g.describe(t0) + ": the re-entry's unlock threw " + e);
                    }
                }
            }
        }
    }

    private void fencedWithLock(BatonFencedLock lock, FencedName fn, String owner, String how, Worker w,
                                RedisCommands<String, String> raw, ThreadLocalRandom rnd) {
        long start = System.nanoTime();
        Grant[] held = new Grant[1];
        w.waiting();
        try {
            lock.withLock(scope -> {
                long returned = System.nanoTime();
                w.settle();
                OptionalLong token = scope.fencingToken();
                if (token.isEmpty()) {
                    violation(how + " by " + owner + ": a fenced lock's scope has no fencing token");
                    return null;
                }
                Grant g = fencedEnter(fn, owner, how, start, returned, token.getAsLong());
                held[0] = g;
                try {
                    fencedInside(fn, g, rnd, raw, () -> {
                        check("token on re-entry");
                        long again = lock.getToken();
                        if (again != g.token) {
                            violation(g.describe(t0) + ": getToken() inside withLock returned " + again);
                        }
                        return 1;
                    }, () -> { });
                } finally {
                    fencedExit(fn, g);
                }
                return null;
            });
            if (held[0] != null) {
                held[0].unlockEnd = System.nanoTime();
            }
        } catch (InterruptedException e) {
            op("interrupted (InterruptedException)");
        } catch (LeaseLostException e) {
            long now = System.nanoTime();
            if (held[0] != null) {
                held[0].lost = true;
                held[0].unlockEnd = now;
            }
            op("withLock: LeaseLostException");
            if (!spansRestart(start, now)) {
                violation(how + " by " + owner + " (started t+" + us(start - t0) + " us) threw " + e + " with no restart");
            }
        } catch (RuntimeException e) {
            long now = System.nanoTime();
            if (held[0] != null && e instanceof RedisUnavailableException) {
                // The release was not confirmed: the hold is kept, unlock() from this thread completes it.
                fencedUnlockBlocking(lock, held[0]);
            }
            fencedCallFailed(how + " by " + owner, start, now, e);
        } finally {
            w.settle();
        }
    }

    private void fencedAsyncDriver(Baton baton, FencedName[] names, RedisCommands<String, String> raw,
                                   ExecutorService sections, ScheduledExecutorService cancels, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        long owner = Baton.newOwnerId();
        for (long n = 0; n < MAX_OPS_PER_WORKER && !stop && System.nanoTime() < deadline; n++) {
            if (rnd.nextInt(10) == 0) {
                owner = Baton.newOwnerId();
                op("fresh async owner");
            }
            CompletableFuture<Void> done = new CompletableFuture<>();
            fencedAsyncOp(baton, names, raw, sections, cancels, owner, 0, done);
            try {
                done.get(60, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                violation("async owner " + baton.clientId() + ":" + owner + ": an episode did not finish in 60 s");
                return;
            } catch (InterruptedException e) {
                return;
            } catch (ExecutionException e) {
                violation("episode failed: " + e.getCause());
            }
        }
    }

    private void fencedAsyncOp(Baton baton, FencedName[] names, RedisCommands<String, String> raw, ExecutorService sections,
                               ScheduledExecutorService cancels, long owner, int depth, CompletableFuture<Void> done) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        FencedName fn = names[rnd.nextInt(names.length)];
        BatonFencedLock lock = baton.fencedLock(fn.name);
        String ownerKey = baton.clientId() + ":" + owner;
        int kind = rnd.nextInt(4);
        long wait = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(301);
        long k = 1 + rnd.nextInt(60);
        String how = (depth > 0 ? "follow-up " : "") + switch (kind) {
            case 0 -> "lockAndGetTokenAsync().orTimeout(" + k + " ms)";
            case 1 -> "lockAndGetTokenAsync() cancelled at " + k + " ms";
            case 2 -> "tryLockAndGetTokenAsync(" + wait + " ms, lease)";
            default -> "tryLockAndGetTokenAsync(" + wait + " ms, -1).completeOnTimeout(empty, " + k + " ms)";
        };
        op(how.replace("follow-up ", ""));
        fencedCalls.incrementAndGet();
        boolean afterAbandoned = abandoned.getOrDefault(ownerKey, false);
        long start = System.nanoTime();
        CompletableFuture<?> f;
        long bound;
        boolean ours;
        try {
            switch (kind) {
                case 0 -> {
                    f = lock.lockAndGetTokenAsync(owner).toCompletableFuture().orTimeout(k, TimeUnit.MILLISECONDS);
                    bound = ownTimerBound(k);
                    ours = true;
                }
                case 1 -> {
                    CompletableFuture<Long> g = lock.lockAndGetTokenAsync(owner).toCompletableFuture();
                    cancels.schedule(() -> g.cancel(true), k, TimeUnit.MILLISECONDS);
                    f = g;
                    bound = ownTimerBound(k);
                    ours = true;
                }
                case 2 -> {
                    f = lock.tryLockAndGetTokenAsync(wait, LEASE_MS, TimeUnit.MILLISECONDS, owner).toCompletableFuture();
                    bound = -1;
                    ours = false;
                }
                default -> {
                    f = lock.tryLockAndGetTokenAsync(wait, -1, TimeUnit.MILLISECONDS, owner).toCompletableFuture()
                            .completeOnTimeout(OptionalLong.empty(), k, TimeUnit.MILLISECONDS);
                    bound = k <= wait ? ownTimerBound(k) : -1;
                    ours = true;
                }
            }
        } catch (RuntimeException e) {
            violation(how + " by " + ownerKey + " threw at the call: " + e);
            done.complete(null);
            return;
        }
        final long ourBound = bound;
        final boolean oursAtAll = ours;
        f.whenComplete((v, e) -> {
            long end = System.nanoTime();
            Throwable x = e == null ? null : unwrap(e);
            long token = -1;
            if (x == null) {
                if (v instanceof Long l) {
                    token = l;
                } else if (v instanceof OptionalLong o && o.isPresent()) {
                    token = o.getAsLong();
                }
            }
            boolean near = nearRestart(start, end);
            boolean mayBeOurs = oursAtAll && token < 0;
            abandoned.put(ownerKey, mayBeOurs);
            long b = ourBound >= 0 ? ourBound : boundNs(wait, token < 0 && x == null && !mayBeOurs && !near, afterAbandoned);
            if (ourBound >= 0 && !mayBeOurs) {
                b = Math.max(ourBound, boundNs(wait, false, afterAbandoned));
            }
            final long b0 = b;
            late(start, end, b, () -> how + " by " + ownerKey + " (started t+" + us(start - t0) + " us) completed after "
                    + us(end - start) + " us, past its bound " + us(b0) + " us; restarts " + describeRestarts());
            if (token >= 0) {
                final long tk = token;
                try {
                    sections.execute(() -> fencedAsyncSection(fn, lock, owner, ownerKey, how, start, end, tk, raw, done));
                } catch (RuntimeException rejected) {
                    done.complete(null);
                }
                return;
            }
            if (x != null && !(x instanceof TimeoutException) && !(x instanceof CancellationException)) {
                fencedCallFailed(how + " by " + ownerKey, start, end, x);
                done.complete(null);
                return;
            }
            op(x != null ? "gave up (" + x.getClass().getSimpleName() + ")" : "gave up (empty)");
            if (x == null && kind == 2 && end - start < wait * MS) {
                violation(how + " by " + ownerKey + " completed empty after " + us(end - start) + " us, before its wait time");
            }
            if (depth < 3 && !stop && ThreadLocalRandom.current().nextBoolean()) {
                op("follow-up from a give-up callback");
                fencedAsyncOp(baton, names, raw, sections, cancels, owner, depth + 1, done);
            } else {
                done.complete(null);
            }
        });
    }

    private void fencedAsyncSection(FencedName fn, BatonFencedLock lock, long owner, String ownerKey, String how,
                                    long start, long returned, long token, RedisCommands<String, String> raw,
                                    CompletableFuture<Void> done) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        Grant g = fencedEnter(fn, ownerKey, how, start, returned, token);
        try {
            fencedInside(fn, g, rnd, raw, () -> {
                if (rnd.nextInt(4) != 0) {
                    return 1;
                }
                OptionalLong re;
                try {
                    re = lock.tryLockAndGetTokenAsync(0, -1, TimeUnit.MILLISECONDS, owner).toCompletableFuture()
                            .get(COMMAND_TIMEOUT_MS * 3, TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException("re-entry failed: " + unwrap(e), unwrap(e));
                }
                check("token on re-entry");
                if (re.isEmpty()) {
                    violation(g.describe(t0) + ": the holder's async re-entry was refused");
                    return 1;
                }
                if (re.getAsLong() != g.token) {
                    violation(g.describe(t0) + ": async re-entry token " + re.getAsLong() + " differs");
                }
                op("re-entry");
                return 2;
            }, () -> {
                try {
                    lock.unlockAsync(owner).toCompletableFuture().get(COMMAND_TIMEOUT_MS * 3, TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    Throwable x = unwrap(e);
                    throw x instanceof RuntimeException re ? re : new IllegalStateException(x);
                }
            });
        } finally {
            fencedExit(fn, g);
        }
        fencedUnlock(g, () -> lock.unlockAsync(owner).toCompletableFuture());
        done.complete(null);
    }

    private void judgeFenced(FencedName[] names) {
        // Overlapping holders: excused only as a pair across a restart (the first's loss reported).
        for (Grant[] pair : overlaps) {
            Grant first = pair[0];
            Grant second = pair[1];
            boolean excused = false;
            // Either may be the one granted before the data loss (a slow thread can enter late).
            for (long[] r : restarts) {
                if (first.start < r[1] && second.returned > r[0] && first.lost
                        || second.start < r[1] && first.returned > r[0] && second.lost) {
                    excused = true;
                    break;
                }
            }
            // A fixed lease that ran out during a stall: the next holder was granted after its end.
            if (first.lost && first.stallLeaseMs > 0 && second.returned > first.start + first.stallLeaseMs * MS
                    || second.lost && second.stallLeaseMs > 0 && first.returned > second.start + second.stallLeaseMs * MS) {
                excused = true;
            }
            check("overlap judged");
            if (excused) {
                op("overlap excused (the first holder's lease ran out or was lost in a restart, and it was told)");
            } else {
                violation("two holders of fenced lock " + first.name + ": " + second.describe(t0) + " entered while "
                        + first.describe(t0) + " was inside; restarts " + describeRestarts());
            }
        }
        // Tokens: a grant whose call started after another grant's call returned has a larger token.
        Map<String, List<Grant>> byName = new HashMap<>();
        for (Grant g : grants) {
            byName.computeIfAbsent(g.name, k -> new ArrayList<>()).add(g);
        }
        long crossRestart = 0;
        for (List<Grant> list : byName.values()) {
            List<Grant> byReturn = new ArrayList<>(list);
            byReturn.sort(Comparator.comparingLong(g -> g.returned));
            long[] returnedAt = new long[byReturn.size()];
            int[] argMax = new int[byReturn.size()];
            for (int i = 0; i < byReturn.size(); i++) {
                returnedAt[i] = byReturn.get(i).returned;
                argMax[i] = i == 0 || byReturn.get(i).token > byReturn.get(argMax[i - 1]).token ? i : argMax[i - 1];
            }
            for (Grant b : list) {
                int idx = lastBefore(returnedAt, b.start);
                if (idx < 0) {
                    continue;
                }
                Grant a = byReturn.get(argMax[idx]);
                check("token order");
                for (long[] r : restarts) {
                    if (a.returned < r[0] && r[1] < b.returned) {
                        crossRestart++;
                        break;
                    }
                }
                if (a.token >= b.token) {
                    violation("fencing token did not rise: " + b.describe(t0) + " started after " + a.describe(t0)
                            + " was granted, yet its token is not larger; restarts " + describeRestarts());
                }
            }
        }
        checks.computeIfAbsent("token order across a restart", k -> new AtomicLong()).addAndGet(crossRestart);
        // The storage: no two accepted writes overlap; a holder that kept its lease never had a write refused.
        for (FencedName fn : names) {
            List<long[]> acc;
            synchronized (fn.storage) {
                acc = new ArrayList<>(fn.storage.accepted);
            }
            acc.sort(Comparator.comparingLong(a -> a[0]));
            for (int i = 1; i < acc.size(); i++) {
                check("accepted writes disjoint");
                if (acc.get(i)[0] < acc.get(i - 1)[1]) {
                    violation("the storage of " + fn.name + " accepted two overlapping writes: tokens " + acc.get(i - 1)[2]
                            + " and " + acc.get(i)[2]);
                }
            }
        }
        for (Grant g : grants) {
            if (g.writesRefused > 0) {
                check("refused write judged");
                if (!g.lost) {
                    violation("the storage refused " + g.writesRefused + " write(s) of " + g.describe(t0)
                            + ", whose lease was never reported lost (a token not above an earlier holder's)");
                } else {
                    op("stale holder's write refused");
                }
            }
        }
    }

    /** The index of the last of {@code sorted} (ascending) below {@code t}, or -1. */
    private static int lastBefore(long[] sorted, long t) {
        int lo = 0;
        int hi = sorted.length - 1;
        int idx = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (sorted[mid] < t) {
                idx = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return idx;
    }

    /**
     * The storm's threads, not started: on each client {@link #BLOCKING_PER_CLIENT} blocking
     * workers (added to {@code workers}, so the interrupter can reach them) and
     * {@link #ASYNC_PER_CLIENT} async drivers.
     */
    private static List<Thread> workerThreads(List<Baton> clients, List<Worker> workers, String prefix,
                                              java.util.function.BiFunction<Baton, Worker, Runnable> blocking,
                                              java.util.function.Function<Baton, Runnable> async) {
        List<Thread> threads = new ArrayList<>();
        for (int ci = 0; ci < clients.size(); ci++) {
            Baton b = clients.get(ci);
            for (int i = 0; i < BLOCKING_PER_CLIENT; i++) {
                Worker w = new Worker();
                workers.add(w);
                Thread t = new Thread(blocking.apply(b, w), prefix + "-c" + ci + "-t" + i);
                w.thread = t;
                threads.add(t);
            }
            for (int i = 0; i < ASYNC_PER_CLIENT; i++) {
                threads.add(new Thread(async.apply(b), prefix + "-c" + ci + "-async" + i));
            }
        }
        return threads;
    }

    /** At the end, no client counts a lease. */
    private void noLeasesLeft(List<Baton> clients) {
        for (Baton b : clients) {
            check("end state");
            if (b.leasesHeld() != 0) {
                violation("at the end, client " + b.clientId() + " leasesHeld()=" + b.leasesHeld() + ": " + b.heldLeases());
            }
        }
    }
}
