package dev.baton.jmh.report;

import dev.baton.jmh.Impl;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verdicts in docs/benchmarks.md come from {@link ReportTable}: a goal is "met" only when the
 * run's own numbers meet it, and a scenario that did not run says so instead of passing.
 */
// Needs no Redis: tagged so `mvn test -Dgroups=no-redis` runs it (and its like) in seconds.
@Tag("no-redis")
class ReportTableTest {
    private static final String DISTINCT = "LockBenchmark.distinctLocks8Threads";
    private static final String CONTENDED = "ContendedLockBenchmark.lockUnlock";
    private static final String QUEUE = "FairQueueBenchmark.takeTurn";

    @Test
    void throughputGoalIsMetOnlyAtOrAboveItsRatio() {
        ReportTable met = new ReportTable();
        met.put(ReportTable.key(DISTINCT, "thrpt", Impl.BATON, "", "score"), 1300);
        met.put(ReportTable.key(DISTINCT, "thrpt", Impl.REDISSON, "", "score"), 1000);
        assertEquals("met", row(met, "8 threads, each on its own lock").verdict());
        assertEquals("1.30×", row(met, "8 threads, each on its own lock").ratio());

        ReportTable missed = new ReportTable();
        missed.put(ReportTable.key(DISTINCT, "thrpt", Impl.BATON, "", "score"), 1290);
        missed.put(ReportTable.key(DISTINCT, "thrpt", Impl.REDISSON, "", "score"), 1000);
        assertEquals("missed", row(missed, "8 threads, each on its own lock").verdict());
    }

    @Test
    void latencyGoalJudgesItsPercentileAndIsAnUpperBound() {
        ReportTable table = new ReportTable();
        table.put(ReportTable.key(CONTENDED, "sample", Impl.BATON, "kind=reentrant", "p99"), 10.0);
        table.put(ReportTable.key(CONTENDED, "sample", Impl.REDISSON, "kind=reentrant", "p99"), 39.0);
        table.put(ReportTable.key(CONTENDED, "sample", Impl.BATON, "kind=reentrant", "p50"), 1.0);
        table.put(ReportTable.key(CONTENDED, "sample", Impl.REDISSON, "kind=reentrant", "p50"), 4.0);
        assertEquals("missed", row(table, "contended lock, lock+unlock time (ms), p99").verdict(), "10/39 is above 0.25");
        assertEquals("", row(table, "contended lock, lock+unlock time (ms), p50").verdict(), "p50 carries no goal");

        table.put(ReportTable.key(CONTENDED, "sample", Impl.REDISSON, "kind=reentrant", "p99"), 40.0);
        assertEquals("met", row(table, "contended lock, lock+unlock time (ms), p99").verdict());
    }

    @Test
    void aScenarioThatDidNotRunIsNeverMet() {
        ReportTable empty = new ReportTable();
        for (ReportTable.Row r : empty.rows()) {
            assertTrue(r.verdict().isEmpty() || r.verdict().equals("not run"), r.toString());
        }
        ReportTable half = new ReportTable();
        half.put(ReportTable.key(DISTINCT, "thrpt", Impl.BATON, "", "score"), 5000);
        assertEquals("not run", row(half, "8 threads, each on its own lock").verdict());
        assertEquals("not run", row(half, "8 threads, each on its own lock").redisson());
    }

    @Test
    void queueCostIsOneWaitersRateOverAThousandWaitersRate() {
        ReportTable table = new ReportTable();
        table.put(ReportTable.key(QUEUE, "thrpt", Impl.BATON, "queued=1", "grants"), 1000);
        table.put(ReportTable.key(QUEUE, "thrpt", Impl.BATON, "queued=1000", "grants"), 800);
        table.put(ReportTable.key(QUEUE, "thrpt", Impl.REDISSON, "queued=1", "grants"), 1000);
        table.put(ReportTable.key(QUEUE, "thrpt", Impl.REDISSON, "queued=1000", "grants"), 10);
        ReportTable.Row cost = row(table, "… cost of a hand-off with 1,000 queued");
        assertEquals("missed", cost.verdict(), "1,000 waiters at 1.25x the cost of one");
        assertEquals("100×", cost.redisson());

        table.put(ReportTable.key(QUEUE, "thrpt", Impl.BATON, "queued=1000", "grants"), 900);
        assertEquals("met", row(table, "… cost of a hand-off with 1,000 queued").verdict());
    }

    @Test
    void countedGoalsAreJudgedOnBatonsCount() {
        ReportTable table = new ReportTable();
        table.put(ReportTable.key("ScaleReport", "count", Impl.BATON, "", "pubSubConnections"), 3);
        table.put(ReportTable.key("ScaleReport", "count", Impl.REDISSON, "", "pubSubConnections"), 1);
        assertEquals("missed", row(table, "1,000 threads waiting on 100 locks: pub/sub connections").verdict());
        table.put(ReportTable.key("ScaleReport", "count", Impl.BATON, "", "pubSubConnections"), 1);
        assertEquals("met", row(table, "1,000 threads waiting on 100 locks: pub/sub connections").verdict());
    }

    @Test
    void everyScenarioOfTheIssueHasARow() {
        String markdown = new ReportTable().markdown();
        for (String scenario : List.of("floor: Lettuce PING", "floor: Lettuce EVALSHA", "uncontended lock()+unlock(), watchdog",
                "uncontended lock(lease)+unlock()", "8 threads, each on its own lock", "contended lock, 2 clients × 4 threads",
                "contended fair lock, 2 clients × 4 threads", "hand-off gap", "1 queued waiter", "1000 queued waiters",
                "read lock, 8 threads", "semaphore, 4 permits × 8 threads", "latch wake-up",
                "renewing 10,000 held watchdog locks", "keys left in Redis", "1,000 threads waiting on 100 locks")) {
            assertTrue(markdown.contains(scenario), "no row for " + scenario);
        }
    }

    private static ReportTable.Row row(ReportTable table, String scenarioPrefix) {
        return table.rows().stream().filter(r -> r.scenario().startsWith(scenarioPrefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no row starting with " + scenarioPrefix));
    }

    @Test
    void theUncontendedGoalIsJudgedOnTheMedianOfItsRuns() {
        ReportTable table = new ReportTable();
        double[] fractions = {0.90, 0.99, 0.96};
        for (int run = 1; run <= fractions.length; run++) {
            table.put(ReportTable.key("Repeat", "thrpt", Impl.BATON, "run=" + run, "fraction"), fractions[run - 1]);
        }
        ReportTable.Row median = table.rows().stream().filter(r -> r.scenario().contains("median of the 3 runs"))
                .findFirst().orElseThrow();
        assertEquals("96 %", median.baton());
        assertEquals("met", median.verdict());
        table.put(ReportTable.key("Repeat", "thrpt", Impl.BATON, "run=3", "fraction"), 0.94);
        assertEquals("missed", table.rows().stream().filter(r -> r.scenario().contains("median of the 3 runs"))
                .findFirst().orElseThrow().verdict(), "median 0.94");
    }
}
