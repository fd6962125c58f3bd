package dev.baton.interop.storm;

import dev.baton.Baton;
import dev.baton.BatonLeaderElection;
import dev.baton.BatonOptions;
import dev.baton.Candidacy;
import dev.baton.ElectionState;
import dev.baton.LeaseLostException;
import dev.baton.Leadership;
import dev.baton.LeadershipListener;
import dev.baton.LeadershipListener.Revocation;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Storm written blind (public API and docs only) on {@link BatonLeaderElection}: written from
 * {@code BatonLeaderElection}, {@code Candidacy}, {@code Leadership}, {@code LeadershipListener},
 * {@code LeadershipWork}, {@code ElectionState}, {@code LeaseScope}, {@code BatonOptions},
 * docs/guide/leader-election.md ("the guide"), docs/data-layout.md (leader election) and
 * docs/guarantees.md, without reading {@code internal/}, the scripts or any existing test but the
 * rate limiter's storm (for the fixture).
 *
 * <p>Three clients on Redis directly and one through a {@link TcpProxy} (watchdog 1 s, command
 * timeout 1 s, fair-lock waiter timeout 3 s) run up to ten candidates of one election. Two chaos
 * threads join, relinquish (mostly the leader), close candidacies and now and then close a whole
 * client (a new one takes its place); two threads call {@code awaitLeadership}; one thread cuts
 * the proxied client off (blackhole) while its candidate leads, and sometimes closes that client
 * while cut. Works, chosen per leadership: return at once, return after a few steps, throw, run
 * until interrupted (sleeping, or spinning on {@code checkValid()}), ignore interrupts for up to
 * 1.2 s, or call {@code relinquish()} / {@code awaitLeadership} from inside. Listeners that throw
 * are added to some candidates.
 *
 * <h2>Checks (each quotes its promise)</h2>
 * <ul>
 *   <li><b>One valid leader.</b> Every step a work takes, and a monitor every ~2 ms, look at every
 *       leadership's {@code isValid()} under one lock, twice: two leaderships valid in both passes
 *       were valid at one instant (one JVM, one clock). "What a pause cannot do is give two leaders
 *       valid scopes on clocks that keep time". The same for {@code Candidacy.isLeader()}.</li>
 *   <li><b>The store.</b> A step taken while valid never carries an epoch below one already
 *       stepped with ("the store refuses an epoch below the highest it saw").</li>
 *   <li><b>Epochs.</b> "every epoch is higher than the last": at each {@code elected} (while valid)
 *       the epoch is above every earlier one; {@code fencingToken()} is the epoch; identity and
 *       name are the candidacy's.</li>
 *   <li><b>Listeners.</b> "{@code elected} before the work starts, {@code revoked} after it
 *       ended": every elected is followed by exactly one revoked, on the candidate's thread
 *       ({@code baton-candidate-<name>}), none overlapping; a throwing listener changes nothing.</li>
 *   <li><b>relinquish()</b>: "{@code false} at once if this candidate did not lead" and true
 *       only if it led; after {@code true} the relinquished scope is no longer valid; from inside
 *       the work it throws {@code IllegalStateException}.</li>
 *   <li><b>Hand-over bound</b> (margin rule: 200 ms + 300 ms, plus the JVM's measured stalls): the
 *       next live candidate leads within 200 ms of {@code relinquish()}/{@code close()} returning
 *       or a work returning, and it is not the one that just left ("joins the line again at its
 *       end"), nor one that joined the line more than 300 ms after a live waiter.</li>
 *   <li><b>Cut-off leader</b>: "has its work stopped before another candidate is elected", the
 *       other "leads within the watchdog timeout + 200 ms of the cut"; its scope is invalid by
 *       the cut + W.</li>
 *   <li><b>Closing</b>: {@code close()} "leaves for good" (no later elected, not leader, not in
 *       line per {@code state()}), {@code awaitLeadership} then "{@code false} at once";
 *       closing the client "returns within the command timeout + 1 s"; a closed client's
 *       {@code join} throws {@code IllegalStateException}.</li>
 *   <li><b>awaitLeadership</b>: {@code true} only while it leads, {@code false} not before the
 *       timeout, not when it led throughout the wait, and not when a leadership of 300 ms began
 *       in it.</li>
 *   <li><b>state()</b> consistent with the leaderships (identity and epoch of a real
 *       leadership; no released or closed leader; no duplicates; the leader not in line).</li>
 *   <li><b>Afterwards</b>: no candidate thread left, no leader, nobody in line, no key without a
 *       TTL but the epoch counter.</li>
 * </ul>
 *
 * <h2>Found (each kept as a failing check)</h2>
 * <ul>
 *   <li><b>After a work that throws, the candidate still counts as leading for up to a second.</b>
 *       Leadership is handed on at once (the next candidate is elected within a few ms), but
 *       {@code revoked} comes only when the candidate queues again, ~1 s later. A
 *       {@code relinquish()} in that second returns {@code true} (in under 2 ms, {@code isLeader()}
 *       false just before) though another candidate leads, and {@code revoked} then says
 *       {@code RELINQUISHED}, not {@code WORK_ENDED}: categories "relinquish" ("{@code false} at
 *       once if this candidate did not lead") and "revocation" ("WORK_ENDED: The work returned, or
 *       threw: leadership was handed on"). A {@code close()} in that second gives {@code CLOSED}.
 *       Every seed (the chaos aims some relinquishes at such candidates).</li>
 *   <li><b>A released scope stays valid a few ms after the next leader is elected.</b> When a
 *       work returns or is relinquished, the old {@code Leadership.isValid()} stays {@code true}
 *       (once with {@code isLeader()} true and {@code checkValid()} passing) until the release's
 *       reply reaches its client, after Redis has already elected the next (2-35 ms seen):
 *       "a scope is valid only until a margin before Redis can let the lease go". The old work
 *       has ended by then, so only another thread of the old leader could act on it; category
 *       "two valid scopes (the older one's work had ended, release not yet answered)". A few per
 *       run; never seen with both works running.</li>
 * </ul>
 * {@code -Dbaton.storm.seconds=N} (default 4 in CI; its findings of 2026-11-28 came from runs of 20), {@code -Dbaton.storm.seed=S}.
 */
class LeaderElectionStormTest {
    private static final long SEED = Long.getLong("baton.storm.seed", System.currentTimeMillis());
    private static final double STORM_SECONDS = Double.parseDouble(System.getProperty("baton.storm.seconds", "4"));
    private static final long MS = 1_000_000L;
    private static final long STORM_NANOS = (long) (STORM_SECONDS * 1e9);
    private static final Duration WATCHDOG = Duration.ofSeconds(1);
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration WAITER_TIMEOUT = Duration.ofSeconds(3);
    private static final long W = WATCHDOG.toNanos();
    private static final long T = COMMAND_TIMEOUT.toNanos();
    private static final String NAME = "storm-election";
    private static final long BASE = System.nanoTime();
    private static final Hiccups HICCUPS = Hiccups.start();

    static long now() {
        return System.nanoTime() - BASE;
    }

    static String ms(long nanos) {
        return String.format("%.1f", nanos / 1e6);
    }

    // ------------------------------------------------------------------------------------------
    // Model
    // ------------------------------------------------------------------------------------------

    enum Kind { IMMEDIATE, SHORT, THROW, LONG, CHECKVALID, IGNORE, INSIDE }

    final class Slot {
        final int index;
        final boolean proxied;
        volatile Baton baton;
        volatile BatonLeaderElection election;
        volatile int gen;
        volatile boolean closing;

        Slot(int index, boolean proxied) {
            this.index = index;
            this.proxied = proxied;
        }
    }

    final class Cand {
        final int index;
        final String id;
        final Slot slot;
        final int gen;
        final Random rnd;
        volatile Candidacy c;
        volatile long joinedAt = -1;
        volatile long closeStartAt = -1;
        volatile long closeReturnAt = -1;
        volatile boolean closedByClient;
        volatile boolean listenerReady;
        volatile LeadRec current;
        final List<LeadRec> recs = new CopyOnWriteArrayList<>();
        final List<long[]> relinquishCalls = new CopyOnWriteArrayList<>();
        final AtomicInteger throwingListenerCalls = new AtomicInteger();

        Cand(int index, Slot slot) {
            this.index = index;
            this.slot = slot;
            this.gen = slot.gen;
            this.id = "s" + slot.index + "g" + slot.gen + "-c" + index;
            this.rnd = new Random(SEED * 1_000_003L + index);
        }

        boolean open() {
            return closeStartAt < 0 && !slot.closing && slot.gen == gen;
        }

        @Override
        public String toString() {
            return id;
        }
    }

    final class LeadRec {
        final Cand cand;
        final Leadership l;
        final long epoch;
        final long electedAt;
        final Kind kind;
        final boolean validAtElected;
        volatile long workStart = -1;
        volatile long workEnd = -1;
        volatile long interruptSeenAt = -1;
        volatile boolean endedOnItsOwn;
        volatile boolean threw;
        volatile long revokedAt = -1;
        volatile Revocation why;
        final AtomicInteger revokes = new AtomicInteger();
        volatile int steps;
        volatile boolean listenerMissed;

        LeadRec(Cand cand, Leadership l, Kind kind, long electedAt) {
            this.cand = cand;
            this.l = l;
            this.epoch = l.epoch();
            this.kind = kind;
            this.electedAt = electedAt;
            this.validAtElected = l.isValid();
        }

        @Override
        public String toString() {
            return cand.id + "/epoch " + epoch + "/" + kind + " (elected " + ms(electedAt) + ", work " + ms(workStart) + ".."
                    + ms(workEnd) + ", revoked " + ms(revokedAt) + " " + why + ")";
        }
    }

    record HandOver(String kind, Cand cand, LeadRec rec, long start, long ret) {
    }

    record Cut(long at, long restoredAt, LeadRec rec, boolean clientClosed) {
    }

    record StateObs(long t0, long t1, ElectionState state) {
    }

    record AwaitObs(Cand cand, long t0, long t1, long timeout, boolean result, boolean closedBefore,
                    boolean ledThroughout) {
    }

    record RelObs(Cand cand, long t0, long t1, boolean result, LeadRec before, boolean isLeaderBefore, boolean validBefore) {
    }

    // ------------------------------------------------------------------------------------------
    // State of one run
    // ------------------------------------------------------------------------------------------

    private final Object global = new Object();
    private final List<LeadRec> liveScopes = new ArrayList<>(); // under global
    private long maxElectedEpoch = Long.MIN_VALUE; // under global
    private long maxSteppedEpoch = Long.MIN_VALUE; // under global
    private final List<LeadRec> allRecs = new CopyOnWriteArrayList<>();
    private final List<Cand> cands = new CopyOnWriteArrayList<>();
    private final List<Slot> slots = new ArrayList<>();
    private final List<HandOver> handOvers = new CopyOnWriteArrayList<>();
    private final List<Cut> cuts = new CopyOnWriteArrayList<>();
    private final List<long[]> clientCloses = new CopyOnWriteArrayList<>(); // start, end, slot
    private final List<StateObs> states = new CopyOnWriteArrayList<>();
    private final List<AwaitObs> awaits = new CopyOnWriteArrayList<>();
    private final List<RelObs> relinquishes = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> violationCounts = Collections.synchronizedMap(new LinkedHashMap<>());
    private final Queue<String> violations = new ConcurrentLinkedQueue<>();
    private final Queue<String> notes = new ConcurrentLinkedQueue<>();
    private final AtomicInteger candCounter = new AtomicInteger();
    /** An older leadership seen valid beside a newer one: {newer elected, seen, older invalid at, isLeader, checkValid passed}. */
    private final Map<LeadRec, long[]> overlaps = new LinkedHashMap<>();
    private final AtomicInteger activeWorks = new AtomicInteger();
    private final AtomicLong totalSteps = new AtomicLong();
    private final AtomicLong invalidSteps = new AtomicLong();
    private volatile boolean stop;
    private volatile boolean proxyCut;
    private volatile long endAt;
    private RedisServer server;
    private TcpProxy proxy;

    void violation(String category, String text) {
        AtomicInteger n = violationCounts.computeIfAbsent(category, k -> new AtomicInteger());
        if (n.incrementAndGet() <= 5) {
            String line = "[" + category + "] t=" + ms(now()) + " ms: " + text;
            violations.add(line);
            System.out.println("[election-storm] VIOLATION " + line);
        }
    }

    void note(String text) {
        if (notes.size() < 200) {
            notes.add(text);
        }
        System.out.println("[election-storm] note t=" + ms(now()) + ": " + text);
    }

    // ------------------------------------------------------------------------------------------
    // The test
    // ------------------------------------------------------------------------------------------

    @Test
    void leaderElectionKeepsItsPromisesUnderAStorm() throws Exception {
        System.out.printf("[election-storm] seed=%d length=%.1fs (replay: -Dbaton.storm.seed=%d)%n", SEED, STORM_SECONDS, SEED);
        try (RedisServer srv = RedisServer.start(); TcpProxy px = TcpProxy.start(srv.host(), srv.port())) {
            server = srv;
            proxy = px;
            Baton observer = open(srv.uri());
            try {
                BatonLeaderElection obs = observer.leaderElection(NAME);
                badInput(obs);
                for (int i = 0; i < 3; i++) {
                    slots.add(newSlot(i, false));
                }
                slots.add(newSlot(3, true));
                for (Slot s : slots) {
                    s.election.state(); // warm up the connection
                }
                long start = now();
                endAt = start + STORM_NANOS;
                for (int i = 0; i < 6; i++) {
                    join(slots.get(i % 3));
                }
                join(slots.get(3));

                List<Thread> threads = new ArrayList<>();
                threads.add(thread("chaos-0", () -> chaos(0)));
                threads.add(thread("chaos-1", () -> chaos(1)));
                threads.add(thread("await-0", () -> awaiter(0)));
                threads.add(thread("await-1", () -> awaiter(1)));
                threads.add(thread("cutter", this::cutter));
                Thread monitor = thread("monitor", () -> monitor(obs));
                threads.forEach(Thread::start);
                monitor.start();
                for (Thread t : threads) {
                    t.join(STORM_NANOS / MS + 30_000);
                    if (t.isAlive()) {
                        violation("harness", t.getName() + " did not end");
                    }
                }
                stop = true;
                proxy.setBlackhole(false);
                // wind down: close every candidacy, then every client
                for (Cand c : cands) {
                    if (c.open()) {
                        closeCandidacy(c);
                    }
                }
                for (Slot s : slots) {
                    closeClient(s, false);
                }
                monitor.join(5_000);
                long waitFrom = System.nanoTime();
                while (activeWorks.get() > 0 && System.nanoTime() - waitFrom < 5_000 * MS) {
                    Thread.sleep(20);
                }
                if (activeWorks.get() > 0) {
                    violation("afterwards", activeWorks.get() + " works still running 5 s after every client closed");
                }
                Thread.sleep(300);
                afterwards(obs);
                analyse();
            } finally {
                stop = true;
                for (Slot s : slots) {
                    try {
                        s.baton.close();
                    } catch (RuntimeException ignored) {
                        // closed already
                    }
                }
                observer.close();
            }
        }
        summary();
        if (!violations.isEmpty()) {
            fail(violationCounts + " broken promise(s), seed " + SEED + ":\n  " + String.join("\n  ", violations));
        }
    }

    private Baton open(String uri) {
        return Baton.create(BatonOptions.builder().redisUri(uri)
                .commandTimeout(COMMAND_TIMEOUT)
                .watchdogTimeout(WATCHDOG)
                .fairLockWaiterTimeout(WAITER_TIMEOUT)
                .build());
    }

    private Slot newSlot(int index, boolean proxied) {
        Slot s = new Slot(index, proxied);
        s.baton = open(proxied ? proxy.uri() : server.uri());
        s.election = s.baton.leaderElection(NAME);
        return s;
    }

    private Thread thread(String name, Runnable r) {
        Thread t = new Thread(() -> {
            try {
                r.run();
            } catch (Throwable e) {
                violation("harness", name + " threw " + e);
                e.printStackTrace(System.out);
            }
        }, "election-storm-" + name);
        t.setDaemon(true);
        return t;
    }

    private void badInput(BatonLeaderElection e) {
        for (String bad : new String[] {"", "   ", "x".repeat(201)}) {
            try {
                Candidacy c = e.join(bad, l -> { });
                c.close();
                violation("bad input", "join(\"" + (bad.length() > 10 ? bad.substring(0, 10) + "..." : bad) + "\") was accepted");
            } catch (IllegalArgumentException expected) {
                // "if the identity is empty, blank or longer than 200 characters"
            }
        }
        Candidacy ok = e.join("x".repeat(200), l -> { });
        ok.close();
        if (!e.getName().equals(NAME)) {
            violation("bad input", "getName() " + e.getName());
        }
    }

    // ------------------------------------------------------------------------------------------
    // Candidates, listeners, works
    // ------------------------------------------------------------------------------------------

    private Cand join(Slot slot) {
        if (slot.closing) {
            return null;
        }
        Cand c = new Cand(candCounter.incrementAndGet(), slot);
        Candidacy candidacy;
        try {
            candidacy = slot.election.join(c.id, l -> runWork(c, l));
        } catch (IllegalStateException e) {
            if (slot.closing || slot.gen != c.gen) {
                return null; // the client is being closed
            }
            violation("join", "join on an open client threw " + e);
            return null;
        }
        c.c = candidacy;
        c.joinedAt = now();
        if (!candidacy.identity().equals(c.id) || !candidacy.electionName().equals(NAME)) {
            violation("identity", "candidacy says " + candidacy.identity() + " / " + candidacy.electionName());
        }
        if (c.rnd.nextInt(3) == 0) {
            candidacy.addListener(new LeadershipListener() {
                @Override
                public void elected(Leadership leadership) {
                    c.throwingListenerCalls.incrementAndGet();
                    throw new IllegalStateException("storm: a listener that throws");
                }

                @Override
                public void revoked(Leadership leadership, Revocation why) {
                    throw new IllegalStateException("storm: a listener that throws");
                }
            });
        }
        LeadershipListener extra = new LeadershipListener() {
        };
        candidacy.addListener(extra);
        candidacy.addListener(new Tracker(c));
        c.listenerReady = true;
        if (!candidacy.removeListener(extra)) {
            violation("listeners", "removeListener of a listener that was added returned false");
        }
        if (candidacy.removeListener(extra)) {
            violation("listeners", "removeListener of a listener already removed returned true");
        }
        cands.add(c);
        return c;
    }

    final class Tracker implements LeadershipListener {
        final Cand c;

        Tracker(Cand c) {
            this.c = c;
        }

        @Override
        public void elected(Leadership l) {
            long t = now();
            checkThread("elected");
            LeadRec prev = c.current;
            if (prev != null) {
                violation("listeners", c.id + ": elected (epoch " + l.epoch() + ") while " + prev + " was never revoked");
            }
            Kind kind = chooseKind(c);
            LeadRec r = new LeadRec(c, l, kind, t);
            register(r);
            checkLeadershipFields(c, l);
        }

        @Override
        public void revoked(Leadership l, Revocation why) {
            long t = now();
            checkThread("revoked");
            LeadRec r = null;
            for (LeadRec x : c.recs) {
                if (x.l == l) {
                    r = x;
                }
            }
            if (r == null) {
                violation("listeners", c.id + ": revoked(" + why + ") for a leadership (epoch " + l.epoch() + ") never elected");
                return;
            }
            if (r.revokes.incrementAndGet() > 1) {
                violation("listeners", c.id + ": a second revoked(" + why + ") for " + r + " (first " + r.why + ")");
                return;
            }
            r.why = why;
            r.revokedAt = t;
            if (r.workStart >= 0 && r.workEnd < 0) {
                violation("listeners", c.id + ": revoked(" + why + ") while its work still runs: " + r
                        + " (\"revoked after it ended and the release was tried\")");
            }
            if (c.current == r) {
                c.current = null;
            }
        }

        private void checkThread(String what) {
            Thread th = Thread.currentThread();
            if (!th.getName().equals("baton-candidate-" + NAME) || !th.isDaemon()) {
                violation("thread", c.id + ": " + what + " called on " + th.getName() + " (daemon " + th.isDaemon()
                        + "), not the candidate's daemon thread baton-candidate-" + NAME);
            }
        }
    }

    private Kind chooseKind(Cand c) {
        if (c.slot.proxied) {
            return c.rnd.nextBoolean() ? Kind.LONG : Kind.CHECKVALID;
        }
        int x = c.rnd.nextInt(100);
        if (x < 28) {
            return Kind.LONG;
        }
        if (x < 43) {
            return Kind.CHECKVALID;
        }
        if (x < 58) {
            return Kind.SHORT;
        }
        if (x < 68) {
            return Kind.IMMEDIATE;
        }
        if (x < 76) {
            return Kind.THROW;
        }
        if (x < 88) {
            return Kind.IGNORE;
        }
        return Kind.INSIDE;
    }

    private void register(LeadRec r) {
        synchronized (global) {
            if (r.validAtElected && r.l.isValid()) {
                if (r.epoch <= maxElectedEpoch) {
                    violation("epoch", r + " elected with an epoch not above the last elected " + maxElectedEpoch
                            + " (\"every epoch is higher than the last\")");
                }
                maxElectedEpoch = Math.max(maxElectedEpoch, r.epoch);
            }
            liveScopes.add(r);
            r.cand.recs.add(r);
            r.cand.current = r;
            allRecs.add(r);
        }
        checkScopes("elected " + r.cand.id);
        List<Cand> l1 = new ArrayList<>();
        for (Cand c : cands) {
            if (c.c != null && c.c.isLeader()) {
                l1.add(c);
            }
        }
        List<Cand> l2 = new ArrayList<>();
        for (Cand c : l1) {
            if (c.c.isLeader()) {
                l2.add(c);
            }
        }
        if (l2.size() >= 2) {
            violation("two leaders", "at the election of " + r + " isLeader() was true on " + l2
                    + " at one instant (\"isLeader(): Whether this candidate leads now\")");
        }
    }

    private void checkLeadershipFields(Cand c, Leadership l) {
        if (!l.identity().equals(c.id) || !l.electionName().equals(NAME)) {
            violation("identity", "leadership says " + l.identity() + "/" + l.electionName() + " for " + c.id);
        }
        OptionalLong token = l.fencingToken();
        if (token.isEmpty() || token.getAsLong() != l.epoch()) {
            violation("identity", c.id + ": fencingToken " + token + " is not the epoch " + l.epoch());
        }
        if (l.remaining().compareTo(WATCHDOG) > 0) {
            violation("scope", c.id + ": remaining " + l.remaining() + " longer than the lease " + WATCHDOG);
        }
    }

    private void runWork(Cand c, Leadership l) throws Exception {
        long t = now();
        LeadRec r = c.current;
        if (r == null || r.l != l) {
            boolean firstAndLate = c.recs.isEmpty() && !c.listenerReady;
            if (!firstAndLate && c.recs.isEmpty()) {
                // the listener may have been added after elected was called for the first leadership
                firstAndLate = true;
            }
            if (!firstAndLate) {
                violation("listeners", c.id + ": work started (epoch " + l.epoch() + ") without elected before it");
            }
            r = new LeadRec(c, l, chooseKind(c), t);
            r.listenerMissed = true;
            register(r);
        }
        r.workStart = t;
        activeWorks.incrementAndGet();
        try {
            switch (r.kind) {
                case IMMEDIATE -> {
                    step(r);
                    r.endedOnItsOwn = true;
                }
                case SHORT -> {
                    int n = 1 + c.rnd.nextInt(6);
                    for (int i = 0; i < n; i++) {
                        step(r);
                        try {
                            Thread.sleep(c.rnd.nextInt(12));
                        } catch (InterruptedException e) {
                            r.interruptSeenAt = now();
                            return;
                        }
                    }
                    r.endedOnItsOwn = !Thread.currentThread().isInterrupted();
                }
                case THROW -> {
                    step(r);
                    r.threw = true;
                    r.endedOnItsOwn = true;
                    throw new IllegalStateException("storm: the work throws");
                }
                case LONG -> longWork(c, r);
                case CHECKVALID -> {
                    try {
                        while (true) {
                            l.checkValid();
                            step(r);
                            long until = System.nanoTime() + (1 + c.rnd.nextInt(3)) * MS;
                            while (System.nanoTime() < until) {
                                if (Thread.interrupted()) {
                                    r.interruptSeenAt = now();
                                    return;
                                }
                                Thread.onSpinWait();
                            }
                        }
                    } catch (LeaseLostException e) {
                        r.interruptSeenAt = now();
                        if (l.isValid()) {
                            violation("scope", c.id + ": checkValid threw LeaseLostException while isValid() is true");
                        }
                        if (c.rnd.nextBoolean()) {
                            throw e;
                        }
                    }
                }
                case IGNORE -> {
                    long until = System.nanoTime() + (100 + c.rnd.nextInt(1100)) * MS;
                    while (System.nanoTime() < until) {
                        step(r);
                        try {
                            Thread.sleep(3 + c.rnd.nextInt(10));
                        } catch (InterruptedException e) {
                            if (r.interruptSeenAt < 0) {
                                r.interruptSeenAt = now();
                            }
                        }
                    }
                    r.endedOnItsOwn = r.interruptSeenAt < 0;
                }
                case INSIDE -> {
                    if (c.c == null) {
                        longWork(c, r); // elected before join() returned
                        return;
                    }
                    try {
                        boolean res = c.c.relinquish();
                        violation("relinquish", c.id + ": relinquish() from inside the work returned " + res
                                + " (\"From inside the work it throws IllegalStateException\")");
                    } catch (IllegalStateException expected) {
                        // documented
                    }
                    long a0 = now();
                    boolean aw = c.c.awaitLeadership(0, TimeUnit.MILLISECONDS);
                    if (!aw && l.isValid()) {
                        violation("await", c.id + ": awaitLeadership(0) inside its own valid work returned false");
                    }
                    if (now() - a0 > 300 * MS + HICCUPS.within(a0, now())) {
                        violation("await", c.id + ": awaitLeadership(0) inside the work took " + ms(now() - a0) + " ms");
                    }
                    if (c.c.isLeader() != l.isValid() && l.isValid()) {
                        violation("isLeader", c.id + ": isLeader() false inside its own valid work");
                    }
                    longWork(c, r);
                }
                default -> throw new AssertionError();
            }
        } finally {
            r.workEnd = now();
            if (r.threw || (r.endedOnItsOwn && r.interruptSeenAt < 0)) {
                handOvers.add(new HandOver(r.threw ? "work-threw" : "work-returned", c, r, r.workEnd, r.workEnd));
            }
            activeWorks.decrementAndGet();
        }
    }

    private void longWork(Cand c, LeadRec r) {
        while (true) {
            step(r);
            try {
                Thread.sleep(1 + c.rnd.nextInt(12));
            } catch (InterruptedException e) {
                r.interruptSeenAt = now();
                return;
            }
        }
    }

    /** One step of a leader: recorded by the store only while its scope is valid. */
    private void step(LeadRec r) {
        totalSteps.incrementAndGet();
        Duration rem = r.l.remaining();
        if (rem.compareTo(WATCHDOG) > 0) {
            violation("scope", r.cand.id + ": remaining " + rem + " longer than the lease " + WATCHDOG);
        }
        synchronized (global) {
            boolean me1 = r.l.isValid();
            if (!me1) {
                invalidSteps.incrementAndGet();
                return;
            }
            List<LeadRec> others = new ArrayList<>();
            for (LeadRec o : liveScopes) {
                if (o != r && o.l.isValid()) {
                    others.add(o);
                }
            }
            boolean me2 = r.l.isValid();
            if (!me2) {
                invalidSteps.incrementAndGet();
                return;
            }
            if (!others.isEmpty()) {
                boolean othersEnded = others.stream().allMatch(o -> o.workEnd >= 0);
                violation(othersEnded ? "two valid scopes (the older one's work had ended, release not yet answered)" : "two valid leaders (both working)",
                        r + " took a step while valid, and so were " + others
                        + " (\"What a pause cannot do is give two leaders valid scopes on clocks that keep time\")");
            }
            if (r.epoch < maxSteppedEpoch) {
                violation("store", r + " stepped while valid with epoch " + r.epoch + " below the highest stepped epoch "
                        + maxSteppedEpoch + " (\"the store refuses an epoch below the highest it saw\")");
            }
            maxSteppedEpoch = Math.max(maxSteppedEpoch, r.epoch);
            r.steps++;
        }
    }

    /** Two passes over every leadership's validity, under the store's lock. */
    private void checkScopes(String who) {
        synchronized (global) {
            List<LeadRec> v1 = new ArrayList<>();
            for (LeadRec o : liveScopes) {
                if (o.l.isValid()) {
                    v1.add(o);
                }
            }
            List<LeadRec> v2 = new ArrayList<>();
            for (LeadRec o : v1) {
                if (o.l.isValid()) {
                    v2.add(o);
                }
            }
            if (v2.size() >= 2) {
                long t = now();
                LeadRec newest = v2.stream().max(Comparator.comparingLong(o -> o.electedAt)).orElseThrow();
                StringBuilder sb = new StringBuilder();
                boolean oldWorkEnded = true;
                for (LeadRec o : v2) {
                    sb.append("\n      ").append(o).append(" remaining ").append(o.l.remaining().toMillis()).append(" ms");
                    if (o != newest) {
                        oldWorkEnded &= o.workEnd >= 0;
                        boolean leader = o.cand.c != null && o.cand.c.isLeader();
                        boolean checkPassed;
                        try {
                            o.l.checkValid();
                            checkPassed = true;
                        } catch (LeaseLostException e) {
                            checkPassed = false;
                        }
                        sb.append(" [its candidacy.isLeader() ").append(leader).append(", its checkValid() ")
                                .append(checkPassed ? "passed" : "threw").append("]");
                        synchronized (overlaps) {
                            if (!overlaps.containsKey(o)) {
                                overlaps.put(o, new long[] {newest.electedAt, t, -1, leader ? 1 : 0, checkPassed ? 1 : 0});
                            }
                        }
                    }
                }
                violation(oldWorkEnded ? "two valid scopes (the older one's work had ended, release not yet answered)" : "two valid leaders (both working)",
                        "(" + who + ") leaderships valid at one instant:" + sb
                                + " (\"What a pause cannot do is give two leaders valid scopes on clocks that keep time\"; "
                                + "\"leadership.checkValid(); // LeaseLostException once not known to lead\")");
            }
            synchronized (overlaps) {
                for (Map.Entry<LeadRec, long[]> e : overlaps.entrySet()) {
                    if (e.getValue()[2] < 0 && !e.getKey().l.isValid()) {
                        e.getValue()[2] = now();
                    }
                }
            }
            liveScopes.removeIf(o -> !o.l.isValid());
        }
    }

    // ------------------------------------------------------------------------------------------
    // Actors
    // ------------------------------------------------------------------------------------------

    private List<Cand> openCands() {
        List<Cand> out = new ArrayList<>();
        for (Cand c : cands) {
            if (c.open()) {
                out.add(c);
            }
        }
        return out;
    }

    private Cand leaderAmongOpen() {
        for (Cand c : openCands()) {
            if (c.c.isLeader()) {
                return c;
            }
        }
        return null;
    }

    private void chaos(int index) {
        Random rnd = new Random(SEED * 31 + index);
        long lastClientClose = now();
        while (now() < endAt) {
            sleep(5 + rnd.nextInt(70));
            int x = rnd.nextInt(100);
            List<Cand> open = openCands();
            try {
                if (x < 12) {
                    int direct = 0;
                    for (Cand c : open) {
                        if (!c.slot.proxied) {
                            direct++;
                        }
                    }
                    Slot s = slots.get(rnd.nextInt(3));
                    long onSlot = open.stream().filter(c -> c.slot == s).count();
                    if (direct < 9 && onSlot < 3) {
                        join(s);
                    }
                    Slot p = slots.get(3);
                    if (!proxyCut && !p.closing && open.stream().noneMatch(c -> c.slot == p)) {
                        join(p);
                    }
                } else if (x < 62) {
                    int y = rnd.nextInt(10);
                    Cand c = y < 7 ? leaderAmongOpen() : y < 8 ? justThrew(open) : pick(open, rnd);
                    if (c != null && !(c.slot.proxied && proxyCut)) {
                        relinquish(c);
                    }
                } else if (x < 70) {
                    Cand c = rnd.nextBoolean() ? leaderAmongOpen() : pick(open, rnd);
                    if (c != null && !c.slot.proxied) {
                        closeCandidacy(c);
                    }
                } else if (x < 72 && now() - lastClientClose > 3_000 * MS && now() < endAt - 2_000 * MS) {
                    Slot s = slots.get(rnd.nextInt(3));
                    lastClientClose = now();
                    if (!s.closing) {
                        closeClient(s, true);
                    }
                }
            } catch (InterruptedException e) {
                violation("harness", "chaos interrupted");
                return;
            }
        }
    }

    /** A candidate whose last work threw and that has not been revoked yet. */
    private static Cand justThrew(List<Cand> open) {
        for (Cand c : open) {
            LeadRec r = c.current;
            if (r != null && r.threw && r.revokedAt < 0) {
                return c;
            }
        }
        return null;
    }

    private static Cand pick(List<Cand> list, Random rnd) {
        return list.isEmpty() ? null : list.get(rnd.nextInt(list.size()));
    }

    private void relinquish(Cand c) throws InterruptedException {
        Optional<Leadership> before = c.c.leadership();
        LeadRec rb = before.map(l -> recOf(c, l)).orElse(null);
        boolean validBefore = before.isPresent() && before.get().isValid();
        boolean isLeaderBefore = c.c.isLeader();
        long t0 = now();
        boolean res;
        try {
            res = c.c.relinquish();
        } catch (RuntimeException e) {
            if (c.open()) {
                violation("relinquish", c.id + ": relinquish() on an open candidacy threw " + e);
            }
            return;
        }
        long t1 = now();
        c.relinquishCalls.add(new long[] {t0, t1});
        Optional<Leadership> after = c.c.leadership();
        boolean validAfter = before.isPresent() && before.get().isValid();
        if (!res && validBefore && validAfter && after.isPresent() && after.get() == before.get()) {
            violation("relinquish", c.id + ": relinquish() returned false while it led (its leadership epoch "
                    + before.get().epoch() + " valid before and after the call, still current) (\"false at once if this candidate did not lead\")");
        }
        if (res && before.isPresent() && before.get().isValid()) {
            violation("relinquish", c.id + ": relinquish() returned true but the relinquished leadership (epoch "
                    + before.get().epoch() + ") still claims validity (remaining " + before.get().remaining().toMillis() + " ms)");
        }
        if (!res && t1 - t0 > 300 * MS + HICCUPS.within(t0, t1)) {
            violation("relinquish", c.id + ": relinquish() returned false after " + ms(t1 - t0) + " ms (\"false at once\")");
        }
        relinquishes.add(new RelObs(c, t0, t1, res, rb, isLeaderBefore, validBefore));
        if (res) {
            handOvers.add(new HandOver("relinquish", c, rb, t0, t1));
        }
    }

    private LeadRec recOf(Cand c, Leadership l) {
        for (LeadRec r : c.recs) {
            if (r.l == l) {
                return r;
            }
        }
        return null;
    }

    private void closeCandidacy(Cand c) {
        synchronized (c) {
            if (c.closeStartAt >= 0) {
                return;
            }
            c.closeStartAt = now();
        }
        Optional<Leadership> before = c.c.leadership();
        LeadRec rb = before.map(l -> recOf(c, l)).orElse(null);
        boolean validBefore = before.isPresent() && before.get().isValid();
        long t0 = c.closeStartAt;
        c.c.close();
        long t1 = now();
        c.closeReturnAt = t1;
        if (Thread.currentThread().isInterrupted()) {
            violation("harness", "close returned with the interrupt status set");
        }
        if (c.c.isLeader()) {
            violation("close", c.id + ": isLeader() true after close() returned");
        }
        if (c.c.leadership().isPresent()) {
            violation("close", c.id + ": leadership() present after close() returned: epoch " + c.c.leadership().get().epoch());
        }
        if (before.isPresent() && before.get().isValid()) {
            violation("close", c.id + ": its leadership (epoch " + before.get().epoch() + ") still valid after close() returned");
        }
        long a0 = now();
        try {
            boolean aw = c.c.awaitLeadership(1, TimeUnit.SECONDS);
            long a1 = now();
            if (aw || a1 - a0 > 300 * MS + HICCUPS.within(a0, a1)) {
                violation("await", c.id + ": awaitLeadership(1 s) on a closed candidacy returned " + aw + " after " + ms(a1 - a0)
                        + " ms (\"false ... at once if the candidacy is closed\")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        long c0 = now();
        c.c.close(); // idempotent
        if (now() - c0 > 300 * MS + HICCUPS.within(c0, now())) {
            violation("close", c.id + ": a second close() took " + ms(now() - c0) + " ms");
        }
        if (validBefore) {
            handOvers.add(new HandOver("close", c, rb, t0, t1));
        }
    }

    private void closeClient(Slot s, boolean reopen) {
        if (s.closing) {
            return;
        }
        s.closing = true;
        List<Cand> mine = new ArrayList<>();
        LeadRec leading = null;
        for (Cand c : cands) {
            if (c.slot == s && c.gen == s.gen && c.closeStartAt < 0) {
                mine.add(c);
                LeadRec r = c.current;
                if (r != null && r.l.isValid() && r.workEnd < 0) {
                    leading = r;
                }
            }
        }
        long t0 = now();
        for (Cand c : mine) {
            synchronized (c) {
                if (c.closeStartAt < 0) {
                    c.closeStartAt = t0;
                    c.closedByClient = true;
                }
            }
        }
        s.baton.close();
        long t1 = now();
        for (Cand c : mine) {
            if (c.closedByClient) {
                c.closeReturnAt = t1;
            }
        }
        clientCloses.add(new long[] {t0, t1, s.index});
        long bound = T + 1_000 * MS;
        long allowed = bound + Math.max(bound / 5, 300 * MS) + HICCUPS.within(t0, t1);
        if (t1 - t0 > allowed) {
            violation("client close", "closing client " + s.index + (s.proxied && proxyCut ? " (cut off)" : "") + " took " + ms(t1 - t0)
                    + " ms (\"returns within the command timeout + 1 s even if a work ignores interruption\"; allowed "
                    + ms(allowed) + " with the margin and stalls)");
        }
        try {
            s.election.join("after-close", l -> { });
            violation("client close", "join on a closed client did not throw IllegalStateException");
        } catch (IllegalStateException expected) {
            // documented
        }
        if (leading != null && leading.kind != Kind.IGNORE && !(s.proxied && proxyCut)) {
            handOvers.add(new HandOver("client-close", leading.cand, leading, t0, t1));
        }
        if (reopen) {
            Baton b = open(s.proxied ? proxy.uri() : server.uri());
            s.gen++;
            s.baton = b;
            s.election = b.leaderElection(NAME);
            s.closing = false;
        }
    }

    private void awaiter(int index) {
        Random rnd = new Random(SEED * 131 + index);
        while (now() < endAt) {
            sleep(10 + rnd.nextInt(80));
            List<Cand> all = new ArrayList<>(cands);
            if (all.isEmpty()) {
                continue;
            }
            Cand c = rnd.nextInt(5) == 0 ? all.get(rnd.nextInt(all.size())) : pick(openCands(), rnd);
            if (c == null) {
                continue;
            }
            long timeout = rnd.nextInt(5) == 0 ? 0 : rnd.nextInt(800);
            Optional<Leadership> before = c.c.leadership();
            boolean validBefore = before.isPresent() && before.get().isValid();
            boolean closedBefore = c.closeReturnAt >= 0;
            long t0 = now();
            boolean res;
            try {
                res = c.c.awaitLeadership(timeout, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                violation("harness", "awaiter interrupted");
                return;
            } catch (RuntimeException e) {
                violation("await", c.id + ": awaitLeadership threw " + e);
                continue;
            }
            long t1 = now();
            Optional<Leadership> after = c.c.leadership();
            boolean ledThroughout = validBefore && after.isPresent() && after.get() == before.get() && before.get().isValid();
            awaits.add(new AwaitObs(c, t0, t1, timeout * MS, res, closedBefore, ledThroughout));
        }
    }

    private void cutter() {
        Random rnd = new Random(SEED * 977);
        Slot p = slots.get(3);
        long next = now() + (2_000 + rnd.nextInt(2_000)) * MS;
        while (now() < endAt - W - 3_000 * MS) {
            sleep(5);
            if (now() < next) {
                continue;
            }
            Cand pc = null;
            for (Cand c : cands) {
                if (c.slot == p && c.open()) {
                    pc = c;
                }
            }
            if (pc == null) {
                continue;
            }
            LeadRec r = pc.current;
            if (r == null || !r.l.isValid() || r.workEnd >= 0 || r.workStart < 0) {
                continue;
            }
            proxyCut = true;
            proxy.setBlackhole(true);
            long at = now();
            Duration remAtCut = r.l.remaining();
            if (remAtCut.toNanos() > W) {
                violation("scope", pc.id + ": remaining " + remAtCut + " at the cut, longer than the lease");
            }
            boolean closeIt = rnd.nextInt(3) == 0;
            sleepUntil(at + W);
            if (r.l.isValid()) {
                violation("cut", pc.id + ": its scope (" + r + ") is still valid " + ms(now() - at)
                        + " ms after its connection was cut, past the watchdog timeout (\"its validity ends a margin ... before Redis can let its lease expire\")");
            }
            sleepUntil(at + W + 1_200 * MS);
            if (closeIt) {
                closeClient(p, false);
            }
            proxy.setBlackhole(false);
            long restored = now();
            cuts.add(new Cut(at, restored, r, closeIt));
            if (closeIt) {
                Baton b = open(proxy.uri());
                p.gen++;
                p.baton = b;
                p.election = b.leaderElection(NAME);
                p.closing = false;
            }
            proxyCut = false;
            next = now() + (3_000 + rnd.nextInt(3_000)) * MS;
        }
    }

    private void monitor(BatonLeaderElection obs) {
        long nextState = 0;
        while (!stop) {
            sleep(2);
            checkScopes("monitor");
            // isLeader(): two passes
            List<Cand> l1 = new ArrayList<>();
            for (Cand c : cands) {
                if (c.c.isLeader()) {
                    l1.add(c);
                }
            }
            List<Cand> l2 = new ArrayList<>();
            for (Cand c : l1) {
                if (c.c.isLeader()) {
                    l2.add(c);
                }
            }
            if (l2.size() >= 2) {
                violation("two leaders", "isLeader() true on " + l2 + " at one instant (\"Whether this candidate leads now\")");
            }
            for (Cand c : l2) {
                if (c.c.leadership().isEmpty()) {
                    violation("isLeader", c.id + ": isLeader() true but leadership() empty");
                }
            }
            if (now() >= nextState && !stop) {
                nextState = now() + 100 * MS;
                long t0 = now();
                try {
                    ElectionState st = obs.state();
                    states.add(new StateObs(t0, now(), st));
                } catch (RuntimeException e) {
                    violation("state", "state() threw " + e);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // After the storm
    // ------------------------------------------------------------------------------------------

    private void afterwards(BatonLeaderElection obs) throws InterruptedException {
        long deadline = System.nanoTime() + T + W + 2_000 * MS;
        List<String> alive;
        do {
            alive = new ArrayList<>();
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith("baton-candidate-") && t.isAlive()) {
                    alive.add(t.getName());
                }
            }
            if (alive.isEmpty()) {
                break;
            }
            Thread.sleep(50);
        } while (System.nanoTime() < deadline);
        if (!alive.isEmpty()) {
            violation("afterwards", alive.size() + " candidate threads still alive after every candidacy and client closed: " + alive);
        }
        for (LeadRec r : allRecs) {
            if (r.revokes.get() != 1) {
                violation("listeners", r + ": " + r.revokes.get() + " revoked calls after everything closed (exactly one expected)");
            }
            if (r.workStart >= 0 && r.revokedAt >= 0 && r.revokedAt < r.workEnd) {
                violation("listeners", r + ": revoked before its work ended");
            }
        }
        for (Cand c : cands) {
            if (c.throwingListenerCalls.get() > 0 && c.recs.isEmpty()) {
                violation("listeners", c.id + ": a throwing listener was called but the tracker was not");
            }
        }
        // the line and the lock (closed-client cut-off leases and dead waiters run out first)
        Thread.sleep(Math.max(W, WAITER_TIMEOUT.toNanos()) / MS + 700);
        ElectionState st = obs.state();
        if (st.leader().isPresent() || !st.candidates().isEmpty()) {
            violation("afterwards", "state() after everything closed and leases ran out: " + st);
        }
        Object keys = server.command("KEYS", "*");
        List<?> list = keys instanceof List<?> l ? l : List.of();
        for (Object k : list) {
            String key = String.valueOf(k);
            if (key.equals("baton_leader_epoch:{" + NAME + "}")) {
                continue;
            }
            Object pttl = server.command("PTTL", key);
            if (key.contains(NAME) || key.contains("leader")) {
                if (key.equals("baton_leader:{" + NAME + "}")) {
                    violation("afterwards", "the leader hash is left after every candidate closed (PTTL " + pttl + ")");
                } else if (pttl instanceof Long x && x < 0) {
                    violation("afterwards", "key " + key + " left without a TTL (" + x + ")");
                } else {
                    note("key left (with a TTL " + pttl + "): " + key);
                }
            }
        }
    }

    private boolean inCut(long from, long to) {
        for (Cut c : cuts) {
            if (c.at - 100 * MS < to && c.at + W + 300 * MS > from) {
                return true;
            }
        }
        return false;
    }

    private boolean clientCloseOverlaps(long from, long to, long exceptStart) {
        for (long[] cc : clientCloses) {
            if (cc[0] != exceptStart && cc[0] < to && cc[1] > from) {
                return true;
            }
        }
        return false;
    }

    /** When o last entered the line before s (join, or the end of its last leadership, +1 s after a throw). */
    private long queueEntry(Cand o, long s) {
        long q = o.joinedAt;
        for (LeadRec r : o.recs) {
            if (r.electedAt < s) {
                // it queues again when revoked is called, and after a work that threw a second later
                // (the guide: "after a work that threw, a second later"; adjusted after the blind run,
                // when revoked still came only as the candidate queued again)
                long e = Math.max(r.workEnd, r.revokedAt) + (r.threw && r.why == Revocation.WORK_ENDED ? 1_000 * MS : 0);
                q = Math.max(q, e);
            }
        }
        return q;
    }

    private boolean eligible(Cand o, long s, long until) {
        if (o.joinedAt < 0 || o.joinedAt > s - 200 * MS) {
            return false;
        }
        if (o.closeStartAt >= 0 && o.closeStartAt < until) {
            return false;
        }
        if (o.slot.proxied) {
            return false;
        }
        for (long[] cc : clientCloses) {
            if (cc[2] == o.slot.index && cc[0] < until && cc[1] > o.joinedAt) {
                return false;
            }
        }
        for (LeadRec r : o.recs) {
            if (r.electedAt < s) {
                long e = Math.max(r.workEnd, r.revokedAt) + (r.threw && r.why == Revocation.WORK_ENDED ? 1_000 * MS : 0);
                if (r.workEnd < 0 || r.revokedAt < 0 || e > s - 200 * MS) {
                    return false;
                }
            }
        }
        return true;
    }

    private String dump(List<Cand> who, long from, long to) {
        StringBuilder sb = new StringBuilder();
        for (Cand c : who) {
            sb.append("\n      ").append(c.id).append(": joined ").append(ms(c.joinedAt)).append(", close ").append(ms(c.closeStartAt))
                    .append("..").append(ms(c.closeReturnAt));
            for (LeadRec r : c.recs) {
                if (r.electedAt > from - 3_000 * MS && r.electedAt < to) {
                    sb.append("\n        ").append(r).append(r.threw ? " threw" : "");
                }
            }
            for (long[] rc : c.relinquishCalls) {
                if (rc[0] > from && rc[0] < to) {
                    sb.append("\n        relinquish ").append(ms(rc[0])).append("..").append(ms(rc[1]));
                }
            }
        }
        for (StateObs so : states) {
            if (so.t0 > from && so.t0 < to) {
                sb.append("\n      state@").append(ms(so.t0)).append(": leader ")
                        .append(so.state.leader().map(l -> l.identity() + "/" + l.epoch()).orElse("-")).append(" line ").append(so.state.candidates());
            }
        }
        return sb.toString();
    }

    /** When a leadership ended at the latest: its revoked, or another candidate's election after it. */
    private long effEnd(LeadRec r) {
        long e = r.revokedAt < 0 ? Long.MAX_VALUE : r.revokedAt;
        for (LeadRec x : allRecs) {
            if (x.cand != r.cand && x.electedAt > r.electedAt && x.electedAt < e) {
                e = x.electedAt;
            }
        }
        return e;
    }

    private LeadRec nextOtherElected(LeadRec r) {
        LeadRec best = null;
        for (LeadRec x : allRecs) {
            if (x.cand != r.cand && x.electedAt > r.electedAt && (best == null || x.electedAt < best.electedAt)) {
                best = x;
            }
        }
        return best;
    }

    private LeadRec firstElectedAfter(long s, LeadRec exclude) {
        LeadRec best = null;
        for (LeadRec r : allRecs) {
            if (r != exclude && r.electedAt >= s && (best == null || r.electedAt < best.electedAt)) {
                best = r;
            }
        }
        return best;
    }

    private final List<Long> handOverDelays = new ArrayList<>();
    private int handOversJudged;
    private final Map<String, Integer> skipped = new LinkedHashMap<>();

    private void skip(String why) {
        skipped.merge(why, 1, Integer::sum);
    }

    private void analyse() {
        long end = now();
        // hand-overs
        for (HandOver h : handOvers) {
            if (h.ret + 600 * MS > endAt) {
                skip("near the end");
                continue;
            }
            if (inCut(h.start - 1_000 * MS, h.ret + 600 * MS)) {
                skip("near a cut");
                continue;
            }
            long ccStart = h.kind.equals("client-close") ? h.start : Long.MIN_VALUE;
            if (clientCloseOverlaps(h.start - 500 * MS, h.ret + 600 * MS, ccStart)) {
                skip("near a client close");
                continue;
            }
            if (h.rec == null) {
                skip("no leadership known before the call");
                continue;
            }
            if (effEnd(h.rec) < h.start) {
                skip("it did not lead at the call");
                continue;
            }
            if (h.rec.why == Revocation.LOST) {
                skip("lost leadership");
                continue;
            }
            if (h.rec != null && h.kind.startsWith("work") && !h.cand.relinquishCalls.isEmpty()) {
                boolean overlapped = false;
                for (long[] rc : h.cand.relinquishCalls) {
                    if (rc[0] < h.ret && rc[1] > h.rec.electedAt) {
                        overlapped = true;
                    }
                }
                if (overlapped || (h.cand.closeStartAt >= 0 && h.cand.closeStartAt < h.ret)) {
                    skip("work end raced a relinquish/close");
                    continue;
                }
            }
            List<Cand> el = new ArrayList<>();
            for (Cand o : cands) {
                if (o != h.cand && eligible(o, h.start, h.ret + 600 * MS)) {
                    el.add(o);
                }
            }
            if (el.isEmpty()) {
                skip("no live waiter");
                continue;
            }
            LeadRec next = firstElectedAfter(h.start, h.rec);
            handOversJudged++;
            if (next == null) {
                violation("hand-over", h.kind + " of " + h.cand.id + " at " + ms(h.ret) + " ms: nobody was elected afterwards though "
                        + el + " waited");
                continue;
            }
            long delay = next.electedAt - h.ret;
            handOverDelays.add(delay);
            long allowed = 500 * MS + HICCUPS.within(h.ret, next.electedAt);
            String what = h.kind + " of " + h.cand.id + " (" + ms(h.start) + ".." + ms(h.ret) + " ms)";
            if (next.cand == h.cand) {
                violation("order", what + ": the same candidate was elected again (" + next + ") ahead of live waiters " + el
                        + " (\"hands leadership to the next candidate in line and joins the line again at its end\")"
                        + dump(new ArrayList<>(el), h.start - 1_500 * MS, next.electedAt + 300 * MS));
            }
            if (delay > allowed) {
                violation("hand-over", what + ": next leader " + next + " elected " + ms(delay) + " ms after the return; "
                        + "waiting were " + el + " (\"the next live candidate leads within 200 ms\", judged at 500 ms + stalls "
                        + ms(allowed - 500 * MS) + ")");
            }
            Cand earliest = el.stream().min(Comparator.comparingLong(o -> queueEntry(o, h.start))).orElseThrow();
            if (next.cand != h.cand && next.cand != earliest && !next.cand.slot.proxied
                    && queueEntry(next.cand, h.start) > queueEntry(earliest, h.start) + 300 * MS
                    && (earliest.closeStartAt < 0 || earliest.closeStartAt > next.electedAt)) {
                violation("order", what + ": " + next.cand.id + " (in line since " + ms(queueEntry(next.cand, h.start)) + " ms) was elected ahead of "
                        + earliest.id + " (in line since " + ms(queueEntry(earliest, h.start)) + " ms) (\"one leads at a time, in the order they joined\")"
                        + dump(List.of(h.cand, next.cand, earliest), h.start - 1_500 * MS, next.electedAt + 300 * MS));
            }
        }
        // cuts
        for (Cut c : cuts) {
            LeadRec r = c.rec;
            LeadRec next = null;
            for (LeadRec x : allRecs) {
                if (x.cand != r.cand && x.electedAt >= c.at && (next == null || x.electedAt < next.electedAt)) {
                    next = x;
                }
            }
            if (next == null) {
                violation("cut", "after the cut at " + ms(c.at) + " ms nobody else was elected");
                continue;
            }
            long stopAt = r.interruptSeenAt >= 0 ? r.interruptSeenAt : r.workEnd;
            if (stopAt < 0 || stopAt > next.electedAt) {
                long stalls = HICCUPS.within(next.electedAt - 100 * MS, stopAt < 0 ? end : stopAt);
                violation("cut", r + " cut at " + ms(c.at) + " ms: its work saw the stop at " + ms(stopAt) + " ms, after "
                        + next + " was elected (stalls around: " + ms(stalls) + " ms) (\"A leader cut off from Redis has its work stopped before another candidate is elected\")");
            }
            List<Cand> el = new ArrayList<>();
            for (Cand o : cands) {
                if (o != r.cand && eligible(o, c.at, c.at + W + 600 * MS)) {
                    el.add(o);
                }
            }
            long delay = next.electedAt - c.at;
            long allowed = W + 200 * MS + 300 * MS + HICCUPS.within(c.at, next.electedAt);
            if (!el.isEmpty() && !clientCloseOverlaps(c.at - 500 * MS, c.at + W + 600 * MS, Long.MIN_VALUE) && delay > allowed) {
                violation("cut", "cut at " + ms(c.at) + " ms of " + r + ": next leader " + next + " after " + ms(delay)
                        + " ms (\"the other candidate leads within the watchdog timeout + 200 ms of the cut\"; allowed " + ms(allowed) + ")");
            }
            System.out.printf("[election-storm] cut at %s ms of %s: work stop seen at %s, next leader %s elected %s ms after the cut%n",
                    ms(c.at), r.cand.id, ms(r.interruptSeenAt), next.cand.id, ms(delay));
            if (r.why != Revocation.LOST && !(c.clientClosed && r.why == Revocation.CLOSED)) {
                violation("cut", r + ": revoked with " + r.why + " after its connection was cut (LOST expected)");
            }
        }
        // a work that ended on its own is handed on: revoked must say WORK_ENDED
        List<Long> throwRevokeDelays = new ArrayList<>();
        for (LeadRec r : allRecs) {
            if (r.workEnd < 0 || r.revokedAt < 0 || !(r.threw || (r.endedOnItsOwn && r.interruptSeenAt < 0))) {
                continue;
            }
            if (r.threw) {
                throwRevokeDelays.add(r.revokedAt - r.workEnd);
            }
            LeadRec nx = nextOtherElected(r);
            if (nx != null && nx.electedAt < r.revokedAt && r.why != Revocation.WORK_ENDED) {
                boolean raced = false;
                for (long[] rc : r.cand.relinquishCalls) {
                    if (rc[0] <= nx.electedAt && rc[1] >= r.electedAt) {
                        raced = true; // relinquish called while it still led
                    }
                }
                if (r.cand.closeStartAt >= 0 && r.cand.closeStartAt <= nx.electedAt) {
                    raced = true;
                }
                if (!raced) {
                    violation("revocation", r + ": its work " + (r.threw ? "threw" : "returned") + " at " + ms(r.workEnd)
                            + " ms and leadership was handed on (" + nx.cand.id + " elected at " + ms(nx.electedAt)
                            + " ms), but revoked came " + ms(r.revokedAt - r.workEnd) + " ms after the work ended saying " + r.why
                            + " (\"WORK_ENDED: The work returned, or threw: leadership was handed on\")");
                }
            }
        }
        Collections.sort(throwRevokeDelays);
        if (!throwRevokeDelays.isEmpty()) {
            System.out.printf("[election-storm] revoked after a work that threw: %d, delay from the throw: min %s ms, max %s ms%n",
                    throwRevokeDelays.size(), ms(throwRevokeDelays.get(0)), ms(throwRevokeDelays.get(throwRevokeDelays.size() - 1)));
        }
        // relinquish true: it led during the call
        Map<Revocation, Integer> relWhy = new LinkedHashMap<>();
        for (RelObs o : relinquishes) {
            if (!o.result) {
                continue;
            }
            LeadRec led = null;
            LeadRec last = null;
            for (LeadRec r : o.cand.recs) {
                if (r.electedAt <= o.t1 && effEnd(r) >= o.t0) {
                    led = r;
                }
                if (r.electedAt <= o.t0) {
                    last = r;
                }
            }
            if (led == null) {
                LeadRec nx = last == null ? null : nextOtherElected(last);
                violation("relinquish", o.cand.id + ": relinquish() returned true (" + ms(o.t0) + ".." + ms(o.t1)
                        + " ms) though it did not lead: its last leadership " + last + " was followed by " + nx
                        + " before the call; just before the call isLeader() was " + o.isLeaderBefore + ", leadership() "
                        + (o.before == null ? "empty" : "epoch " + o.before.epoch + " valid " + o.validBefore)
                        + " (\"false at once if this candidate did not lead\")");
                continue;
            }
            if (led.why != null) {
                relWhy.merge(led.why, 1, Integer::sum);
            }
            if ((led.kind == Kind.LONG || led.kind == Kind.CHECKVALID) && led.why != Revocation.RELINQUISHED
                    && led.why != Revocation.LOST && !(led.why == Revocation.CLOSED && o.cand.closeStartAt >= 0)) {
                violation("relinquish", led + ": relinquish() returned true, the work runs until interrupted, yet revoked says " + led.why);
            }
            if (led.revokedAt >= 0 && led.revokedAt > o.t1 + 300 * MS + HICCUPS.within(o.t1, led.revokedAt)) {
                note(led + ": revoked " + ms(led.revokedAt - o.t1) + " ms after relinquish() returned");
            }
        }
        // closes: no elected after close() returned; reasons
        for (Cand c : cands) {
            if (c.closeReturnAt < 0) {
                continue;
            }
            for (LeadRec r : c.recs) {
                if (r.electedAt > c.closeReturnAt) {
                    violation("close", c.id + ": elected at " + ms(r.electedAt) + " ms after close() returned at "
                            + ms(c.closeReturnAt) + " ms (\"close() leaves for good\")");
                }
                if (r.electedAt < c.closeStartAt && r.revokedAt >= c.closeStartAt && r.kind == Kind.LONG
                        && r.why != Revocation.CLOSED && r.why != Revocation.LOST && r.why != Revocation.RELINQUISHED) {
                    violation("close", r + ": ended by close but revoked says " + r.why);
                }
                if (c.closedByClient && r.kind != Kind.IGNORE && r.workStart >= 0 && r.electedAt < c.closeStartAt
                        && (r.workEnd < 0 || r.workEnd > c.closeReturnAt + 300 * MS + HICCUPS.within(c.closeReturnAt, r.workEnd < 0 ? end : r.workEnd))) {
                    violation("client close", r + ": its work ran on " + ms((r.workEnd < 0 ? end : r.workEnd) - c.closeReturnAt)
                            + " ms after the client's close() returned (\"closing the client stops running work at once\", 300 ms)");
                }
            }
        }
        // awaits
        for (AwaitObs a : awaits) {
            long d = a.t1 - a.t0;
            long stalls = HICCUPS.within(a.t0, a.t1);
            Cand c = a.cand;
            if (a.closedBefore) {
                if (a.result || d > 300 * MS + stalls) {
                    violation("await", c.id + ": awaitLeadership on a closed candidacy returned " + a.result + " after " + ms(d) + " ms");
                }
                continue;
            }
            if (a.result) {
                boolean led = false;
                for (LeadRec r : c.recs) {
                    if (r.electedAt <= a.t1 + 300 * MS + HICCUPS.within(a.t1, a.t1 + 300 * MS) && effEnd(r) >= a.t0) {
                        led = true;
                    }
                }
                if (!led) {
                    violation("await", c.id + ": awaitLeadership returned true (" + ms(a.t0) + ".." + ms(a.t1) + " ms) but it did not lead then");
                }
                continue;
            }
            if (a.ledThroughout) {
                violation("await", c.id + ": awaitLeadership(" + ms(a.timeout) + " ms) returned false though it led throughout the wait "
                        + "(\"true as soon as it leads\")");
            }
            boolean closedDuring = c.closeReturnAt >= 0 && c.closeStartAt <= a.t1;
            if (!closedDuring && d < a.timeout - MS) {
                violation("await", c.id + ": awaitLeadership(" + ms(a.timeout) + " ms) returned false after only " + ms(d) + " ms");
            }
            long bound = closedDuring ? Math.min(a.timeout, Math.max(0, c.closeReturnAt - a.t0)) : a.timeout;
            if (d > bound + 300 * MS + stalls) {
                violation("await", c.id + ": awaitLeadership(" + ms(a.timeout) + " ms) returned false after " + ms(d) + " ms"
                        + (closedDuring ? " (closed during the wait, close() returned " + ms(c.closeReturnAt - a.t0) + " ms in)" : ""));
            }
            for (LeadRec r : c.recs) {
                long rEnd = r.revokedAt < 0 ? end : Math.min(r.revokedAt, r.workEnd < 0 ? end : r.workEnd);
                if (r.electedAt >= a.t0 && r.electedAt + 300 * MS + HICCUPS.within(r.electedAt, a.t1) < Math.min(a.t1, rEnd)
                        && r.validAtElected && r.why != Revocation.LOST) {
                    violation("await", c.id + ": awaitLeadership(" + ms(a.timeout) + " ms, " + ms(a.t0) + ".." + ms(a.t1)
                            + ") returned false though " + r + " began in the wait and lasted (\"true as soon as it leads\")");
                }
            }
        }
        // state()
        Map<Long, LeadRec> byEpoch = new java.util.HashMap<>();
        for (LeadRec r : allRecs) {
            if (byEpoch.put(r.epoch, r) != null) {
                violation("epoch", "two leaderships with epoch " + r.epoch);
            }
        }
        Map<String, Cand> byId = new java.util.HashMap<>();
        for (Cand c : cands) {
            byId.put(c.id, c);
        }
        int leaderSeen = 0;
        for (StateObs so : states) {
            ElectionState st = so.state;
            List<String> line = st.candidates();
            if (line.size() != new java.util.HashSet<>(line).size()) {
                violation("state", "state() lists a candidate twice: " + line);
            }
            for (String id : line) {
                Cand c = byId.get(id);
                if (c == null) {
                    if (!id.equals("x".repeat(200))) {
                        violation("state", "state() lists an unknown candidate " + id);
                    }
                    continue;
                }
                if (c.closeReturnAt >= 0 && so.t0 > c.closeReturnAt && !c.slot.proxied) {
                    violation("state", "state() sent " + ms(so.t0 - c.closeReturnAt) + " ms after " + id
                            + "'s close() returned lists it in line: " + line + " (\"close() leaves for good: ... leaves the line\")");
                }
            }
            if (st.leader().isEmpty()) {
                continue;
            }
            leaderSeen++;
            ElectionState.Leader ld = st.leader().get();
            if (line.contains(ld.identity())) {
                violation("state", "state() lists its leader " + ld.identity() + " in line too: " + line);
            }
            if (ld.leaseLeft().toNanos() > Math.max(W, WAITER_TIMEOUT.toNanos()) + 5 * MS) {
                violation("state", "state() leaseLeft " + ld.leaseLeft() + " beyond every lease");
            }
            if (ld.epoch() == 0) {
                continue;
            }
            LeadRec r = byEpoch.get(ld.epoch());
            Cand c = byId.get(ld.identity());
            if (r == null) {
                if (c != null && c.closeStartAt >= 0 && c.closeStartAt < so.t1 + 500 * MS) {
                    note("state() at " + ms(so.t0) + " shows " + ld + " whose elected never came (closing)");
                } else if (!ld.identity().equals("x".repeat(200))) {
                    violation("state", "state() at " + ms(so.t0) + " ms shows leader " + ld + " but no candidate was elected with that epoch");
                }
                continue;
            }
            if (!r.cand.id.equals(ld.identity())) {
                violation("state", "state() shows epoch " + ld.epoch() + " led by " + ld.identity() + ", elected was " + r.cand.id);
            }
            if (r.revokedAt >= 0 && so.t0 > r.revokedAt && !r.cand.slot.proxied && !r.cand.closedByClient
                    && r.why != Revocation.LOST) {
                violation("state", "state() sent " + ms(so.t0 - r.revokedAt) + " ms after " + r + " was revoked still shows it leading");
            }
        }
        System.out.printf("[election-storm] state() calls %d, with a leader %d%n", states.size(), leaderSeen);
    }

    private void summary() {
        Map<Kind, Integer> kinds = new LinkedHashMap<>();
        Map<Revocation, Integer> whys = new LinkedHashMap<>();
        long withSteps = 0;
        for (LeadRec r : allRecs) {
            kinds.merge(r.kind, 1, Integer::sum);
            if (r.why != null) {
                whys.merge(r.why, 1, Integer::sum);
            }
            if (r.steps > 0) {
                withSteps++;
            }
        }
        long relTrue = relinquishes.stream().filter(RelObs::result).count();
        List<Long> d = new ArrayList<>(handOverDelays);
        Collections.sort(d);
        System.out.printf("[election-storm] seed=%d: %d candidacies, %d leaderships (%d stepped) %s, revoked %s, %d steps (%d while invalid)%n",
                SEED, cands.size(), allRecs.size(), withSteps, kinds, whys, totalSteps.get(), invalidSteps.get());
        System.out.printf("[election-storm] relinquish %d (%d true), awaits %d (%d true), client closes %d, cuts %d, hand-overs judged %d of %d (skipped %s)%n",
                relinquishes.size(), relTrue, awaits.size(), awaits.stream().filter(AwaitObs::result).count(), clientCloses.size(),
                cuts.size(), handOversJudged, handOvers.size(), skipped);
        if (!d.isEmpty()) {
            System.out.printf("[election-storm] hand-over delay after the return: median %s ms, p90 %s ms, max %s ms%n",
                    ms(d.get(d.size() / 2)), ms(d.get(d.size() * 9 / 10)), ms(d.get(d.size() - 1)));
        }
        System.out.printf("[election-storm] longest JVM stall %s ms, total %s ms%n", ms(HICCUPS.longest(0, now())), ms(HICCUPS.within(0, now())));
        synchronized (overlaps) {
            long maxAfter = 0;
            int leaders = 0;
            int passed = 0;
            for (Map.Entry<LeadRec, long[]> e : overlaps.entrySet()) {
                long[] v = e.getValue();
                long after = (v[2] < 0 ? now() : v[2]) - v[0];
                maxAfter = Math.max(maxAfter, after);
                leaders += (int) v[3];
                passed += (int) v[4];
                System.out.printf("[election-storm] overlap: %s stayed valid until %s ms, %s ms after the next leader was elected at %s ms (isLeader %s, checkValid passed %s)%n",
                        e.getKey(), ms(v[2]), ms(after), ms(v[0]), v[3] == 1, v[4] == 1);
            }
            System.out.printf("[election-storm] overlaps: %d of %d hand-overs; the older scope valid up to %s ms after the next leader's elected; isLeader() true in %d, checkValid() passed in %d%n",
                    overlaps.size(), allRecs.size(), ms(maxAfter), leaders, passed);
        }
        System.out.println("[election-storm] violations by category: " + violationCounts);
    }

    // ------------------------------------------------------------------------------------------
    // Helpers
    // ------------------------------------------------------------------------------------------

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleepUntil(long t) {
        while (now() < t) {
            sleep(Math.max(1, Math.min(20, (t - now()) / MS)));
        }
    }

    /** Stalls of this JVM or machine: a thread that sleeps 2 ms and records wake-ups more than 20 ms late. */
    static final class Hiccups {
        private final Queue<long[]> stalls = new ConcurrentLinkedQueue<>();

        static Hiccups start() {
            Hiccups h = new Hiccups();
            Thread t = new Thread(() -> {
                long last = now();
                while (true) {
                    try {
                        Thread.sleep(2);
                    } catch (InterruptedException e) {
                        return;
                    }
                    long n = now();
                    if (n - last > 22 * MS) {
                        h.stalls.add(new long[] {last + 2 * MS, n});
                    }
                    last = n;
                }
            }, "election-storm-hiccups");
            t.setDaemon(true);
            t.setPriority(Thread.MAX_PRIORITY);
            t.start();
            return h;
        }

        long within(long from, long to) {
            long sum = 0;
            for (long[] s : stalls) {
                sum += Math.max(0, Math.min(to, s[1]) - Math.max(from, s[0]));
            }
            return sum;
        }

        long longest(long from, long to) {
            long max = 0;
            for (long[] s : stalls) {
                max = Math.max(max, Math.max(0, Math.min(to, s[1]) - Math.max(from, s[0])));
            }
            return max;
        }
    }
}
