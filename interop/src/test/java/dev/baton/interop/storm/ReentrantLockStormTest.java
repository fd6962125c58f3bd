package dev.baton.interop.storm;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.LockHold;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Storm written blind (public API and docs only) on the plain reentrant {@code baton.lock(name)}: three
 * clients on one Redis; H reaches it through a {@link TcpProxy} that blackholes it now and then (150-600
 * ms, mostly aimed at H's running scoped work, then at least H's watchdog W + 200 ms clear). Promises:
 * <ul>
 *   <li><b>Scoped work against a competitor</b> ({@code storm-rl-scoped}: H's {@code withLock} polling
 *       {@code remaining()} or {@code checkValid()} every ms, {@code withLockAsync} with and without an owner id,
 *       its stage polled; C's {@code tryLock()} every 0.2 ms around blackholes). guarantees.md, "Against a
 *       competitor": "the holder's work is stopped strictly before the send of the competitor's attempt that was
 *       granted ... and the stop comes within 20 ms of the end the scope claimed"; LeaseScope.remaining(): "How
 *       much longer the lease is known to be held". Checked: no grant of C returns before the end that a
 *       {@code remaining()} (or a passing {@code checkValid()}) of the running work claimed (strict); no blocking
 *       work runs on and no async stage is uncancelled when a grant of C returns; the stop is seen within 20 ms
 *       (+ margin) of the claimed end; guarantees.md "by the end of that validity ... (bound W + 300 ms), not
 *       before half of it after a pause or Redis going down" (a blackhole of H taken as Redis paused for H); no
 *       stop without a blackhole ("confirmed renewals keep a work's scope valid"); "withLock then throws
 *       LeaseLostException with the work's exception as its cause and the thread's interrupt status as it was";
 *       BatonLock: checkValid()'s own exception "is thrown as it is"; withLockAsync: "its scope is no longer
 *       valid from then on, and the returned stage completes exceptionally with LeaseLostException", the work is
 *       "never [called] on one of Baton's I/O or timer threads"; a normal end leaves no field (released).</li>
 *   <li><b>Exclusion</b>, guarantees.md "At most one owner holds a lock at a time": holds recorded in the JVM
 *       never overlap across owners (a fixed lease's hold ends at its call's start + its lease), and a probe never
 *       sees two fields in a lock's hash.</li>
 *   <li><b>Re-entry</b> ({@code storm-rl-plain}, threads of X and C): data-layout.md "field = owner id, value =
 *       hold count"; {@code getHoldCount()} / {@code isHeldByCurrentThread()} "as Redis sees it" match the calls
 *       made and HGETALL at every step up and down.</li>
 *   <li><b>Fixed leases</b>: "a fixed lease is never renewed and expires at its end; the client stops counting it
 *       in leasesHeld() as soon as it has run out (checked at its lease + 300 ms) and keeps no entry for it, and
 *       its owner's unlock reports the loss once"; an unlock inside the lease reports no loss; {@code
 *       updateLease(d)} "sets a fixed-lease hold to expire d from now" (PTTL), "refuses a hold that is not the
 *       caller's (IllegalMonitorStateException) or that the watchdog renews (IllegalStateException), reports a
 *       lease already lost (LeaseLostException)". LockHold: "once it has [released], calling it again does
 *       nothing"; "it may be closed from another thread".</li>
 *   <li><b>Give-ups</b> (async owners of X and C): "Completing an acquisition's future before it ends, in any way
 *       (cancel, orTimeout, completeOnTimeout, complete), abandons the wait: it leaves nothing held, and a grant
 *       that raced the completion is given back"; a new acquisition by the owner, "even one started from a
 *       callback of the old future, starts only once that one's clean-up is on the wire": the next call starts in
 *       the given-up future's callback, its grant must show one hold in Redis, its unlock must not throw.
 *       {@code withLockAsync} given up by its caller "ends the work as a loss would (its stage cancelled, its
 *       scope no longer valid ...) and the lock is released within 300 ms". Who won is read from the future's
 *       value or exception only.</li>
 *   <li><b>forceUnlock</b> ({@code storm-rl-force}): "Deletes the lock whoever holds it and wakes its waiters. The
 *       former holder learns of it through LeaseLostException on its next unlock"; "A release wakes a waiter
 *       within 1 s"; "a re-entry that finds the owner's holds gone from Redis ... throws LeaseLostException at
 *       once too and holds nothing".</li>
 *   <li><b>Bounds</b>, with guarantees.md's margin rule ("checked at d plus 20 % of d or 300 ms, whichever is
 *       larger"): "tryLock(t) that cannot get the lock returns false at t, not before"; a wait of zero "within the
 *       command timeout + 150 ms"; a timed wait within "its wait + the command timeout + 150 ms"; "One more T for
 *       a lock call that follows the same owner's abandoned call". An overrun is excused only as long as a
 *       JVM/machine stall seen by a thread that parks 2 ms at a time.</li>
 *   <li>At the end nothing is held, listed by {@code heldLeases()} or subscribed.</li>
 * </ul>
 * {@code -Dbaton.storm.seconds=N} sets the length (2 s by default).
 */
class ReentrantLockStormTest {

    private static final long MS = 1_000_000L;
    private static final long WH = 400;       // H's watchdog timeout, ms
    private static final long TH = 500;       // H's command timeout, ms
    private static final long W = 5_000;      // C's and X's watchdog timeout, ms
    private static final long T = 1_000;      // C's and X's command timeout, ms
    private static final String A = "storm-rl-scoped";
    private static final String B = "storm-rl-plain";
    private static final String F = "storm-rl-force";
    private static final long MAX_ROUNDS = 1_000_000;
    private static final int MAX_RECORDS = 1_000_000;

    private final long t0 = System.nanoTime();
    private volatile boolean stop;
    private volatile RedisCommands<String, String> raw;
    private final AtomicLong violations = new AtomicLong();
    private final ConcurrentLinkedQueue<String> described = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> stats = new ConcurrentHashMap<>();
    private final CopyOnWriteArrayList<long[]> stalls = new CopyOnWriteArrayList<>();
    private final CopyOnWriteArrayList<long[]> blackholes = new CopyOnWriteArrayList<>();
    private volatile boolean blackholeOn;
    private volatile long lastBlackholeStart;
    private volatile long hWorkUntil;
    private final ExecutorService sections = Executors.newFixedThreadPool(3, r -> daemon(r, "storm-rl-section"));
    private final ExecutorService pollers = Executors.newFixedThreadPool(4, r -> daemon(r, "storm-rl-poller"));
    private final ScheduledExecutorService timers = Executors.newScheduledThreadPool(1, r -> daemon(r, "storm-rl-timer"));
    private final ConcurrentLinkedQueue<Scoped> scoped = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Hold> competitorHolds = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Hold> plainHolds = new ConcurrentLinkedQueue<>();
    private final ConcurrentHashMap<String, Boolean> abandoned = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Hold> givenUpWorks = new ConcurrentLinkedQueue<>(); // [work called, stage ended]
    private final List<Long> forceWakes = Collections.synchronizedList(new ArrayList<>());

    /** A hold as its owner saw it: from the grant's return to where it surely still held. */
    record Hold(String owner, String what, long start, long grant, long end) {
    }

    /** One scoped work of H: its claims (the furthest end a remaining() or checkValid() vouched for) and stop. */
    static final class Scoped {
        final String what;
        final long dur;
        final boolean async;
        final long callStart = System.nanoTime();
        volatile long grant, claimEnd, stopSeen, cancelAt, workEnd, endAt;
        volatile String stopHow, outcome = "?", workThread;
        volatile Throwable thrown;
        volatile CompletableFuture<String> stage;
        Scoped(String what, long dur) {
            this.what = what;
            this.dur = dur;
            this.async = what.startsWith("withLockAsync");
        }
        void stopped(long at, String how) {
            if (stopSeen == 0) {
                stopSeen = at;
                stopHow = how;
            }
        }
        long stop() { // an async work is stopped by its stage's cancel
            return async && cancelAt != 0 ? cancelAt : stopSeen;
        }
        long releaseFloor() { // the release cannot come before the work returned or its stage ended
            long f = Math.min(workEnd == 0 ? Long.MAX_VALUE : workEnd, cancelAt == 0 ? Long.MAX_VALUE : cancelAt);
            return f == Long.MAX_VALUE ? endAt : f;
        }
    }

    // ------------------------------------------------------------------ helpers

    private void violation(String what) {
        violations.incrementAndGet();
        if (described.size() < 10) {
            described.add("[t+" + (System.nanoTime() - t0) / MS + " ms, " + Thread.currentThread().getName() + "] " + what);
        }
    }

    /** Counts a check; a violation when {@code ok} is false. */
    private void expect(boolean ok, String check, Supplier<String> what) {
        stat("check: " + check);
        if (!ok) {
            violation(what.get());
        }
    }

    private void stat(String what) {
        stats.computeIfAbsent(what, k -> new AtomicLong()).incrementAndGet();
    }

    private long stat0(String what) {
        AtomicLong v = stats.get(what);
        return v == null ? 0 : v.get();
    }

    private static long us(long nanos) {
        return nanos / 1_000;
    }

    /** The margin rule: a promise of d is checked at d + max(20 % of d, 300 ms). */
    private static long withinNs(long promisedNs) {
        return promisedNs + Math.max(promisedNs / 5, 300 * MS);
    }

    interface Call {
        void run() throws Exception;
    }

    /** What the call threw (unwrapped), or null. */
    private static Throwable failure(Call call) {
        try {
            call.run();
            return null;
        } catch (Throwable e) {
            return unwrap(e);
        }
    }

    private static Throwable unwrap(Throwable e) {
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    private static void park(ThreadLocalRandom rnd, int maxMicros) {
        LockSupport.parkNanos(rnd.nextInt(maxMicros + 1) * 1_000L);
    }

    private static void addHold(ConcurrentLinkedQueue<Hold> q, Hold h) {
        if (q.size() < MAX_RECORDS) {
            q.add(h);
        }
    }

    private long stalledWithin(long from, long to) {
        long total = 0;
        for (long[] g : stalls) {
            total += Math.max(0, Math.min(to, g[1]) - Math.max(from, g[0]));
        }
        return total;
    }

    /** A call past its bound is a violation unless the JVM/machine was stalled at least that long. */
    private void late(long start, long end, long bound, Supplier<String> what) {
        long over = end - start - bound;
        long stalled = over > 0 ? stalledWithin(start, end) : 0;
        expect(over <= stalled, "bound", () -> what.get() + ": " + us(end - start) + " us, past its bound of " + us(bound)
                + " us (stalls seen: " + us(stalled) + " us)");
    }

    /** guarantees.md: false "at t, not before"; zero: T + 150 ms; else wait + T + 150 ms; + T after a give-up. */
    private void timedCheck(long start, long end, long waitMs, boolean got, boolean afterAbandoned, String what) {
        long extra = afterAbandoned ? T : 0;
        expect(got || waitMs <= 0 || end - start >= (waitMs - 1) * MS, "not before the wait",
                () -> what + " returned false after " + us(end - start) + " us, before its wait of " + waitMs + " ms");
        late(start, end, !got && waitMs > 0 ? withinNs((waitMs + extra) * MS) : withinNs((Math.max(0, waitMs) + T + 150 + extra) * MS),
                () -> what + " returned " + got);
    }

    /** HGETALL must show only {@code field} with {@code count} (not judged if the hold may have expired by the reply). */
    private void countCheck(String name, String field, int count, long aliveUntil, String who) {
        Map<String, String> m = raw.hgetall(name);
        if (aliveUntil == 0 || System.nanoTime() < aliveUntil - 2 * MS) {
            expect(m.size() == 1 && String.valueOf(count).equals(m.get(field)), "hash while held",
                    () -> "HGETALL " + name + " while " + who + " holds it " + count + " time(s) as " + field + ": " + m);
        }
    }

    private static Baton open(String uri, long watchdogMs, long timeoutMs, List<Baton> all, AtomicLong losses) {
        Baton b = Baton.create(BatonOptions.builder().redisUri(uri).watchdogTimeout(Duration.ofMillis(watchdogMs))
                .commandTimeout(Duration.ofMillis(timeoutMs)).leaseLostListener((n, o, r) -> losses.incrementAndGet()).build());
        all.add(b);
        return b;
    }

    // ------------------------------------------------------------------ the test

    @Test
    void scopedWorkFixedLeasesReEntryForceUnlockAndGiveUpsKeepTheirPromises() throws Exception {
        long seconds = Long.getLong("baton.storm.seconds", 2);
        List<Baton> clients = new ArrayList<>();
        AtomicLong losses = new AtomicLong();
        long stormStart = System.nanoTime();
        try (RedisServer server = RedisServer.start(); TcpProxy proxy = TcpProxy.start(server.host(), server.port())) {
            RedisClient rawClient = RedisClient.create(server.uri());
            try (StatefulRedisConnection<String, String> c1 = rawClient.connect();
                 StatefulRedisConnection<String, String> c2 = rawClient.connect()) {
                c1.setTimeout(Duration.ofSeconds(5));
                c2.setTimeout(Duration.ofSeconds(5));
                raw = c1.sync();
                Baton h = open(proxy.uri(), WH, TH, clients, losses);
                Baton c = open(server.uri(), W, T, clients, losses);
                Baton x = open(server.uri(), W, T, clients, losses);
                daemon(this::tick, "storm-rl-stall-ticker").start();
                stormStart = System.nanoTime();
                long deadline = stormStart + TimeUnit.SECONDS.toNanos(seconds);
                List<Thread> threads = new ArrayList<>(List.of(
                        new Thread(() -> blackholeLoop(proxy, deadline), "storm-rl-blackhole"),
                        new Thread(() -> scopedLoop(h, deadline), "storm-rl-scoped-h"),
                        new Thread(() -> competeLoop(c, deadline), "storm-rl-compete-c"),
                        new Thread(() -> forceLoop(x, c, deadline), "storm-rl-force"),
                        new Thread(() -> probeLoop(c2.sync(), deadline), "storm-rl-probe")));
                for (Baton b : List.of(x, x, c)) {
                    threads.add(new Thread(() -> plainLoop(b, deadline), "storm-rl-plain-" + threads.size()));
                }
                for (Baton b : List.of(x, c)) {
                    threads.add(new Thread(() -> asyncDriver(b, deadline), "storm-rl-async-" + threads.size()));
                }
                threads.forEach(Thread::start);
                long until = System.currentTimeMillis() + TimeUnit.SECONDS.toMillis(seconds + 40);
                for (Thread t : threads) {
                    t.join(Math.max(1, until - System.currentTimeMillis()));
                    if (t.isAlive()) {
                        StackTraceElement[] st = t.getStackTrace();
                        violation(t.getName() + " did not finish within the storm + 40 s; at " + (st.length > 0 ? st[0] : "?"));
                        stop = true;
                        t.interrupt();
                        t.join(5_000);
                    }
                }
                stop = true;
                proxy.setBlackhole(false);
                endChecks(server, clients);
            } finally {
                stop = true;
                clients.forEach(Baton::close);
                rawClient.shutdown();
            }
        } finally {
            stop = true;
            sections.shutdownNow();
            pollers.shutdownNow();
            timers.shutdownNow();
        }
        judge(seconds, System.nanoTime() - stormStart, losses.get());
    }

    /** Parks 2 ms at a time; a gap over 4 ms is a stall of the JVM or the machine (its excess over 2 ms is counted). */
    private void tick() {
        for (long last = System.nanoTime(); !stop; ) {
            LockSupport.parkNanos(2 * MS);
            long now = System.nanoTime();
            if (now - last > 4 * MS && stalls.size() < 1_000_000) {
                stalls.add(new long[]{last + 2 * MS, now});
            }
            last = now;
        }
    }

    private void endChecks(RedisServer server, List<Baton> clients) {
        LockSupport.parkNanos(withinNs(WH * MS)); // H's last release may have been blackholed: its lease ends within W
        String state;
        for (long until = System.nanoTime() + 3_000 * MS; ; LockSupport.parkNanos(50 * MS)) {
            StringBuilder sb = new StringBuilder();
            for (String n : List.of(A, B, F)) {
                Map<String, String> m = raw.hgetall(n);
                long subs = server.subscribers("redisson_lock__channel:{" + n + "}");
                sb.append(m.isEmpty() && subs == 0 ? "" : " " + n + "=" + m + " subscribers=" + subs);
            }
            for (Baton b : clients) {
                sb.append(b.leasesHeld() == 0 && b.heldLeases().isEmpty() ? "" : " client " + b.clientId() + " leases=" + b.heldLeases());
            }
            state = sb.toString();
            if (state.isEmpty() || System.nanoTime() > until) {
                break;
            }
        }
        String s = state;
        expect(s.isEmpty(), "end state", () -> "at the end (W + margin + 3 s after the storm) still held, listed or subscribed:" + s);
    }

    private void blackholeLoop(TcpProxy proxy, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        long gap = 200 + rnd.nextInt(200);
        try {
            for (int n = 0; n < 100_000 && !stop; n++) {
                LockSupport.parkNanos(gap * MS);
                boolean aim = rnd.nextInt(4) != 0; // at a running work with at least W to go, for up to 1.5 s
                for (int i = 0; aim && i < 300 && hWorkUntil - System.nanoTime() < WH * MS; i++) {
                    LockSupport.parkNanos(5 * MS);
                }
                long d = 150 + rnd.nextInt(451);
                if (stop || System.nanoTime() + d * MS > deadline) {
                    return;
                }
                long[] w = {System.nanoTime(), Long.MAX_VALUE};
                lastBlackholeStart = w[0];
                blackholes.add(w);
                blackholeOn = true;
                proxy.setBlackhole(true);
                LockSupport.parkNanos(d * MS);
                proxy.setBlackhole(false);
                blackholeOn = false;
                w[1] = System.nanoTime();
                stat("blackholes");
                gap = WH + 200 + rnd.nextInt(400);
            }
        } finally {
            proxy.setBlackhole(false);
            blackholeOn = false;
        }
    }

    // ------------------------------------------------------------------ A: H's scoped work, C the competitor

    private void scopedLoop(Baton h, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonLock lock = h.lock(A);
        String field = h.clientId() + ":" + Thread.currentThread().getId();
        for (long n = 0; n < MAX_ROUNDS && !stop && System.nanoTime() < deadline; n++) {
            int p = rnd.nextInt(100);
            long dur = p < 30 ? 1 + rnd.nextInt(60) : p < 60 ? 60 + rnd.nextInt((int) WH) : WH + rnd.nextInt((int) (2 * WH));
            int variant = rnd.nextInt(4);
            Scoped s = new Scoped(List.of("withLock(remaining() polled, sleep(1))", "withLock(checkValid() polled, park 1 ms)",
                    "withLockAsync(stage polled)", "withLockAsync(owner, stage polled)").get(variant) + " for " + dur + " ms", dur);
            stat("rounds");
            if (variant < 2) {
                blockingScoped(lock, s, variant == 0, field);
            } else {
                asyncScoped(lock, s, variant == 3, h.clientId());
            }
            if (s.grant != 0 && scoped.size() < MAX_RECORDS) {
                scoped.add(s);
            }
            LockSupport.parkNanos(rnd.nextInt(8) * MS);
        }
    }

    private void blockingScoped(BatonLock lock, Scoped s, boolean sleeper, String field) {
        try {
            String v = lock.withLock(scope -> {
                s.grant = System.nanoTime();
                hWorkUntil = s.grant + s.dur * MS;
                stat("grants");
                try {
                    while (true) {
                        long tb = System.nanoTime();
                        long rem = sleeper ? scope.remaining().toNanos() : 1;
                        try {
                            scope.checkValid();
                        } catch (LeaseLostException e) {
                            s.stopped(tb, "checkValid() threw");
                            s.thrown = e;
                            throw e;
                        }
                        if (rem > 0) {
                            s.claimEnd = Math.max(s.claimEnd, sleeper ? tb + rem - MS : tb);
                        }
                        if (tb >= s.grant + s.dur * MS) {
                            return "done";
                        }
                        if (sleeper) {
                            try {
                                Thread.sleep(1);
                            } catch (InterruptedException e) {
                                s.stopped(System.nanoTime(), "interrupted in sleep");
                                s.thrown = e;
                                throw e;
                            }
                        } else {
                            LockSupport.parkNanos(MS);
                            if (Thread.currentThread().isInterrupted()) {
                                s.stopped(System.nanoTime(), "interrupt flag seen");
                                return "saw the interrupt";
                            }
                        }
                    }
                } finally {
                    s.workEnd = System.nanoTime();
                }
            });
            s.endAt = System.nanoTime();
            s.outcome = "returned " + v;
            expect(s.stopSeen == 0, "no normal return after a stop", () -> s.what + ": its work saw a stop (" + s.stopHow
                    + ") yet withLock returned normally");
            String left = raw.hget(A, field);
            expect(left == null, "released at return", () -> s.what + ": withLock returned normally, yet Redis still has the hold " + left);
        } catch (LeaseLostException e) {
            s.endAt = System.nanoTime();
            s.outcome = "LeaseLostException";
            expect(!(s.thrown instanceof LeaseLostException) || e == s.thrown, "LeaseLostException's cause",
                    () -> s.what + ": checkValid()'s own LeaseLostException was not thrown as it is: " + e);
            expect(!(s.thrown instanceof InterruptedException) || e.getCause() == s.thrown, "LeaseLostException's cause",
                    () -> s.what + ": LeaseLostException's cause is " + e.getCause() + ", not the work's InterruptedException");
        } catch (RedisUnavailableException e) {
            s.endAt = System.nanoTime();
            s.outcome = "RedisUnavailableException";
            rueCheck(s, e);
            if (s.grant != 0) {
                finishUnlock(lock, s.what); // "the hold is kept, and unlock() from the same thread completes it"
            }
        } catch (InterruptedException | RuntimeException e) {
            s.endAt = System.nanoTime();
            s.outcome = e.toString();
            violation(s.what + ": threw " + e);
        }
        boolean interrupted = Thread.interrupted();
        expect(!interrupted, "interrupt status after withLock", () -> s.what + ": the interrupt status was left set (" + s.outcome + ")");
    }

    private void asyncScoped(BatonLock lock, Scoped s, boolean withOwner, String clientId) {
        long owner = Baton.newOwnerId();
        long limit = s.dur + 3 * WH + 3 * TH + 2_000;
        Function<LeaseScope, CompletionStage<String>> work = scope -> {
            s.grant = System.nanoTime();
            hWorkUntil = s.grant + s.dur * MS;
            stat("grants");
            s.workThread = Thread.currentThread().getName();
            CompletableFuture<String> stage = new CompletableFuture<>();
            s.stage = stage;
            stage.whenComplete((v, e) -> s.cancelAt = stage.isCancelled() ? System.nanoTime() : 0);
            pollers.execute(() -> pollAsync(scope, stage, s));
            return stage;
        };
        CompletableFuture<String> f = (withOwner ? lock.withLockAsync(owner, work) : lock.withLockAsync(work)).toCompletableFuture();
        try {
            f.get(limit, TimeUnit.MILLISECONDS);
            s.endAt = System.nanoTime();
            s.outcome = "completed";
            expect(s.cancelAt == 0, "result only if not cancelled", () -> s.what + ": its stage was cancelled, yet it completed with a result");
            expect(!withOwner || raw.hget(A, clientId + ":" + owner) == null, "released at completion",
                    () -> s.what + ": completed with its result, yet Redis still has the owner's hold");
        } catch (ExecutionException e) {
            s.endAt = System.nanoTime();
            Throwable x = unwrap(e);
            s.outcome = x.getClass().getSimpleName();
            if (x instanceof RedisUnavailableException) {
                rueCheck(s, x);
            }
            expect(x instanceof LeaseLostException || (x instanceof RedisUnavailableException && s.cancelAt == 0), "async outcome",
                    () -> s.what + ": ended with " + x + (s.cancelAt != 0 ? " though its stage was cancelled (a loss)" : ""));
            expect(!(x instanceof LeaseLostException) || s.workEnd != 0 || s.stage == null || s.stage.isCancelled(), "stage cancelled",
                    () -> s.what + ": ended with LeaseLostException but its work's stage was not cancelled");
        } catch (TimeoutException e) {
            s.endAt = System.nanoTime();
            violation(s.what + ": the returned stage was still pending " + limit + " ms after the call");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        String t = s.workThread;
        expect(t == null || !(t.startsWith("lettuce-") || t.startsWith("baton-")), "async work's thread",
                () -> s.what + ": the work was called on " + t);
    }

    private void pollAsync(LeaseScope scope, CompletableFuture<String> stage, Scoped s) {
        long invalidAt = 0;
        for (long giveUp = s.grant + (s.dur + 5_000) * MS; System.nanoTime() < giveUp; LockSupport.parkNanos(MS)) {
            long tb = System.nanoTime();
            if (stage.isCancelled()) {
                s.stopped(tb, "stage cancelled");
                expect(!scope.isValid(), "scope after cancel", () -> s.what + ": scope.isValid() still true after its stage was cancelled");
                return;
            }
            if (invalidAt == 0) {
                long rem = scope.remaining().toNanos();
                if (rem <= 0) {
                    invalidAt = tb;
                    s.stopped(tb, "remaining() zero");
                } else {
                    s.claimEnd = Math.max(s.claimEnd, tb + rem - MS);
                    if (tb >= s.grant + s.dur * MS && stage.complete("done")) {
                        s.workEnd = tb;
                        return;
                    }
                }
            } else if (tb - invalidAt > withinNs(20 * MS) + stalledWithin(invalidAt - 100 * MS, tb)) {
                violation(s.what + ": remaining() was zero " + us(tb - invalidAt) + " us ago and its stage is still not cancelled");
                break;
            }
        }
        stage.completeExceptionally(new IllegalStateException("never cancelled"));
    }

    /** H's RedisUnavailableException needs a blackhole in sight (or a stall). */
    private void rueCheck(Scoped s, Throwable e) {
        stat("H: RedisUnavailableException");
        boolean near = blackholes.stream().anyMatch(w -> w[0] <= s.endAt && w[1] >= s.callStart - 2 * TH * MS);
        expect(near || stalledWithin(s.callStart - TH * MS, s.endAt) > 200 * MS, "RedisUnavailableException needs a blackhole",
                () -> s.what + ": " + e + " with no blackhole of its client in sight");
    }

    private void finishUnlock(BatonLock lock, String what) {
        Throwable e = new RedisUnavailableException("not tried", null);
        for (int i = 0; i < 40 && e instanceof RedisUnavailableException; i++, LockSupport.parkNanos(100 * MS)) {
            e = failure(lock::unlock);
        }
        Throwable last = e; // LeaseLostException: its lease ran out meanwhile, H being blackholed
        expect(last == null || last instanceof LeaseLostException, "unconfirmed release completed by unlock()",
                () -> what + ": after an unconfirmed release, unlock() ended with " + last);
    }

    private void competeLoop(Baton c, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonLock lock = c.lock(A);
        String owner = c.clientId() + ":" + Thread.currentThread().getId();
        for (long n = 0; n < MAX_ROUNDS && !stop && System.nanoTime() < deadline; n++) {
            long s0 = System.nanoTime();
            stat("rounds");
            try {
                long wait = rnd.nextInt(10) < 9 ? -1 : rnd.nextInt(300);
                String what = wait < 0 ? "C tryLock()" : "C tryLock(" + wait + " ms)";
                boolean got = wait < 0 ? lock.tryLock() : lock.tryLock(wait, TimeUnit.MILLISECONDS);
                timedCheck(s0, System.nanoTime(), wait, got, false, what + " on " + A);
                if (!got) {
                    boolean hot = blackholeOn || System.nanoTime() - lastBlackholeStart < (WH + 200) * MS;
                    LockSupport.parkNanos(hot ? 200_000 : (1 + rnd.nextInt(3)) * MS);
                    continue;
                }
                long g = System.nanoTime();
                stat("grants");
                park(rnd, 3_000);
                addHold(competitorHolds, new Hold(owner, what, s0, g, System.nanoTime()));
                lock.unlock();
                LockSupport.parkNanos((2 + rnd.nextInt(18)) * MS);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                violation("C on " + A + " (healthy connection, 5 s watchdog) threw " + e);
            }
        }
    }

    // ------------------------------------------------------------------ B: blocking rounds

    private void plainLoop(Baton b, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonLock lock = b.lock(B);
        String field = b.clientId() + ":" + Thread.currentThread().getId();
        String me = Thread.currentThread().getName();
        boolean lastOverrun = false;
        for (long n = 0; n < MAX_ROUNDS && !stop && System.nanoTime() < deadline; n++) {
            int kind = rnd.nextInt(8);
            stat("rounds");
            try {
                if (kind < 4) {
                    reentryRound(lock, field, me, rnd, lastOverrun);
                } else {
                    fixedLeaseRound(b, lock, field, me, rnd, kind - 4);
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException | ExecutionException | TimeoutException e) {
                violation(me + " on " + B + " (healthy connection) threw " + e);
                try {
                    for (int i = 0; i < 5 && lock.isHeldByCurrentThread(); i++) {
                        lock.unlock();
                    }
                } catch (RuntimeException ignored) {
                    // reported already
                }
            }
            lastOverrun = kind == 6;
            LockSupport.parkNanos(rnd.nextInt(4) * MS);
        }
    }

    /**
     * Watchdog holds taken 1-3 times by mixed calls (handles too), counts checked at every step up and down; handles
     * closed twice, some from another thread; updateLease refused on a watchdog hold and without a hold.
     */
    private void reentryRound(BatonLock lock, String field, String me, ThreadLocalRandom rnd, boolean afterOverrun)
            throws InterruptedException, ExecutionException, TimeoutException {
        List<LockHold> handles = new ArrayList<>();
        int held = 0;
        long s0 = System.nanoTime();
        long g = 0;
        for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) {
            int how = rnd.nextInt(5);
            long c0 = System.nanoTime();
            long wait = how == 1 ? -1 : rnd.nextInt(100);
            boolean got = true;
            if (how == 0) {
                lock.lock();
            } else if (how == 3) {
                handles.add(lock.acquire());
            } else if (how == 4) {
                Optional<LockHold> o = lock.tryAcquire(wait, TimeUnit.MILLISECONDS);
                o.ifPresent(handles::add);
                got = o.isPresent();
                timedCheck(c0, System.nanoTime(), wait, got, false, me + " tryAcquire(" + wait + " ms) on " + B);
            } else {
                got = how == 1 ? lock.tryLock() : lock.tryLock(wait, TimeUnit.MILLISECONDS);
                timedCheck(c0, System.nanoTime(), wait, got, false, me + " tryLock(" + wait + ") on " + B);
            }
            int h0 = held;
            expect(got || held == 0, "holder re-enters", () -> me + ": a timed call by the holder of " + B + " (" + h0 + " holds) did not re-enter");
            if (!got) {
                break;
            }
            held++;
            if (g == 0) {
                g = System.nanoTime();
                stat("grants");
            }
            int hc = lock.getHoldCount();
            int h1 = held;
            expect(hc == held && lock.isHeldByCurrentThread(), "counts", () -> me + ": after " + h1 + " acquisitions of " + B
                    + ", getHoldCount()=" + hc);
            countCheck(B, field, held, 0, me);
        }
        if (held > 0 && rnd.nextInt(4) == 0) {
            Throwable e = failure(() -> lock.updateLease(Duration.ofMillis(500)));
            expect(e instanceof IllegalStateException, "updateLease refused", () -> me + ": updateLease on a watchdog hold ended with " + e);
        }
        park(rnd, 2_000);
        while (held > 0) {
            if (held == 1) {
                addHold(plainHolds, new Hold(field, me + " re-entry round", s0, g, System.nanoTime()));
            }
            if (handles.size() == held || (!handles.isEmpty() && rnd.nextBoolean())) {
                LockHold hold = handles.remove(handles.size() - 1);
                Runnable closeTwice = () -> {
                    hold.close();
                    hold.close(); // "calling it again does nothing"
                    stat("check: second close does nothing");
                };
                if (rnd.nextBoolean()) {
                    sections.submit(closeTwice).get(10, TimeUnit.SECONDS); // "it may be closed from another thread"
                } else {
                    closeTwice.run();
                }
            } else {
                lock.unlock();
            }
            held--;
            int hc = lock.getHoldCount();
            int h1 = held;
            expect(hc == held && lock.isHeldByCurrentThread() == (held > 0), "counts",
                    () -> me + ": after a release of " + B + ", " + h1 + " holds left but getHoldCount()=" + hc);
            if (held > 0) {
                countCheck(B, field, held, 0, me);
            } else {
                expect(raw.hget(B, field) == null, "released", () -> me + ": after its last release of " + B + ", Redis still has its field");
            }
        }
        if (!afterOverrun && rnd.nextInt(4) == 0) { // its last hold was released cleanly: not a loss
            Throwable e = failure(() -> lock.updateLease(Duration.ofMillis(500)));
            expect(e instanceof IllegalMonitorStateException && !(e instanceof LeaseLostException), "updateLease refused",
                    () -> me + ": updateLease without holding " + B + " ended with " + e);
        }
    }

    /**
     * A fixed lease, taken by lock, tryLock or a handle: 0, 1 released well inside it; 2 held past it (no entry at
     * lease + 300 ms, the loss reported once); 3 extended by updateLease past its first end.
     */
    private void fixedLeaseRound(Baton b, BatonLock lock, String field, String me, ThreadLocalRandom rnd, int mode)
            throws InterruptedException {
        long lease = mode == 2 ? 100 + rnd.nextInt(200) : mode == 3 ? 150 + rnd.nextInt(100) : 300 + rnd.nextInt(300);
        long wait = rnd.nextInt(150);
        int how = mode == 3 ? 0 : rnd.nextInt(mode == 2 ? 2 : 4);
        String what = me + " " + List.of("lock(", "tryLock(" + wait + ", ", "acquire(", "tryAcquire(" + wait + ", ").get(how) + lease + " ms)";
        long s0 = System.nanoTime();
        LockHold hold = null;
        if (how == 0 || how == 2) {
            hold = how == 2 ? lock.acquire(lease, TimeUnit.MILLISECONDS) : null;
            if (how == 0) {
                lock.lock(lease, TimeUnit.MILLISECONDS);
            }
        } else {
            Optional<LockHold> o = how == 3 ? lock.tryAcquire(wait, lease, TimeUnit.MILLISECONDS) : Optional.empty();
            boolean got = how == 3 ? o.isPresent() : lock.tryLock(wait, lease, TimeUnit.MILLISECONDS);
            timedCheck(s0, System.nanoTime(), wait, got, false, what + " on " + B);
            if (!got) {
                return;
            }
            hold = o.orElse(null);
        }
        long g = System.nanoTime();
        stat("grants");
        long aliveUntil = s0 + lease * MS; // Redis set the lease after the call began
        if (mode == 2) {
            stat("fixed leases overrun");
            addHold(plainHolds, new Hold(field, what + " held past its lease", s0, g, aliveUntil));
            LockSupport.parkNanos(g + (lease + 300) * MS - System.nanoTime() + rnd.nextInt(60) * MS);
            expect(b.heldLeases().stream().noneMatch(l -> l.name().equals(B) && l.ownerId().equals(field))
                    || stalledWithin(g, System.nanoTime()) > 100 * MS, "no entry after the lease", () -> what
                    + ": heldLeases() still lists it " + (System.nanoTime() - g) / MS + " ms after the grant");
            boolean update = rnd.nextInt(3) == 0;
            Throwable e1 = failure(update ? () -> lock.updateLease(Duration.ofMillis(500)) : lock::unlock);
            expect(e1 instanceof LeaseLostException, "loss reported", () -> what + ": " + (update ? "updateLease" : "unlock")
                    + " after the lease ran out ended with " + e1);
            Throwable e2 = failure(lock::unlock); // after updateLease's report either form; after unlock's, "reports the loss once"
            expect(e2 instanceof IllegalMonitorStateException && (update || !(e2 instanceof LeaseLostException)), "loss reported once",
                    () -> what + ": the unlock after the loss was reported ended with " + e2);
            return;
        }
        countCheck(B, field, 1, aliveUntil, what);
        long pttl = raw.pttl(B);
        expect(System.nanoTime() > aliveUntil - 2 * MS || (pttl > 0 && pttl <= lease), "PTTL", () -> what + ": PTTL is " + pttl + " ms");
        if (mode == 3) {
            long lease2 = 500 + rnd.nextInt(300);
            long u0 = System.nanoTime();
            Throwable e = u0 > aliveUntil - 30 * MS ? null : failure(() -> lock.updateLease(Duration.ofMillis(lease2)));
            if (u0 > aliveUntil - 30 * MS || e != null) { // too close to its end to judge, or refused
                long a = aliveUntil;
                expect(e == null || System.nanoTime() > a - 2 * MS, "updateLease", () -> what + ": updateLease inside the lease: " + e);
                failure(lock::unlock);
                return;
            }
            long pttl2 = raw.pttl(B);
            long r1 = System.nanoTime();
            expect(pttl2 <= lease2 && pttl2 >= lease2 - (r1 - u0) / MS - 2, "updateLease", () -> what + ": after updateLease("
                    + lease2 + " ms), PTTL is " + pttl2 + " ms, " + (r1 - u0) / MS + " ms later");
            aliveUntil = u0 + lease2 * MS;
            LockSupport.parkNanos(s0 + (lease + 50) * MS - System.nanoTime());
            countCheck(B, field, 1, aliveUntil, what + " past its first lease, after updateLease");
        } else {
            LockSupport.parkNanos(rnd.nextInt((int) (lease / 3)) * MS);
        }
        addHold(plainHolds, new Hold(field, what, s0, g, Math.min(System.nanoTime(), aliveUntil)));
        LockHold hd = hold;
        Throwable e = failure(hd == null ? lock::unlock : () -> {
            hd.close();
            hd.close();
        });
        long a = aliveUntil;
        expect(e == null || (e instanceof LeaseLostException && System.nanoTime() > a - 2 * MS), "no loss inside the lease",
                () -> what + ": its release inside the lease ended with " + e);
    }

    // ------------------------------------------------------------------ B: asynchronous owners and their give-ups

    private void asyncDriver(Baton b, long deadline) {
        for (long n = 0; n < MAX_ROUNDS && !stop && System.nanoTime() < deadline; n++) {
            CompletableFuture<Void> done = new CompletableFuture<>();
            long owner = Baton.newOwnerId();
            asyncOp(b, owner, 0, false, done);
            try {
                done.get(30, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                violation("async owner " + owner + " of " + b.clientId() + ": an episode (at most 4 bounded calls) lasted 30 s");
                return;
            } catch (InterruptedException e) {
                return;
            } catch (ExecutionException e) {
                violation("async episode failed: " + e.getCause());
            }
        }
    }

    /** One call of an owner; when it was given up, the owner's next call starts inside its callback. */
    private void asyncOp(Baton b, long owner, int depth, boolean afterScoped, CompletableFuture<Void> done) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonLock lock = b.lock(B);
        String field = b.clientId() + ":" + owner;
        int kind = rnd.nextInt(6);
        long k = 1 + rnd.nextInt(40);
        long wait = rnd.nextInt(120);
        String what = (depth > 0 ? "follow-up " : "") + List.of("lockAsync() cancelled at " + k + " ms",
                "lockAsync().orTimeout(" + k + " ms)", "tryLockAsync(" + wait + " ms).completeOnTimeout(false, " + k + " ms)",
                "tryLockAsync(" + wait + " ms, 5 s lease), complete(false) at " + k + " ms", "tryLockAsync(" + wait + " ms)",
                "withLockAsync(owner) given up at " + k + " ms").get(kind) + " on " + B;
        stat("rounds");
        if (kind == 5) {
            scopedGiveUp(b, lock, field, owner, k, what, depth, done);
            return;
        }
        boolean afterAbandoned = abandoned.getOrDefault(field, false);
        long start = System.nanoTime();
        CompletableFuture<?> f;
        if (kind == 0) {
            CompletableFuture<Void> g = lock.lockAsync(owner).toCompletableFuture();
            timers.schedule(() -> g.cancel(true), k, TimeUnit.MILLISECONDS);
            f = g;
        } else if (kind == 1) {
            f = lock.lockAsync(owner).toCompletableFuture().orTimeout(k, TimeUnit.MILLISECONDS);
        } else if (kind == 2) {
            f = lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, owner).toCompletableFuture().completeOnTimeout(false, k, TimeUnit.MILLISECONDS);
        } else if (kind == 3) {
            CompletableFuture<Boolean> g = lock.tryLockAsync(wait, 5_000, TimeUnit.MILLISECONDS, owner).toCompletableFuture();
            timers.schedule(() -> g.complete(false), k, TimeUnit.MILLISECONDS);
            f = g;
        } else {
            f = lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, owner).toCompletableFuture();
        }
        f.whenComplete((v, e) -> {
            long end = System.nanoTime();
            Throwable x = e == null ? null : unwrap(e);
            boolean granted = x == null && (kind < 2 || Boolean.TRUE.equals(v));
            boolean mayBeOurs = kind != 4 && !granted; // a false, a timeout or a cancel may be our own give-up
            abandoned.put(field, mayBeOurs);
            if (mayBeOurs) {
                stat("give-ups");
                late(start, end, withinNs((k + T + 150 + (afterAbandoned ? T : 0)) * MS), () -> what + " (a hang)");
            } else if (kind >= 2) {
                timedCheck(start, end, wait, granted, afterAbandoned, what);
            }
            expect(x == null || x instanceof TimeoutException || x instanceof CancellationException, "async outcome",
                    () -> what + " ended with " + x + " on a healthy Redis");
            if (granted) {
                stat("grants");
                sections.execute(() -> asyncHeld(b, lock, field, owner, what, start, afterScoped, depth, done));
            } else if (depth < 3 && !stop && ThreadLocalRandom.current().nextInt(10) < 7) {
                stat("follow-ups started in the give-up's callback");
                asyncOp(b, owner, depth + 1, afterScoped, done);
            } else {
                done.complete(null);
            }
        });
    }

    private void asyncHeld(Baton b, BatonLock lock, String field, long owner, String what, long start, boolean afterScoped,
                           int depth, CompletableFuture<Void> done) {
        long g = System.nanoTime();
        Map<String, String> m = raw.hgetall(B);
        String count = m.get(field);
        expect(m.size() == 1 && ("1".equals(count) || (afterScoped && "2".equals(count))), "one hold at an async grant",
                () -> what + " (depth " + depth + ") was granted, but Redis shows " + m + " for owner " + field);
        park(ThreadLocalRandom.current(), 3_000);
        addHold(plainHolds, new Hold(field, what, start, g, System.nanoTime()));
        lock.unlockAsync(owner).whenComplete((v, e) -> {
            expect(e == null, "unlock of a reported hold", () -> what + ": the unlock of a reported hold failed: " + unwrap(e));
            if (depth < 3 && !stop && ThreadLocalRandom.current().nextBoolean()) {
                asyncOp(b, owner, depth + 1, afterScoped, done);
            } else {
                done.complete(null);
            }
        });
    }

    /** withLockAsync(owner) given up by its caller while the work waits (polling its scope) to be cancelled. */
    private void scopedGiveUp(Baton b, BatonLock lock, String field, long owner, long k, String what, int depth,
                              CompletableFuture<Void> done) {
        AtomicLongArray at = new AtomicLongArray(3); // work called, its stage ended, its scope's last isValid() == true
        LeaseScope[] scopes = new LeaseScope[1];
        List<CompletableFuture<String>> inner = new CopyOnWriteArrayList<>();
        CompletableFuture<String> f = lock.withLockAsync(owner, scope -> {
            at.set(0, System.nanoTime());
            scopes[0] = scope;
            String t = Thread.currentThread().getName();
            expect(!t.startsWith("lettuce-") && !t.startsWith("baton-"), "async work's thread", () -> what + ": the work was called on " + t);
            CompletableFuture<String> st = new CompletableFuture<>();
            st.whenComplete((v, e) -> at.set(1, System.nanoTime()));
            inner.add(st);
            pollers.execute(() -> {
                for (long lim = System.nanoTime() + 3_000 * MS; !st.isDone() && System.nanoTime() < lim; LockSupport.parkNanos(MS)) {
                    long tb = System.nanoTime();
                    if (scope.isValid()) {
                        at.set(2, tb);
                    }
                }
                st.complete("not cancelled in 3 s");
            });
            return st;
        }).toCompletableFuture();
        if (ThreadLocalRandom.current().nextBoolean()) {
            f.orTimeout(k, TimeUnit.MILLISECONDS);
        } else {
            timers.schedule(() -> f.cancel(true), k, TimeUnit.MILLISECONDS);
        }
        f.whenComplete((v, e) -> {
            long gaveUp = System.nanoTime();
            Throwable x = e == null ? null : unwrap(e);
            expect(x instanceof TimeoutException || x instanceof CancellationException, "give-up ends the stage",
                    () -> what + ": the caller's give-up did not end the stage; it ended with " + (x == null ? v : x));
            stat("give-ups");
            boolean follow = depth < 3 && !stop && ThreadLocalRandom.current().nextBoolean();
            timers.schedule(() -> sections.execute(() -> {
                boolean excused = stalledWithin(gaveUp, System.nanoTime()) >= 100 * MS;
                long a0 = at.get(0);
                if (a0 != 0) {
                    CompletableFuture<String> st = inner.get(0);
                    expect(excused || st.isCancelled(), "given-up scoped work stopped", () -> what + ": the work ran (called "
                            + us(a0 - gaveUp) + " us after the give-up) but its stage was not cancelled 600 ms after the give-up: " + st);
                    expect(excused || !scopes[0].isValid(), "given-up scoped work stopped",
                            () -> what + ": its scope is still valid 600 ms after the caller gave up");
                    // The work's code may go on while its scope says valid: that is the hold it may count on.
                    if (at.get(1) != 0) {
                        givenUpWorks.add(new Hold(field, what, a0, a0, at.get(1)));
                    }
                    addHold(plainHolds, new Hold(field, what + " (its work, scope valid until +" + us(at.get(2) - a0) + " us; given up at +"
                            + us(gaveUp - a0) + " us, stage ended at +" + us(at.get(1) - a0) + " us)", a0, a0, Math.max(a0, at.get(2))));
                }
                if (!follow) {
                    expect(excused || raw.hget(B, field) == null, "released after the give-up",
                            () -> what + ": 600 ms after the caller gave up, Redis still has the owner's hold");
                    done.complete(null);
                }
            }), withinNs(300 * MS), TimeUnit.NANOSECONDS);
            if (follow) {
                stat("follow-ups started in the give-up's callback");
                asyncOp(b, owner, depth + 1, true, done);
            }
        });
    }

    // ------------------------------------------------------------------ F: forceUnlock rounds; the probe

    private void forceLoop(Baton x, Baton c, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        for (long n = 0; n < MAX_ROUNDS && !stop && System.nanoTime() < deadline; n++) {
            Baton hc = rnd.nextBoolean() ? x : c;
            Baton wc = rnd.nextBoolean() ? x : c;
            long ho = Baton.newOwnerId();
            long wo = Baton.newOwnerId();
            boolean fixed = rnd.nextBoolean();
            String holder = "the forced holder " + (hc == x ? "X:" : "C:") + ho + (fixed ? " (5 s lease)" : " (watchdog)");
            stat("force rounds");
            stat("rounds");
            try {
                (fixed ? hc.lock(F).lockAsync(5_000, TimeUnit.MILLISECONDS, ho) : hc.lock(F).lockAsync(ho)).toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
                stat("grants");
                CompletableFuture<Boolean> wf = null;
                long[] wAt = new long[1];
                if (rnd.nextInt(4) != 0) {
                    wf = wc.lock(F).tryLockAsync(4_000, TimeUnit.MILLISECONDS, wo).toCompletableFuture()
                            .whenComplete((v, e) -> wAt[0] = System.nanoTime()); // get() below waits for this stamp
                    for (long until = System.nanoTime() + 300 * MS; System.nanoTime() < until && wc.lock(F).waiterCount() == 0; ) {
                        LockSupport.parkNanos(2 * MS);
                    }
                    LockSupport.parkNanos(rnd.nextInt(10) * MS);
                }
                long f0 = System.nanoTime();
                boolean was = (rnd.nextBoolean() ? x : c).lock(F).forceUnlock();
                expect(was, "forceUnlock", () -> "forceUnlock() of " + F + " returned false while " + holder + " held it");
                if (wf != null) {
                    boolean got = Boolean.TRUE.equals(wf.get(10, TimeUnit.SECONDS));
                    expect(got, "waiter woken by forceUnlock", () -> "the waiter on " + F + " was not granted in its 4 s after forceUnlock()");
                    if (got) {
                        stat("grants");
                        forceWakes.add(wAt[0] - f0);
                        late(f0, wAt[0], withinNs(1_000 * MS), () -> "a waiter on " + F + " woken by forceUnlock()");
                    }
                }
                boolean reEnter = rnd.nextBoolean();
                if (reEnter) {
                    Throwable r = hc.lock(F).tryLockAsync(ho).toCompletableFuture().handle((v, e) -> e == null ? null : unwrap(e))
                            .get(5, TimeUnit.SECONDS);
                    expect(r instanceof LeaseLostException, "forced re-entry", () -> holder + "'s re-entry of " + F + " ended with "
                            + r + ", not LeaseLostException");
                    long r0 = System.nanoTime(); // its give-back is a clean-up: "landed within 300 ms", seen from another connection
                    while (raw.hget(F, hc.clientId() + ":" + ho) != null && System.nanoTime() - r0 < withinNs(300 * MS)) {
                        LockSupport.parkNanos(2 * MS);
                    }
                    expect(raw.hget(F, hc.clientId() + ":" + ho) == null || stalledWithin(r0, System.nanoTime()) > 100 * MS,
                            "forced re-entry holds nothing", () -> holder + "'s re-entry (LeaseLostException) left a hold in Redis for 600 ms");
                }
                Throwable u = hc.lock(F).unlockAsync(ho).toCompletableFuture().handle((v, e) -> e == null ? null : unwrap(e))
                        .get(5, TimeUnit.SECONDS);
                expect(reEnter ? u instanceof IllegalMonitorStateException : u instanceof LeaseLostException, "forced holder told at unlock",
                        () -> holder + "'s unlock of " + F + (reEnter ? " after its re-entry reported the loss" : "") + " ended with " + u);
                if (wf != null && Boolean.TRUE.equals(wf.getNow(false))) {
                    wc.lock(F).unlockAsync(wo).toCompletableFuture().get(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                return;
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                violation("force round (" + holder + ") on " + F + " failed: " + unwrap(e));
                x.lock(F).forceUnlock();
            }
            LockSupport.parkNanos((5 + rnd.nextInt(25)) * MS);
        }
    }

    private void probeLoop(RedisCommands<String, String> probe, long deadline) {
        while (!stop && System.nanoTime() < deadline) {
            for (String n : List.of(A, B, F)) {
                Map<String, String> m = probe.hgetall(n);
                expect(m.size() <= 1, "probe", () -> "HGETALL " + n + " shows two owners at once: " + m);
            }
            LockSupport.parkNanos(4 * MS);
        }
    }

    // ------------------------------------------------------------------ the judge

    private void judge(long seconds, long stormNs, long losses) {
        List<Hold> comp = new ArrayList<>(competitorHolds);
        comp.sort(Comparator.comparingLong(Hold::grant));
        long[] grants = comp.stream().mapToLong(Hold::grant).toArray();
        List<Long> lateness = new ArrayList<>();
        List<Long> margins = new ArrayList<>();
        long stopped = 0;
        long keptPastW = 0;
        for (Scoped s : scoped) {
            long stopAt = s.stop();
            long claimCap = Math.min(s.claimEnd, s.releaseFloor());
            long inside = stopAt != 0 ? stopAt : s.releaseFloor();
            int i = lowerBound(grants, s.grant);
            Hold before = i > 0 ? comp.get(i - 1) : null;
            expect(before == null || before.end() <= s.grant, "exclusion", () -> s.what + " was granted while " + before.what()
                    + " (granted " + us(s.grant - before.grant()) + " us before) held it");
            for (int j = i; j < comp.size() && grants[j] < Math.max(claimCap, inside); j++) {
                Hold o = comp.get(j);
                expect(o.grant() >= claimCap, "exclusion", () -> s.what + " (" + s.outcome + "): " + o.what() + " was granted (returned) "
                        + us(claimCap - o.grant()) + " us before the end the holder's scope had claimed");
                expect(o.grant() < claimCap || o.grant() >= inside || stalledWithin(o.grant() - 100 * MS, inside) >= inside - o.grant(),
                        "exclusion", () -> s.what + " (" + s.outcome + "): its work still ran " + us(inside - o.grant()) + " us after "
                                + o.what() + " was granted (" + (stopAt == 0 ? "never stopped" : "stop seen: " + s.stopHow)
                                + "; the end its scope claimed came " + us(o.grant() - s.claimEnd) + " us before that grant)");
            }
            if (stopAt == 0 && !"LeaseLostException".equals(s.outcome)) {
                keptPastW += s.dur > WH && s.workEnd != 0 ? 1 : 0;
                continue;
            }
            stopped++;
            long at = stopAt != 0 ? stopAt : s.endAt;
            long[] bh = null;
            for (long[] w : blackholes) {
                bh = w[0] <= at && (bh == null || w[0] > bh[0]) ? w : bh;
            }
            long stallNear = stalledWithin(s.grant - WH * MS, at);
            boolean inSight = bh != null && at - bh[0] <= (WH + TH + 1_000) * MS;
            expect(inSight || stallNear > WH / 3 * MS, "stop", () -> s.what + ": stopped or lost (" + s.outcome + ", " + s.stopHow
                    + ") with no blackhole of H in sight");
            if (!inSight || stopAt == 0) {
                continue; // stopAt == 0: lost after its work had ended
            }
            long b0 = bh[0];
            long sinceBh = at - b0;
            expect(sinceBh >= WH / 2 * MS || stallNear >= WH / 2 * MS - sinceBh, "not before W/2", () -> s.what + ": stopped ("
                    + s.stopHow + ") " + us(sinceBh) + " us after H was blackholed, before half its W (" + WH / 2 + " ms); relative to"
                    + " the blackhole's start, us: call " + us(s.callStart - b0) + ", work called " + us(s.grant - b0) + ", end its scope"
                    + " claimed " + us(s.claimEnd - b0) + "; the blackhole before ended " + us(b0 - prevEnd(b0)) + " us earlier; stalls "
                    + us(stallNear) + " us");
            late(b0, at, withinNs(WH * MS), () -> s.what + ": stop (" + s.stopHow + ") after H was blackholed");
            if (s.claimEnd != 0) {
                lateness.add(at - s.claimEnd);
                late(s.claimEnd, at, withinNs(20 * MS), () -> s.what + ": stop (" + s.stopHow + ") after the end its scope claimed");
            }
            for (int j = lowerBound(grants, at); j < comp.size(); j++) {
                if (comp.get(j).what().equals("C tryLock()")) {
                    margins.add(comp.get(j).start() - at);
                    break;
                }
            }
        }
        List<Hold> plain = new ArrayList<>(plainHolds);
        plain.sort(Comparator.comparingLong(Hold::grant));
        for (int i = 0; i < plain.size(); i++) {
            Hold h = plain.get(i);
            for (int j = i + 1; j < plain.size() && plain.get(j).grant() < h.end(); j++) {
                Hold o = plain.get(j);
                expect(o.owner().equals(h.owner()) || stalledWithin(h.grant() - W * MS, h.end()) >= W / 3 * MS, "exclusion",
                        () -> "two holders of " + B + ": " + o.what() + " (" + o.owner() + ") was granted " + us(o.grant() - h.grant())
                                + " us after " + h.what() + " (" + h.owner() + "), which still held it for " + us(h.end() - o.grant()) + " us more");
            }
        }
        long grantedBeforeCancel = 0; // not judged: the docs promise the scope's end (checked above), not this order
        for (Hold w : givenUpWorks) {
            grantedBeforeCancel += plain.stream().anyMatch(o -> !o.owner().equals(w.owner()) && o.grant() > w.grant() && o.grant() < w.end()) ? 1 : 0;
        }
        Collections.sort(lateness);
        Collections.sort(margins);
        List<Long> wakes = new ArrayList<>(forceWakes);
        Collections.sort(wakes);
        System.out.printf("ReentrantLockStorm: %d s (%d ms), rounds=%d, grants=%d, scoped works=%d (stopped=%d, kept past W=%d),"
                        + " give-ups=%d (next call in the callback=%d), fixed leases overrun=%d, force rounds=%d, blackholes=%d,"
                        + " losses reported=%d, violations=%d%n", seconds, stormNs / MS, stat0("rounds"), stat0("grants"), scoped.size(),
                stopped, keptPastW, stat0("give-ups"), stat0("follow-ups started in the give-up's callback"), stat0("fixed leases overrun"),
                stat0("force rounds"), stat0("blackholes"), losses, violations.get());
        System.out.println("  stop seen - scope's claimed end, us: " + distribution(lateness));
        System.out.println("  start of C's first winning tryLock() after a stop - the stop, us: " + distribution(margins));
        System.out.println("  waiter granted after forceUnlock() began, us: " + distribution(wakes));
        System.out.println("  given-up withLockAsync works whose stage was cancelled only after another owner's grant: " + grantedBeforeCancel
                + " of " + givenUpWorks.size());
        System.out.println("  stalls (gaps over 4 ms): " + stalls.size() + " (" + stalls.stream().mapToLong(g -> g[1] - g[0]).sum() / MS
                + " ms); " + new TreeMap<>(stats));
        described.forEach(d -> System.out.println("  VIOLATION " + d));
        assertTrue(!scoped.isEmpty(), "no scoped work was granted at all");
        assertTrue(violations.get() == 0, violations.get() + " violations, first: " + String.join(" | ", described));
    }

    private long prevEnd(long start) {
        return blackholes.stream().mapToLong(w -> w[1]).filter(e -> e < start).max().orElse(0);
    }

    private static int lowerBound(long[] a, long key) {
        int lo = 0;
        for (int hi = a.length; lo < hi; ) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    private static String distribution(List<Long> sorted) {
        int n = sorted.size();
        return n == 0 ? "none" : String.format("n=%d min=%d p50=%d p90=%d max=%d", n, us(sorted.get(0)), us(sorted.get(n / 2)),
                us(sorted.get(n * 9 / 10)), us(sorted.get(n - 1)));
    }
}
