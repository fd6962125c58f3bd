package dev.baton.jmh.report;

import dev.baton.jmh.Impl;
import dev.baton.jmh.RedisForBenchmarks;
import dev.baton.testkit.RedisServer;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.util.Statistics;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The one command behind docs/benchmarks.md: starts one redis-server on a free loopback port,
 * runs every JMH scenario against it (each fork is told its address, so Baton, Redisson and the
 * round-trip floor share the server), then the counted scenarios of {@link ScaleReport}, and
 * writes one Markdown table with Baton's figure, Redisson's, their ratio and each goal's verdict.
 *
 * <pre>
 * java -cp jmh/target/benchmarks.jar dev.baton.jmh.report.BenchmarkReport [--quick] [--only REGEX]
 *      [--forks N] [--no-counts] [--out FILE]
 * </pre>
 *
 * It also draws the scale curves ({@link ScaleCurves}) into {@code --curves DIR} (default
 * {@code jmh/target/scale}; {@code --no-curves} skips them). {@code --quick} is a smoke run (short iterations, numbers not worth quoting); {@code --only}
 * keeps the JMH benchmarks whose name matches; the report goes to
 * {@code jmh/target/benchmark-report.md} and JMH's own results to {@code .json} beside it.
 */
public final class BenchmarkReport {
    private BenchmarkReport() {
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true"); // the charts are drawn without a display
        boolean quick = false;
        boolean counts = true;
        Path curves = Path.of("jmh", "target", "scale");
        boolean drawCurves = true;
        String only = ".*Benchmark.*";
        int forks = 1;
        int repeats = 3;
        Path out = Path.of("jmh", "target", "benchmark-report.md");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--no-counts" -> counts = false;
                case "--no-curves" -> drawCurves = false;
                case "--curves" -> curves = Path.of(value(args, ++i, "--curves"));
                case "--only" -> only = value(args, ++i, "--only");
                case "--forks" -> forks = Integer.parseInt(value(args, ++i, "--forks"));
                case "--repeats" -> repeats = Integer.parseInt(value(args, ++i, "--repeats"));
                case "--out" -> out = Path.of(value(args, ++i, "--out"));
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; use --quick, --only REGEX, --forks N, --repeats N, --no-counts, --no-curves, --curves DIR, --out FILE");
            }
        }
        Files.createDirectories(out.toAbsolutePath().getParent());
        Path json = out.resolveSibling(out.getFileName().toString().replaceAll("\\.md$", "") + ".json");

        ReportTable table = new ReportTable();
        String redisVersion;
        try (RedisServer server = RedisServer.start()) {
            redisVersion = server.binary().version();
            System.setProperty(RedisForBenchmarks.PROPERTY, server.uri());
            ChainedOptionsBuilder options = new OptionsBuilder()
                    .include(only)
                    .forks(forks)
                    .jvmArgsAppend("-D" + RedisForBenchmarks.PROPERTY + "=" + server.uri())
                    .resultFormat(ResultFormatType.JSON)
                    .result(json.toString());
            if (quick) {
                options.warmupIterations(1).warmupTime(TimeValue.seconds(1))
                        .measurementIterations(1).measurementTime(TimeValue.seconds(2));
            }
            for (RunResult result : new Runner(options.build()).run()) {
                record(table, result);
            }
            // The uncontended goal is judged on the median of several runs, each with its own floor.
            if (recordFraction(table, table, 1)) {
                for (int run = 2; run <= repeats; run++) {
                    ChainedOptionsBuilder again = new OptionsBuilder()
                            .include("(FloorBenchmark\\.evalsha|LockBenchmark\\.uncontendedWatchdog)$")
                            .forks(forks)
                            .jvmArgsAppend("-D" + RedisForBenchmarks.PROPERTY + "=" + server.uri());
                    if (quick) {
                        again.warmupIterations(1).warmupTime(TimeValue.seconds(1))
                                .measurementIterations(1).measurementTime(TimeValue.seconds(2));
                    }
                    ReportTable once = new ReportTable();
                    for (RunResult result : new Runner(again.build()).run()) {
                        record(once, result);
                    }
                    recordFraction(once, table, run);
                }
            }
            if (counts) {
                RedisForBenchmarks.Target target = RedisForBenchmarks.get();
                for (Impl impl : Impl.values()) {
                    record(table, ScaleReport.measure(target, impl));
                }
            }
            if (drawCurves) {
                RedisForBenchmarks.Target target = RedisForBenchmarks.get();
                List<ScaleCurves.Point> points = new java.util.ArrayList<>();
                List<ScaleCurves.Memory> memory = new java.util.ArrayList<>();
                for (Impl impl : Impl.values()) {
                    points.addAll(ScaleCurves.measure(target, impl, quick ? 300 : ScaleCurves.OPS));
                    memory.add(ScaleCurves.memory(target, impl));
                }
                ScaleCurves.write(points, memory, curves);
                for (ScaleCurves.Memory m : memory) {
                    table.put(ReportTable.key("ScaleCurves", "count", m.impl(), "", "memoryPerLock"), m.perHeldLock());
                    table.put(ReportTable.key("ScaleCurves", "count", m.impl(), "", "memoryPerFairWaiter"), m.perQueuedFairWaiter());
                }
            }
        }

        String report = "Run of " + LocalDate.now() + ": " + Runtime.getRuntime().availableProcessors() + " CPUs, Java "
                + System.getProperty("java.version") + ", redis-server " + redisVersion + " on loopback, "
                + (quick ? "quick smoke run (--quick)" : forks + " fork(s), iterations as annotated") + ".\n\n"
                + table.markdown();
        Files.writeString(out, report);
        System.out.println();
        System.out.println(report);
        System.out.println("written to " + out.toAbsolutePath() + " (JMH results: " + json.toAbsolutePath() + ")");
        System.exit(0); // Redisson's and Baton's client threads must not keep the JVM alive
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    /**
     * Files, for run {@code run}, each implementation's uncontended lock+unlock rate as a fraction of
     * that run's floor (half the EVALSHA rate); whether the run had both figures.
     */
    static boolean recordFraction(ReportTable from, ReportTable into, int run) {
        java.util.OptionalDouble evalsha = from.get("FloorBenchmark.evalsha", "thrpt", null, "", "score");
        if (evalsha.isEmpty()) {
            return false;
        }
        boolean any = false;
        for (Impl impl : Impl.values()) {
            java.util.OptionalDouble pairs = from.get("LockBenchmark.uncontendedWatchdog", "thrpt", impl, "", "score");
            if (pairs.isPresent()) {
                into.put(ReportTable.key("Repeat", "thrpt", impl, "run=" + run, "fraction"),
                        pairs.getAsDouble() / (evalsha.getAsDouble() / 2));
                any = true;
            }
        }
        return any;
    }

    /** Files one JMH result under {@link ReportTable#key}. */
    static void record(ReportTable table, RunResult result) {
        BenchmarkParams params = result.getParams();
        String name = params.getBenchmark();
        String benchmark = name.substring(name.lastIndexOf('.', name.lastIndexOf('.') - 1) + 1);
        String mode = params.getMode().shortLabel();
        String implParam = params.getParam("impl");
        Impl impl = implParam == null ? null : Impl.valueOf(implParam);
        Map<String, String> others = new TreeMap<>();
        for (String key : params.getParamsKeys()) {
            if (!key.equals("impl")) {
                others.put(key, params.getParam(key));
            }
        }
        String rest = others.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining("/"));
        Result<?> primary = result.getPrimaryResult();
        table.put(ReportTable.key(benchmark, mode, impl, rest, "score"), primary.getScore());
        table.put(ReportTable.key(benchmark, mode, impl, rest, "error"), primary.getScoreError());
        if (mode.equals("sample")) {
            Statistics stats = primary.getStatistics();
            table.put(ReportTable.key(benchmark, mode, impl, rest, "p50"), stats.getPercentile(50));
            table.put(ReportTable.key(benchmark, mode, impl, rest, "p99"), stats.getPercentile(99));
            table.put(ReportTable.key(benchmark, mode, impl, rest, "p99.9"), stats.getPercentile(99.9));
        }
        for (Map.Entry<String, Result> secondary : result.getSecondaryResults().entrySet()) {
            table.put(ReportTable.key(benchmark, mode, impl, rest, secondary.getKey()), secondary.getValue().getScore());
        }
    }

    /** Files one implementation's counted scenarios. */
    static void record(ReportTable table, ScaleReport.Counts c) {
        Collection<Map.Entry<String, Double>> figures = Map.of(
                "renewalScripts", c.renewal().scriptsPerSecond(),
                "renewalPexpire", c.renewal().pexpirePerSecond(),
                "pairScripts", c.pair().scripts(),
                "pairDel", c.pair().del(),
                "pairSet", c.pair().set(),
                "keysLeft", (double) c.pair().keysLeft(),
                "pubSubConnections", (double) c.waiters().pubSubConnections(),
                "waitersFailed", (double) c.waiters().notAcquired()
        ).entrySet();
        for (Map.Entry<String, Double> f : figures) {
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", f.getKey()), f.getValue());
        }
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "pairCommands"), c.pair().commands());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.fraction"), c.pairCost().fractionOfFloor() * 100);
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.wall"), c.pairCost().wallMicros());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.floorWall"), c.pairCost().floorWallMicros());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.redis"), c.pairCost().redisMicros());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.floorRedis"), c.pairCost().floorRedisMicros());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.client"), c.pairCost().clientMicros());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "steady.floorClient"), c.pairCost().floorClientMicros());
        for (ScaleReport.Contention w : c.contention()) {
            String p = "wide-" + w.kind() + "-" + w.clients() + "x" + w.threads() + ".";
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "perSecond"), w.perSecond());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "p99"), w.p99Ms());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "commands"), w.commandsPerAcquisition());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "subscriptions"), w.subscriptionsPerClient());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "failed"), (double) w.failed());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "share"), w.largestShare() * 100);
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "longestWait"), w.longestWaitMs());
        }
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "semaphore.perSecond"), c.semaphore().perSecond());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "semaphore.commands"), c.semaphore().commandsPerOp());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "semaphoreHeld.perSecond"), c.semaphoreHeld().perSecond());
        table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", "semaphoreHeld.commands"), c.semaphoreHeld().commandsPerOp());
        for (ScaleReport.Heap h : c.heap()) {
            String p = "heap-" + h.waiters() + ".";
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "bytes"), h.bytesPerWaiter());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "threads"), (double) h.threadsAdded());
            table.put(ReportTable.key("ScaleReport", "count", c.impl(), "", p + "failed"), (double) h.failed());
        }
    }
}
