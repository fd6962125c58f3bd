package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonRateLimiter;
import dev.baton.RateLimit;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code baton demo}: what Baton is for, end to end. A coordinator arms a count-down latch for W
 * workers; the workers, spread over two Baton clients, wait on a start gate and start together;
 * each takes work items from a shared queue, calls a pretend rate-limited partner at no more than
 * R calls a second (a rate limiter) and at most P at once (a permit-expirable semaphore), appends to a shared ledger under a lock (with a
 * deliberately unsynchronized read-modify-write of a counter), and counts down when done. The
 * coordinator waits and prints a summary that checks the invariants.
 *
 * <p>With {@code --fail-one}, one worker crashes mid-run while holding a partner permit and the
 * ledger lock; a replacement (as a supervisor would restart it) carries on once the dead
 * worker's permit and lock leases have run out.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Run W workers over N items: a start gate and a done latch, a rate limiter of R calls a second "
                + "and a semaphore of P permits around a rate-limited partner, a lock around a shared ledger. Uses an embedded redis-server "
                + "unless --redis is given.")
final class DemoCommand implements java.util.concurrent.Callable<Integer> {
    private static final long CRASH_LEASE_MS = 1_500;

    @Option(names = "--redis", paramLabel = "URI", description = "Use this Redis instead of an embedded redis-server.")
    String redisUri;

    @Option(names = "--workers", defaultValue = "4", description = "Workers (default: ${DEFAULT-VALUE}).")
    int workers;

    @Option(names = "--permits", defaultValue = "2", description = "Concurrent partner calls allowed (default: ${DEFAULT-VALUE}).")
    int permits;

    @Option(names = "--rate", defaultValue = "20", description = "Partner calls started per second, fleet-wide (default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = "--items", defaultValue = "40", description = "Work items (default: ${DEFAULT-VALUE}).")
    int items;

    @Option(names = "--fail-one", description = "Crash one worker mid-run while it holds a permit and the ledger lock.")
    boolean failOne;

    @Option(names = "--no-progress", description = "Do not draw the progress bar.")
    boolean noProgress;

    @Spec
    CommandSpec spec;

    private String run;
    private RedisCommands<String, String> redis;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger mostInFlight = new AtomicInteger();
    private final AtomicLong crashedAt = new AtomicLong();
    private final java.util.concurrent.CountDownLatch crashed = new java.util.concurrent.CountDownLatch(1);
    private final AtomicLong lockRecoveredAfterMs = new AtomicLong(-1);
    /** When each partner call started, as the partner would see it. */
    private final java.util.Queue<Long> partnerCalls = new java.util.concurrent.ConcurrentLinkedQueue<>();

    @Override
    public Integer call() throws Exception {
        if (workers < 1 || permits < 1 || items < 1 || rate < 1) {
            throw new ParameterException(spec.commandLine(), "--workers, --permits, --rate and --items must be at least 1");
        }
        if (failOne && workers < 2) {
            throw new ParameterException(spec.commandLine(), "--fail-one needs at least 2 workers");
        }
        PrintWriter out = spec.commandLine().getOut();
        RedisServer embedded = redisUri == null ? RedisServer.start() : null;
        String uri = embedded != null ? embedded.uri() : redisUri;
        out.println(embedded != null
                ? "Redis: embedded redis-server " + embedded.binary().version() + " on " + embedded.host() + ":" + embedded.port()
                : "Redis: " + uri.replaceAll("//[^@/]*@", "//***@"));
        run = "demo:" + UUID.randomUUID().toString().substring(0, 8);
        RedisClient rawClient = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> raw = rawClient.connect();
             Baton coordinator = Baton.create(BatonOptions.create(uri));
             Baton clientA = Baton.create(BatonOptions.create(uri));
             Baton clientB = Baton.create(BatonOptions.create(uri))) {
            redis = raw.sync();
            try {
                return runDemo(out, uri, coordinator, List.of(clientA, clientB));
            } finally {
                cleanUp();
            }
        } finally {
            rawClient.shutdown();
            if (embedded != null) {
                embedded.close();
            }
        }
    }

    private int runDemo(PrintWriter out, String uri, Baton coordinator, List<Baton> clients) throws Exception {
        out.printf("Run %s: %d workers, %d items, partner calls at most %d a second and %d at once%s%n", run, workers, items,
                rate, permits,
                failOne ? ", one worker will crash" : "");
        for (int i = 1; i <= items; i++) {
            redis.rpush(run + ":queue", "item-" + i);
        }
        BatonCountDownLatch ready = coordinator.countDownLatch(run + ":ready");
        BatonCountDownLatch gate = coordinator.countDownLatch(run + ":start");
        BatonCountDownLatch done = coordinator.countDownLatch(run + ":done");
        ready.trySetCount(workers);
        gate.trySetCount(1);
        done.trySetCount(workers);
        coordinator.permitExpirableSemaphore(run + ":partner").trySetPermits(permits);

        ExecutorService pool = Executors.newFixedThreadPool(workers + 1);
        long started = System.nanoTime();
        int processed = 0;
        try (ProgressBar progress = progressBar()) {
            List<Future<Integer>> running = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                int id = w + 1;
                boolean crashes = failOne && id == 2;
                Baton client = crashes ? Baton.create(BatonOptions.create(uri)) : clients.get(w % clients.size());
                running.add(pool.submit(() -> work(id, client, crashes, false, progress)));
            }
            if (!ready.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("workers did not get ready within 60 s");
            }
            gate.countDown(); // everybody starts together
            if (failOne) {
                running.add(pool.submit(() -> {
                    crashed.await();
                    // The supervisor restarts worker 2 as a new process: a new Baton client.
                    try (Baton replacement = Baton.create(BatonOptions.create(uri))) {
                        return work(2, replacement, false, true, progress);
                    }
                }));
            }
            if (!done.await(5, TimeUnit.MINUTES)) {
                throw new IllegalStateException("workers did not finish within 5 minutes");
            }
            for (Future<Integer> f : running) {
                processed += f.get(1, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        return summary(out, processed, (System.nanoTime() - started) / 1_000_000, coordinator);
    }

    private ProgressBar progressBar() {
        ProgressBarBuilder builder = new ProgressBarBuilder().setTaskName("items").setInitialMax(items)
                .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(100);
        if (noProgress) {
            builder.setConsumer(new me.tongfei.progressbar.DelegatingProgressBarConsumer(line -> { }));
        }
        return builder.build();
    }

    /** One worker; returns how many items it finished. */
    private int work(int id, Baton baton, boolean crashes, boolean replacement, ProgressBar progress) throws Exception {
        BatonPermitExpirableSemaphore partner = baton.permitExpirableSemaphore(run + ":partner");
        BatonRateLimiter partnerRate = baton.rateLimiter(run + ":partner-rate", RateLimit.perSecond(rate));
        BatonLock ledger = baton.lock(run + ":ledger-lock");
        if (!replacement) {
            baton.countDownLatch(run + ":ready").countDown();
            baton.countDownLatch(run + ":start").await(); // the start gate: everybody goes together
        }
        int finished = 0;
        String item;
        while ((item = redis.lpop(run + ":queue")) != null) {
            if (crashes && finished == 2) {
                redis.rpush(run + ":queue", item); // not started: back to the queue for the others
                crash(baton, partner, ledger);
                return finished;
            }
            partnerRate.acquire(); // the partner's rate: sleeps until this call's slot
            String permit = partner.acquire(30, TimeUnit.SECONDS);
            try {
                partnerCalls.add(System.nanoTime()); // what the partner sees: a call starting now
                mostInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                Thread.sleep(ThreadLocalRandom.current().nextLong(10, 30)); // the pretend partner call
                inFlight.decrementAndGet();
            } finally {
                partner.release(permit);
            }
            ledger.lock(30, TimeUnit.SECONDS);
            try {
                if (crashedAt.get() > 0 && lockRecoveredAfterMs.get() < 0) {
                    lockRecoveredAfterMs.compareAndSet(-1, (System.nanoTime() - crashedAt.get()) / 1_000_000);
                }
                long count = Long.parseLong(String.valueOf(redis.get(run + ":count")).replace("null", "0"));
                Thread.yield(); // an unsynchronized read-modify-write: only the lock keeps it right
                redis.set(run + ":count", Long.toString(count + 1));
                redis.rpush(run + ":ledger", "worker-" + id + " " + item);
            } finally {
                ledger.unlock();
            }
            finished++;
            progress.step();
        }
        baton.countDownLatch(run + ":done").countDown();
        return finished;
    }

    /** Worker 2 dies holding a permit and the ledger lock, both on short leases. */
    private void crash(Baton baton, BatonPermitExpirableSemaphore partner, BatonLock ledger) throws InterruptedException {
        partner.acquire(CRASH_LEASE_MS, TimeUnit.MILLISECONDS);
        ledger.lock(CRASH_LEASE_MS, TimeUnit.MILLISECONDS);
        crashedAt.set(System.nanoTime()); // the lock's lease runs from here
        baton.close(); // no unlock, no release: as if the process had been killed
        crashed.countDown();
    }

    private int summary(PrintWriter out, int processed, long elapsedMs, Baton coordinator) {
        long ledgerEntries = redis.llen(run + ":ledger");
        long counter = Long.parseLong(String.valueOf(redis.get(run + ":count")).replace("null", "0"));
        int availableAtEnd = coordinator.permitExpirableSemaphore(run + ":partner").availablePermits();
        boolean concurrencyOk = mostInFlight.get() <= permits;
        boolean ledgerOk = ledgerEntries == items && processed == items;
        boolean counterOk = counter == items;
        boolean permitsOk = availableAtEnd == permits;
        int mostPerSecond = mostInAnySecond();
        boolean rateOk = mostPerSecond <= rate + 1; // the limiter's bound over a second: rate x 1 s + its burst of 1
        out.println();
        out.println("Summary");
        out.printf("  %-26s %-32s%n", "items processed", processed + " of " + items + " in " + elapsedMs + " ms");
        out.printf("  %-26s %-32s %s%n", "max concurrent calls", mostInFlight.get() + " (permits " + permits + ")", mark(concurrencyOk));
        out.printf("  %-26s %-32s %s%n", "most calls in any second", mostPerSecond + " (partner allows " + (rate + 1) + ")",
                mark(rateOk));
        out.printf("  %-26s %-32s %s%n", "ledger entries", ledgerEntries + " (work items " + items + ")", mark(ledgerOk));
        out.printf("  %-26s %-32s %s%n", "ledger counter", counter + " (no lost update)", mark(counterOk));
        out.printf("  %-26s %-32s %s%n", "permits available at end", availableAtEnd + " of " + permits, mark(permitsOk));
        if (failOne) {
            out.printf("  %-26s %s%n", "crashed worker 2", "held a permit and the ledger lock; both came back by lease expiry");
            out.printf("  %-26s %s%n", "ledger lock free again", lockRecoveredAfterMs.get() + " ms after the crash (lease "
                    + CRASH_LEASE_MS + " ms)");
        }
        boolean ok = concurrencyOk && rateOk && ledgerOk && counterOk && permitsOk;
        out.println(ok ? "All invariants hold." : "INVARIANT VIOLATED");
        out.flush();
        return ok ? 0 : 1;
    }

    /** The most partner calls that started within any one second (a window from each call's start). */
    private int mostInAnySecond() {
        List<Long> starts = new ArrayList<>(partnerCalls);
        java.util.Collections.sort(starts);
        int most = 0;
        for (int i = 0, j = 0; i < starts.size(); i++) {
            while (starts.get(i) - starts.get(j) > TimeUnit.SECONDS.toNanos(1)) {
                j++;
            }
            most = Math.max(most, i - j + 1);
        }
        return most;
    }

    private static String mark(boolean ok) {
        return ok ? "ok" : "FAILED";
    }

    private void cleanUp() {
        List<String> keys = new ArrayList<>();
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            KeyScanCursor<String> page = redis.scan(cursor, ScanArgs.Builder.matches("*" + run + "*").limit(500));
            keys.addAll(page.getKeys());
            cursor = page;
        } while (!cursor.isFinished());
        if (!keys.isEmpty()) {
            redis.del(keys.toArray(String[]::new));
        }
    }
}
