package dev.baton.jmh.report;

import dev.baton.jmh.Impl;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.TreeMap;

/*
 * Turns one run's numbers into the table of docs/benchmarks.md: every scenario with Baton's
 * figure, Redisson's, their ratio and the goal's verdict, computed here rather than by hand so
 * that a table can never claim a goal its own numbers do not meet.
 *
 * The numbers arrive as a flat map from key() to value, filled from JMH's RunResults and the
 * counted scenarios by BenchmarkReport; a scenario that did not run (left out with --only, or
 * failed) shows as "not run" instead of failing the report.
 */
final class ReportTable {
    /** How a ratio is judged against its goal. */
    enum Direction {
        AT_LEAST("≥"), AT_MOST("≤");

        final String sign;

        Direction(String sign) {
            this.sign = sign;
        }

        boolean meets(double value, double goal) {
            return this == AT_LEAST ? value >= goal : value <= goal;
        }
    }

    /** One table row. */
    record Row(String scenario, String baton, String redisson, String ratio, String goal, String verdict) {
    }

    private final Map<String, Double> values = new TreeMap<>();

    /**
     * The key of one figure: a benchmark method ({@code Class.method}), its JMH mode
     * ({@code thrpt}, {@code sample}, or {@code count} for counted scenarios), the
     * implementation, the other parameters as {@code name=value} in name order, and the metric
     * ({@code score}, {@code error}, {@code p50}, {@code p99}, a secondary result's name ...).
     */
    static String key(String benchmark, String mode, Impl impl, String params, String metric) {
        return benchmark + "/" + mode + "/" + (impl == null ? "-" : impl.name()) + "/" + params + "/" + metric;
    }

    void put(String key, double value) {
        values.put(key, value);
    }

    OptionalDouble get(String benchmark, String mode, Impl impl, String params, String metric) {
        Double v = values.get(key(benchmark, mode, impl, params, metric));
        return v == null || v.isNaN() ? OptionalDouble.empty() : OptionalDouble.of(v);
    }

    /** Every row, in the order of the scenario list. */
    List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        String floor = "FloorBenchmark.";
        OptionalDouble ping = get(floor + "ping", "thrpt", null, "", "score");
        OptionalDouble evalsha = get(floor + "evalsha", "thrpt", null, "", "score");
        rows.add(new Row("floor: Lettuce PING (ops/s)", fmt(ping), "", "", "", ""));
        rows.add(new Row("floor: Lettuce EVALSHA of `return 1` (ops/s)", fmt(evalsha), "", "", "", ""));

        wakeFloor(rows);

        String lock = "LockBenchmark.";
        OptionalDouble pairFloor = evalsha.isPresent() ? OptionalDouble.of(evalsha.getAsDouble() / 2) : OptionalDouble.empty();
        throughput(rows, "uncontended lock()+unlock(), watchdog (ops/s)", lock + "uncontendedWatchdog", "",
                Direction.AT_LEAST, 1.3);
        OptionalDouble watchdog = get(lock + "uncontendedWatchdog", "thrpt", Impl.BATON, "", "score");
        OptionalDouble redissonWatchdog = get(lock + "uncontendedWatchdog", "thrpt", Impl.REDISSON, "", "score");
        rows.add(goalRow("… the same, as a fraction of the floor (two EVALSHA round trips)", pct(ratio(watchdog, pairFloor)),
                pct(ratio(redissonWatchdog, pairFloor)), "", ratio(watchdog, pairFloor), null, 0, null));
        OptionalDouble batonMedian = medianFraction(Impl.BATON);
        rows.add(goalRow("… the same fraction, median of the " + repeats() + " runs (each measuring its own floor)",
                pct(batonMedian), pct(medianFraction(Impl.REDISSON)), "", batonMedian, Direction.AT_LEAST, 0.95,
                "Baton ≥ 95 %, median of 3"));
        rows.add(countRow("… the same fraction in the steady state: " + String.format("%,d", 20_000)
                + " pairs after as many unmeasured, median of 3 rounds, each beside its own floor round (%)", "ScaleReport",
                "steady.fraction", null, 0));
        rows.add(countRow("… wall time per pair in those rounds (µs)", "ScaleReport", "steady.wall", null, 0));
        rows.add(countRow("… the floor's wall time per pair in those rounds (µs)", "ScaleReport", "steady.floorWall", null, 0));
        rows.add(countRow("… redis-server CPU per pair (µs; `INFO cpu`, user + system)", "ScaleReport", "steady.redis",
                null, 0));
        rows.add(countRow("… redis-server CPU per floor pair (µs)", "ScaleReport", "steady.floorRedis", null, 0));
        rows.add(countRow("… the client JVM's CPU per pair (µs)", "ScaleReport", "steady.client", null, 0));
        rows.add(countRow("… the client JVM's CPU per floor pair (µs)", "ScaleReport", "steady.floorClient", null, 0));
        throughput(rows, "uncontended lock(lease)+unlock() (ops/s)", lock + "uncontendedLease", "", null, 0);
        throughput(rows, "8 threads, each on its own lock (ops/s)", lock + "distinctLocks8Threads", "",
                Direction.AT_LEAST, 1.3);

        String contended = "ContendedLockBenchmark.lockUnlock";
        throughput(rows, "contended lock, 2 clients × 4 threads (acquisitions/ms)", contended, "kind=reentrant",
                Direction.AT_LEAST, 2.5);
        OptionalDouble contendedBaton = get(contended, "thrpt", Impl.BATON, "kind=reentrant", "score");
        OptionalDouble contendedRedisson = get(contended, "thrpt", Impl.REDISSON, "kind=reentrant", "score");
        OptionalDouble floorPerMs = pairFloor.isPresent() ? OptionalDouble.of(pairFloor.getAsDouble() / 1000) : OptionalDouble.empty();
        rows.add(goalRow("… as a fraction of the uncontended floor (two EVALSHA round trips per acquisition)",
                pct(ratio(contendedBaton, floorPerMs)), pct(ratio(contendedRedisson, floorPerMs)), "",
                ratio(contendedBaton, floorPerMs), Direction.AT_LEAST, 0.85, "Baton ≥ 85 %"));
        latency(rows, "contended lock, lock+unlock time (ms)", contended, "kind=reentrant", "p99", Direction.AT_MOST, 0.25);
        retakes(rows, "contended lock: acquisitions that went straight back to the thread that had just released", contended,
                "kind=reentrant");
        throughput(rows, "contended fair lock, 2 clients × 4 threads (acquisitions/ms)", contended, "kind=fair",
                Direction.AT_LEAST, 3.0);
        latency(rows, "contended fair lock, lock+unlock time (ms)", contended, "kind=fair", null, null, 0);
        retakes(rows, "contended fair lock: acquisitions that went straight back to the thread that had just released",
                contended, "kind=fair");
        latency(rows, "fair lock hand-off gap: unlock() → the queued waiter holds it (ms)",
                "FairHandOffBenchmark.releaseToNextHolder", "", null, null, 0);
        aboveWakeFloor(rows, "… p50 above the wake floor (what the library adds, ms)", "FairHandOffBenchmark.releaseToNextHolder",
                Direction.AT_MOST, 0.2);

        String queue = "FairQueueBenchmark.takeTurn";
        for (String queued : List.of("1", "1000")) {
            String p = "queued=" + queued;
            OptionalDouble b = get(queue, "thrpt", Impl.BATON, p, "grants");
            OptionalDouble r = get(queue, "thrpt", Impl.REDISSON, p, "grants");
            rows.add(new Row("fair lock, " + queued + " queued waiter" + ("1".equals(queued) ? "" : "s")
                    + ": hand-offs/s (timeouts/s)", fmt(b) + waits(queue, Impl.BATON, p), fmt(r) + waits(queue, Impl.REDISSON, p),
                    times(ratio(b, r)), "", ""));
        }
        OptionalDouble batonCost = ratio(get(queue, "thrpt", Impl.BATON, "queued=1", "grants"),
                get(queue, "thrpt", Impl.BATON, "queued=1000", "grants"));
        OptionalDouble redissonCost = ratio(get(queue, "thrpt", Impl.REDISSON, "queued=1", "grants"),
                get(queue, "thrpt", Impl.REDISSON, "queued=1000", "grants"));
        rows.add(goalRow("… cost of a hand-off with 1,000 queued ÷ with 1 queued", times(batonCost), times(redissonCost), "",
                batonCost, Direction.AT_MOST, 1.2, "Baton ≤ 1.2×"));

        String shared = "SharedBenchmark.";
        throughput(rows, "read lock, 8 threads of one client (ops/s)", shared + "readLock8Threads", "", null, 0);
        throughput(rows, "semaphore, 4 permits × 8 threads (ops/s)", shared + "semaphore4Permits8Threads", "",
                Direction.AT_LEAST, 2.0);
        throughput(rows, "semaphore, 4 permits × 2 clients × 8 threads (ops/s)",
                "SemaphoreTwoClientsBenchmark.semaphore4Permits2Clients8Threads", "", Direction.AT_LEAST, 1.5);
        OptionalDouble semB = get("ScaleReport", "count", Impl.BATON, "", "semaphore.commands");
        OptionalDouble semR = get("ScaleReport", "count", Impl.REDISSON, "", "semaphore.commands");
        rows.add(goalRow("… Redis commands per acquire+release (scripts and what they run, counted by the server)",
                fmt(semB), fmt(semR), times(ratio(semB, semR)), ratio(semB, semR), Direction.AT_MOST, 1.0, null));
        throughput(rows, "semaphore, 4 permits × 8 threads, each permit held 200 µs (ops/s)",
                shared + "semaphore4Permits8ThreadsHeld200us", "", null, 0);
        OptionalDouble heldB = get("ScaleReport", "count", Impl.BATON, "", "semaphoreHeld.commands");
        OptionalDouble heldR = get("ScaleReport", "count", Impl.REDISSON, "", "semaphoreHeld.commands");
        rows.add(goalRow("… Redis commands per acquire+release, each permit held 200 µs", fmt(heldB), fmt(heldR),
                times(ratio(heldB, heldR)), ratio(heldB, heldR), null, 0, null));
        latency(rows, "latch wake-up: countDown() to zero → the waiter's await() returns (ms)",
                "LatchWakeUpBenchmark.countDownToWaiterReturn", "", "p99", Direction.AT_MOST, 1.0);
        aboveWakeFloor(rows, "… p50 above the wake floor (what the library adds, ms)", "LatchWakeUpBenchmark.countDownToWaiterReturn",
                null, 0);

        String counts = "ScaleReport";
        rows.add(countRow("renewing 10,000 held watchdog locks: script calls/s", counts, "renewalScripts", null, 0));
        rows.add(countRow("renewing 10,000 held watchdog locks: PEXPIRE/s", counts, "renewalPexpire", null, 0));
        rows.add(countRow("commands per uncontended lock+unlock: scripts", counts, "pairScripts", null, 0));
        rows.add(countRow("commands per uncontended lock+unlock: DEL (inside scripts or not)", counts, "pairDel", null, 0));
        rows.add(countRow("commands per uncontended lock+unlock: SET", counts, "pairSet", null, 0));
        rows.add(countRow("keys left in Redis right after 1,000 lock+unlock pairs", counts, "keysLeft", Direction.AT_MOST, 0));
        rows.add(countRow("1,000 threads waiting on 100 locks: pub/sub connections", counts, "pubSubConnections",
                Direction.AT_MOST, 2));
        rows.add(countRow("1,000 threads waiting on 100 locks: waits that failed", counts, "waitersFailed",
                Direction.AT_MOST, 0));
        OptionalDouble pairB = get(counts, "count", Impl.BATON, "", "pairCommands");
        rows.add(countRow("commands per uncontended lock+unlock: all (scripts and what they run)", counts, "pairCommands",
                null, 0));
        for (String kind : List.of("lock", "fair")) {
            String p = "wide-" + kind + "-4x64.";
            String label = kind.equals("fair") ? "contended fair lock" : "contended lock";
            OptionalDouble b = get(counts, "count", Impl.BATON, "", p + "perSecond");
            OptionalDouble r = get(counts, "count", Impl.REDISSON, "", p + "perSecond");
            rows.add(goalRow(label + ", 4 clients × 64 threads (acquisitions/s; waits that failed)",
                    fmt(b) + failedNote(p, Impl.BATON), fmt(r) + failedNote(p, Impl.REDISSON), times(ratio(b, r)), ratio(b, r),
                    Direction.AT_LEAST, 3.0, null));
            OptionalDouble pb = get(counts, "count", Impl.BATON, "", p + "p99");
            OptionalDouble pr = get(counts, "count", Impl.REDISSON, "", p + "p99");
            rows.add(new Row("… lock+unlock time (ms), p99", fmt(pb), fmt(pr), times(ratio(pb, pr)), "", ""));
            OptionalDouble cb = get(counts, "count", Impl.BATON, "", p + "commands");
            OptionalDouble cr = get(counts, "count", Impl.REDISSON, "", p + "commands");
            rows.add(goalRow("… Redis commands per acquisition (÷ an uncontended pair's: Baton " + fmt(ratio(cb, pairB)) + "×)",
                    fmt(cb), fmt(cr), times(ratio(cb, cr)), ratio(cb, pairB),
                    kind.equals("lock") ? Direction.AT_MOST : null, 1.5, "Baton ≤ 1.5× its pair's"));
            rows.add(countRow("… channel subscriptions per client, most seen at once", counts, p + "subscriptions",
                    kind.equals("lock") ? Direction.AT_MOST : null, 1));
        }
        for (String shape : List.of("2x4", "4x64")) {
            for (String kind : List.of("lock", "fair")) {
                String p = "wide-" + kind + "-" + shape + ".";
                int clients = Integer.parseInt(shape.substring(0, 1));
                String label = (kind.equals("fair") ? "contended fair lock, " : "contended lock, ") + shape.replace("x", " clients × ")
                        + " threads: fairness between clients";
                rows.add(countRow(label + ": the largest share one client took while every client still asked (%; even: "
                        + 100 / clients + " %)", counts, p + "share", null, 0));
                rows.add(countRow("… the longest one thread waited for one acquisition (ms)", counts, p + "longestWait", null, 0));
            }
        }
        rows.add(countRow("Redis memory per held lock (bytes)", "ScaleCurves", "memoryPerLock", null, 0));
        rows.add(countRow("Redis memory per queued fair waiter (bytes)", "ScaleCurves", "memoryPerFairWaiter", null, 0));
        for (String n : List.of("100", "1000", "10000")) {
            String p = "heap-" + n + ".";
            OptionalDouble b = get(counts, "count", Impl.BATON, "", p + "bytes");
            OptionalDouble r = get(counts, "count", Impl.REDISSON, "", p + "bytes");
            String label = String.format("client heap per parked async waiter (bytes), %,d waiters on %,d locks; threads added",
                    Integer.parseInt(n), Math.min(Integer.parseInt(n), 1000));
            rows.add(goalRow(label, fmt(b) + "; " + fmt(get(counts, "count", Impl.BATON, "", p + "threads")) + failedNote(p, Impl.BATON),
                    fmt(r) + "; " + fmt(get(counts, "count", Impl.REDISSON, "", p + "threads")) + failedNote(p, Impl.REDISSON),
                    times(ratio(b, r)), ratio(b, r), n.equals("10000") ? Direction.AT_MOST : null, 1.0, null));
        }
        return rows;
    }

    /** The rows as a Markdown table. */
    String markdown() {
        StringBuilder out = new StringBuilder();
        out.append("| scenario | Baton | Redisson | Baton / Redisson | goal | verdict |\n");
        out.append("|---|---|---|---|---|---|\n");
        for (Row r : rows()) {
            out.append("| ").append(r.scenario()).append(" | ").append(r.baton()).append(" | ").append(r.redisson())
                    .append(" | ").append(r.ratio()).append(" | ").append(r.goal()).append(" | ")
                    .append(r.verdict().equals("met") || r.verdict().equals("missed") ? "**" + r.verdict() + "**" : r.verdict())
                    .append(" |\n");
        }
        return out.toString();
    }

    private void throughput(List<Row> rows, String scenario, String benchmark, String params, Direction direction, double goal) {
        OptionalDouble b = get(benchmark, "thrpt", Impl.BATON, params, "score");
        OptionalDouble r = get(benchmark, "thrpt", Impl.REDISSON, params, "score");
        String bText = fmt(b) + plusMinus(get(benchmark, "thrpt", Impl.BATON, params, "error"));
        String rText = fmt(r) + plusMinus(get(benchmark, "thrpt", Impl.REDISSON, params, "error"));
        rows.add(goalRow(scenario, bText, rText, times(ratio(b, r)), ratio(b, r), direction, goal, null));
    }

    /** Three rows (mean, p50, p99) for a sample-time benchmark; the goal applies to {@code judged}. */
    private void latency(List<Row> rows, String scenario, String benchmark, String params, String judged,
                         Direction direction, double goal) {
        for (String metric : List.of("mean", "p50", "p99")) {
            String m = metric.equals("mean") ? "score" : metric;
            OptionalDouble b = get(benchmark, "sample", Impl.BATON, params, m);
            OptionalDouble r = get(benchmark, "sample", Impl.REDISSON, params, m);
            boolean isJudged = metric.equals(judged);
            rows.add(goalRow(scenario + ", " + metric, fmt(b), fmt(r), times(ratio(b, r)), ratio(b, r),
                    isJudged ? direction : null, goal, null));
        }
    }

    private void wakeFloor(List<Row> rows) {
        for (String quiet : List.of("0", "3")) {
            for (String metric : List.of("mean", "p50", "p99")) {
                OptionalDouble v = get("WakeFloorBenchmark.publishToWokenThread", "sample", null, "quietMs=" + quiet,
                        metric.equals("mean") ? "score" : metric);
                rows.add(new Row("floor: PUBLISH → a thread parked on the message wakes, after " + quiet
                        + " ms quiet (ms), " + metric, fmt(v), "", "", "", ""));
            }
        }
    }

    /**
     * The part of a wake-up latency above the wake floor (3 ms quiet, the same pause the wake-up
     * benchmarks take), Baton's over Redisson's: what each library adds to what the machine costs.
     */
    private void aboveWakeFloor(List<Row> rows, String scenario, String benchmark, Direction direction, double goal) {
        OptionalDouble floor = get("WakeFloorBenchmark.publishToWokenThread", "sample", null, "quietMs=3", "p50");
        OptionalDouble b = minus(get(benchmark, "sample", Impl.BATON, "", "p50"), floor);
        OptionalDouble r = minus(get(benchmark, "sample", Impl.REDISSON, "", "p50"), floor);
        rows.add(goalRow(scenario, fmt(b), fmt(r), times(ratio(b, r)), ratio(b, r), direction, goal, null));
    }

    /** " (n failed)" when a counted scenario had failures. */
    private String failedNote(String prefix, Impl impl) {
        OptionalDouble f = get("ScaleReport", "count", impl, "", prefix + "failed");
        return f.isPresent() && f.getAsDouble() > 0 ? " (" + fmt(f) + " failed)" : "";
    }

    /** How many repeated uncontended runs were recorded (key {@code Repeat/thrpt/IMPL/run=i/fraction}). */
    private int repeats() {
        int n = 0;
        while (values.containsKey(key("Repeat", "thrpt", Impl.BATON, "run=" + (n + 1), "fraction"))) {
            n++;
        }
        return n;
    }

    /** The median over the repeated runs of uncontended lock+unlock ÷ that run's floor. */
    private OptionalDouble medianFraction(Impl impl) {
        List<Double> fractions = new ArrayList<>();
        for (int i = 1; i <= repeats(); i++) {
            get("Repeat", "thrpt", impl, "run=" + i, "fraction").ifPresent(fractions::add);
        }
        if (fractions.isEmpty()) {
            return OptionalDouble.empty();
        }
        fractions.sort(null);
        int n = fractions.size();
        return OptionalDouble.of(n % 2 == 1 ? fractions.get(n / 2) : (fractions.get(n / 2 - 1) + fractions.get(n / 2)) / 2);
    }

    private static OptionalDouble minus(OptionalDouble a, OptionalDouble b) {
        return a.isEmpty() || b.isEmpty() ? OptionalDouble.empty() : OptionalDouble.of(a.getAsDouble() - b.getAsDouble());
    }

    private void retakes(List<Row> rows, String scenario, String benchmark, String params) {
        OptionalDouble b = ratio(get(benchmark, "thrpt", Impl.BATON, params, "retakes"),
                get(benchmark, "thrpt", Impl.BATON, params, "acquisitions"));
        OptionalDouble r = ratio(get(benchmark, "thrpt", Impl.REDISSON, params, "retakes"),
                get(benchmark, "thrpt", Impl.REDISSON, params, "acquisitions"));
        rows.add(new Row(scenario, pct(b), pct(r), "", "", ""));
    }

    private Row countRow(String scenario, String benchmark, String metric, Direction direction, double goal) {
        OptionalDouble b = get(benchmark, "count", Impl.BATON, "", metric);
        OptionalDouble r = get(benchmark, "count", Impl.REDISSON, "", metric);
        String goalText = direction == null ? "" : "Baton " + direction.sign + " " + fmt(OptionalDouble.of(goal));
        return goalRow(scenario, fmt(b), fmt(r), "", b, direction, goal, goalText);
    }

    private static Row goalRow(String scenario, String baton, String redisson, String ratioText, OptionalDouble judged,
                               Direction direction, double goal, String goalText) {
        if (direction == null) {
            return new Row(scenario, baton, redisson, ratioText, "", "");
        }
        String g = goalText != null ? goalText : direction.sign + " " + fmt(OptionalDouble.of(goal)) + "×";
        String verdict = judged.isEmpty() ? "not run" : direction.meets(judged.getAsDouble(), goal) ? "met" : "missed";
        return new Row(scenario, baton, redisson, ratioText, g, verdict);
    }

    private String waits(String benchmark, Impl impl, String params) {
        OptionalDouble timeouts = get(benchmark, "thrpt", impl, params, "timeouts");
        OptionalDouble failures = get(benchmark, "thrpt", impl, params, "failures");
        double bad = timeouts.orElse(0) + failures.orElse(0);
        return timeouts.isEmpty() ? "" : " (" + fmt(OptionalDouble.of(bad)) + ")";
    }

    static OptionalDouble ratio(OptionalDouble a, OptionalDouble b) {
        if (a.isEmpty() || b.isEmpty() || b.getAsDouble() == 0) {
            return OptionalDouble.empty();
        }
        return OptionalDouble.of(a.getAsDouble() / b.getAsDouble());
    }

    static String fmt(OptionalDouble v) {
        if (v.isEmpty()) {
            return "not run";
        }
        double x = v.getAsDouble();
        double abs = Math.abs(x);
        if (x == Math.rint(x) && abs < 1e9) {
            return String.format(Locale.ROOT, "%,d", (long) x);
        }
        if (abs >= 100) {
            return String.format(Locale.ROOT, "%,.0f", x);
        }
        if (abs >= 10) {
            return String.format(Locale.ROOT, "%.1f", x);
        }
        return String.format(Locale.ROOT, "%.2f", x);
    }

    private static String plusMinus(OptionalDouble error) {
        return error.isEmpty() ? "" : " ± " + fmt(error);
    }

    private static String times(OptionalDouble ratio) {
        return ratio.isEmpty() ? "" : fmt(ratio) + "×";
    }

    private static String pct(OptionalDouble ratio) {
        return ratio.isEmpty() ? "not run" : String.format(Locale.ROOT, "%.0f %%", ratio.getAsDouble() * 100);
    }
}
