package dev.baton.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Every synchronizer in the deterministic simulation, seed after seed (see {@link LockSimulation},
 * {@link SemaphoreSimulation}, {@link ExpirableSemaphoreSimulation}, {@link LatchSimulation},
 * {@link MultiLockSimulation}, {@link RedLockSimulation}).
 *
 * <ul>
 *   <li>{@code -Dbaton.sim.seeds=N}: seeds per kind (from {@code -Dbaton.sim.first}, 1 by default);
 *       the CI profile is {@link #seedsForThisLane()};</li>
 *   <li>{@code -Dbaton.sim.kinds=lock,fairLock}: only these kinds;</li>
 *   <li>{@code -Dbaton.sim.seed=S}: replays one seed of each kind run and prints its whole trace;</li>
 *   <li>{@code -Dbaton.sim.survey=true}: runs every seed and prints the first seed of each kind of finding.</li>
 * </ul>
 */
class SimulationTest {

    static final Duration RUN = Duration.ofMillis(Long.getLong("baton.sim.runMs", 200));

    /** Every kind simulated. */
    static final List<String> KINDS = List.of("lock", "fairLock", "fencedLock", "readWriteLock", "semaphore",
            "expirableSemaphore", "latch", "multiLock", "redLock", "rateLimiter", "leaderElection");

    static List<String> kinds() {
        return KINDS;
    }

    static Simulation simulation(String kind, long seed, boolean trace) {
        return switch (kind) {
            case "semaphore" -> new SemaphoreSimulation(seed, trace, RUN);
            case "expirableSemaphore" -> new ExpirableSemaphoreSimulation(seed, trace, RUN);
            case "latch" -> new LatchSimulation(seed, trace, RUN);
            case "multiLock" -> new MultiLockSimulation(seed, trace, RUN);
            case "redLock" -> new RedLockSimulation(seed, trace, RUN);
            case "rateLimiter" -> new RateLimiterSimulation(seed, trace, RUN);
            case "leaderElection" -> new ElectionSimulation(seed, trace, RUN);
            default -> new LockSimulation(kind, seed, trace, RUN);
        };
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("kinds")
    void seedsFindNoViolation(String kind) {
        String only = System.getProperty("baton.sim.kinds", "");
        if (!only.isBlank() && !List.of(only.split(",")).contains(kind)) {
            System.out.println("[sim " + kind + "] NOT RUN: -Dbaton.sim.kinds=" + only);
            org.junit.jupiter.api.Assumptions.abort("NOT RUN: -Dbaton.sim.kinds=" + only);
        }
        Long replay = Long.getLong("baton.sim.seed");
        if (replay != null) {
            Simulation sim = simulation(kind, replay, true);
            List<String> found = sim.run();
            sim.world.trace().forEach(System.out::println);
            assertEquals(List.of(), found, kind + " seed " + replay);
            return;
        }
        long first = Long.getLong("baton.sim.first", 1);
        int seeds = Integer.getInteger("baton.sim.seeds", seedsForThisLane());
        if (seeds == 0) {
            // Reported as skipped, never as passed: the lane said why (seedsForThisLane).
            System.out.println("[sim " + kind + "] NOT RUN: no seeds in this lane");
            org.junit.jupiter.api.Assumptions.abort("NOT RUN: no seeds in this lane (see [sim] above)");
        }
        boolean survey = Boolean.getBoolean("baton.sim.survey");
        long started = System.nanoTime();
        long grants = 0;
        long operations = 0;
        long handed = 0;
        long quiet = 0;
        long passed = 0;
        long steps = 0;
        dev.baton.testkit.UserPattern.Counts patterns = new dev.baton.testkit.UserPattern.Counts();
        java.util.Set<dev.baton.testkit.UserPattern> covered = java.util.Set.of();
        long flushedSeeds = 0;
        long driftSeeds = 0;
        long pauseSeeds = 0;
        long restartSeeds = 0;
        long longPauseSeeds = 0;
        long failoverSeeds = 0;
        long readOnlyRefusals = 0;
        long refusedFailovers = 0;
        long grantsAfterLongPause = 0;
        long pausedMicros = 0;
        long noScripts = 0;
        Map<String, Integer> findings = new TreeMap<>();
        long cannotPromise = 0;
        for (long seed = first; seed < first + seeds; seed++) {
            Simulation sim = simulation(kind, seed, false);
            List<String> found = sim.run();
            grants += sim.grants;
            operations += sim.operations;
            handed += sim.handedInClient;
            quiet += sim.quietParks;
            passed += sim.passedOn;
            steps += sim.world.steps();
            patterns.addAll(sim.patterns);
            covered = sim.covered();
            flushedSeeds += sim.scriptFlushMaxMicros > 0 ? 1 : 0;
            driftSeeds += sim.clients.stream().anyMatch(c -> c.clock.drifts()) ? 1 : 0;
            pauseSeeds += sim.pauseEveryMaxMicros > 0 ? 1 : 0;
            restartSeeds += sim.restartedAt >= 0 && sim.failoverLagNanos < 0 ? 1 : 0;
            failoverSeeds += sim.restartedAt >= 0 && sim.failoverLagNanos >= 0 ? 1 : 0;
            readOnlyRefusals += sim.world.server.redis.readOnlyRefusals();
            refusedFailovers += sim.world.server.redis.readOnlyRefusals() > 0 ? 1 : 0;
            longPauseSeeds += sim.longPauseAtNanos >= 0 ? 1 : 0;
            grantsAfterLongPause += sim.grantsAfterLongPause;
            pausedMicros += sim.clients.stream().mapToLong(c -> c.clock.pausedBetween(0, Long.MAX_VALUE)).sum() / 1000;
            noScripts += sim.world.noScripts();
            if (!sim.cannotPromise.isEmpty() && cannotPromise++ < 3) {
                System.out.println("[sim " + kind + "] seed " + seed + " met what Baton cannot promise (a late copy of a"
                        + " release or an acquire; replay with -Dbaton.sim.kinds=" + kind + " -Dbaton.sim.seed=" + seed + "): "
                        + sim.cannotPromise.get(0));
            }
            if (found.isEmpty()) {
                continue;
            }
            if (survey) {
                String shape = found.get(0).replaceAll("\\b[0-9a-f]{32}\\b", "ID").replaceAll("owner [ab]:\\d+", "owner X").replaceAll("\\d+", "N");
                shape = shape.length() > 90 ? shape.substring(0, 90) : shape;
                if (findings.merge(shape, 1, Integer::sum) == 1) {
                    System.out.println("[sim " + kind + "] survey: seed " + seed + " first finds: " + found.get(0));
                }
                continue;
            }
            Simulation again = simulation(kind, seed, true);
            again.run();
            List<String> trace = again.world.trace();
            System.out.println("[sim " + kind + "] seed " + seed + " VIOLATION " + found.get(0));
            System.out.println("[sim " + kind + "] the last 80 of " + trace.size() + " trace lines (replay: -Dbaton.sim.kinds="
                    + kind + " -Dbaton.sim.seed=" + seed + "):");
            trace.subList(Math.max(0, trace.size() - 80), trace.size()).forEach(l -> System.out.println("  " + l));
            fail(kind + " seed " + seed + ": " + found.get(0) + " (replay with -Dbaton.sim.kinds=" + kind
                    + " -Dbaton.sim.seed=" + seed + ")");
        }
        findings.forEach((shape, n) -> System.out.println("[sim " + kind + "] survey: " + n + " seeds: " + shape));
        // The excuse for a late copy stops a seed's run unjudged: capped, so that a change that
        // makes late copies common cannot hide behind it (issue 46).
        assertTrue(cannotPromise <= lateCopyCap(seeds), kind + ": " + cannotPromise + " of " + seeds + " seeds met a late"
                + " copy and went unjudged, more than the cap of " + lateCopyCap(seeds) + " (" + LATE_COPY_SHARE_PERCENT
                + " %); the first are printed above");
        assertEquals(Map.of(), findings, kind + ": the survey's findings");
        System.out.println("[sim " + kind + "] user patterns (dev.baton.testkit.UserPattern): " + patterns.line(kind, covered));
        if (seeds >= 50) {
            // A pattern the kind's actors do that never ran checked nothing (issue 46).
            assertEquals(List.of(), patterns.missing(kind, covered), kind + ": user patterns that never ran in " + seeds + " seeds");
        }
        if (seeds >= 100 && (LockSimulation.KINDS.contains(kind) || kind.equals("multiLock"))) {
            assertTrue(longPauseSeeds > 0, kind + ": no seed of " + seeds + " stopped a client process past its leases");
        }
        if (seeds >= 100 && (LockSimulation.KINDS.contains(kind) || List.of("semaphore", "expirableSemaphore", "latch").contains(kind))) {
            assertTrue(restartSeeds > 0, kind + ": no seed of " + seeds + " restarted Redis empty");
            assertTrue(failoverSeeds > 0, kind + ": no seed of " + seeds + " failed over to a replica behind the master");
            assertTrue(readOnlyRefusals > 0, kind + ": no script met READONLY in " + failoverSeeds + " failovers");
        }
        if (pauseSeeds >= 10) {
            assertTrue(pausedMicros > 0, kind + ": " + pauseSeeds + " seeds drew process pauses, and no process paused");
        }
        if (flushedSeeds >= 10) {
            // A fault that never bit checked nothing: flushes must have made clients re-send as EVAL.
            assertTrue(noScripts > flushedSeeds, kind + ": only " + noScripts + " NOSCRIPT replies in " + flushedSeeds
                    + " seeds that flushed the script cache");
        }
        if (kind.equals("semaphore")) {
            // The in-client hand-off is a state of its own: a run that never reached it checked nothing of it.
            assertTrue(handed > 0, "no semaphore grant was handed over in the client in " + seeds + " seeds");
            assertTrue(quiet > 0, "no semaphore wait parked on a quiet channel in " + seeds + " seeds");
            assertTrue(passed > 0, "no semaphore wait passed a wake-up on in " + seeds + " seeds");
        }
        System.out.printf("[sim %s] %d seeds (%d to %d), %d ms of virtual time each: %d operations, %d grants%s, %d events,"
                        + " %d seeds flushed the script cache (%d NOSCRIPT replies), %d drifted the clients' clocks, %d paused their processes"
                        + " (%d ms paused in all), %d restarted Redis empty, %d failed over to a replica behind (%d scripts refused"
                        + " with READONLY, in %d of them), %d stopped a process past its leases"
                        + " (%d grants reached their callers after Redis had let them go),"
                        + " no violation (%d seeds met a late copy of a release or an acquire, which Baton cannot promise), in %d ms%n",
                kind, seeds, first, first + seeds - 1, RUN.toMillis(), operations, grants,
                kind.equals("semaphore") ? " (" + handed + " handed over in the client; " + quiet + " waits parked on a quiet"
                        + " channel after one attempt; " + passed + " wake-ups passed on)" : "", steps, flushedSeeds, noScripts, driftSeeds, pauseSeeds,
                pausedMicros / 1000, restartSeeds, failoverSeeds, readOnlyRefusals, refusedFailovers, longPauseSeeds, grantsAfterLongPause,
                cannotPromise,
                (System.nanoTime() - started) / 1_000_000);
    }

    /** The share of seeds a kind may stop unjudged for a late copy (what Baton cannot promise), in percent. */
    static final int LATE_COPY_SHARE_PERCENT = 1;

    /** How many of {@code seeds} may meet a late copy: 1 % of them, at least one. */
    static long lateCopyCap(long seeds) {
        return Math.max(1, seeds * LATE_COPY_SHARE_PERCENT / 100);
    }

    /**
     * The CI profile: 1,000 seeds of each of the nine kinds (9,000 in all). The simulated Redis
     * is the same whatever server a CI lane runs, so a lane with another server
     * (-Dbaton.redis.binary) runs 100 of each and says so; the embedded lane runs none, since with
     * the same Lettuce as the lane on the Redis from PATH its 100 would repeat that lane's first
     * 100 event for event (the Valkey lane's other Lettuce encodes and decodes differently).
     */
    static int seedsForThisLane() {
        String server = System.getProperty("baton.redis.binary", "");
        if (server.isBlank()) {
            return 1_000;
        }
        if (server.equals("embedded")) {
            System.out.println("[sim] no seeds in this lane (-Dbaton.redis.binary=embedded): the simulation does not use"
                    + " that server, and with this lane's Lettuce its seeds are the lane on the Redis from PATH's, event"
                    + " for event");
            return 0;
        }
        System.out.println("[sim] 100 seeds of each kind in this lane (-Dbaton.redis.binary=" + server + "): the simulation"
                + " does not use that server; the lane without it runs 1,000 of each");
        return 100;
    }

    /**
     * The judge sees a clock that drifts beyond the allowance (issue 46): with every client's
     * clock running at half Redis's rate, lease-scoped work believes its lease valid for twice as
     * long as Redis keeps it, and some seed of the short-watchdog runs (leases of 120 ms, stalls
     * of up to 300 ms) must find another owner granted while that scope still claims validity.
     */
    @Test
    void aClockDriftBeyondTheAllowanceIsCaught() {
        Simulation.SLOW_CLOCKS = 0.5;
        try {
            int caught = 0;
            long seed = 1;
            String first = null;
            for (; seed <= 400 && caught == 0; seed++) {
                Simulation sim = simulation("lock", seed, false);
                for (String v : sim.run()) {
                    if (v.contains("scoped work still had")) {
                        caught++;
                        first = v;
                    }
                }
            }
            System.out.println("[sim lock] clocks at half speed: " + (caught > 0 ? "caught at seed " + (seed - 1) + ": " + first
                    : "not caught in 400 seeds"));
            assertTrue(caught > 0, "a drift beyond the allowance went unseen in 400 lock seeds");
        } finally {
            Simulation.SLOW_CLOCKS = null;
        }
    }

    @Test
    void aSeedReplaysByteForByte() {
        for (String kind : KINDS) {
            for (long seed : new long[] {1, 2}) {
                Simulation one = simulation(kind, seed, true);
                one.run();
                Simulation two = simulation(kind, seed, true);
                two.run();
                assertTrue(one.world.trace().size() > 100, "a trace worth comparing: " + one.world.trace().size() + " lines");
                assertEquals(String.join("\n", one.world.trace()), String.join("\n", two.world.trace()), kind + " seed " + seed);
            }
        }
    }

    /**
     * Seeds that long runs found (the 200,000-seed runs of issue 46), each a defect fixed or a
     * judge taught, replayed in every lane: "kind seed", with what it found.
     */
    static final List<String> FOUND = List.of(
            // A waiter rung by a release whose attempt then failed (Redis stalled past the command
            // timeout) took the ring with it: the next local waiter slept 3 s on a free lock.
            "lock 449108",
            // A late copy of a forceUnlock (sent at 6 ms, run at 262 ms) ended a later hold: a force
            // the judge had closed at the call's reply.
            "lock 470101",
            // A call started from the callback of a given-up one had its bound set before the judge
            // knew of the give-up (its documented extra command timeout): a judge's mistake.
            "lock 540162",
            // A token Redis issued before a higher one, heard after a failover to a replica that kept
            // its hold and lost the higher one's: the judge compared in the order heard.
            "fencedLock 572038");

    @Test
    void seedsLongRunsFoundStayClean() {
        for (String found : FOUND) {
            String[] kindAndSeed = found.split(" ");
            Simulation sim = simulation(kindAndSeed[0], Long.parseLong(kindAndSeed[1]), false);
            assertEquals(List.of(), sim.run(), found + " (replay with -Dbaton.sim.kinds=" + kindAndSeed[0]
                    + " -Dbaton.sim.seed=" + kindAndSeed[1] + ")");
        }
        System.out.println("[sim] " + FOUND.size() + " seeds found by long runs replayed clean: " + FOUND);
    }
}
