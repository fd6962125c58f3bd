package dev.baton.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of one synchronizer kind: two Baton clients on one simulated Redis, actors that
 * call the synchronizer as users do, the run, a calm drain, and the checks of the end state. The
 * seed decides the faults' shape (none; short stalls and lost messages; stalls past the command
 * timeout; those and connection resets), every delay and every actor's choice.
 */
abstract class Simulation {

    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(1);
    static final Duration WATCHDOG = Duration.ofSeconds(3);
    /** The watchdog timeout of one lock seed in four: shorter than the stalls. */
    static final Duration SHORT_WATCHDOG = Duration.ofMillis(120);
    /** This run's watchdog timeout. */
    final Duration watchdog;
    /** The longest stall the faults put on a command: a copy may reach Redis this long after it was sent. */
    static final Duration LONGEST_STALL = Duration.ofMillis(1500);
    /** How late a failure may be reported beyond the command timeout (guarantees.md). */
    static final long SLACK_NANOS = TimeUnit.MILLISECONDS.toNanos(150);

    /** An actor: one operation at a time. */
    interface Actor {
        /** Starts the actor's next operation (or marks it idle once the run is stopping). */
        void next();

        /** Whether it has stopped for good. */
        boolean idle();

        /** What it is doing, for a finding. */
        String doing();
    }

    /**
     * What every actor shares: idle and what it is doing, stopping when the run stops, pausing
     * between operations, and judging how a call ended against its bound.
     */
    abstract class BaseActor implements Actor {
        boolean idle;
        String doing = "nothing";

        @Override
        public boolean idle() {
            return idle;
        }

        @Override
        public String doing() {
            return doing;
        }

        /** The client process this actor runs in (its pauses extend the actor's bounds), or null. */
        SimClient.Clock process() {
            return null;
        }

        /** How long the actor's process has been paused since {@code from} (world time). */
        long pausedSince(long from) {
            SimClient.Clock p = process();
            return p == null ? 0 : p.pausedBetween(from, world.now());
        }

        /**
         * Whether a lease taken by a call that began at {@code asked} may have run out unrenewed
         * while the actor's process stopped: it stopped since for two thirds of the watchdog (a
         * lease renewed on time has at least that left) or of the fixed lease ({@code leaseMs} > 0).
         */
        boolean pausedPastLease(long asked, long leaseMs) {
            long lease = leaseMs > 0 ? TimeUnit.MILLISECONDS.toNanos(leaseMs) : watchdog.toNanos();
            return pausedSince(asked) >= lease * 2 / 3;
        }

        /**
         * Whether the reply of a call sent at {@code sent} may have waited out a pause of the
         * actor's process that an overtaking (at {@code overtakenAt}) fell in: the call may have
         * run in Redis before it (an unlock of one of several holds, say) and rightly ended
         * normally, heard only later.
         */
        boolean replyHeldByPause(long sent, long overtakenAt) {
            return overtakenAt > sent && pausedSince(sent) > 0;
        }

        /** Runs {@code run} in the actor's process after {@code delayNanos} (held through its pauses). */
        void later(long delayNanos, String what, Runnable run) {
            SimClient.Clock p = process();
            if (p == null) {
                world.at(delayNanos, what, run);
            } else {
                p.at(delayNanos, what, run);
            }
        }

        /** Marks the actor idle if the run is stopping; whether it did. */
        boolean stopIfStopping() {
            if (stopping) {
                idle = true;
                doing = "nothing";
            }
            return stopping;
        }

        /**
         * Set by an actor for its next pause only: the next operation starts at once, on the
         * thread (in the callback) that ended this one, as user code that retries from a
         * give-up's own callback does (issue 45: a multi-lock granted what Redis did not hold).
         */
        boolean nextInCallback;

        /** A pause of up to 1 ms, then the next operation; or, once, the next operation at once ({@link #nextInCallback}). */
        void pause() {
            if (nextInCallback) {
                nextInCallback = false;
                ran(dev.baton.testkit.UserPattern.NEXT_CALL_IN_CALLBACK);
                doing = "starting the next call from the callback";
                next();
                return;
            }
            doing = "pausing";
            later(world.micros(0, 1_000), "next", this::next);
        }

        /**
         * The caller ends the future Baton returned, a moment from now: {@code cancel()}, or its
         * own timeout (the shape of {@code orTimeout}). (A stage derived from it is the caller's
         * own business: ending that one leaves Baton's call running, as with any future.)
         */
        void endedByCaller(java.util.concurrent.CompletableFuture<?> f, boolean cancel) {
            later(world.micros(0, cancel ? 3_000 : 20_000), "caller ends", () -> {
                if (cancel) {
                    f.cancel(true);
                } else {
                    f.completeExceptionally(new java.util.concurrent.TimeoutException("caller's timeout"));
                }
            });
        }

        /** A call's time against its bound ({@code bound} < 0: none). */
        void checkBound(String how, long asked, long bound) {
            long took = world.now() - asked;
            // A process that was paused could not end the call: the bound runs on its running time.
            long paused = pausedSince(asked);
            if (bound >= 0 && took > bound + paused) {
                violation(this + ": " + how + " took " + took / 1000 + " µs, bound " + bound / 1000 + " µs"
                        + (paused > 0 ? " + " + paused / 1000 + " µs its process was paused" : ""));
            }
        }

        /**
         * Judges how a call ended: its time against its bound; an error is noted, is a violation
         * unless it is a way such a call may end (cancelled, its caller's timeout, Redis
         * unavailable), and pauses the actor. Returns the error, or {@code null} if there was none.
         */
        Throwable ended(String how, long asked, long bound, Throwable error) {
            checkBound(how, asked, bound);
            Throwable e = unwrap(error);
            if (e == null) {
                return null;
            }
            world.note(this + " " + how + " ended: " + e);
            // A synchronizer found gone is told only after Redis lost its data since the call began
            // (the nemesis soak's rule: a deletion nobody made is a data loss's).
            boolean goneInLoss = e instanceof dev.baton.SynchronizerDeletedException && restartedSince(asked);
            if (!(e instanceof java.util.concurrent.CancellationException || e instanceof java.util.concurrent.TimeoutException
                    || e instanceof dev.baton.RedisUnavailableException || goneInLoss)) {
                violation(this + ": " + how + " threw " + e);
            }
            pause();
            return e;
        }
    }

    /**
     * How long a wait may stay unaware that what it waits for is there (a semaphore's permits
     * free, a latch open, a lock free) with nobody taking it away, in this run's faults. Where they
     * lose no message and reset no connection, every change is announced and heard, so the bound
     * is what the message and the attempt it starts take: each leg of the simulated wire takes at
     * most 300 µs plus what is queued before it on the same connection, so 3 ms (the most
     * measured over 1,000 semaphore seeds was 1.3 ms; with the semaphore's wake-up passed on to a
     * smaller request switched off, 12 ms, and over 3 ms in 785 waits); with stalls, one stalled
     * command more. Where messages can be lost or connections reset, it is the kind's promise
     * for a lost message ({@code recheckNanos}: the semaphore's and the latch's re-check, the
     * longest lease a lock waiter's timer may run to), a stalled command and 150 ms.
     */
    long unawareBound(long recheckNanos) {
        if (faults.messageLoss() > 0 || faults.resetEveryMicros() > 0 || restartAtNanos >= 0) {
            // (A restart announces nothing: a waiter learns of it as of a lost message.)
            return recheckNanos + LONGEST_STALL.toNanos() + SLACK_NANOS;
        }
        return TimeUnit.MILLISECONDS.toNanos(3) + TimeUnit.MICROSECONDS.toNanos(faults.stallMaxMicros());
    }

    /**
     * One actor's wait as the judge of waits that miss what they wait for sees it: whether one is
     * pending, and since when what it waits for has been there, continuously. A wait that goes on
     * longer than {@code bound} ({@link #unawareBound}) with it there is a violation.
     */
    final class WaitClock {
        private final Object actor;
        /** What was there, for the finding: "the latch was open in Redis". */
        private final String there;
        private final long bound;
        private boolean pending;
        private long thereSince = -1;

        WaitClock(Object actor, String there, long bound) {
            this.actor = actor;
            this.there = there;
            this.bound = bound;
        }

        /** A wait starts; {@code thereNow}: whether what it waits for is there already. */
        void start(boolean thereNow) {
            pending = true;
            thereSince = thereNow ? world.now() : -1;
        }

        /** The wait ended (granted, refused, failed): judged a last time. */
        void end() {
            judge();
            pending = false;
            thereSince = -1;
        }

        /** Between commands (SimWorld.watch): judged, and the clock runs while {@code thereNow} says so. */
        void watch(java.util.function.BooleanSupplier thereNow) {
            if (!pending) {
                return;
            }
            judge();
            if (!thereNow.getAsBoolean()) {
                thereSince = -1;
            } else if (thereSince < 0) {
                thereSince = world.now();
            }
        }

        private void judge() {
            long paused = thereSince >= 0 && actor instanceof BaseActor b ? b.pausedSince(thereSince) : 0;
            if (thereSince >= 0 && world.now() - thereSince > bound + paused) {
                violation(actor + " waited " + (world.now() - thereSince) / 1000 + " µs while " + there + " (bound "
                        + bound / 1000 + " µs): a wake-up lost");
                thereSince = -1;
            }
        }
    }

    /** The bound of a call that waits {@code waitMs} (-1: an untimed call, no bound). */
    static long boundOf(long waitMs) {
        return waitMs < 0 ? -1 : TimeUnit.MILLISECONDS.toNanos(waitMs) + COMMAND_TIMEOUT.toNanos() + SLACK_NANOS;
    }

    final String kind;
    final long seed;
    final SimWorld world;
    final List<String> violations = new ArrayList<>();
    final Map<String, Long> reportedLost = new HashMap<>();
    final List<SimClient> clients = new ArrayList<>();
    /** The faults every connection of this run has, as the seed chose them. */
    final SimWire.Faults faults;
    long grants;
    long operations;
    /** Lock grants that reached a process stopped past the lease since the call began, Redis no longer holding them. */
    long grantsAfterLongPause;
    /** Grants a client made without Redis (the semaphore's hand-off), counted at the end. */
    long handedInClient;
    /** Semaphore waits that parked after one refused attempt, their channel quiet since it was sent. */
    long quietParks;
    /** Wake-ups a semaphore wait passed on to a younger one, rung for permits it could not use. */
    long passedOn;
    private final long runNanos;
    /** The longest gap between two flushes of the script cache during the run, in µs; 0: never flushed. */
    final long scriptFlushMaxMicros;
    /**
     * When set, every client process's clock runs at this rate (SimulationTest's proof that the
     * judge catches a drift beyond the allowance lease-scoped work keeps back); null otherwise.
     */
    static volatile Double SLOW_CLOCKS;

    /** When Redis restarts empty (virtual ns from the start), or -1: never. */
    final long restartAtNanos;
    /** When it did, or -1. */
    long restartedAt = -1;

    /** Whether Redis restarted empty at or after {@code since}: it may have ended a hold taken since. */
    boolean restartedSince(long since) {
        return restartedAt >= 0 && restartedAt >= since;
    }

    /** Redis restarts without its data: every key and script gone, every client's connections dropped. */
    private void restartEmpty() {
        if (stopping) {
            return;
        }
        restartedAt = world.now();
        world.note("REDIS RESTARTED EMPTY");
        world.server.serve(new String[] {"FLUSHALL"});
        world.server.serve(new String[] {"SCRIPT", "FLUSH"});
        for (SimClient c : clients) {
            c.commands.reset();
            c.pubSub.reset();
        }
    }

    /**
     * When the Redis restart at {@link #restartAtNanos} is a failover to a replica instead: how far
     * behind the master it was (ns; -1: an empty restart), and how long the demoted master answers
     * scripts with READONLY.
     */
    final long failoverLagNanos;
    final long readOnlyNanos;
    /** The replica's keys, taken {@link #failoverLagNanos} before the failover. */
    private Object replica;

    /** When one client process stops for longer than its leases (world ns from the start), or -1: never. */
    final long longPauseAtNanos;
    /** How long it stops. */
    final long longPauseNanos;
    /** Which client's process ({@link #clients} index), or -1. */
    final int longPauseClient;

    /** The longest the demoted master keeps the clients' connections when no script reaches it (ns). */
    static final long READ_ONLY_LONGEST_NANOS = TimeUnit.MILLISECONDS.toNanos(30);

    /**
     * A replica {@link #failoverLagNanos} behind takes over: the keys become what it had, its
     * script cache is empty, and the clients, still on the demoted master, get READONLY for every
     * script until their connections drop {@link #readOnlyNanos} after the first script it
     * refused (as Sentinel's reconfiguration kills the demoted master's clients), or
     * {@link #READ_ONLY_LONGEST_NANOS} after the failover if no script came. Until 2026-11-28's
     * second change the connections dropped 1-5 ms after the failover whatever came, and 68 of
     * 73 latch failovers in 1,000 seeds saw no script in that time.
     */
    private void failOverToReplica() {
        if (stopping) {
            return;
        }
        restartedAt = world.now();
        world.note("FAILOVER to a replica " + failoverLagNanos / 1000 + " µs behind; READONLY until " + readOnlyNanos / 1000
                + " µs after the first script refused (at most " + READ_ONLY_LONGEST_NANOS / 1000 + " µs)");
        world.server.redis.restore(replica);
        world.server.serve(new String[] {"SCRIPT", "FLUSH"});
        world.server.redis.readOnly(true);
        boolean[] followed = {false, false};
        Runnable follow = () -> {
            if (followed[1]) {
                return;
            }
            followed[1] = true;
            world.server.redis.readOnly(false);
            world.server.redis.onReadOnlyRefusal(null);
            for (SimClient c : clients) {
                c.commands.reset();
                c.pubSub.reset();
            }
        };
        world.server.redis.onReadOnlyRefusal(() -> {
            if (!followed[0]) {
                followed[0] = true;
                world.at(readOnlyNanos, "clients follow the failover", follow);
            }
        });
        world.at(READ_ONLY_LONGEST_NANOS, "clients follow the failover (no script came)", follow);
    }

    /** The longest gap between two pauses of one client process, in µs; 0: processes never pause. */
    final long pauseEveryMaxMicros;
    /** Draws the flushes' times, the processes' clocks and pauses and the restart: a stream of its own (see the constructor). */
    private final java.util.Random faultDraws;
    /** Set when the run ends: actors finish what they are doing and stop. */
    boolean stopping;
    /** Set while the clients close: what their closing fails is not a finding. */
    private boolean closing;

    Simulation(String kind, long seed, boolean trace, Duration run) {
        this.kind = kind;
        this.seed = seed;
        this.world = new SimWorld(seed, trace);
        this.runNanos = run.toNanos();
        SimWire.Faults drawn = switch (world.rnd.nextInt(4)) {
            case 0 -> SimWire.Faults.NONE;
            case 1 -> new SimWire.Faults(0.01, 30_000, 0, 0.01);
            case 2 -> new SimWire.Faults(0.002, LONGEST_STALL.toNanos() / 1000, 0, 0);
            default -> new SimWire.Faults(0.002, LONGEST_STALL.toNanos() / 1000, 40_000, 0.005);
        };
        // One lock seed in four renews every 40 ms (a 120 ms watchdog, the least allowed), so stalls let leases run
        // out in Redis while their holders (scoped work among them) still run: what the checks
        // of an overtaken hold and of a scope's validity are for. Other kinds draw nothing here.
        watchdog = (LockSimulation.KINDS.contains(kind) || kind.equals("leaderElection")) && world.rnd.nextInt(4) == 0
                ? SHORT_WATCHDOG : WATCHDOG;
        faults = watchdog == SHORT_WATCHDOG
                ? new SimWire.Faults(0.02, 300_000, 0, 0.005) // stalls of up to 300 ms: past the lease
                : drawn;
        // One seed in three empties the script cache every 1-15 ms of the run (what a restart, a
        // failover to a replica or an operator's SCRIPT FLUSH does): each client's next EVALSHA
        // gets NOSCRIPT and is sent again as EVAL a round trip later, behind commands sent after
        // it whose script another client had loaded again meanwhile (issue 46: the sabotage of
        // the owner's wait for its unanswered unlock went uncaught without it). Drawn from its own
        // stream, so the seed's other draws stay as they were.
        faultDraws = new java.util.Random(new java.util.SplittableRandom(seed).split().nextLong());
        scriptFlushMaxMicros = faultDraws.nextInt(3) == 0 ? 1_000 + faultDraws.nextInt(14_000) : 0;
        // The client processes (issue 46: client and server shared one clock, and no process
        // ever paused). One seed in three gives each process a clock of its own that drifts from
        // Redis's by up to 0.5 % either way (the leases' allowances are 1 %), from its own origin;
        // one in four pauses each process for 1-10 ms, 2 to 5-60 ms after its last pause ended
        // (less than any lease the runs use: a pause longer than the lease is what Baton cannot
        // promise, guarantees.md). Drawn from the same stream as
        // the script flushes, so the seed's other draws stay as they were.
        boolean drifts = faultDraws.nextInt(3) == 0;
        pauseEveryMaxMicros = faultDraws.nextInt(4) == 0 ? 5_000 + faultDraws.nextInt(55_000) : 0;
        StringBuilder shape = new StringBuilder();
        for (String id : List.of("a", "b")) {
            SimClient.Clock process = new SimClient.Clock(world);
            if (drifts || SLOW_CLOCKS != null) {
                double rate = 1 + (faultDraws.nextDouble() * 2 - 1) * 0.005;
                long origin = (long) (faultDraws.nextDouble() * 1e12);
                if (SLOW_CLOCKS != null) {
                    rate = SLOW_CLOCKS; // SimulationTest's check that the judge sees a drift beyond the allowance
                }
                process = new SimClient.Clock(world, rate, origin);
                shape.append(String.format(java.util.Locale.ROOT, ", client %s's clock runs at %.4f", id, rate));
            }
            clients.add(new SimClient(world, id, faults, COMMAND_TIMEOUT, watchdog, lossListener(), process));
        }
        // One lock seed in six restarts Redis empty once, 20-180 ms into the run (issue 46: data
        // loss): every key and script gone, every connection dropped. Holds end without a word;
        // what Baton promises then is that the loss is found and told (the watchdog within a third
        // of its timeout, an unlock), that fencing tokens keep rising, and that nothing is left.
        restartAtNanos = (LockSimulation.KINDS.contains(kind)
                || List.of("semaphore", "expirableSemaphore", "latch", "leaderElection").contains(kind))
                && faultDraws.nextInt(6) == 0
                ? TimeUnit.MICROSECONDS.toNanos(20_000 + faultDraws.nextInt(160_000)) : -1;
        // One lock or multi-lock seed in five stops one client process once for longer than its leases (issue
        // 46: a GC pause or a stopped container, up to several leases): 130-400 ms where the
        // watchdog is 120 ms, 250 ms-4 s elsewhere (fixed leases are 200 ms-1 s, the watchdog 3 s),
        // 5-120 ms into the run. What a holder does after such a pause Baton cannot promise (its
        // hold may have run out and gone to another); what it still promises is judged: a grant
        // that reached its caller after the pause is not counted as held, the holder's unlock
        // tells the loss, no lease-scoped work claims validity past its lease, tokens rise.
        if ((LockSimulation.KINDS.contains(kind) || kind.equals("multiLock") || kind.equals("leaderElection"))
                && faultDraws.nextInt(5) == 0) {
            longPauseAtNanos = TimeUnit.MICROSECONDS.toNanos(5_000 + faultDraws.nextInt(115_000));
            longPauseNanos = watchdog == SHORT_WATCHDOG
                    ? TimeUnit.MICROSECONDS.toNanos(130_000 + faultDraws.nextInt(270_000))
                    : TimeUnit.MICROSECONDS.toNanos(250_000 + faultDraws.nextInt(3_750_000));
            longPauseClient = faultDraws.nextInt(2);
        } else {
            longPauseAtNanos = -1;
            longPauseNanos = 0;
            longPauseClient = -1;
        }
        // Half the seeds that lose Redis's data lose only its last writes (issue 46): a replica
        // 0.5-30 ms behind is promoted (its keys as they were then, holds released since back
        // with their leases, holds taken since gone, no scripts), and the old master, demoted,
        // answers every script with READONLY until the clients' connections drop 1-5 ms after the
        // first one it refused (at most 30 ms after the failover).
        if (restartAtNanos >= 0 && faultDraws.nextBoolean()) {
            failoverLagNanos = Math.min(restartAtNanos, TimeUnit.MICROSECONDS.toNanos(500 + faultDraws.nextInt(29_500)));
            readOnlyNanos = TimeUnit.MICROSECONDS.toNanos(1_000 + faultDraws.nextInt(4_000));
        } else {
            failoverLagNanos = -1;
            readOnlyNanos = 0;
        }
        world.note(kind + " seed " + seed + " faults " + faults + ", watchdog " + watchdog.toMillis() + " ms"
                + (restartAtNanos >= 0 && failoverLagNanos < 0 ? ", Redis restarted empty at " + restartAtNanos / 1000 + " µs" : "")
                + (failoverLagNanos >= 0 ? ", failover at " + restartAtNanos / 1000 + " µs to a replica " + failoverLagNanos / 1000
                        + " µs behind, READONLY until " + readOnlyNanos / 1000 + " µs after the first script refused" : "")
                + (longPauseAtNanos >= 0 ? ", client " + clients.get(longPauseClient).id + "'s process stopped for "
                        + longPauseNanos / 1000 + " µs at " + longPauseAtNanos / 1000 + " µs" : "")
                + (scriptFlushMaxMicros > 0 ? ", script cache flushed every 1 ms to " + scriptFlushMaxMicros / 1000 + " ms" : "")
                + shape + (pauseEveryMaxMicros > 0 ? ", each process paused for 1-10 ms every 2 to " + pauseEveryMaxMicros / 1000 + " ms" : ""));
    }

    /** What every client reports a lost lease to: the trace, and the time of the owner's last report. */
    dev.baton.LeaseLostListener lossListener() {
        return (name, owner, reason) -> {
            world.note("lease lost reported: " + owner + ": " + reason);
            reportedLost.put(owner, world.now());
        };
    }

    /** The actors, made once the clients exist. */
    abstract List<? extends Actor> actors();

    /** How often each user pattern ran in this run (the catalog: dev.baton.testkit.UserPattern). */
    final dev.baton.testkit.UserPattern.Counts patterns = new dev.baton.testkit.UserPattern.Counts();

    /** The patterns of the catalog this kind's actors do: each must run in a CI run of the kind. */
    abstract java.util.Set<dev.baton.testkit.UserPattern> covered();

    /** An operation of this run's kind started that is {@code pattern}. */
    void ran(dev.baton.testkit.UserPattern pattern) {
        patterns.ran(kind, pattern);
    }

    /** Three actors on each client, made by {@code make} from the client and an index 1 to 3. */
    static <A extends Actor> List<A> threeEach(List<SimClient> clients, java.util.function.BiFunction<SimClient, Integer, A> make) {
        List<A> made = new ArrayList<>();
        for (SimClient client : clients) {
            for (int i = 1; i <= 3; i++) {
                made.add(make.apply(client, i));
            }
        }
        return made;
    }

    /** Runs before the actors start (setting a semaphore's permits, say). */
    void setUp() {
    }

    /** Sets a string key on the simulated Redis directly (a synchronizer's starting state). */
    void setKey(String key, long value) {
        world.serve(new String[] {"SET", key, Long.toString(value)});
    }

    /**
     * How long the world runs on, calm, once every actor is idle, before the end is checked: what
     * the last calls dispatched lands, and what a late copy left behind ends with its lease. By
     * default the longest stall and a few background retries.
     */
    Duration settle() {
        return LONGEST_STALL.plusSeconds(5);
    }

    /**
     * Whether {@code a}, still waiting at the end, may wait for ever because what it waits for
     * went with Redis's data (a semaphore's permits: nobody gives them back); never by default.
     */
    boolean mayWaitForever(Actor a) {
        return false;
    }

    /** The checks of the end state; each finding goes to {@link #violation}. */
    abstract void endChecks();

    /** Whether the run stops early: a violation, or what Baton cannot promise (whatever follows it is its consequence). */
    private boolean stopped() {
        return !violations.isEmpty() || !cannotPromise.isEmpty();
    }

    /** Runs the storm, the drain and the end checks; the violations found. */
    List<String> run() {
        setUp();
        for (Actor a : actors()) {
            world.at(world.micros(0, 500), "start", a::next);
        }
        if (scriptFlushMaxMicros > 0) {
            flushLater();
        }
        if (restartAtNanos >= 0 && failoverLagNanos < 0) {
            world.at(restartAtNanos, "restart", this::restartEmpty);
        } else if (restartAtNanos >= 0) {
            world.at(restartAtNanos - failoverLagNanos, "replica's last sync", () -> replica = world.server.redis.snapshot());
            world.at(restartAtNanos, "failover", this::failOverToReplica);
        }
        if (longPauseAtNanos >= 0) {
            SimClient c = clients.get(longPauseClient);
            world.at(longPauseAtNanos, "long process pause", () -> c.clock.pause(longPauseNanos, "client " + c.id + " (long)"));
        }
        if (pauseEveryMaxMicros > 0) {
            for (SimClient c : List.copyOf(clients)) {
                if (c.commands != null && clients.stream().filter(o -> o.clock == c.clock).findFirst().orElse(c) == c) {
                    pauseLater(c); // once per process (a RedLock's clients of one process share its clock)
                }
            }
        }
        world.runUntil(runNanos, () -> stopped());
        stopping = true;
        world.calm = true;
        world.runUntil(world.now() + TimeUnit.SECONDS.toNanos(60),
                () -> stopped() || actors().stream().allMatch(Actor::idle));
        world.runUntil(world.now() + settle().toNanos(), () -> stopped());
        if (!stopped()) {
            for (Actor a : actors()) {
                if (!a.idle() && mayWaitForever(a)) {
                    world.note(a + " still in " + a.doing() + ": what it waits for was lost with Redis's data");
                } else if (!a.idle()) {
                    violation(a + " still in " + a.doing() + " 60 s after the run ended");
                }
            }
        }
        if (!stopped()) {
            endChecks();
        }
        closing = true;
        for (SimClient c : clients) {
            c.close();
        }
        return violations;
    }

    /** The next flush of the script cache, 1 ms to {@link #scriptFlushMaxMicros} from now, while the run lasts. */
    private void flushLater() {
        long delayMicros = 1_000 + (long) (faultDraws.nextDouble() * (scriptFlushMaxMicros - 1_000));
        world.at(java.util.concurrent.TimeUnit.MICROSECONDS.toNanos(delayMicros), "script flush", () -> {
            if (!stopping) {
                world.flushScripts();
                flushLater();
            }
        });
    }

    /**
     * The next pause of {@code c}'s process, 2 ms to {@link #pauseEveryMaxMicros} from now, for 1
     * to 10 ms (shorter than the shortest lease a run asks for, 20 ms), while the run lasts; the
     * one after it is drawn once it has ended.
     */
    private void pauseLater(SimClient c) {
        long delayMicros = 2_000 + (long) (faultDraws.nextDouble() * (pauseEveryMaxMicros - 2_000));
        long forNanos = java.util.concurrent.TimeUnit.MICROSECONDS.toNanos(1_000 + faultDraws.nextInt(9_000));
        world.at(java.util.concurrent.TimeUnit.MICROSECONDS.toNanos(delayMicros), "process pause", () -> {
            if (!stopping) {
                c.clock.pause(forNanos, "client " + c.id);
                world.at(forNanos, "next pause drawn", () -> pauseLater(c));
            }
        });
    }

    void violation(String what) {
        if (closing) {
            return;
        }
        java.util.regex.Matcher owner = OWNER_IN_FINDING.matcher(what);
        while (owner.find()) {
            if (world.lateReleasesBy.contains(owner.group(1))) {
                // What guarantees.md says Baton cannot promise: counted and shown, not judged.
                world.note("CANNOT PROMISE (a late copy of a release or an acquire by " + owner.group(1) + " ran before): " + what);
                cannotPromise.add(what);
                return;
            }
        }
        world.note("VIOLATION " + what);
        violations.add(what);
    }

    private static final java.util.regex.Pattern OWNER_IN_FINDING = java.util.regex.Pattern.compile("owner ([ab]:\\d+)");
    /** Findings that follow a late copy of the owner's release or acquire: what Baton cannot promise. */
    final List<String> cannotPromise = new ArrayList<>();

    /** Whether a loss of {@code owner}'s lease was reported at or after {@code since}. */
    boolean lossReported(String owner, long since) {
        Long at = reportedLost.get(owner);
        return at != null && at >= since;
    }

    static Throwable unwrap(Throwable e) {
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }
}
