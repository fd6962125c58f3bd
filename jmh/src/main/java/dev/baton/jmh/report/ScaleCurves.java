package dev.baton.jmh.report;

import dev.baton.jmh.Impl;
import dev.baton.jmh.RedisForBenchmarks;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;

/**
 * The scale curves of docs/benchmarks.md: throughput and p99 of one lock+unlock (or semaphore
 * acquire+release) for 1, 2, 4, 8, 16 and 64 threads per client and 1, 2 and 4 clients, for the
 * lock, the fair lock and a semaphore of 4 permits, Baton and Redisson on one redis-server; and
 * the Redis memory of a held lock and of a queued fair waiter. Writes the numbers as CSV and draws
 * them as PNG charts (XChart). Run with
 * {@code java -cp jmh/target/benchmarks.jar dev.baton.jmh.report.ScaleCurves [--out DIR] [--ops N]}, or as
 * part of {@link BenchmarkReport}; {@code --redraw DIR} draws the charts again from the
 * {@code scale.csv} in DIR without measuring.
 */
public final class ScaleCurves {
    static final int[] THREADS = {1, 2, 4, 8, 16, 64};
    static final int[] CLIENTS = {1, 2, 4};
    static final List<String> KINDS = List.of("lock", "fair", "semaphore");
    /** Operations per point, spread over its threads (each thread does at least 4). */
    static final int OPS = 1_200;

    private ScaleCurves() {
    }

    /** One point of a curve. */
    record Point(Impl impl, String kind, int clients, int threads, double perSecond, double p99Ms, int failed) {
    }

    /** Redis memory per held lock and per queued fair waiter, in bytes. */
    record Memory(Impl impl, double perHeldLock, double perQueuedFairWaiter) {
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true"); // the charts are drawn without a display
        Path out = Path.of("jmh", "target", "scale");
        int ops = OPS;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--ops" -> ops = Integer.parseInt(args[++i]);
                case "--redraw" -> {
                    Path dir = Path.of(args[++i]);
                    drawAll(read(dir.resolve("scale.csv")), dir);
                    System.exit(0);
                }
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; use --out DIR, --ops N, --redraw DIR");
            }
        }
        RedisForBenchmarks.Target redis = RedisForBenchmarks.get();
        List<Point> points = new ArrayList<>();
        List<Memory> memory = new ArrayList<>();
        for (Impl impl : Impl.values()) {
            points.addAll(measure(redis, impl, ops));
            memory.add(memory(redis, impl));
        }
        write(points, memory, out);
        System.exit(0);
    }

    /** Every point of one implementation, on clients connected once for all of them. */
    static List<Point> measure(RedisForBenchmarks.Target redis, Impl impl, int ops) throws Exception {
        redis.command("FLUSHALL");
        List<Impl.Client> clients = new ArrayList<>();
        List<Point> points = new ArrayList<>();
        try {
            for (int c = 0; c < CLIENTS[CLIENTS.length - 1]; c++) {
                clients.add(impl.connect(redis.uri()));
            }
            for (String kind : KINDS) {
                point(impl, clients.subList(0, 2), kind, 4, ops); // warm-up (JIT, scripts), not recorded
                for (int c : CLIENTS) {
                    for (int t : THREADS) {
                        Point p = point(impl, clients.subList(0, c), kind, t, ops);
                        points.add(p);
                        System.out.printf(Locale.ROOT, "%-9s %-9s %d client(s) x %2d threads: %8.0f ops/s, p99 %7.2f ms%s%n",
                                impl, kind, c, t, p.perSecond(), p.p99Ms(), p.failed() > 0 ? ", " + p.failed() + " failed" : "");
                    }
                }
            }
        } finally {
            for (Impl.Client c : clients) {
                c.close();
            }
        }
        return points;
    }

    private static Point point(Impl impl, List<Impl.Client> clients, String kind, int threadsPerClient, int ops)
            throws Exception {
        String name = "curve-" + kind + "-" + clients.size() + "x" + threadsPerClient;
        if (kind.equals("semaphore")) {
            clients.get(0).semaphore(name).trySetPermits(4);
        }
        int threads = clients.size() * threadsPerClient;
        int perThread = Math.max(4, (ops + threads - 1) / threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long[][] took = new long[threads][perThread];
        AtomicInteger failed = new AtomicInteger();
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            Impl.Client client = clients.get(t % clients.size());
            int me = t;
            pool.submit(() -> {
                try {
                    Lock lock = kind.equals("lock") ? client.lock(name) : kind.equals("fair") ? client.fairLock(name) : null;
                    Impl.Permits permits = lock == null ? client.semaphore(name) : null;
                    ready.countDown();
                    go.await();
                    for (int i = 0; i < perThread; i++) {
                        long start = System.nanoTime();
                        if (lock == null) {
                            permits.acquire();
                            permits.release();
                        } else if (lock.tryLock(30, TimeUnit.SECONDS)) {
                            lock.unlock();
                        } else {
                            failed.incrementAndGet();
                        }
                        took[me][i] = System.nanoTime() - start;
                    }
                } catch (Exception e) {
                    failed.incrementAndGet();
                } finally {
                    done.countDown();
                }
                return null;
            });
        }
        ready.await();
        long started = System.nanoTime();
        go.countDown();
        boolean finished = done.await(180, TimeUnit.SECONDS);
        long elapsed = System.nanoTime() - started;
        pool.shutdownNow();
        long[] all = Arrays.stream(took).flatMapToLong(Arrays::stream).filter(n -> n > 0).sorted().toArray();
        double p99 = all.length == 0 ? Double.NaN : all[(int) Math.max(0, Math.ceil(all.length * 0.99) - 1)] / 1e6;
        int completed = all.length - failed.get();
        return new Point(impl, kind, clients.size(), threadsPerClient, completed / (elapsed / 1e9), p99,
                failed.get() + (finished ? 0 : threads * perThread - all.length));
    }

    /** Redis's used_memory growth per held lock (10,000 held) and per queued fair waiter (1,000 queued). */
    static Memory memory(RedisForBenchmarks.Target redis, Impl impl) throws Exception {
        redis.command("FLUSHALL");
        double perLock;
        try (Impl.Client holder = impl.connect(redis.uri())) {
            holder.lockAsync("warm", 1).get(30, TimeUnit.SECONDS);
            holder.unlockAsync("warm", 1).get(30, TimeUnit.SECONDS);
            long before = usedMemory(redis);
            int locks = 10_000;
            for (int i = 0; i < locks; i++) {
                holder.lockAsync("held-" + i, 1).get(30, TimeUnit.SECONDS);
            }
            perLock = (usedMemory(redis) - before) / (double) locks;
            for (int i = 0; i < locks; i++) {
                holder.unlockAsync("held-" + i, 1).get(30, TimeUnit.SECONDS);
            }
        }
        redis.command("FLUSHALL");
        double perWaiter;
        int waiters = 1_000;
        try (Impl.Client holder = impl.connect(redis.uri()); Impl.Client waiting = impl.connect(redis.uri())) {
            Lock held = holder.fairLock("queued");
            held.lock();
            long before = usedMemory(redis);
            ExecutorService pool = Executors.newFixedThreadPool(waiters);
            CountDownLatch done = new CountDownLatch(waiters);
            for (int w = 0; w < waiters; w++) {
                pool.submit(() -> {
                    Lock mine = waiting.fairLock("queued");
                    try {
                        if (mine.tryLock(120, TimeUnit.SECONDS)) {
                            mine.unlock();
                        }
                    } finally {
                        done.countDown();
                    }
                    return null;
                });
            }
            // Each library's own queue: Baton's ZSET, Redisson's LIST (data-layout.md).
            String[] count = impl == Impl.BATON ? new String[] {"ZCARD", "baton_fair_queue:{queued}"}
                    : new String[] {"LLEN", "redisson_lock_queue:{queued}"};
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while ((Long) redis.command(count) < waiters && System.nanoTime() < deadline) {
                Thread.sleep(20); // polling the server's own count of queued waiters
            }
            long queued = (Long) redis.command(count);
            System.out.printf(Locale.ROOT, "%-9s %d of %d fair waiters queued%n", impl, queued, waiters);
            perWaiter = (usedMemory(redis) - before) / (double) Math.max(1, queued);
            held.unlock();
            done.await(120, TimeUnit.SECONDS);
            pool.shutdownNow();
        }
        System.out.printf(Locale.ROOT, "%-9s Redis memory: %.0f bytes per held lock, %.0f per queued fair waiter%n", impl,
                perLock, perWaiter);
        return new Memory(impl, perLock, perWaiter);
    }

    private static long usedMemory(RedisForBenchmarks.Target redis) {
        return Long.parseLong(((String) redis.command("INFO", "memory")).replaceAll("(?s).*\\bused_memory:(\\d+).*", "$1"));
    }

    /** Writes {@code scale.csv}, {@code memory.csv} and one throughput and one p99 chart per kind into {@code dir}. */
    static void write(List<Point> points, List<Memory> memory, Path dir) throws IOException {
        Files.createDirectories(dir);
        StringBuilder csv = new StringBuilder("impl,kind,clients,threads_per_client,ops_per_s,p99_ms,failed\n");
        for (Point p : points) {
            csv.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%.0f,%.3f,%d%n", p.impl(), p.kind(), p.clients(), p.threads(),
                    p.perSecond(), p.p99Ms(), p.failed()));
        }
        Files.writeString(dir.resolve("scale.csv"), csv);
        StringBuilder mem = new StringBuilder("impl,bytes_per_held_lock,bytes_per_queued_fair_waiter\n");
        for (Memory m : memory) {
            mem.append(String.format(Locale.ROOT, "%s,%.0f,%.0f%n", m.impl(), m.perHeldLock(), m.perQueuedFairWaiter()));
        }
        Files.writeString(dir.resolve("memory.csv"), mem);
        drawAll(points, dir);
        System.out.println("scale curves written to " + dir.toAbsolutePath());
    }

    /** One throughput and one p99 chart per kind, {@code scale-<kind>-throughput.png} and {@code -p99.png}. */
    static void drawAll(List<Point> points, Path dir) throws IOException {
        for (String kind : KINDS) {
            chart(points, kind, true, dir.resolve("scale-" + kind + "-throughput"));
            chart(points, kind, false, dir.resolve("scale-" + kind + "-p99"));
        }
    }

    /** The points of a {@code scale.csv} written by {@link #write}. */
    static List<Point> read(Path csv) throws IOException {
        List<Point> points = new ArrayList<>();
        for (String line : Files.readAllLines(csv)) {
            if (line.isBlank() || line.startsWith("impl,")) {
                continue;
            }
            String[] f = line.split(",");
            points.add(new Point(Impl.valueOf(f[0]), f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]),
                    Double.parseDouble(f[4]), Double.parseDouble(f[5]), Integer.parseInt(f[6])));
        }
        return points;
    }

    private static final Color[] BY_CLIENTS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c)};

    private static void chart(List<Point> points, String kind, boolean throughput, Path file) throws IOException {
        String what = kind.equals("semaphore") ? "semaphore of 4 permits: acquire+release"
                : (kind.equals("fair") ? "fair lock" : "lock") + ": lock+unlock";
        XYChart chart = new XYChartBuilder().width(760).height(440)
                .title((throughput ? "Throughput, " : "p99 latency, ") + what)
                .xAxisTitle("threads per client").yAxisTitle(throughput ? "operations per second" : "p99 (ms)").build();
        chart.getStyler().setXAxisLogarithmic(true);
        chart.getStyler().setYAxisLogarithmic(!throughput);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setXAxisDecimalPattern("#");
        for (Impl impl : Impl.values()) {
            for (int ci = 0; ci < CLIENTS.length; ci++) {
                int c = CLIENTS[ci];
                List<Double> xs = new ArrayList<>();
                List<Double> ys = new ArrayList<>();
                for (Point p : points) {
                    double y = throughput ? p.perSecond() : p.p99Ms();
                    if (p.impl() == impl && p.kind().equals(kind) && p.clients() == c && !Double.isNaN(y) && y > 0) {
                        xs.add((double) p.threads());
                        ys.add(y);
                    }
                }
                if (xs.isEmpty()) {
                    continue;
                }
                String label = (impl == Impl.BATON ? "Baton" : "Redisson") + ", " + c + " client" + (c > 1 ? "s" : "");
                XYSeries s = chart.addSeries(label, xs, ys);
                s.setLineColor(BY_CLIENTS[ci]);
                s.setMarkerColor(BY_CLIENTS[ci]);
                s.setMarker(impl == Impl.BATON ? SeriesMarkers.CIRCLE : SeriesMarkers.DIAMOND);
                s.setLineStyle(impl == Impl.BATON ? SeriesLines.SOLID
                        : new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f, new float[] {6f, 4f}, 0f));
            }
        }
        BitmapEncoder.saveBitmapWithDPI(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG, 110);
    }
}
