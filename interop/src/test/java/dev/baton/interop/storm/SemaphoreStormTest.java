package dev.baton.interop.storm;

import dev.baton.*;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.Test;

import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import java.util.concurrent.locks.LockSupport;
import java.util.function.*;

import static java.util.concurrent.TimeUnit.MICROSECONDS;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Storm written blind (public API and docs only) on {@link BatonSemaphore} and
 * {@link BatonPermitExpirableSemaphore}: three Baton clients, each with two blocking threads and
 * one asynchronous actor, take and give back 1-3 permits of a semaphore of 4 in every documented
 * way, in rounds of 150-400 ms; a coordinator adds, removes, drains and sets permits during each
 * round, and at each quiet point between rounds checks the count and runs probes.
 *
 * <p>Promises checked (quotes):
 * <ul>
 *   <li>Never more permits held than the semaphore has. guarantees.md: "never more permits held than a
 *       semaphore has (both kinds ...)", "Never more holders than permits ... (both kinds)";
 *       semaphore.md, releases within one client: "nothing can be lost or counted twice". Checked
 *       (a) in the JVM, by weight, at every grant: the permits held never exceed the most the
 *       semaphore had since the last quiet point (addPermits: "the count may then go below zero
 *       until enough are released"); (b) against Redis (data-layout.md: the available permits "in a
 *       string at the name"; taken expirable permits in "{name}:timeout ... member = a taken permit's
 *       id"): GET + the permits held all through the read never exceed the total; for the expirable
 *       kind GET + ZCARD is the total ("the permits available plus taken are exactly the total",
 *       guarantees.md; setPermits: "Sets the total permits (available + taken)") and every permit
 *       held all through the read is in the sorted set.</li>
 *   <li>Nothing lost. guarantees.md: "after the storm ... the permits are exact"; at every quiet
 *       point availablePermits() is what was set + added - removed (trySetPermits "does nothing if
 *       already set"; drainPermits "Takes every available permit; returns how many", given back by
 *       release; handles: close "gives them back, exactly once however often it is called"), and no
 *       expirable permit is left taken, within "Clean-up ... landed within 300 ms" + the margin.</li>
 *   <li>Giving up. guarantees.md: "Giving up on the future of any async acquisition (... the
 *       semaphores' acquireAsync and tryAcquireAsync ...) by cancel, orTimeout, completeOnTimeout or
 *       complete abandons it: a grant that arrives later, or raced the caller, is given back, so no
 *       permit or lock is left held by nobody"; the actor's next call starts right after, or inside
 *       the given-up future's own callback. "interrupted: InterruptedException, nothing taken";
 *       "timed out: tryAcquire(n, wait, unit) returns false, having taken nothing". Judged by the
 *       exact count above. Who won a give-up is read from the stage's value or exception, or from
 *       complete()'s return value, never from the thread that ran the callback (the JDK may run it
 *       on the loser's thread); so completeOnTimeout is used on tryAcquireAsync only: on
 *       acquireAsync's Void stage its null cannot tell the caller whether it holds permits.</li>
 *   <li>Leases (permit-expirable-semaphore.md): "a permit whose lease runs out returns to the pool by
 *       itself"; release(id): "IllegalArgumentException if no such permit is held (... expired and
 *       returned to the pool)"; tryRelease: "whether it was"; updateLeaseTime: "Gives a held permit a
 *       new lease counted from now; a negative leaseTime means it never expires ... whether the permit
 *       was held"; ExpirablePermit.close: "LeaseLostException if the permit was no longer held ...
 *       once it has, a second close does nothing"; "a waiter also wakes when the earliest permit's
 *       lease runs out". A permit is not reported expired before its lease from the acquire's start
 *       (10 ms for Redis's ms clock), and is reported gone at its lease + the margin.</li>
 *   <li>Deletion: semaphore.md "delete() while waiting throws SynchronizerDeletedException";
 *       BatonPermitExpirableSemaphore.delete "waiters fail with SynchronizerDeletedException". No
 *       time is promised; judged at the re-check (RECHECK_SECONDS) + the 1 s wake-up + margin. Then
 *       the name is gone and trySetPermits sets it again.</li>
 *   <li>Bounds, margin rule of guarantees.md ("A promise of a time d is checked at d plus 20 % of d
 *       or 300 ms, whichever is larger"): "every timed call back within its wait + the command
 *       timeout + 150 ms (+ the margin)"; "A wait time of zero or less ... answered from one attempt
 *       within the command timeout + 150 ms"; "new permits are announced over pub/sub and the waiter
 *       returns within 1 s" (a probe at a quiet point: one waiter, one release). Overruns no longer
 *       than a JVM/machine stall seen by a thread that parks 2 ms at a time are counted, not failed.</li>
 * </ul>
 * {@code -Dbaton.storm.seconds=N} sets each storm's length (2 s by default).
 */
class SemaphoreStormTest {

    private static final long MS = 1_000_000L;
    private static final int CLIENTS = 3, BLOCKING_PER_CLIENT = 2, ACTORS = CLIENTS * (BLOCKING_PER_CLIENT + 1), BASE = 4;
    private static final long T_MS = BatonOptions.DEFAULT_COMMAND_TIMEOUT.toMillis(), LONG_LEASE_MS = 30_000, CLEAN_UP_MS = 300;
    private static final String[] HOW = {"cancel", "orTimeout", "completeOnTimeout", "complete", "none (a bounded wait)"};
    /** One atomic read: the count ('absent' if none) and, for the expirable kind, the taken ids in hex. */
    private static final String SNAPSHOT = "local a = redis.call('GET', KEYS[1]) local out = {a or 'absent', 0} "
            + "if KEYS[2] then local m = redis.call('ZRANGE', KEYS[2], 0, -1) out[2] = #m "
            + "for _, v in ipairs(m) do out[#out + 1] = (string.gsub(v, '.', function(ch) "
            + "return string.format('%02x', string.byte(ch)) end)) end end return out";

    private final AtomicLong violations = new AtomicLong(), grants = new AtomicLong();
    private final ConcurrentLinkedQueue<String> described = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> ops = new ConcurrentHashMap<>();
    private final CopyOnWriteArrayList<long[]> stalls = new CopyOnWriteArrayList<>();
    private final long t0 = System.nanoTime();
    private final ScheduledExecutorService giver = Executors.newSingleThreadScheduledExecutor(r -> daemon(new Thread(r, "storm-give-up")));
    private volatile boolean stop;
    private RedisCommands<String, String> redis;

    /** Permits held in this JVM: from the grant's return to the release's start, or to the earliest end of its lease. */
    static final class Hold {
        final int weight;
        final String id; // the expirable kind's permit id, lower case
        volatile long deadline;

        Hold(int weight, String id, long deadline) { this.weight = weight; this.id = id == null ? null : id.toLowerCase(); this.deadline = deadline; }
    }

    private final Object book = new Object();
    private final Set<Hold> held = new HashSet<>();
    private final Map<String, Hold> heldIds = new HashMap<>();
    /** Guarded by book: the exact total at quiet points, its bounds while it changes, the most since the last quiet point. */
    private long total = BASE, totalLo = BASE, totalHi = BASE, peak = BASE, changes, maxHeld;

    @Test
    void plainSemaphore() throws Exception { run(new Plain()); }

    @Test
    void permitExpirableSemaphore() throws Exception { run(new Expirable()); }

    /** Actors run while a round is open and count down when idle; next is the following round (null: the storm is over). */
    static final class Round {
        volatile boolean open = true;
        final CountDownLatch idle = new CountDownLatch(ACTORS);
        final CompletableFuture<Round> next = new CompletableFuture<>();
    }

    private void run(Kind k) throws Exception {
        long seconds = Long.getLong("baton.storm.seconds", 2), rounds = 0;
        List<Thread> threads = new ArrayList<>(), actors = new ArrayList<>();
        List<Baton> clients = new ArrayList<>();
        try (RedisServer server = RedisServer.start()) {
            RedisClient raw = RedisClient.create(server.uri());
            StatefulRedisConnection<String, String> conn = raw.connect();
            try {
                redis = conn.sync();
                for (int c = 0; c < CLIENTS; c++) clients.add(Baton.create(BatonOptions.create(server.uri())));
                k.open(clients);
                if (!k.trySet(0, BASE)) violation("trySetPermits(" + BASE + ") on an absent semaphore returned false");
                Round first = new Round();
                List<Worker> workers = new ArrayList<>();
                for (int c = 0; c < CLIENTS; c++) {
                    int client = c;
                    for (int i = 0; i < BLOCKING_PER_CLIENT; i++) {
                        Worker w = new Worker();
                        workers.add(w);
                        actors.add(w.thread = new Thread(() -> actor(first, rnd -> k.blockingOp(client, rnd, w)), "storm-" + c + "-" + i));
                    }
                    actors.add(new Thread(() -> actor(first, rnd -> asyncRound(k, client, rnd)), "storm-" + c + "-async"));
                }
                threads.addAll(List.of(stallTicker(), new Thread(() -> checkRedis(k), "storm-redis-checker"), interrupter(workers)));
                threads.addAll(actors);
                threads.forEach(Thread::start);
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
                for (Round r = first; r != null; ) {
                    k.coordinate(rnd, System.nanoTime() + (150 + rnd.nextInt(250)) * MS);
                    r.open = false;
                    long closed = System.nanoTime();
                    if (!r.idle.await(30, TimeUnit.SECONDS)) {
                        violation("round " + (rounds + 1) + " not quiet 30 s after it closed (a wait that never ends: permits lost?); " + k.redis());
                        stop = true;
                        actors.forEach(Thread::interrupt);
                        r.next.complete(null);
                        break;
                    }
                    op("most ms from a round's close to its quiet point", ms(System.nanoTime() - closed));
                    exact(k, "after round " + ++rounds);
                    if (rounds % 5 == 0) {
                        deleteProbe(k, rnd);
                    } else if (k instanceof Expirable x && rnd.nextInt(3) == 0) {
                        x.leaseProbe(rnd);
                    } else if (rnd.nextBoolean()) {
                        wakeProbe(k, rnd);
                    }
                    exact(k, "after the probes of round " + rounds);
                    Round next = stop || System.nanoTime() >= deadline ? null : new Round();
                    r.next.complete(next);
                    r = next;
                }
                long until = System.nanoTime() + 20_000 * MS;
                for (Thread t : actors) {
                    t.join(Math.max(1, ms(until - System.nanoTime())));
                    if (t.isAlive()) violation(t.getName() + " still running 20 s after the last round");
                }
            } finally {
                stop = true;
                for (Thread t : threads) {
                    t.interrupt();
                    t.join(5_000);
                }
                clients.forEach(Baton::close);
                conn.close();
                raw.shutdown();
                giver.shutdownNow();
            }
        }
        long giveUps = ops.entrySet().stream().filter(e -> e.getKey().startsWith("give-up")).mapToLong(e -> e.getValue().get()).sum();
        System.out.printf("SemaphoreStorm[%s]: %d s, rounds=%d, grants=%d, give-ups=%d, most held=%d (set %d, +1-2 added in rounds),"
                        + " violations=%d, stalls seen=%d (%d ms), ops=%s%n", k.name, seconds, rounds, grants.get(), giveUps, maxHeld, BASE,
                violations.get(), stalls.size(), stalls.stream().mapToLong(g -> (g[1] - g[0]) / MS).sum(), new TreeMap<>(ops));
        described.forEach(d -> System.out.println("  VIOLATION " + d));
        assertTrue(violations.get() == 0, violations.get() + " violations, first: " + String.join(" | ", described));
    }

    /** One operation after another while the round is open (and at most 100,000), then idle until the next round. */
    private void actor(Round first, Consumer<ThreadLocalRandom> op) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        for (Round r = first; r != null && !stop; ) {
            for (int n = 0; r.open && !stop && n < 100_000; n++) {
                try {
                    op.accept(rnd);
                } catch (RuntimeException e) {
                    violation("unexpected " + e);
                }
            }
            r.idle.countDown();
            try {
                r = r.next.get(120, TimeUnit.SECONDS);
            } catch (InterruptedException | ExecutionException | TimeoutException e) {
                return;
            }
        }
    }

    /** An async actor's step: a chain of at most four calls, given up or bounded, then the release of what it got. */
    private void asyncRound(Kind k, int c, ThreadLocalRandom rnd) {
        CompletableFuture<List<Hold>> done = new CompletableFuture<>();
        k.asyncOp(c, 0, done);
        try {
            List<Hold> holds = done.get(4 * boundNs(200), TimeUnit.NANOSECONDS);
            if (holds.isEmpty()) {
                op("next call started right after a give-up or time-out");
                return;
            }
            park(rnd, 2000);
            k.release(c, holds, rnd);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            violation("client " + c + ": an async acquire (given up within 3 ms, or waiting at most 200 ms) did not end: " + e);
        }
    }

    // ================================================================== the book: what this JVM holds, and the total

    private Hold grant(int weight, String id, long deadline, String what) {
        Hold h = new Hold(weight, id, deadline);
        grants.incrementAndGet();
        synchronized (book) {
            if (id != null && (!id.matches("[0-9a-fA-F]{32}") || heldIds.put(h.id, h) != null)) {
                violation(what + ": permit id " + id + " is not 32 hex characters, or another holder of it still holds it");
            }
            held.add(h);
            long now = System.nanoTime();
            long sum = held.stream().filter(x -> x.deadline > now).mapToLong(x -> x.weight).sum();
            maxHeld = Math.max(maxHeld, sum);
            if (sum > peak) {
                violation(what + " granted: " + sum + " permits now held in this JVM, more than the " + peak
                        + " the semaphore had at most since the last quiet point");
            }
        }
        return h;
    }

    private void drop(Hold h) {
        synchronized (book) {
            held.remove(h);
            if (h.id != null) heldIds.remove(h.id, h);
        }
    }

    /** Brackets a change of the total: bounded on both sides while it is under way, exact once it returned. */
    private void changeTotal(long to, Runnable call) {
        synchronized (book) {
            totalHi = Math.max(totalHi, to);
            totalLo = Math.min(totalLo, to);
            peak = Math.max(peak, to);
            changes++;
        }
        call.run();
        synchronized (book) {
            total = totalHi = totalLo = to;
            changes++;
        }
    }

    record Snap(Long avail, long taken, Set<String> ids) {
    }

    private Snap snap(String... keys) {
        List<Object> r = redis.eval(SNAPSHOT, ScriptOutputType.MULTI, keys);
        Set<String> ids = new HashSet<>();
        r.subList(2, r.size()).forEach(id -> ids.add(String.valueOf(id)));
        return new Snap("absent".equals(r.get(0)) ? null : Long.valueOf(String.valueOf(r.get(0))), (Long) r.get(1), ids);
    }

    /** Reads Redis every 0-3 ms between two looks at the book: a permit held all through the read is taken in Redis. */
    private void checkRedis(Kind k) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (!stop) {
            park(rnd, 3000);
            List<Hold> before;
            long hi, lo, changed;
            synchronized (book) {
                long now = System.nanoTime();
                before = held.stream().filter(h -> h.deadline > now).toList();
                hi = totalHi;
                lo = totalLo;
                changed = changes;
            }
            Snap s;
            try {
                s = snap(k.keys);
            } catch (RuntimeException e) {
                if (!stop) violation("raw read of Redis failed: " + e);
                return;
            }
            List<Hold> through;
            synchronized (book) {
                long now = System.nanoTime();
                through = before.stream().filter(h -> held.contains(h) && h.deadline > now).toList();
                if (changes - changed > 1 || s.avail() == null) {
                    continue; // two changes of the total, or a deletion, within the read
                }
                hi = Math.max(hi, totalHi);
                lo = Math.min(lo, totalLo);
            }
            op("check: Redis read");
            long inJvm = through.stream().mapToLong(h -> h.weight).sum();
            if (k instanceof Plain && s.avail() + inJvm > hi) {
                violation("Redis says " + s.avail() + " permits available while " + inJvm + " were held in this JVM all through"
                        + " that read: more than the total (at most " + hi + ")");
            } else if (k instanceof Expirable && (s.avail() + s.taken() > hi || s.avail() + s.taken() < lo)) {
                violation("Redis: " + s.avail() + " available + " + s.taken() + " taken, not the total (" + lo + ".." + hi + ")");
            }
            for (Hold h : through) {
                if (h.id != null && !s.ids().contains(h.id)) {
                    violation("permit " + h.id + ", held in this JVM all through a read of Redis (its lease not over), is not among"
                            + " the taken permits " + s.ids());
                }
            }
        }
    }

    /** At a quiet point (nothing held, nobody waiting) the count is exact, once clean-ups landed. */
    private void exact(Kind k, String when) {
        synchronized (book) {
            if (!held.isEmpty()) {
                violation("storm bookkeeping: " + held.size() + " holds left at a quiet point " + when);
                held.clear();
                heldIds.clear();
            }
            peak = total;
        }
        long start = System.nanoTime();
        while (true) {
            int avail = k.available(ThreadLocalRandom.current().nextInt(CLIENTS));
            Snap s = snap(k.keys);
            long now = System.nanoTime();
            if (avail == total && s.taken() == 0) {
                op("check: exact at a quiet point");
                sinceLastQuietPoint();
                return;
            }
            if (avail > total || now - start > withinNs(CLEAN_UP_MS * MS) + stalledWithin(start, now)) {
                violation(when + ": availablePermits() = " + avail + " with nothing held and nobody waiting, " + ms(now - start)
                        + " ms after the quiet point; the total is " + total + (s.taken() > 0 ? "; taken by nobody: " + s.ids() : "")
                        + "; what ran since the last quiet point: " + sinceLastQuietPoint());
                k.resync(avail, s);
                return;
            }
            sleepUntil(System.nanoTime() + 5 * MS);
        }
    }

    private Map<String, Long> lastQuietPoint = Map.of();

    /** The counts of operations since the last quiet point. */
    private Map<String, Long> sinceLastQuietPoint() {
        Map<String, Long> now = new TreeMap<>(), diff = new TreeMap<>();
        ops.forEach((name, n) -> now.put(name, n.get()));
        now.forEach((name, n) -> {
            if (!name.startsWith("most") && n > lastQuietPoint.getOrDefault(name, 0L)) diff.put(name, n - lastQuietPoint.getOrDefault(name, 0L));
        });
        lastQuietPoint = now;
        return diff;
    }

    // ================================================================== probes at quiet points

    /** A waiter that is not an actor: a thread of its own, or an async call. */
    static final class Waiter {
        final CompletableFuture<List<Hold>> result = new CompletableFuture<>();
        final String what;
        volatile long at;
        volatile Runnable abort = () -> { };

        Waiter(String what) { this.what = what; }

        void ended(List<Hold> holds, Throwable e) {
            at = System.nanoTime();
            if (e == null) result.complete(holds); else result.completeExceptionally(unwrap(e));
        }
    }

    private Waiter inThread(String what, Callable<List<Hold>> call) {
        Waiter w = new Waiter(what + " (blocking)");
        Thread t = daemon(new Thread(() -> {
            try {
                w.ended(call.call(), null);
            } catch (Throwable e) {
                w.ended(null, e);
            }
        }, "storm-probe-waiter"));
        w.abort = t::interrupt;
        t.start();
        return w;
    }

    private <T> Waiter async(String what, CompletionStage<T> stage, Function<T, List<Hold>> holds) {
        Waiter w = new Waiter(what + " (async)");
        CompletableFuture<T> f = stage.toCompletableFuture();
        w.abort = () -> f.cancel(true);
        f.whenComplete((v, e) -> w.ended(e == null ? holds.apply(v) : null, e));
        return w;
    }

    /** Lets waiters reach their wait: their clients subscribed, then a while for the first refused attempt (longer by any stall). */
    private void letThemWait(Kind k, long clients, long ms) {
        long start = System.nanoTime();
        while (k.waiters(0) < clients && System.nanoTime() - start < 2_000 * MS) sleepUntil(System.nanoTime() + MS);
        sleepUntil(System.nanoTime() + ms * MS);
        sleepUntil(System.nanoTime() + stalledWithin(start, System.nanoTime()));
    }

    /** The waiter's grant within bound + 5 s, or null (a violation; the waiter aborted). */
    private List<Hold> outcome(Waiter w, long bound) throws InterruptedException {
        long start = System.nanoTime();
        try {
            return w.result.get(bound + 5_000 * MS, TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            violation(w.what + " failed: " + e.getCause());
        } catch (TimeoutException e) {
            violation(w.what + " not granted " + ms(System.nanoTime() - start) + " ms after the permit it waits for was freed");
            w.abort.run();
        }
        return null;
    }

    /** "new permits are announced over pub/sub and the waiter returns within 1 s". */
    private void wakeProbe(Kind k, ThreadLocalRandom rnd) throws InterruptedException {
        List<Hold> mine = k.takeAll(0);
        if (mine != null) {
            int c = 1 + rnd.nextInt(CLIENTS - 1);
            Waiter w = k.waiter(c, rnd);
            letThemWait(k, 1, 30);
            long released = System.nanoTime();
            k.release(0, List.of(mine.remove(0)), rnd);
            List<Hold> got = outcome(w, withinNs(1_000 * MS));
            if (got != null) {
                op("probe: a waiter woken by a release");
                late(released, w.at, withinNs(1_000 * MS), () -> w.what + " on client " + c + " granted " + ms(w.at - released)
                        + " ms after client 0 released a permit (promise: within 1 s)");
                k.release(c, got, rnd);
            }
            k.release(0, mine, rnd);
        }
    }

    /** "delete() while waiting throws SynchronizerDeletedException"; then the name is gone and trySetPermits sets it again. */
    private void deleteProbe(Kind k, ThreadLocalRandom rnd) throws InterruptedException {
        List<Hold> mine = k.takeAll(0);
        if (mine == null) return;
        List<Waiter> ws = List.of(k.waiter(1, rnd), k.waiter(2, rnd), k.waiter(1 + rnd.nextInt(2), rnd));
        letThemWait(k, 2, 100);
        long deleted = System.nanoTime();
        if (!k.delete(rnd.nextInt(CLIENTS))) {
            violation("delete() of a semaphore with permits held and three waiters returned false");
        }
        mine.forEach(this::drop);
        long bound = withinNs((BatonSemaphore.RECHECK_SECONDS * 1000L + 1000) * MS);
        for (Waiter w : ws) {
            try {
                List<Hold> got = w.result.get(Math.max(1, bound - (System.nanoTime() - deleted)), TimeUnit.NANOSECONDS);
                violation(w.what + " ended normally (" + got.size() + " permits) after delete(); promise: SynchronizerDeletedException");
                got.forEach(this::drop);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof SynchronizerDeletedException) {
                    op("probe: a waiter failed by delete()");
                    op("most ms from delete() to a waiter's SynchronizerDeletedException", ms(w.at - deleted));
                } else {
                    violation(w.what + " ended with " + e.getCause() + " after delete(); promise: SynchronizerDeletedException");
                }
            } catch (TimeoutException e) {
                late(deleted, System.nanoTime(), bound, () -> w.what + " still waiting after delete()");
                w.abort.run();
            }
        }
        sleepUntil(System.nanoTime() + withinNs(CLEAN_UP_MS * MS));
        if (redis.exists(k.keys) > 0) {
            violation("after delete() and its waiters' ends, the name is back: " + k.redis());
            redis.del(k.keys);
        }
        changeTotal(BASE, () -> {
            if (!k.trySet(rnd.nextInt(CLIENTS), BASE)) violation("trySetPermits(" + BASE + ") after delete() returned false");
        });
    }

    // ================================================================== the two kinds

    /** What differs between the two semaphores. */
    abstract class Kind {
        final String name;
        final String[] keys;

        Kind(String name, String... keys) {
            this.name = name;
            this.keys = keys;
        }

        abstract void open(List<Baton> clients);
        abstract boolean trySet(int c, int permits);
        abstract int available(int c);
        abstract boolean delete(int c);
        abstract long waiters(int c);
        abstract void blockingOp(int c, ThreadLocalRandom rnd, Worker w);
        abstract void asyncOp(int c, int depth, CompletableFuture<List<Hold>> done);

        /** Gives back holds of this JVM (dropped from the book first). */
        abstract void release(int c, List<Hold> holds, ThreadLocalRandom rnd);

        /** At a quiet point: every permit at once (null, and a violation, if refused). */
        abstract List<Hold> takeAll(int c) throws InterruptedException;
        abstract Waiter waiter(int c, ThreadLocalRandom rnd);

        /** A round's coordinator: changes of the total, each undone before the round ends. */
        abstract void coordinate(ThreadLocalRandom rnd, long until);

        /** After a violation at a quiet point: back to the exact total, so that later rounds are judged on their own. */
        abstract void resync(int avail, Snap s);

        String redis() {
            Snap s = snap(keys);
            return "Redis: available " + s.avail() + ", taken " + s.taken() + " " + s.ids() + "; JVM holds " + held.size();
        }
    }

    final class Plain extends Kind {
        final BatonSemaphore[] sems = new BatonSemaphore[CLIENTS];

        Plain() { super("plain", "storm-sem"); }
        void open(List<Baton> clients) { Arrays.setAll(sems, c -> clients.get(c).semaphore(keys[0])); }
        boolean trySet(int c, int permits) { return sems[c].trySetPermits(permits); }
        int available(int c) { return sems[c].availablePermits(); }
        boolean delete(int c) { return sems[c].delete(); }
        long waiters(int c) { return sems[c].waiterCount(); }

        void blockingOp(int c, ThreadLocalRandom rnd, Worker w) {
            BatonSemaphore s = sems[c];
            int n = weight(rnd), op = rnd.nextInt(6);
            long wait = op == 1 ? 0 : waitMs(rnd);
            boolean one = n == 1 && rnd.nextBoolean(); // the overloads without a count
            boolean unbounded = op == 0 || op == 4;
            String how = "client " + c + " " + new String[]{"acquire", "tryAcquire", "tryAcquire", "tryAcquire", "acquirePermits",
                    "tryAcquirePermits"}[op] + "(" + n + (unbounded || op == 1 ? "" : ", " + wait + " ms") + ")";
            SemaphorePermits handle = null;
            boolean got = false;
            Call call = new Call(how, w, unbounded || wait > 0);
            try {
                switch (op) {
                    case 0 -> {
                        if (one) {
                            s.acquire();
                        } else {
                            s.acquire(n);
                        }
                        got = true;
                    }
                    case 1 -> got = one ? s.tryAcquire() : s.tryAcquire(n);
                    case 2, 3 -> got = one ? s.tryAcquire(wait, MILLISECONDS) : s.tryAcquire(n, wait, MILLISECONDS);
                    case 4 -> handle = s.acquirePermits(n);
                    default -> handle = s.tryAcquirePermits(n, wait, MILLISECONDS).orElse(null);
                }
            } catch (InterruptedException e) {
                call.interrupted = true;
            } catch (RuntimeException e) {
                call.failure = e;
            }
            got |= handle != null;
            if (!call.end(got, unbounded ? -2 : wait) || !got) return;
            if (handle != null && handle.permits() != n) violation(how + ": its handle says " + handle.permits() + " permits");
            Hold h = grant(n, null, Long.MAX_VALUE, how);
            park(rnd, 3000);
            if (handle == null) {
                release(c, List.of(h), rnd);
            } else {
                drop(h);
                close(handle, how, rnd);
            }
        }

        void asyncOp(int c, int depth, CompletableFuture<List<Hold>> done) {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            int n = weight(rnd), how = rnd.nextInt(HOW.length);
            long kUs = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(3000), start = System.nanoTime();
            // acquireAsync's Void stage: completeOnTimeout(null) cannot tell the caller whether it won (see the class doc)
            if (how != 4 && how != 2 && rnd.nextInt(3) != 0) {
                String what = "client " + c + " acquireAsync(" + n + ") given up by " + HOW[how] + " after " + kUs + " us";
                drive(this, c, depth, done, what, sems[c].acquireAsync(n).toCompletableFuture(), how, kUs, null,
                        v -> List.of(grant(n, null, Long.MAX_VALUE, what)), start, 0);
            } else {
                long wait = how == 4 ? 10 + rnd.nextInt(190) : 10_000;
                String what = "client " + c + " tryAcquireAsync(" + n + ", " + wait + " ms), give-up: " + HOW[how] + " after " + kUs + " us";
                drive(this, c, depth, done, what, sems[c].tryAcquireAsync(n, wait, MILLISECONDS).toCompletableFuture(), how, kUs,
                        Boolean.FALSE, v -> v ? List.of(grant(n, null, Long.MAX_VALUE, what)) : List.of(), start, wait);
            }
        }

        /** release(n), n times release(), or releaseAsync(n); by another client now and then ("any process may release them"). */
        void release(int c, List<Hold> holds, ThreadLocalRandom rnd) {
            holds.forEach(SemaphoreStormTest.this::drop);
            int n = holds.stream().mapToInt(h -> h.weight).sum(), by = rnd.nextInt(4) == 0 ? (c + 1 + rnd.nextInt(CLIENTS - 1)) % CLIENTS : c;
            try {
                switch (rnd.nextInt(3)) {
                    case 0 -> sems[by].release(n);
                    case 1 -> {
                        for (int i = 0; i < n; i++) sems[by].release();
                    }
                    default -> await(sems[by].releaseAsync(n));
                }
            } catch (RuntimeException e) {
                violation("client " + by + ": release of " + n + " threw " + e);
            }
        }

        List<Hold> takeAll(int c) throws InterruptedException {
            if (!sems[c].tryAcquire((int) total)) {
                violation("at a quiet point with all " + total + " permits free, tryAcquire(" + total + ") returned false");
                return null;
            }
            List<Hold> all = new ArrayList<>();
            for (int i = 0; i < total; i++) all.add(grant(1, null, Long.MAX_VALUE, "a probe's tryAcquire(" + total + ")"));
            return all;
        }

        Waiter waiter(int c, ThreadLocalRandom rnd) {
            BatonSemaphore s = sems[c];
            Supplier<List<Hold>> one = () -> List.of(grant(1, null, Long.MAX_VALUE, "a probe's waiter on client " + c));
            return switch (rnd.nextInt(4)) {
                case 0 -> inThread("acquire()", () -> {
                    s.acquire();
                    return one.get();
                });
                case 1 -> inThread("tryAcquire(1, 10 s)", () -> s.tryAcquire(1, 10, TimeUnit.SECONDS) ? one.get() : List.of());
                case 2 -> async("acquireAsync(1)", s.acquireAsync(1), v -> one.get());
                default -> async("tryAcquireAsync(1, 10 s)", s.tryAcquireAsync(1, 10, TimeUnit.SECONDS), v -> v ? one.get() : List.of());
            };
        }

        /** trySetPermits on the existing semaphore; +a; drainPermits (held, then released); -a (the count may go below zero). */
        void coordinate(ThreadLocalRandom rnd, long until) {
            pause(rnd, until);
            if (rnd.nextBoolean() && sems[rnd.nextInt(CLIENTS)].trySetPermits(1 + rnd.nextInt(9))) {
                violation("trySetPermits on an existing semaphore returned true");
            }
            int a = 1 + rnd.nextInt(2);
            changeTotal(BASE + a, () -> sems[rnd.nextInt(CLIENTS)].addPermits(a));
            pause(rnd, until);
            int d = sems[rnd.nextInt(CLIENTS)].drainPermits();
            if (d < 0) violation("drainPermits() returned " + d + " with no permits removed");
            Hold drained = d > 0 ? grant(d, null, Long.MAX_VALUE, "drainPermits() = " + d) : null;
            op("drainPermits");
            pause(rnd, until);
            changeTotal(BASE, () -> sems[rnd.nextInt(CLIENTS)].addPermits(-a));
            pause(rnd, until);
            if (drained != null) release(rnd.nextInt(CLIENTS), List.of(drained), rnd);
            sleepUntil(until);
        }

        void resync(int avail, Snap s) { sems[0].addPermits((int) (total - avail)); }
    }

    final class Expirable extends Kind {
        final BatonPermitExpirableSemaphore[] xs = new BatonPermitExpirableSemaphore[CLIENTS];

        Expirable() { super("expirable", "storm-xsem", "{storm-xsem}:timeout"); }
        void open(List<Baton> clients) { Arrays.setAll(xs, c -> clients.get(c).permitExpirableSemaphore(keys[0])); }
        boolean trySet(int c, int permits) { return xs[c].trySetPermits(permits); }
        int available(int c) { return xs[c].availablePermits(); }
        boolean delete(int c) { return xs[c].delete(); }
        long waiters(int c) { return xs[c].waiterCount(); }

        /** Holds for ids taken with this lease: not counted past the lease from the call's start (10 ms: Redis's ms clock). */
        private List<Hold> holds(List<String> ids, long start, long leaseMs, String what) {
            long deadline = leaseMs < 0 ? Long.MAX_VALUE : start + leaseMs * MS - 10 * MS;
            return ids.stream().map(id -> grant(1, id, deadline, what)).toList();
        }

        void blockingOp(int c, ThreadLocalRandom rnd, Worker w) {
            BatonPermitExpirableSemaphore x = xs[c];
            int op = rnd.nextInt(10), n = op == 3 || op == 4 ? weight(rnd) : 1;
            if (op >= 8) {
                shortLease(c, rnd, w);
                return;
            }
            long wait = op == 1 ? 0 : waitMs(rnd), lease = rnd.nextBoolean() ? -1 : LONG_LEASE_MS, start = System.nanoTime();
            boolean unbounded = op == 0 || op == 3 || op == 5 || op == 7;
            String how = "client " + c + " " + new String[]{"acquire(", "tryAcquire(", "tryAcquire(", "acquire(" + n + ", ",
                    "tryAcquire(" + n + ", ", "acquirePermit(", "tryAcquirePermit(", "withPermit("}[op]
                    + (unbounded || op == 1 ? "" : wait + " ms, ") + "lease " + (op == 7 ? 5_000 : lease) + " ms)";
            List<String> ids = List.of();
            ExpirablePermit handle = null;
            Call call = new Call(how, w, unbounded || wait > 0);
            try {
                switch (op) {
                    case 0 -> ids = List.of(lease < 0 && rnd.nextBoolean() ? x.acquire() : x.acquire(lease, MILLISECONDS));
                    case 1 -> ids = x.tryAcquire().map(List::of).orElse(List.of());
                    case 2 -> ids = x.tryAcquire(wait, lease, MILLISECONDS).map(List::of).orElse(List.of());
                    case 3 -> ids = x.acquire(n, lease, MILLISECONDS);
                    case 4 -> ids = x.tryAcquire(n, wait, lease, MILLISECONDS);
                    case 5 -> handle = x.acquirePermit(lease, MILLISECONDS);
                    case 6 -> handle = x.tryAcquirePermit(wait, lease, MILLISECONDS).orElse(null);
                    default -> x.withPermit(5_000, MILLISECONDS, scope -> {
                        w.settle();
                        Hold h = grant(1, null, start + 5_000 * MS, how);
                        park(rnd, 3000);
                        drop(h);
                        return null;
                    });
                }
            } catch (InterruptedException e) {
                call.interrupted = true;
            } catch (RuntimeException e) {
                call.failure = e; // withPermit's LeaseLostException too: a 5 s lease, 3 ms of work
            }
            ids = handle != null ? List.of(handle.id()) : ids;
            if (!call.end(!ids.isEmpty() || op == 7, unbounded ? -2 : wait) || ids.isEmpty()) return;
            if (ids.size() != n) violation(how + " returned " + ids.size() + " ids");
            List<Hold> hs = holds(ids, start, op == 1 ? -1 : lease, how);
            park(rnd, 3000);
            if (handle == null) {
                release(c, hs, rnd);
            } else {
                drop(hs.get(0));
                close(handle, how, rnd);
            }
        }

        /** A lease of 60-200 ms: released in time, let run out (a crash), or given a new lease first. */
        private void shortLease(int c, ThreadLocalRandom rnd, Worker w) {
            long lease = 60 + rnd.nextInt(140), start = System.nanoTime();
            int mode = rnd.nextInt(3);
            boolean asHandle = mode == 1 && rnd.nextBoolean();
            String how = "client " + c + (asHandle ? " tryAcquirePermit" : " tryAcquire") + "(200 ms, lease " + lease + " ms)";
            ExpirablePermit handle = null;
            String id = null;
            Call call = new Call(how, w, true);
            try {
                handle = asHandle ? xs[c].tryAcquirePermit(200, lease, MILLISECONDS).orElse(null) : null;
                id = asHandle ? (handle == null ? null : handle.id()) : xs[c].tryAcquire(200, lease, MILLISECONDS).orElse(null);
            } catch (InterruptedException e) {
                call.interrupted = true;
            } catch (RuntimeException e) {
                call.failure = e;
            }
            long end = System.nanoTime(), notBefore = start + lease * MS - 10 * MS; // Redis granted it after start
            if (!call.end(id != null, 200) || id == null) return;
            Hold h = holds(List.of(id), start, lease, how).get(0);
            if (mode == 0) {
                park(rnd, (int) lease * 400);
                drop(h);
                boolean wasHeld = releaseId(c, id, rnd);
                if (!wasHeld && System.nanoTime() < notBefore) {
                    violation(how + ": released " + ms(System.nanoTime() - start) + " ms after the acquire started, it was not held");
                }
                op(wasHeld ? "short lease released in time" : "short lease ran out before its release");
            } else if (mode == 1) {
                sleepUntil(end + withinNs(lease * MS)); // Redis's expiry was before end + lease
                drop(h);
                String after = how + ", let run out, " + ms(System.nanoTime() - end) + " ms after the acquire returned: ";
                BatonPermitExpirableSemaphore x = xs[rnd.nextInt(CLIENTS)];
                int check = asHandle ? 3 : rnd.nextInt(3);
                try {
                    boolean stillHeld = switch (check) {
                        case 0 -> {
                            try {
                                x.release(id);
                                yield true;
                            } catch (IllegalArgumentException expected) { // "no such permit is held (... expired ...)"
                                yield false;
                            }
                        }
                        case 1 -> x.tryRelease(id);
                        case 2 -> x.updateLeaseTime(id, 1_000, MILLISECONDS);
                        default -> {
                            try {
                                handle.close();
                                yield true;
                            } catch (LeaseLostException expected) {
                                handle.close(); // "once it has, a second close does nothing"
                                yield false;
                            }
                        }
                    };
                    String by = new String[]{"release(id)", "tryRelease(id)", "updateLeaseTime(id)", "close()"}[check];
                    if (stillHeld) violation(after + by + " found it still held (expected: not held, its lease ran out)");
                    op("expired permit: " + by + " found it not held");
                } catch (RuntimeException e) {
                    violation(after + "check " + check + " threw " + e);
                }
            } else {
                long newLease = rnd.nextBoolean() ? -1 : 1_000 + rnd.nextInt(1_000), updating = System.nanoTime();
                boolean wasHeld = xs[rnd.nextInt(CLIENTS)].updateLeaseTime(id, newLease, MILLISECONDS);
                if (!wasHeld) {
                    drop(h);
                    if (System.nanoTime() < notBefore) {
                        violation(how + ": updateLeaseTime " + ms(System.nanoTime() - start) + " ms after the acquire started: not held");
                    }
                    return;
                }
                h.deadline = newLease < 0 ? Long.MAX_VALUE : updating + newLease * MS - 10 * MS;
                sleepUntil(end + lease * MS + 30 * MS); // past the first lease
                drop(h);
                if (!releaseId(c, id, rnd) && (newLease < 0 || System.nanoTime() < h.deadline)) {
                    violation(how + ", then updateLeaseTime(" + newLease + " ms) = true: its release " + ms(System.nanoTime() - updating)
                            + " ms after the update found it not held");
                }
                op("lease updated, then held past the first lease" + (newLease < 0 ? " (never expires)" : ""));
            }
        }

        /** Release by id in one of the three ways, by another client now and then; whether it was held. */
        private boolean releaseId(int c, String id, ThreadLocalRandom rnd) {
            BatonPermitExpirableSemaphore x = xs[rnd.nextInt(4) == 0 ? (c + 1 + rnd.nextInt(CLIENTS - 1)) % CLIENTS : c];
            try {
                switch (rnd.nextInt(3)) {
                    case 0 -> x.release(id);
                    case 1 -> {
                        return x.tryRelease(id);
                    }
                    default -> await(x.releaseAsync(id));
                }
                return true;
            } catch (IllegalArgumentException e) {
                return false;
            }
        }

        void asyncOp(int c, int depth, CompletableFuture<List<Hold>> done) {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            int how = rnd.nextInt(HOW.length), n = rnd.nextBoolean() ? 0 : weight(rnd);
            long kUs = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(3000), lease = rnd.nextBoolean() ? -1 : LONG_LEASE_MS;
            long wait = how == 4 ? 10 + rnd.nextInt(190) : 10_000, start = System.nanoTime();
            String what = "client " + c + " tryAcquireAsync(" + (n == 0 ? "" : n + ", ") + wait + " ms, lease " + lease + " ms), give-up: "
                    + HOW[how] + " after " + kUs + " us";
            if (n == 0) {
                drive(this, c, depth, done, what, xs[c].tryAcquireAsync(wait, lease, MILLISECONDS).toCompletableFuture(), how, kUs,
                        Optional.empty(), v -> holds(v.map(List::of).orElse(List.of()), start, lease, what), start, wait);
            } else {
                drive(this, c, depth, done, what, xs[c].tryAcquireAsync(n, wait, lease, MILLISECONDS).toCompletableFuture(), how, kUs,
                        List.of(), v -> {
                            if (!v.isEmpty() && v.size() != n) violation(what + " returned " + v.size() + " ids");
                            return holds(v, start, lease, what);
                        }, start, wait);
            }
        }

        void release(int c, List<Hold> holds, ThreadLocalRandom rnd) {
            for (Hold h : holds) {
                drop(h);
                try {
                    if (!releaseId(c, h.id, rnd)) {
                        violation("client " + c + ": the release of permit " + h.id + " (lease 30 s or none) found it not held");
                    }
                } catch (RuntimeException e) {
                    violation("client " + c + ": the release of permit " + h.id + " threw " + e);
                }
            }
        }

        List<Hold> takeAll(int c) throws InterruptedException {
            List<String> ids = xs[c].tryAcquire((int) total, 0, LONG_LEASE_MS, MILLISECONDS);
            if (ids.size() == total) return new ArrayList<>(holds(ids, System.nanoTime(), LONG_LEASE_MS, "a probe's tryAcquire(" + total + ")"));
            violation("at a quiet point with all " + total + " permits free, tryAcquire(" + total + ", 0, ...) returned " + ids);
            return null;
        }

        Waiter waiter(int c, ThreadLocalRandom rnd) {
            BatonPermitExpirableSemaphore x = xs[c];
            String what = "a probe's waiter on client " + c;
            long start = System.nanoTime();
            return switch (rnd.nextInt(3)) {
                case 0 -> inThread("acquire(lease 30 s)", () -> holds(List.of(x.acquire(LONG_LEASE_MS, MILLISECONDS)), start, LONG_LEASE_MS, what));
                case 1 -> inThread("tryAcquire(10 s, lease 30 s)", () -> holds(x.tryAcquire(10_000, LONG_LEASE_MS, MILLISECONDS)
                        .map(List::of).orElse(List.of()), start, LONG_LEASE_MS, what));
                default -> async("tryAcquireAsync(10 s, lease 30 s)", x.tryAcquireAsync(10_000, LONG_LEASE_MS, MILLISECONDS),
                        v -> holds(v.map(List::of).orElse(List.of()), start, LONG_LEASE_MS, what));
            };
        }

        /** "a waiter also wakes when the earliest permit's lease runs out": not before it, and by it + the margin. */
        void leaseProbe(ThreadLocalRandom rnd) throws InterruptedException {
            List<Hold> mine = new ArrayList<>(holds(xs[0].tryAcquire((int) total - 1, 0, LONG_LEASE_MS, MILLISECONDS),
                    System.nanoTime(), LONG_LEASE_MS, "the lease probe"));
            long lease = 200 + rnd.nextInt(200), start = System.nanoTime();
            Optional<String> shortId = xs[0].tryAcquire(0, lease, MILLISECONDS);
            long end = System.nanoTime();
            if (mine.size() != total - 1 || shortId.isEmpty()) {
                violation("lease probe: at a quiet point tryAcquire took " + mine.size() + " + " + shortId + " of " + total);
                release(0, mine, rnd);
                return;
            }
            Hold h = holds(List.of(shortId.get()), start, lease, "the lease probe's short permit").get(0);
            Waiter w = waiter(1 + rnd.nextInt(CLIENTS - 1), rnd);
            List<Hold> got = outcome(w, withinNs(lease * MS));
            drop(h);
            if (got != null) {
                op("probe: a waiter woken by a lease's end");
                if (w.at < start + lease * MS - 10 * MS) {
                    violation(w.what + " granted " + ms(w.at - start) + " ms after a " + lease + " ms lease began: before it ended");
                }
                late(end, w.at, withinNs(lease * MS), () -> w.what + " granted " + ms(w.at - end) + " ms after the " + lease
                        + " ms lease of the only other permit began (promise: a waiter wakes when it runs out)");
                release(1, got, rnd);
            }
            if (xs[0].tryRelease(shortId.get()) || xs[0].updateLeaseTime(shortId.get(), 1, TimeUnit.SECONDS)) {
                violation("lease probe: the permit whose " + lease + " ms lease ran out is still held");
            }
            release(0, mine, rnd);
        }

        /** trySetPermits on the existing semaphore; +a and back by addPermits or setPermits ("Sets the total permits"). */
        void coordinate(ThreadLocalRandom rnd, long until) {
            pause(rnd, until);
            if (rnd.nextBoolean() && xs[rnd.nextInt(CLIENTS)].trySetPermits(1 + rnd.nextInt(9))) {
                violation("trySetPermits on an existing semaphore returned true");
            }
            int a = 1 + rnd.nextInt(2);
            boolean set = rnd.nextBoolean();
            BatonPermitExpirableSemaphore x = xs[rnd.nextInt(CLIENTS)];
            changeTotal(BASE + a, () -> {
                if (set) x.setPermits(BASE + a); else x.addPermits(a);
            });
            pause(rnd, until);
            pause(rnd, until);
            changeTotal(BASE, () -> {
                if (set) x.setPermits(BASE); else x.addPermits(-a);
            });
            sleepUntil(until);
        }

        void resync(int avail, Snap s) {
            s.ids().forEach(xs[0]::tryRelease);
            xs[0].addPermits((int) (total - xs[0].availablePermits()));
        }
    }

    // ================================================================== async give-ups

    /**
     * Arms one way of giving up (0 cancel, 1 orTimeout, 2 completeOnTimeout, 3 complete, 4 none: a
     * bounded wait, judged on its bound) and settles the call: a grant becomes holds; a given-up call
     * holds nothing, and half the time the next call starts inside its own callback. complete(value) is
     * settled by its return value (a Void stage completed with null says nothing else), so
     * completeOnTimeout is used only on stages whose value says whether they were granted.
     */
    private <T> void drive(Kind k, int c, int depth, CompletableFuture<List<Hold>> done, String what, CompletableFuture<T> f,
                           int how, long kUs, T giveUpValue, Function<T, List<Hold>> holdsOf, long start, long wait) {
        AtomicBoolean won = new AtomicBoolean(); // complete(value): whether the storm's value took effect
        BiConsumer<T, Throwable> settle = (v, x) -> {
            long end = System.nanoTime();
            List<Hold> holds = List.of();
            boolean gaveUp;
            if (x != null) {
                Throwable u = unwrap(x);
                gaveUp = (how == 0 && u instanceof CancellationException) || (how == 1 && u instanceof TimeoutException);
                if (!gaveUp) violation(what + " failed with " + u);
            } else if (won.get()) {
                gaveUp = true;
            } else {
                holds = holdsOf.apply(v);
                gaveUp = holds.isEmpty() && how != 4;
            }
            if (how == 4) late(start, end, boundNs(wait), () -> what + " completed after " + ms(end - start) + " ms");
            op(how == 4 ? (holds.isEmpty() ? "timed out (async)" : "granted (async, bounded)")
                    : gaveUp ? "give-up: " + HOW[how] : "granted although given up by " + HOW[how]);
            if (gaveUp && depth < 3 && ThreadLocalRandom.current().nextBoolean()) {
                op("next call started inside the given-up future's callback");
                k.asyncOp(c, depth + 1, done);
            } else {
                done.complete(holds);
            }
        };
        Runnable complete = () -> {
            won.set(f.complete(giveUpValue));
            f.whenComplete(settle); // runs here, now: the future is complete
        };
        if (how != 3) f.whenComplete(settle);
        switch (how) {
            case 0 -> giver.schedule(() -> f.cancel(true), kUs, MICROSECONDS);
            case 1 -> f.orTimeout(kUs, MICROSECONDS);
            case 2 -> f.completeOnTimeout(giveUpValue, kUs, MICROSECONDS);
            case 3 -> {
                if (kUs == 0) {
                    complete.run();
                } else {
                    giver.schedule(complete, kUs, MICROSECONDS);
                }
            }
            default -> {
            }
        }
    }

    // ================================================================== blocking calls, interrupts, bounds

    /** A blocking worker; the interrupter interrupts it only while it waits interruptibly. */
    static final class Worker {
        static final int IDLE = 0, WAITING = 1, INTERRUPTING = 2, INTERRUPTED = 3;
        final AtomicInteger state = new AtomicInteger(IDLE);
        volatile Thread thread;

        /** After the call: no interrupt of the storm's lands from here on, the flag is cleared; whether one landed. */
        boolean settle() {
            boolean hit = false;
            if (!state.compareAndSet(WAITING, IDLE)) {
                while (state.get() == INTERRUPTING) Thread.onSpinWait();
                hit = state.get() == INTERRUPTED;
                state.set(IDLE);
            }
            Thread.interrupted();
            return hit;
        }
    }

    /** One blocking acquire: when it started, how it ended, and the judgement of that. */
    private final class Call {
        final String how;
        final Worker w;
        final long start;
        boolean interrupted;
        RuntimeException failure;

        Call(String how, Worker w, boolean interruptible) {
            this.how = how;
            this.w = w;
            if (interruptible) w.state.set(Worker.WAITING);
            this.start = System.nanoTime();
        }

        /** Judges the call (wait: its wait time; -2 when it has none); whether it ended without an exception of its own. */
        boolean end(boolean got, long wait) {
            long end = System.nanoTime();
            boolean hit = w.settle();
            if (failure != null) {
                violation(how + " threw " + failure + " (Redis healthy, nobody deletes during rounds)");
                return false;
            }
            if (interrupted && !hit) violation(how + " threw InterruptedException without an interrupt");
            op(interrupted ? "give-up: interrupt" : got ? "granted" : "timed out");
            if (wait >= -1) {
                late(start, end, boundNs(wait), () -> how + " returned " + (got ? "granted" : interrupted ? "interrupted" : "false")
                        + " after " + ms(end - start) + " ms");
                if (!got && !interrupted && wait > 0 && end - start < wait * MS) {
                    op("false before its wait ended (not judged: no such promise for semaphores)");
                }
            }
            return true;
        }
    }

    private Thread interrupter(List<Worker> workers) {
        return new Thread(() -> {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            while (!stop) {
                LockSupport.parkNanos((1 + rnd.nextInt(8)) * MS);
                Worker w = workers.get(rnd.nextInt(workers.size()));
                if (w.state.compareAndSet(Worker.WAITING, Worker.INTERRUPTING)) {
                    w.thread.interrupt();
                    w.state.set(Worker.INTERRUPTED);
                }
            }
        }, "storm-interrupter");
    }

    /** The margin rule: a promise of d is checked at d + max(20 % of d, 300 ms). */
    private static long withinNs(long promisedNs) { return promisedNs + Math.max(promisedNs / 5, 300 * MS); }

    /** "every timed call back within its wait + the command timeout + 150 ms (+ the margin)"; zero or less: one attempt. */
    private static long boundNs(long waitMs) { return withinNs((Math.max(0, waitMs) + T_MS + 150) * MS); }

    /** A thread that only parks 2 ms: a gap over 50 ms means the JVM or the machine did not run threads. */
    private Thread stallTicker() {
        return daemon(new Thread(() -> {
            long last = System.nanoTime();
            while (!stop) {
                LockSupport.parkNanos(2 * MS);
                long now = System.nanoTime();
                if (now - last > 50 * MS && stalls.size() < 100_000) stalls.add(new long[]{last, now});
                last = now;
            }
        }, "storm-stall-ticker"));
    }

    private long stalledWithin(long from, long to) {
        return stalls.stream().mapToLong(g -> Math.max(0, Math.min(to, g[1]) - Math.max(from, g[0]))).sum();
    }

    /** A call past its bound is a violation, unless the JVM or machine itself was stalled for the overrun. */
    private void late(long start, long end, long bound, Supplier<String> what) {
        op("check: bound");
        long over = end - start - bound;
        if (over > 0 && stalledWithin(start, end) >= over) {
            op("late by no more than a measured stall (not counted)");
        } else if (over > 0) {
            violation(what.get() + ", past its bound of " + ms(bound) + " ms [stalls seen in it: " + ms(stalledWithin(start, end)) + " ms]");
        }
    }

    // ================================================================== small helpers

    private void violation(String what) {
        violations.incrementAndGet();
        if (described.size() < 8) {
            described.add("[t+" + ms(System.nanoTime() - t0) + " ms, " + Thread.currentThread().getName() + "] " + what);
        }
    }

    private void op(String kind) { ops.computeIfAbsent(kind, x -> new AtomicLong()).incrementAndGet(); }

    /** Keeps the largest value seen under this name. */
    private void op(String kind, long value) {
        ops.computeIfAbsent(kind, x -> new AtomicLong()).accumulateAndGet(value, Math::max);
    }

    private void close(AutoCloseable handle, String how, ThreadLocalRandom rnd) {
        try {
            handle.close();
            if (rnd.nextInt(3) == 0) {
                handle.close(); // "exactly once however often it is called"
                op("handle closed twice");
            }
        } catch (Exception e) {
            violation(how + ": close() of its handle threw " + e);
        }
    }

    private static int weight(ThreadLocalRandom rnd) { return new int[]{1, 1, 1, 2, 3}[rnd.nextInt(5)]; }

    /** -1 or 0 (one attempt), 1-5 ms, or 10-200 ms. */
    private static long waitMs(ThreadLocalRandom rnd) {
        return switch (rnd.nextInt(4)) {
            case 0 -> rnd.nextInt(2) - 1;
            case 1 -> 1 + rnd.nextInt(5);
            default -> 10 + rnd.nextInt(190);
        };
    }

    private static void park(ThreadLocalRandom rnd, int maxMicros) { LockSupport.parkNanos(rnd.nextInt(maxMicros + 1) * 1_000L); }

    /** Parks until then: a park can return early (a stray unpark), which a lease check must not take for the time passing. */
    private static void sleepUntil(long then) {
        for (long left = then - System.nanoTime(); left > 0; left = then - System.nanoTime()) LockSupport.parkNanos(left);
    }

    /** The coordinator's pause between two actions: 10-60 ms, not past the round's end. */
    private static void pause(ThreadLocalRandom rnd, long until) {
        sleepUntil(Math.min(System.nanoTime() + (10 + rnd.nextInt(50)) * MS, until));
    }

    private static <T> T await(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(withinNs((T_MS + 150) * MS), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw unwrap(e) instanceof RuntimeException re ? re : new IllegalStateException(unwrap(e));
        }
    }

    private static Throwable unwrap(Throwable e) {
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) e = e.getCause();
        return e;
    }

    private static Thread daemon(Thread t) { t.setDaemon(true); return t; }

    private static long ms(long nanos) { return TimeUnit.NANOSECONDS.toMillis(nanos); }
}
