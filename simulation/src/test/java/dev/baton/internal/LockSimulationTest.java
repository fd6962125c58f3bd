package dev.baton.internal;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The reentrant lock in the deterministic simulation, seed after seed (see {@link LockSimulation}).
 * {@code -Dbaton.sim.seeds=N} sets how many seeds (from {@code -Dbaton.sim.first}, 1 by default);
 * {@code -Dbaton.sim.seed=S} replays one seed and prints its whole trace.
 */
class LockSimulationTest {

    static final Duration RUN = Duration.ofMillis(Long.getLong("baton.sim.runMs", 200));

    @Test
    void seedsFindNoViolation() {
        Long only = Long.getLong("baton.sim.seed");
        if (only != null) {
            LockSimulation replay = new LockSimulation(only, true, RUN);
            List<String> found = replay.run();
            replay.world.trace().forEach(System.out::println);
            assertEquals(List.of(), found, "seed " + only);
            return;
        }
        long first = Long.getLong("baton.sim.first", 1);
        int seeds = Integer.getInteger("baton.sim.seeds", seedsForThisLane());
        long started = System.nanoTime();
        long grants = 0;
        long operations = 0;
        long steps = 0;
        java.util.Map<String, Integer> survey = new java.util.TreeMap<>();
        for (long seed = first; seed < first + seeds; seed++) {
            LockSimulation sim = new LockSimulation(seed, false, RUN);
            List<String> found = sim.run();
            grants += sim.grants;
            operations += sim.operations;
            steps += sim.world.steps();
            if (!found.isEmpty() && Boolean.getBoolean("baton.sim.survey")) {
                // Survey mode: every seed runs; the first seed of each kind of finding is printed.
                String kind = found.get(0).replaceAll("owner [ab]:\\d+", "owner X").replaceAll("\\d+", "N");
                kind = kind.length() > 90 ? kind.substring(0, 90) : kind;
                if (survey.merge(kind, 1, Integer::sum) == 1) {
                    System.out.println("[sim lock] survey: seed " + seed + " first finds: " + found.get(0));
                }
                continue;
            }
            if (!found.isEmpty()) {
                LockSimulation replay = new LockSimulation(seed, true, RUN);
                replay.run();
                List<String> trace = replay.world.trace();
                System.out.println("[sim lock] seed " + seed + " VIOLATION " + found.get(0));
                System.out.println("[sim lock] the last 80 of " + trace.size() + " trace lines (replay: -Dbaton.sim.seed=" + seed + "):");
                trace.subList(Math.max(0, trace.size() - 80), trace.size()).forEach(l -> System.out.println("  " + l));
                fail("seed " + seed + ": " + found.get(0) + " (replay with -Dbaton.sim.seed=" + seed + ")");
            }
        }
        survey.forEach((kind, n) -> System.out.println("[sim lock] survey: " + n + " seeds: " + kind));
        assertEquals(java.util.Map.of(), survey, "the survey's findings");
        System.out.printf("[sim lock] %d seeds (%d to %d), %d ms of virtual time each: %d operations, %d grants, %d events,"
                        + " no violation, in %d ms%n", seeds, first, first + seeds - 1, RUN.toMillis(), operations, grants, steps,
                (System.nanoTime() - started) / 1_000_000);
    }

    /**
     * The CI profile: 10,000 seeds. The simulated Redis is the same whatever server a CI lane
     * runs, so a lane with another server (-Dbaton.redis.binary) runs 500 and says so.
     */
    static int seedsForThisLane() {
        String server = System.getProperty("baton.redis.binary", "");
        if (server.isBlank()) {
            return 10_000;
        }
        System.out.println("[sim] 500 seeds in this lane (-Dbaton.redis.binary=" + server + "): the simulation does not use"
                + " that server; the lane without it runs 10,000");
        return 500;
    }

    @Test
    void aSeedReplaysByteForByte() {
        for (long seed : new long[] {3, 4}) {
            LockSimulation one = new LockSimulation(seed, true, RUN);
            one.run();
            LockSimulation two = new LockSimulation(seed, true, RUN);
            two.run();
            assertTrue(one.world.trace().size() > 100, "a trace worth comparing: " + one.world.trace().size() + " lines");
            assertEquals(String.join("\n", one.world.trace()), String.join("\n", two.world.trace()), "seed " + seed);
        }
    }
}
