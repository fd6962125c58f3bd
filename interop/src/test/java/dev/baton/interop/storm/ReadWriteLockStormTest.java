package dev.baton.interop.storm;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonReadWriteLock;
import dev.baton.HeldLease;
import dev.baton.LeaseLostException;
import dev.baton.LockHold;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Storm written blind (public API and docs only) on the READ-WRITE lock, with forceUnlock of a reentrant lock beside it.
 * Three Baton clients; on each, two blocking threads (every acquire form, interrupted at random while they wait), one
 * asynchronous owner (every way of giving a future up; the same owner's next call at once, half the time from the given-up
 * future's own callback) and one thread on a reentrant lock that a forcer force-unlocks every 2-15 ms. Promises checked:
 * <ol>
 *   <li><b>Exclusion</b>: "many readers or one writer" (BatonReadWriteLock); "Readers share; a writer excludes readers and
 *       writers, across clients" (guarantees.md). By an in-JVM board (entered once a grant returned, left before the unlock
 *       is sent), and by atomic snapshots of the hash as data-layout.md lays it out ("field mode = read or write; a reader's
 *       field = its owner id → read hold count; the writer's field = &lt;owner id&gt;:write"): one write field at most, only
 *       with mode=write, beside no other owner's read field.</li>
 *   <li><b>Re-entry</b>: "Both sides are reentrant; each read hold has its own lease key" (guarantees.md);
 *       "{name}:&lt;owner id&gt;:rwlock_timeout:&lt;n&gt; ... (n = 1 … the owner's read holds)" (data-layout.md). A
 *       holder's fields show exactly its counts and mode; keys 1..n of its n reads exist, n+1 not.</li>
 *   <li><b>Downgrade</b>: "Downgrade (write, then read, then release the write) keeps reading without letting a writer in"
 *       (read-write-lock.md); the release "sets mode = read (the writer's reads remain)" (data-layout.md).</li>
 *   <li><b>Upgrade</b>: "fails at once with IllegalMonitorStateException, from lock() and tryLock() alike"
 *       (BatonReadWriteLock), "at once (one round trip)" (guarantees.md): within the command timeout + 150 ms + margin. A
 *       writer holding no read is never refused so.</li>
 *   <li><b>No writer starvation</b>: "a waiting writer keeps new Baton readers out until it gets in" (BatonReadWriteLock);
 *       "Once a writer waits, no new Baton reader gets in" (guarantees.md); baton_rwlock_writer:{name}: "New Baton readers
 *       (holding no read yet) are refused while it exists" (data-layout.md). A probe attributes the mark to its owner's
 *       write call in progress; a reader holding nothing that started after the probe saw it must not be granted while that
 *       writer waits for a grant it then gets. The mark goes with its writer ("its mark lives while it waits", clean-ups
 *       "landed within 300 ms"); its PX is at most 3,000 ms.</li>
 *   <li><b>Giving up</b>: "Completing an acquisition's future before it ends, in any way (cancel, orTimeout,
 *       completeOnTimeout, complete), abandons the wait: it leaves nothing held, and a grant that raced the completion is
 *       given back" (BatonLock); the owner's next acquisition, "even one started from a callback of the old future, starts
 *       only once that one's clean-up is on the wire ... so the give-back ... can never undo the new hold" (guarantees.md).
 *       A reused owner's grant shows exactly its counts; a retired owner has no field, key or mark 300 ms after its last
 *       call; an interrupted or refused blocking wait holds nothing for the thread's next command.</li>
 *   <li><b>Fixed leases</b>: "a fixed lease is never renewed and expires at its end; the client stops counting it in
 *       leasesHeld() as soon as it has run out (checked at its lease + 300 ms) and keeps no entry for it, and its owner's
 *       unlock reports the loss once" (guarantees.md); "Each read hold has its own lease" (read-write-lock.md). Once a
 *       second a reader or a writer holds a 100-200 ms lease and stalls 300 ms past it: overlaps with it are excused once
 *       its lease may have run out; its unlock must throw LeaseLostException.</li>
 *   <li><b>Bounds</b>, by the margin rule ("A promise of a time d is checked at d plus 20 % of d or 300 ms, whichever is
 *       larger", guarantees.md): "tryLock(t) that cannot get the lock returns false at t, not before"; "every timed call
 *       back within its wait + the command timeout + 150 ms (+ the margin)"; "One more T for a lock call that follows the
 *       same owner's abandoned call". Overruns are excused only up to a JVM stall seen by a thread parking 2 ms at a time.</li>
 *   <li><b>forceUnlock</b> (reentrant lock): "Deletes the lock whoever holds it and wakes its waiters. The former holder
 *       learns of it through LeaseLostException on its next unlock. &#64;return whether the lock was held" (BatonLock); "a
 *       re-entry that finds the owner's holds gone from Redis ... throws LeaseLostException at once too and holds nothing"
 *       (guarantees.md). A holder surely forced is told at unlock and re-entry; a LeaseLostException needs a force that may
 *       have hit the hold; a force during which someone held throughout returns true; holders overlap only across a force;
 *       after a force, a waiter from before it is not left waiting 1 s + margin while nobody is granted ("the waiter
 *       returns within 1 s"). After the storm: "forceUnlock() on a side deletes the lock only if it is held in that side's
 *       mode" (BatonReadWriteLock).</li>
 *   <li>At the end no key of either lock is left and no client counts a lease.</li>
 * </ol>
 * {@code -Dbaton.storm.seconds=N} sets the length (2 s by default).
 */
class ReadWriteLockStormTest {

    private static final String NAME = "storm-rw";
    private static final String MARK = "baton_rwlock_writer:{" + NAME + "}";
    private static final String FORCE_NAME = "storm-force-lock";
    private static final long MS = 1_000_000L;
    private static final long T_MS = BatonOptions.DEFAULT_COMMAND_TIMEOUT.toMillis();
    private static final long LEASE_MS = 10_000;
    private static final long CLEAN_UP_NS = 300 * MS;
    private static final long WAKE_NS = 1_300 * MS; // "within 1 s", with the margin
    private static final long MAX_OPS = 2_000_000;
    private static final long ONE_COMMAND_NS = withinNs((T_MS + 150) * MS);
    private static final Exception GIVEN_UP = new Exception("given up by the storm");
    private static final String[] KINDS = {"lock()", "lock(lease)", "tryLock()", "tryLock(wait)", "tryLock(wait, lease)",
            "lockInterruptibly()", "tryAcquire(wait)"};

    private final long t0 = System.nanoTime();
    private final AtomicLong violations = new AtomicLong();
    private final Queue<String> described = new ConcurrentLinkedQueue<>();
    private final Map<String, AtomicLong> counts = new ConcurrentSkipListMap<>();
    private final List<long[]> stalls = new CopyOnWriteArrayList<>();
    private final AtomicLong nextStall = new AtomicLong();
    private final AtomicInteger stallsStarted = new AtomicInteger();
    private final Map<String, Boolean> abandoned = new ConcurrentHashMap<>();
    private volatile boolean stop;

    // ------------------------------------------------------------------ helpers

    private void violation(String what) {
        violations.incrementAndGet();
        if (described.size() < 8) {
            described.add("[t+" + at(System.nanoTime()) + " ms, " + Thread.currentThread().getName() + "] " + what);
        }
    }

    private void count(String what) { counts.computeIfAbsent(what, k -> new AtomicLong()).incrementAndGet(); }

    private long counted(String prefix) {
        return counts.entrySet().stream().filter(e -> e.getKey().startsWith(prefix)).mapToLong(e -> e.getValue().get()).sum();
    }

    private long at(long nanos) { return ms(nanos - t0); }

    private static long ms(long nanos) { return TimeUnit.NANOSECONDS.toMillis(nanos); }

    /** The margin rule: a promise of d is checked at d + max(20 % of d, 300 ms). */
    private static long withinNs(long promisedNs) { return promisedNs + Math.max(promisedNs / 5, 300 * MS); }

    /** A false "at t" (t + margin); any other end within wait + T + 150 ms (+ margin); + T after an abandoned call. */
    private static long boundNs(long waitMs, boolean falseResult, boolean afterAbandoned) {
        long extra = afterAbandoned ? T_MS : 0;
        return falseResult && waitMs > 0 ? withinNs((waitMs + extra) * MS) : withinNs((Math.max(0, waitMs) + T_MS + 150 + extra) * MS);
    }

    /** Parks 2 ms at a time; a gap over 50 ms is a stall of the JVM or the machine, not of Baton. */
    private Thread stallTicker() {
        Thread t = new Thread(() -> {
            for (long last = System.nanoTime(), now; !stop; last = now) {
                LockSupport.parkNanos(2 * MS);
                now = System.nanoTime();
                if (now - last > 50 * MS && stalls.size() < 100_000) {
                    stalls.add(new long[]{last, now});
                }
            }
        }, "storm-rw-stall-ticker");
        t.setDaemon(true);
        return t;
    }

    private long stalledWithin(long from, long to) {
        return stalls.stream().mapToLong(g -> Math.max(0, Math.min(to, g[1]) - Math.max(from, g[0]))).sum();
    }

    /** A call past its bound is a violation (true), unless the JVM or machine was stalled for the overrun. */
    private boolean late(long start, long end, long bound, Supplier<String> what) {
        long over = end - start - bound;
        if (over > 0 && stalledWithin(start, end) >= over) {
            count("late by no more than a measured JVM stall (excused)");
        } else if (over > 0) {
            violation(what.get() + " took " + ms(end - start) + " ms, past its bound of " + ms(bound) + " ms (stall ticker saw "
                    + ms(stalledWithin(start, end)) + " ms of stall)");
            return true;
        }
        return false;
    }

    /** A call that sends one command (a re-entry, an unlock), held to that bound. */
    private <T> T timed(Callable<T> call, String what) throws Exception {
        long start = System.nanoTime();
        try {
            return call.call();
        } finally {
            late(start, System.nanoTime(), ONE_COMMAND_NS, () -> what);
        }
    }

    private static Throwable unwrap(Throwable e) {
        return (e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null ? unwrap(e.getCause()) : e;
    }

    private static void park(ThreadLocalRandom rnd, int maxMicros) { LockSupport.parkNanos(rnd.nextInt(maxMicros + 1) * 1_000L); }

    /** 0 (one try) a quarter of the time, 1-300 ms half, 300-1500 ms a quarter. */
    private static long waitMs(ThreadLocalRandom rnd) {
        int r = rnd.nextInt(4);
        return r == 0 ? 0 : r == 3 ? 300 + rnd.nextInt(1201) : 1 + rnd.nextInt(300);
    }

    private static Map<String, String> toMap(List<?> flat) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            m.put(String.valueOf(flat.get(i)), String.valueOf(flat.get(i + 1)));
        }
        return m;
    }

    private static boolean lockTrue(BatonLock lock) { lock.lock(); return true; }

    private static boolean interruptiblyTrue(BatonLock lock) throws InterruptedException { lock.lockInterruptibly(); return true; }

    private static <T> T get(CompletionStage<T> stage) throws Exception { return stage.toCompletableFuture().get(5, TimeUnit.SECONDS); }

    private static BatonLock side(BatonReadWriteLock rw, boolean write) { return write ? rw.writeLock() : rw.readLock(); }

    // ------------------------------------------------------------------ the in-JVM board and the writer's mark

    /** What one owner holds, as the storm's own threads believe. */
    static final class Holding {
        int reads;
        int writes;
        long mayExpireAt = Long.MAX_VALUE;
        String how;
    }

    private final Map<String, Holding> board = new HashMap<>();

    private void enter(String owner, boolean write, String how, long mayExpireAt) {
        long now = System.nanoTime();
        synchronized (board) {
            board.forEach((other, o) -> {
                if (!other.equals(owner) && (o.writes > 0 || write && o.reads > 0)) {
                    if (now >= o.mayExpireAt || now >= mayExpireAt) { // either hold's fixed lease may have run out
                        count("holds overtaken past their fixed lease");
                    } else {
                        violation((write ? "writer " : "reader ") + owner + " (" + how + ") got in while " + other + " held " + o.reads
                                + " read(s) and " + o.writes + " write(s) (" + o.how + ")");
                    }
                }
            });
            Holding h = board.computeIfAbsent(owner, k -> new Holding());
            h.writes += write ? 1 : 0;
            h.reads += write ? 0 : 1;
            h.mayExpireAt = Math.min(h.mayExpireAt, mayExpireAt);
            h.how = how;
        }
    }

    private void exit(String owner, boolean write) {
        synchronized (board) {
            Holding h = board.get(owner);
            h.writes -= write ? 1 : 0;
            h.reads -= write ? 0 : 1;
            if (h.reads == 0 && h.writes == 0) {
                board.remove(owner);
            }
        }
    }

    /** One top-level write acquisition (or upgrade attempt), for the writer's mark. */
    static final class WriteCall {
        final String field;
        final String how;
        final long start = System.nanoTime();
        final long prevGaveUp; // when the owner's previous write call gave up (its mark may linger 300 ms); 0 if granted
        volatile boolean granted;
        volatile long end;
        volatile long released;
        volatile long markSeen;
        volatile boolean markFlagged;
        final List<String> suspects = new CopyOnWriteArrayList<>();

        WriteCall(String field, String how, long prevGaveUp) {
            this.field = field;
            this.how = how;
            this.prevGaveUp = prevGaveUp;
        }

        /** When its mark had to be gone: its give-up, or the release of its write; 0 while not known. */
        long done() { return end == 0 ? 0 : granted ? released : end; }
    }

    private final Map<String, WriteCall> lastWrite = new ConcurrentHashMap<>();
    private final Set<WriteCall> waitingWriters = ConcurrentHashMap.newKeySet();

    private WriteCall writeBegins(String owner, String how) {
        WriteCall prev = lastWrite.get(owner + ":write");
        WriteCall c = new WriteCall(owner + ":write", how, prev == null || prev.granted ? 0 : prev.end);
        lastWrite.put(c.field, c);
        waitingWriters.add(c);
        return c;
    }

    private void writeEnds(WriteCall c, boolean granted) {
        c.granted = granted;
        c.end = System.nanoTime();
        waitingWriters.remove(c);
        if (granted && !c.suspects.isEmpty()) {
            violation("writer starvation: " + c.suspects.get(0) + " got in while writer " + c.field + " (" + c.how + ", started t+"
                    + at(c.start) + " ms, its mark seen in Redis at t+" + at(c.markSeen) + " ms) still waited; that writer was granted"
                    + " only at t+" + at(c.end) + " ms (" + c.suspects.size() + " such reader(s))");
        }
    }

    /** A reader holding nothing was granted: a writer whose mark was seen before it started must not be granted later. */
    private void freshReaderGranted(String owner, long start, String how) {
        long now = System.nanoTime();
        for (WriteCall c : waitingWriters) {
            if (c.markSeen != 0 && c.markSeen < start && c.end == 0 && c.suspects.size() < 4) {
                count("new readers granted while a writer's mark was seen (judged when the writer ends)");
                c.suspects.add("reader " + owner + " (" + how + ", started t+" + at(start) + " ms, granted by t+" + at(now) + " ms)");
            }
        }
    }

    // ------------------------------------------------------------------ Redis state, read as data-layout.md describes it

    private static final String SNAPSHOT = "return {redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[2]), redis.call('GET', KEYS[2])}";
    private static final String OWNER_STATE = "local n = tonumber(ARGV[1]) local c = 0 for i = 1, n do c = c + redis.call('EXISTS',"
            + " KEYS[2] .. i) end return {redis.call('HGETALL', KEYS[1]), c, redis.call('EXISTS', KEYS[2] .. (n + 1))}";
    private static final String RETIRED = "return {redis.call('HGET', KEYS[1], ARGV[1]), redis.call('HGET', KEYS[1], ARGV[1] .. ':write'),"
            + " redis.call('EXISTS', KEYS[3]), redis.call('GET', KEYS[2])}";

    private static String holdKeyPrefix(String owner) { return "{" + NAME + "}:" + owner + ":rwlock_timeout:"; }

    /** While {@code owner} holds {@code reads} reads and {@code writes} writes, Redis must show exactly that. */
    private void stateCheck(RedisCommands<String, String> raw, String owner, int reads, int writes, String how) {
        List<Object> r = raw.eval(OWNER_STATE, ScriptOutputType.MULTI, new String[]{NAME, holdKeyPrefix(owner)}, String.valueOf(reads));
        Map<String, String> m = toMap((List<?>) r.get(0));
        count("state checks while held");
        String problem = null;
        if (!Objects.equals(m.get(owner), reads > 0 ? String.valueOf(reads) : null)) {
            problem = "its read field is " + m.get(owner);
        } else if (!Objects.equals(m.get(owner + ":write"), writes > 0 ? String.valueOf(writes) : null)) {
            problem = "its write field is " + m.get(owner + ":write");
        } else if (!Objects.equals(m.get("mode"), writes > 0 ? "write" : "read")) {
            problem = "mode is " + m.get("mode");
        } else if ((Long) r.get(1) != reads || (Long) r.get(2) != 0) {
            problem = r.get(1) + " of its read-hold keys 1.." + reads + " exist" + ((Long) r.get(2) != 0 ? ", and key " + (reads + 1) : "");
        } else if (m.keySet().stream().anyMatch(f -> !f.equals("mode") && !f.equals(owner) && !f.equals(owner + ":write")
                && (writes > 0 || f.endsWith(":write")))) {
            problem = "another owner's field is beside it";
        }
        if (problem != null) {
            violation(how + " by " + owner + " holds " + reads + " read(s) and " + writes + " write(s), but in Redis " + problem + ": " + m);
        }
    }

    /** Atomic snapshots of the hash and the writer's mark, every 0-2.5 ms. */
    private void probeLoop(RedisCommands<String, String> raw, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (!stop && System.nanoTime() < deadline) {
            long send = System.nanoTime();
            List<Object> reply = raw.eval(SNAPSHOT, ScriptOutputType.MULTI, NAME, MARK);
            long replyAt = System.nanoTime();
            count("probe snapshots");
            Map<String, String> m = toMap((List<?>) reply.get(0));
            List<String> writers = m.keySet().stream().filter(f -> f.endsWith(":write")).toList();
            String w = writers.isEmpty() ? null : writers.get(0);
            if (writers.size() > 1 || !m.isEmpty() && (w == null) == "write".equals(m.get("mode"))
                    || w != null && m.keySet().stream().anyMatch(f -> !f.equals("mode") && !f.equals(w) && !(f + ":write").equals(w))) {
                violation("snapshot: a writer beside another holder, or mode and write field disagree: " + m);
            }
            if (reply.size() > 2 && reply.get(2) != null) {
                judgeMark(String.valueOf(reply.get(2)), (Long) reply.get(1), send, replyAt);
            }
            park(rnd, 2500);
        }
    }

    private void judgeMark(String mark, long pttl, long send, long replyAt) {
        count("probe snapshots with a writer's mark");
        if (pttl > 3000 || pttl == -1) {
            violation("the writer's mark " + mark + " has PTTL " + pttl + " (data-layout.md: PX 3,000 ms)");
        }
        WriteCall c = lastWrite.get(mark);
        if (c == null || c.start >= send || c.prevGaveUp != 0 && c.prevGaveUp + CLEAN_UP_NS >= send) {
            return; // the mark may be the owner's previous call's
        }
        if (c.end == 0) { // waiting throughout [send, reply]: the mark is its own
            if (c.markSeen == 0) {
                c.markSeen = replyAt;
                count("marks attributed to a waiting writer");
            }
        } else if (c.done() != 0 && lastWrite.get(mark) == c && !c.markFlagged) {
            c.markFlagged = late(c.done(), send, CLEAN_UP_NS, () -> "the writer's mark of " + mark + " is still in Redis at t+" + at(send)
                    + " ms, after its call (" + c.how + ") " + (c.granted ? "was granted and released the write" : "gave up") + " at t+"
                    + at(c.done()) + " ms; that");
        }
    }

    // ------------------------------------------------------------------ the critical section, blocking or async

    interface Step {
        boolean run(boolean write) throws Exception;
    }

    /** How one owner (a blocking thread, or an async owner id) re-enters either side, releases one hold, tries an upgrade. */
    record Hands(String owner, Step again, Step unlock, Step upgrade) {
    }

    /**
     * A granted first hold: maybe a re-entry; a writer maybe takes a read and, if {@code special}, downgrades; a reader with
     * {@code special} tries an upgrade. Redis is checked against the holds; every hold is released.
     */
    private void section(Hands h, boolean write, boolean special, String how, WriteCall c, long callStart,
                         RedisCommands<String, String> raw, ThreadLocalRandom rnd) {
        String of = h.owner();
        if (!write) {
            freshReaderGranted(of, callStart, how);
        }
        enter(of, write, how, Long.MAX_VALUE);
        int reads = write ? 0 : 1;
        int writes = write ? 1 : 0;
        try {
            park(rnd, 2000);
            if (rnd.nextInt(4) == 0) {
                if (!timed(() -> h.again().run(write), how + ": the re-entry by " + of)) {
                    throw new IllegalStateException("the holder's re-entry was refused");
                }
                enter(of, write, how + " re-entered", Long.MAX_VALUE);
                reads += write ? 0 : 1;
                writes += write ? 1 : 0;
                count("re-entries");
            }
            if (write && (special || rnd.nextInt(6) == 0)) {
                if (!timed(() -> h.again().run(false), how + ": the writer's read by " + of)) {
                    throw new IllegalStateException("the writer was refused a read");
                }
                enter(of, false, how + " then read", Long.MAX_VALUE);
                reads = 1;
                stateCheck(raw, of, reads, writes, how + " then read");
                for (; special && writes > 0; writes--) { // the downgrade: release the write, keep reading
                    exit(of, true);
                    timed(() -> h.unlock().run(true), how + ": the write unlock by " + of);
                    c.released = System.nanoTime();
                }
                count(special ? "downgrades" : "reads taken by a writer");
                park(rnd, special ? 3000 : 0);
            } else if (!write && special) {
                WriteCall up = writeBegins(of, "an upgrade while holding only reads");
                long start = System.nanoTime();
                try {
                    boolean got = h.upgrade().run(true);
                    violation("an upgrade by " + of + " holding only reads returned " + got + " (promised: IllegalMonitorStateException)");
                    if (got) {
                        h.unlock().run(true);
                    }
                } catch (Exception e) {
                    Throwable x = unwrap(e);
                    if (x instanceof IllegalMonitorStateException && !(x instanceof LeaseLostException)) {
                        count("upgrades refused");
                    } else {
                        violation("an upgrade by " + of + " holding only reads failed with " + x + " (promised: IllegalMonitorStateException)");
                    }
                } finally {
                    writeEnds(up, false);
                    late(start, System.nanoTime(), ONE_COMMAND_NS, () -> "an upgrade by " + of);
                }
            }
            stateCheck(raw, of, reads, writes, how + (write && writes == 0 ? ", downgraded" : ""));
        } catch (Exception e) {
            violation(how + " by " + of + " inside the lock: " + unwrap(e));
        } finally {
            for (int i = reads + writes; i > 0; i--) { // reads first, then writes
                boolean w = i <= writes;
                exit(of, w);
                try {
                    timed(() -> h.unlock().run(w), how + ": unlock by " + of);
                } catch (Exception e) {
                    violation(how + ": unlock by " + of + " failed: " + unwrap(e));
                }
            }
            if (c != null && c.released == 0) {
                c.released = System.nanoTime();
            }
        }
    }

    // ------------------------------------------------------------------ blocking workers

    /** A blocking worker: 0 idle, 1 waiting (the interrupter may interrupt it), 2 being interrupted, 3 interrupted. */
    static final class Worker {
        final AtomicInteger state = new AtomicInteger();
        volatile Thread thread;

        /** After the call: no interrupt of ours can land from here on, and the flag is cleared. */
        boolean settle() {
            boolean hit = false;
            if (!state.compareAndSet(1, 0)) {
                while (state.get() == 2) {
                    Thread.onSpinWait();
                }
                hit = state.getAndSet(0) == 3;
            }
            Thread.interrupted();
            return hit;
        }
    }

    /** One blocking acquisition: false, true, or the LockHold of tryAcquire. */
    private static Object acquire(BatonLock side, int kind, long wait) throws InterruptedException {
        return switch (kind) {
            case 0 -> lockTrue(side);
            case 1 -> {
                side.lock(LEASE_MS, TimeUnit.MILLISECONDS);
                yield true;
            }
            case 2 -> side.tryLock();
            case 3 -> side.tryLock(wait, TimeUnit.MILLISECONDS);
            case 4 -> side.tryLock(wait, LEASE_MS, TimeUnit.MILLISECONDS);
            case 5 -> interruptiblyTrue(side);
            default -> side.tryAcquire(wait, TimeUnit.MILLISECONDS).map(h -> (Object) h).orElse(false);
        };
    }

    private void blockingLoop(Baton baton, Worker w, RedisCommands<String, String> raw, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonReadWriteLock rw = baton.readWriteLock(NAME);
        String owner = baton.clientId() + ":" + Thread.currentThread().getId();
        for (long i = 0; i < MAX_OPS && !stop && System.nanoTime() < deadline; i++) {
            long due = nextStall.get();
            if (System.nanoTime() >= due && nextStall.compareAndSet(due, System.nanoTime() + 1000 * MS)) {
                stallPastLease(baton, rw, owner, rnd);
                continue;
            }
            int op = rnd.nextInt(20); // 0-7 read, 8-9 read + upgrade attempt, 10-17 write, 18-19 write + downgrade
            boolean write = op >= 10;
            int kind = rnd.nextInt(KINDS.length);
            long wait = kind == 2 ? 0 : waitMs(rnd);
            boolean timed = kind >= 2 && kind != 5;
            String how = (write ? "write." : "read.") + KINDS[kind] + (timed && kind != 2 ? "[" + wait + " ms]" : "") + " by " + owner;
            boolean afterAbandoned = Boolean.TRUE.equals(abandoned.get(owner));
            WriteCall c = write ? writeBegins(owner, how) : null;
            count("rounds");
            Object got = false;
            boolean interrupted = false;
            w.state.set(kind == 2 ? 0 : 1);
            long start = System.nanoTime();
            try {
                got = acquire(side(rw, write), kind, wait);
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (RuntimeException e) {
                violation(how + " threw " + e + (write && e instanceof IllegalMonitorStateException
                        ? " (refused as an upgrade, yet the owner held no read)" : " on a healthy Redis"));
            }
            long end = System.nanoTime();
            boolean hit = w.settle();
            boolean granted = !Boolean.FALSE.equals(got);
            if (c != null) {
                writeEnds(c, granted);
            }
            abandoned.put(owner, interrupted);
            if (interrupted && !hit) {
                violation(how + " threw InterruptedException although the storm did not interrupt it");
            }
            if (timed) {
                late(start, end, boundNs(wait, !granted && !interrupted, afterAbandoned), () -> how + " (" + (granted ? "granted"
                        : "not granted") + (afterAbandoned ? ", after the owner's abandoned call" : "") + ")");
            }
            if (!granted && !interrupted && end - start < wait * MS) {
                violation(how + " returned false after " + ms(end - start) + " ms, before its wait time");
            }
            if (granted) {
                count("grants");
                LockHold[] handle = {got instanceof LockHold lh ? lh : null}; // tryAcquire's handle releases the first hold
                section(new Hands(owner, wr -> rnd.nextBoolean() ? side(rw, wr).tryLock() : lockTrue(side(rw, wr)), wr -> {
                    if (handle[0] != null && wr == write) {
                        handle[0].close();
                        handle[0] = null;
                    } else {
                        side(rw, wr).unlock();
                    }
                    return true;
                }, wr -> rnd.nextBoolean() ? rw.writeLock().tryLock() : rnd.nextBoolean() ? lockTrue(rw.writeLock())
                        : rw.writeLock().tryLock(200, TimeUnit.MILLISECONDS)), write, op % 10 >= 8, how, c, start, raw, rnd);
            } else {
                count(interrupted ? "give-ups (interrupted)" : "give-ups (tryLock false)");
                int r = rw.readLock().getHoldCount();
                int wr = rw.writeLock().getHoldCount();
                if (r != 0 || wr != 0) {
                    violation(how + " ended without a grant (" + (interrupted ? "interrupted" : "false") + "), yet the thread's next"
                            + " commands see " + r + " read and " + wr + " write hold(s)");
                }
            }
        }
    }

    /** A reader or a writer with a 100-200 ms fixed lease that stalls 300 ms past it. */
    private void stallPastLease(Baton baton, BatonReadWriteLock rw, String owner, ThreadLocalRandom rnd) {
        boolean write = stallsStarted.getAndIncrement() % 2 == 1;
        long lease = 100 + rnd.nextInt(101);
        String how = (write ? "write" : "read") + ".tryLock(1000 ms, lease " + lease + " ms) then a stall past the lease, by " + owner;
        boolean afterAbandoned = Boolean.TRUE.equals(abandoned.put(owner, false));
        WriteCall c = write ? writeBegins(owner, how) : null;
        count("rounds");
        long start = System.nanoTime();
        try {
            boolean granted = side(rw, write).tryLock(1000, lease, TimeUnit.MILLISECONDS);
            long end = System.nanoTime();
            if (c != null) {
                writeEnds(c, granted);
            }
            late(start, end, boundNs(1000, !granted, afterAbandoned), () -> how + " (" + (granted ? "granted" : "false") + ")");
            count(granted ? "grants" : "give-ups (tryLock false)");
            if (!granted) {
                return;
            }
            if (!write) {
                freshReaderGranted(owner, start, how);
            }
            enter(owner, write, how, start + lease * MS);
            count("holds stalled past their fixed lease");
            for (long until = end + (lease + 300) * MS; System.nanoTime() < until; ) {
                LockSupport.parkNanos(until - System.nanoTime());
            }
            List<HeldLease> listed = baton.heldLeases().stream()
                    .filter(l -> l.ownerId().equals(owner) || l.ownerId().equals(owner + ":write")).toList();
            if (!listed.isEmpty() && stalledWithin(end, System.nanoTime()) < 50 * MS) {
                violation(how + ": at its lease + 300 ms after the grant returned, heldLeases() still lists " + listed);
            }
            exit(owner, write);
            try {
                side(rw, write).unlock();
                violation(how + ": unlock() returned normally " + ms(System.nanoTime() - end) + " ms after the grant, past the fixed"
                        + " lease (promised: LeaseLostException)");
            } catch (LeaseLostException e) {
                count("holders past their lease told at unlock");
            }
        } catch (InterruptedException | RuntimeException e) {
            violation(how + " threw " + e);
        } finally {
            if (c != null && c.end != 0) {
                c.released = System.nanoTime();
            }
        }
    }

    private Thread interrupter(List<Worker> workers, long deadline) {
        return new Thread(() -> {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            while (!stop && System.nanoTime() < deadline) {
                LockSupport.parkNanos((1 + rnd.nextInt(8)) * MS);
                Worker w = workers.get(rnd.nextInt(workers.size()));
                if (w.state.compareAndSet(1, 2)) {
                    w.thread.interrupt();
                    count("interrupts delivered");
                    w.state.set(3);
                }
            }
        }, "storm-rw-interrupter");
    }

    // ------------------------------------------------------------------ asynchronous owners

    private void asyncDriver(Baton baton, RedisCommands<String, String> raw, ExecutorService sections, ScheduledExecutorService timer,
                             long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        long owner = Baton.newOwnerId();
        for (long i = 0; i < MAX_OPS && !stop && System.nanoTime() < deadline; i++) {
            CompletableFuture<Boolean> done = new CompletableFuture<>();
            asyncCall(baton, raw, sections, timer, owner, 0, done);
            boolean gaveUp;
            try {
                gaveUp = done.get(30, TimeUnit.SECONDS);
            } catch (InterruptedException | ExecutionException | TimeoutException e) {
                violation("async owner " + baton.clientId() + ":" + owner + ": an episode (at most 4 calls, each bounded or given up"
                        + " within 40 ms, and its unlocks) did not end in 30 s: " + e);
                return;
            }
            if (rnd.nextInt(gaveUp ? 3 : 10) == 0) { // retire the owner: 300 ms later Redis must have nothing of it
                String of = baton.clientId() + ":" + owner;
                long endedAt = System.nanoTime();
                owner = Baton.newOwnerId();
                timer.schedule(() -> {
                    List<Object> r = raw.eval(RETIRED, ScriptOutputType.MULTI, new String[]{NAME, MARK, holdKeyPrefix(of) + "1"}, of);
                    count("retired owners checked");
                    if ((r.get(0) != null || r.get(1) != null || !Long.valueOf(0).equals(r.get(2))
                            || r.size() > 3 && (of + ":write").equals(r.get(3))) && stalledWithin(endedAt, System.nanoTime()) < 50 * MS) {
                        violation("async owner " + of + " ended its last call " + ms(System.nanoTime() - endedAt) + " ms ago and was never"
                                + " used again, yet Redis has for it: read=" + r.get(0) + " write=" + r.get(1) + " read-hold key 1 exists="
                                + r.get(2) + " mark=" + (r.size() > 3 ? r.get(3) : null));
                    }
                }, 300, TimeUnit.MILLISECONDS);
            }
        }
    }

    private void asyncCall(Baton baton, RedisCommands<String, String> raw, ExecutorService sections, ScheduledExecutorService timer,
                           long owner, int depth, CompletableFuture<Boolean> done) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonReadWriteLock rw = baton.readWriteLock(NAME);
        boolean write = rnd.nextInt(5) < 2;
        BatonLock side = side(rw, write);
        String of = baton.clientId() + ":" + owner;
        int kind = rnd.nextInt(7);
        long wait = kind == 4 ? 0 : waitMs(rnd);
        long k = rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt(40); // 0: given up at once, on the calling thread
        String how = (depth > 0 ? "follow-up " : "") + (write ? "write." : "read.") + switch (kind) {
            case 0 -> "lockAsync().orTimeout(" + k + " ms)";
            case 1 -> "lockAsync(lease) cancelled at " + k + " ms";
            case 2 -> "tryLockAsync(" + wait + " ms)";
            case 3 -> "tryLockAsync(" + wait + " ms, lease).completeOnTimeout(false, " + k + " ms)";
            case 4 -> "tryLockAsync()";
            case 5 -> "tryLockAsync(" + wait + " ms) completed false at " + k + " ms";
            default -> "lockAsync() completed exceptionally at " + k + " ms";
        } + " by " + of;
        boolean afterAbandoned = Boolean.TRUE.equals(abandoned.get(of));
        WriteCall c = write ? writeBegins(of, how) : null;
        count("rounds");
        long start = System.nanoTime();
        boolean ours = kind != 2 && kind != 4; // the storm may complete it itself
        CompletableFuture<?> f = switch (kind) {
            case 0 -> side.lockAsync(owner).toCompletableFuture().orTimeout(k, TimeUnit.MILLISECONDS);
            case 1 -> giveUp(side.lockAsync(LEASE_MS, TimeUnit.MILLISECONDS, owner), timer, k, g -> g.cancel(true));
            case 2 -> side.tryLockAsync(wait, TimeUnit.MILLISECONDS, owner).toCompletableFuture();
            case 3 -> side.tryLockAsync(wait, LEASE_MS, TimeUnit.MILLISECONDS, owner).toCompletableFuture()
                    .completeOnTimeout(false, k, TimeUnit.MILLISECONDS);
            case 4 -> side.tryLockAsync(owner).toCompletableFuture();
            case 5 -> giveUp(side.tryLockAsync(wait, TimeUnit.MILLISECONDS, owner), timer, k, g -> g.complete(false));
            default -> giveUp(side.lockAsync(owner), timer, k, g -> g.completeExceptionally(GIVEN_UP));
        };
        f.whenComplete((v, e) -> {
            long end = System.nanoTime();
            Throwable x = e == null ? null : unwrap(e);
            boolean granted = x == null && (v == null || Boolean.TRUE.equals(v));
            boolean mayBeOurs = ours && !granted;
            abandoned.put(of, !granted);
            if (c != null) {
                writeEnds(c, granted);
            }
            // Where the storm gives up on the JDK's timer, only a hang is judged (k + T + 150 ms + margin).
            long bound = Math.max(ours ? withinNs((k + T_MS + 150) * MS) : 0,
                    kind >= 2 && kind <= 5 ? boundNs(wait, !granted && !mayBeOurs && x == null, afterAbandoned) : 0);
            late(start, end, bound, () -> how + " (" + (granted ? "granted" : String.valueOf(x != null ? x : v)) + ")");
            if (granted) {
                count("grants");
                Hands hands = new Hands(of, wr -> get(side(rw, wr).tryLockAsync(owner)), wr -> get(side(rw, wr).unlockAsync(owner)) == null,
                        wr -> get(rw.writeLock().tryLockAsync(owner)));
                sections.execute(() -> {
                    section(hands, write, ThreadLocalRandom.current().nextInt(write ? 3 : 6) == 0, how, c, start, raw,
                            ThreadLocalRandom.current());
                    done.complete(false);
                });
                return;
            }
            count("give-ups (" + (x == null ? "false" : x == GIVEN_UP ? "completed exceptionally" : x.getClass().getSimpleName()) + ")");
            if (x != null && !(x instanceof TimeoutException || x instanceof CancellationException || x == GIVEN_UP)) {
                violation(how + " completed with " + x + " on a healthy Redis");
            }
            if (x == null && !mayBeOurs && end - start < wait * MS) {
                violation(how + " completed false after " + ms(end - start) + " ms, before its wait time");
            }
            if (depth < 3 && !stop && ThreadLocalRandom.current().nextBoolean()) {
                count("follow-ups started in the give-up's callback");
                asyncCall(baton, raw, sections, timer, owner, depth + 1, done);
            } else {
                done.complete(true);
            }
        });
    }

    /** Gives the future up at k ms (on the storm's timer), or at once on this thread when k is 0. */
    private static <T> CompletableFuture<T> giveUp(CompletionStage<T> stage, ScheduledExecutorService timer, long k,
                                                   Consumer<CompletableFuture<T>> how) {
        CompletableFuture<T> g = stage.toCompletableFuture();
        if (k == 0) {
            how.accept(g);
        } else {
            timer.schedule(() -> how.accept(g), k, TimeUnit.MILLISECONDS);
        }
        return g;
    }

    // ------------------------------------------------------------------ forceUnlock of a reentrant lock

    private final List<long[]> fInside = new ArrayList<>(); // {callStart, grantedAt} of holders inside, guarded by itself
    private final Deque<long[]> trueForces = new ConcurrentLinkedDeque<>(); // {start, end} of forces that returned true, in order
    private final NavigableSet<Long> fGrants = new ConcurrentSkipListSet<>();
    private volatile long forceInFlight;
    private volatile long lastTrueForceEnd;

    /** Whether a force that returned true ran wholly within (from, to) ({@code surely}), or may have overlapped [from, to]. */
    private boolean forced(long from, long to, boolean surely) {
        long inFlight = forceInFlight;
        if (!surely && inFlight != 0 && inFlight < to) {
            return true;
        }
        for (Iterator<long[]> it = trueForces.descendingIterator(); it.hasNext(); ) {
            long[] f = it.next();
            if ((surely ? f[0] : f[1]) <= from) {
                return false;
            } else if (surely ? f[1] < to : f[0] < to) {
                return true;
            }
        }
        return false;
    }

    /** An unlock or re-entry, at [start, end], of a hold {callStart, grantedAt}: told of a force exactly when it may be. */
    private void judgeTold(String what, long[] hold, long start, long end, boolean lost) {
        if (lost && !forced(hold[0], end, false)) {
            violation(FORCE_NAME + ": " + what + " threw LeaseLostException, yet no forceUnlock returning true overlapped the hold"
                    + " granted at t+" + at(hold[1]) + " ms");
        } else if (!lost && forced(hold[1], start, true)) {
            violation(FORCE_NAME + ": " + what + " at t+" + at(start) + " ms succeeded, yet a forceUnlock that returned true ran wholly"
                    + " between the grant (t+" + at(hold[1]) + " ms) and it (promised: LeaseLostException)");
        }
    }

    private void forceWorker(Baton baton, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonLock lock = baton.lock(FORCE_NAME);
        String who = FORCE_NAME + " by " + baton.clientId() + ":" + Thread.currentThread().getId();
        for (long i = 0; i < MAX_OPS && !stop && System.nanoTime() < deadline; i++) {
            long wait = rnd.nextBoolean() ? -1 : 300 + rnd.nextInt(1201); // -1: lock()
            count("force storm: rounds");
            long start = System.nanoTime();
            try {
                boolean granted = wait < 0 ? lockTrue(lock) : lock.tryLock(wait, TimeUnit.MILLISECONDS);
                long end = System.nanoTime();
                if (wait >= 0) {
                    late(start, end, boundNs(wait, !granted, false), () -> who + ": tryLock(" + wait + " ms)");
                }
                for (Iterator<long[]> it = trueForces.descendingIterator(); it.hasNext() && end - start > WAKE_NS; ) {
                    long[] f = it.next(); // a force while this call waited: somebody is granted within 1 s (+ margin) of it
                    Long g = fGrants.ceiling(f[0]);
                    if (f[0] <= start) {
                        break;
                    } else if (f[1] + WAKE_NS < end && (g == null || g > f[1] + WAKE_NS) && stalledWithin(f[1], f[1] + WAKE_NS) < 300 * MS) {
                        violation(who + " waited from t+" + at(start) + " to t+" + at(end) + " ms, and after the forceUnlock that returned"
                                + " true at t+" + at(f[1]) + " ms nobody was granted for 1.3 s");
                        break;
                    }
                }
                if (granted) {
                    holdForced(lock, new long[]{start, end}, who, rnd);
                }
            } catch (RuntimeException | InterruptedException e) {
                violation(who + " threw " + e);
            }
        }
    }

    /** A hold {callStart, grantedAt} of the reentrant lock, maybe re-entered, then released; a force may hit it any time. */
    private void holdForced(BatonLock lock, long[] h, String who, ThreadLocalRandom rnd) {
        count("force storm: grants");
        fGrants.add(h[1]);
        synchronized (fInside) {
            for (long[] o : fInside) {
                // Either grant may have been forced before its caller saw it (MONITOR showed replies that arrived 10-60 ms after the
                // grant, a force between them): excused if a force ran since the earlier of the two calls began.
                if (forceInFlight != 0 || lastTrueForceEnd > Math.min(o[0], h[0])) {
                    count("force storm: overlaps across a force");
                } else {
                    violation("two holders of " + FORCE_NAME + " with no forceUnlock between: " + who + " got in while the holder"
                            + " granted at t+" + at(o[1]) + " ms was inside");
                }
            }
            fInside.add(h);
        }
        park(rnd, 4000);
        int holds = 1;
        if (rnd.nextInt(3) == 0) {
            long rs = System.nanoTime();
            Boolean again = null; // null: LeaseLostException
            try {
                again = lock.tryLock();
            } catch (LeaseLostException e) {
                count("force storm: forced holders told at re-entry");
            }
            judgeTold("the holder's re-entry", h, rs, System.nanoTime(), again == null);
            if (Boolean.FALSE.equals(again)) {
                violation(who + ": the holder's re-entry tryLock() was refused (promised: granted, or LeaseLostException)");
            }
            holds += Boolean.TRUE.equals(again) ? 1 : 0;
        }
        park(rnd, 2000);
        synchronized (fInside) {
            fInside.remove(h);
        }
        for (int j = 0; j < holds; j++) {
            long us = System.nanoTime();
            boolean lost = false;
            try {
                lock.unlock();
            } catch (LeaseLostException e) {
                lost = true;
                count("force storm: forced holders told at unlock");
            }
            long ue = System.nanoTime();
            judgeTold("the unlock", h, us, ue, lost);
            late(us, ue, ONE_COMMAND_NS, () -> who + ": unlock");
        }
    }

    private void forcer(Baton baton, long deadline) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        BatonLock lock = baton.lock(FORCE_NAME);
        while (!stop && System.nanoTime() < deadline) {
            LockSupport.parkNanos((2 + rnd.nextInt(14)) * MS);
            long before = lastTrueForceEnd;
            long start = System.nanoTime();
            forceInFlight = start;
            boolean result = lock.forceUnlock();
            long end = System.nanoTime();
            if (result) { // recorded before forceInFlight is cleared, so every check sees one or the other
                lastTrueForceEnd = end;
                trueForces.add(new long[]{start, end});
            }
            forceInFlight = 0;
            count(result ? "force storm: forceUnlock true" : "force storm: forceUnlock false");
            late(start, end, ONE_COMMAND_NS, () -> "forceUnlock()");
            synchronized (fInside) {
                for (long[] h : fInside) {
                    if (!result && h[1] < start && before < h[0]) {
                        violation("forceUnlock() returned false while the holder granted at t+" + at(h[1]) + " ms held " + FORCE_NAME
                                + " throughout the call (t+" + at(start) + " to t+" + at(end) + " ms)");
                    }
                }
            }
        }
    }

    /** "forceUnlock() on a side deletes the lock only if it is held in that side's mode." */
    private void sidesForceCheck(Baton baton, RedisCommands<String, String> raw) {
        BatonReadWriteLock rw = baton.readWriteLock("storm-sides");
        for (boolean write : new boolean[]{false, true}) {
            String mode = write ? "write" : "read";
            side(rw, write).lock();
            boolean other = side(rw, !write).forceUnlock();
            count("sides: the other side's forceUnlock returned " + other);
            if (raw.exists("storm-sides") != 1) {
                violation("the other side's forceUnlock() deleted a lock held in " + mode + " mode (returned " + other + ")");
            }
            boolean result = side(rw, write).forceUnlock();
            if (!result || raw.exists("storm-sides") != 0) {
                violation(mode + "Lock().forceUnlock() on a lock held in that mode returned " + result + ", key exists="
                        + raw.exists("storm-sides"));
            }
            try {
                side(rw, write).unlock();
                violation("the force-unlocked " + mode + " holder's unlock() returned normally (promised: LeaseLostException)");
            } catch (LeaseLostException e) {
                count("sides: forced holders told at unlock");
            }
        }
    }

    // ------------------------------------------------------------------ the test

    @Test
    void readWriteLockKeepsItsPromisesUnderAStorm() throws Exception {
        long seconds = Long.getLong("baton.storm.seconds", 2);
        List<Baton> clients = new ArrayList<>();
        ExecutorService sections = Executors.newFixedThreadPool(3, r -> new Thread(r, "storm-rw-async-section"));
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "storm-rw-timer"));
        long started = System.nanoTime();
        try (RedisServer server = RedisServer.start()) {
            RedisClient rawClient = RedisClient.create(server.uri());
            try (StatefulRedisConnection<String, String> conn = rawClient.connect();
                 StatefulRedisConnection<String, String> probeConn = rawClient.connect()) {
                conn.setTimeout(Duration.ofSeconds(5));
                probeConn.setTimeout(Duration.ofSeconds(5));
                RedisCommands<String, String> raw = conn.sync();
                for (int i = 0; i < 3; i++) {
                    clients.add(Baton.create(BatonOptions.create(server.uri())));
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
                nextStall.set(System.nanoTime() + 200 * MS);
                List<Worker> workers = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                for (Baton b : clients) {
                    for (int i = 0; i < 2; i++) {
                        Worker w = new Worker();
                        w.thread = new Thread(() -> blockingLoop(b, w, raw, deadline), "storm-rw-blocking-" + workers.size());
                        workers.add(w);
                        threads.add(w.thread);
                    }
                    threads.add(new Thread(() -> asyncDriver(b, raw, sections, timer, deadline), "storm-rw-async"));
                    threads.add(new Thread(() -> forceWorker(b, deadline), "storm-force-worker"));
                }
                threads.add(new Thread(() -> forcer(clients.get(0), deadline), "storm-forcer"));
                threads.add(new Thread(() -> probeLoop(probeConn.sync(), deadline), "storm-rw-probe"));
                threads.add(interrupter(workers, deadline));
                stallTicker().start();
                threads.forEach(t -> t.setUncaughtExceptionHandler((th, e) -> violation(th.getName() + " died: " + e)));
                threads.forEach(Thread::start);

                long until = System.currentTimeMillis() + TimeUnit.SECONDS.toMillis(seconds + 40);
                for (Thread t : threads) {
                    t.join(Math.max(1, until - System.currentTimeMillis()));
                    if (t.isAlive()) {
                        violation(t.getName() + " did not finish within the storm + 40 s; at " + Arrays.toString(t.getStackTrace()));
                        t.interrupt();
                        t.join(5_000);
                    }
                }
                sections.shutdown();
                timer.shutdown(); // the retired-owner checks still scheduled run first
                if (!sections.awaitTermination(10, TimeUnit.SECONDS) || !timer.awaitTermination(10, TimeUnit.SECONDS)) {
                    violation("section or timer threads still busy 10 s after the storm");
                }
                sidesForceCheck(clients.get(0), raw);
                LockSupport.parkNanos(CLEAN_UP_NS); // clean-ups "landed within 300 ms"
                List<String> left = raw.keys("*storm-rw*");
                if (!left.isEmpty() || raw.exists(FORCE_NAME, "storm-sides") != 0) {
                    violation("at the end, keys are left: " + left + " " + NAME + "=" + raw.hgetall(NAME) + " " + FORCE_NAME + "="
                            + raw.hgetall(FORCE_NAME) + " storm-sides exists=" + raw.exists("storm-sides"));
                }
                for (Baton b : clients) {
                    if (b.leasesHeld() != 0) {
                        violation("at the end, client " + b.clientId() + " still counts leases: " + b.heldLeases());
                    }
                }
            } finally {
                stop = true;
                clients.forEach(Baton::close);
                rawClient.shutdown();
            }
        } finally {
            stop = true;
            sections.shutdownNow();
            timer.shutdownNow();
        }
        System.out.printf("ReadWriteLockStorm: %d s (%d ms in all): rounds=%d, grants=%d, downgrades=%d, give-ups=%d, upgrades refused=%d,"
                        + " stalled past lease=%d (told %d); force storm: rounds=%d, grants=%d, forces true/false=%d/%d, told=%d;"
                        + " violations=%d; JVM stalls seen=%d (%d ms); %s%n",
                seconds, ms(System.nanoTime() - started), counted("rounds"), counted("grants"), counted("downgrades"),
                counted("give-ups"), counted("upgrades refused"), counted("holds stalled"), counted("holders past their lease told"),
                counted("force storm: rounds"), counted("force storm: grants"), counted("force storm: forceUnlock true"),
                counted("force storm: forceUnlock false"), counted("force storm: forced holders told"), violations.get(), stalls.size(),
                stalls.stream().mapToLong(g -> ms(g[1] - g[0])).sum(), counts);
        described.forEach(d -> System.out.println("  VIOLATION " + d));
        assertTrue(violations.get() == 0, violations.get() + " violations; the first: " + String.join(" | ", described));
    }
}
