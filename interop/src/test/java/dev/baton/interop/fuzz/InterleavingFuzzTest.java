package dev.baton.interop.fuzz;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonFencedLock;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonSemaphore;
import dev.baton.ExpirablePermit;
import dev.baton.LockHold;
import dev.baton.SemaphorePermits;
import dev.baton.interop.fuzz.History.Mode;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The interleaving fuzzer: randomized storms on a real Redis in which two Baton clients (3
 * threads each) and, on the kinds whose layout Redisson shares, a Redisson 4.7 client (2 threads)
 * use one synchronizer every way a user can: blocking waits with and without a lease, waits of
 * 0-5 ms (a request handler's) and of 10-200 ms, no wait at all, async calls with owner ids whose
 * future is given up after 0-3 ms (cancel, orTimeout, completeOnTimeout), interrupts after
 * 0-3 ms, re-entry, handles, updateLease and, rarely, forceUnlock; holds of 0-3 ms with a counter in Redis read and written inside exclusive
 * holds. {@link History} judges every storm: never two holders of an exclusive kind (or a writer
 * beside a reader), never more permits held than the semaphore has, no lost counter update, no
 * release of a reported hold that throws, no call past its documented bound, no exception on a
 * healthy Redis, fencing tokens rising, every client granted; after the storm nothing is held,
 * permits and counts are exact, and no wait is left hanging.
 *
 * <p>Each kind runs one storm with the fixed seed {@value #FIXED_SEED} and one with a random seed,
 * printed. A seed fixes every worker's choice of operations and times, not the threads' timing, so
 * it replays the same mix, not the same interleaving (the deterministic simulation replays those).
 * {@code -Dbaton.fuzz.minutes=N} runs storms with fresh seeds for about N minutes in all, spread
 * over the kinds (docs/guarantees.md gives the figures of one long run);
 * {@code -Dbaton.fuzz.seconds=S} sets one storm's length (default {@value #STORM_SECONDS});
 * {@code -Dbaton.fuzz.kinds=lock,latch} runs only those kinds.
 */
@ExtendWith(RedisExtension.class)
class InterleavingFuzzTest {
    static final long FIXED_SEED = 28;
    static final int STORM_SECONDS = 5;
    /** A storm's length in the server lanes other than the one on the Redis from PATH (-Dbaton.redis.binary). */
    static final int OTHER_LANE_SECONDS = 4;
    /** The rate limiter's limit in the storms: 50 a second, up to 2 at once, so 6 threads keep it saturated. */
    static final dev.baton.RateLimit RATE = dev.baton.RateLimit.of(1, Duration.ofMillis(20)).withBurst(2);
    /** How late a rate limiter call may start after its slot, as its caller sees it (see rateJudged). */
    static final Duration RATE_LATE = Duration.ofMillis(40);
    static final int PERMITS = 3;
    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(2);
    /**
     * A fixed lease (and an expirable permit's) no hold of 0-3 ms comes near: a loss is a
     * violation, never a lease running out, and a hold nobody releases stays until the end's check.
     */
    static final long LEASE_MS = 60_000;
    /**
     * Whether forceUnlock is among the operations (one in 400 of the lock kinds';
     * {@code -Dbaton.fuzz.force=false} leaves it out). Its storms found a holder that was forced
     * out and then re-entered being granted a fresh hold without being told (now a
     * LeaseLostException: LockContractTest.aReEntryAfterTheLeaseWasLostReportsTheLossAndHoldsNothing).
     */
    static final boolean FORCE = Boolean.parseBoolean(System.getProperty("baton.fuzz.force", "true"));
    static final int BATON_CLIENTS = 2;
    static final int BATON_THREADS = 3;
    static final int REDISSON_THREADS = 2;
    /** How long the storm's threads get to finish their last operation after the storm ends. */
    static final Duration DRAIN = Duration.ofSeconds(30);

    private final RedisServer redis;

    /** How often each user pattern ran, per kind, over this class's storms (the catalog: dev.baton.testkit.UserPattern). */
    static final dev.baton.testkit.UserPattern.Counts PATTERNS = new dev.baton.testkit.UserPattern.Counts();

    /** The patterns of the catalog the workers do for {@code kind}: each must run in every test of the kind. */
    static java.util.Set<dev.baton.testkit.UserPattern> covered(String kind) {
        if (kind.equals("leaderElection")) {
            return java.util.EnumSet.of(dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.SCOPED_WORK,
                    dev.baton.testkit.UserPattern.GIVEN_UP_BY_INTERRUPT, dev.baton.testkit.UserPattern.RELINQUISH,
                    dev.baton.testkit.UserPattern.WORK_RETURNS, dev.baton.testkit.UserPattern.CLOSE_AND_REJOIN);
        }
        java.util.Set<dev.baton.testkit.UserPattern> c = java.util.EnumSet.of(dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL,
                dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_COMPLETE);
        if (!kind.equals("fairLock") && !kind.equals("fencedLock") && !kind.equals("rateLimiter")
                && Boolean.parseBoolean(System.getProperty("baton.fuzz.redisson", "true"))) {
            c.add(dev.baton.testkit.UserPattern.BESIDE_REDISSON);
        }
        switch (kind) {
            case "lock", "fairLock", "readWriteLock", "fencedLock" -> c.addAll(java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT,
                    dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_INTERRUPT, dev.baton.testkit.UserPattern.REENTRY, dev.baton.testkit.UserPattern.SCOPED_WORK, dev.baton.testkit.UserPattern.NEXT_CALL_IN_CALLBACK));
            case "semaphore", "expirableSemaphore" -> c.add(dev.baton.testkit.UserPattern.MULTI_PERMIT);
            case "rateLimiter" -> c.addAll(java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT,
                    dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_INTERRUPT,
                    dev.baton.testkit.UserPattern.MULTI_PERMIT));
            default -> { }
        }
        return c;
    }

    InterleavingFuzzTest(RedisServer redis) {
        this.redis = redis;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"lock", "fairLock", "readWriteLock", "fencedLock", "semaphore", "expirableSemaphore", "latch", "rateLimiter",
            "leaderElection"})
    @Timeout(value = 12, unit = TimeUnit.HOURS) // each storm and its drain are bounded; a long run sets its own length
    void stormsFindNoViolation(String kind) throws Exception {
        String only = System.getProperty("baton.fuzz.kinds", "");
        if (!only.isBlank() && !List.of(only.split(",")).contains(kind)) {
            System.out.println("[fuzz " + kind + "] not run: -Dbaton.fuzz.kinds=" + only);
            return;
        }
        // CI's time budget: the other server lanes run their one random storm for 4 s.
        int seconds = Integer.getInteger("baton.fuzz.seconds",
                System.getProperty("baton.redis.binary", "").isBlank() ? STORM_SECONDS : OTHER_LANE_SECONDS);
        long minutes = Long.getLong("baton.fuzz.minutes", 0);
        List<String> violations = new ArrayList<>();
        if (minutes <= 0) {
            String server = System.getProperty("baton.redis.binary", "");
            if (server.isBlank()) {
                violations.addAll(storm(kind, FIXED_SEED, seconds));
            } else {
                // CI's time budget: the other server lanes run the random storm only.
                System.out.println("[fuzz " + kind + "] the random storm only in this lane, of " + seconds + " s (-Dbaton.redis.binary="
                        + server + "); the lane on the Redis from PATH also runs seed " + FIXED_SEED + ", storms of " + STORM_SECONDS + " s");
            }
            violations.addAll(storm(kind, new Random().nextLong(), seconds));
        } else {
            int kinds = only.isBlank() ? 9 : only.split(",").length;
            long until = System.nanoTime() + TimeUnit.MINUTES.toNanos(minutes) / kinds;
            Random seeds = new Random();
            int storms = 0;
            while (System.nanoTime() - until < 0 && violations.isEmpty()) {
                violations.addAll(storm(kind, seeds.nextLong(), seconds));
                storms++;
            }
            System.out.println("[fuzz " + kind + "] long mode: " + storms + " storms of " + seconds + " s");
        }
        assertEquals(List.of(), violations, kind + ": the storm's history has violations");
        System.out.println("[fuzz " + kind + "] user patterns (dev.baton.testkit.UserPattern): " + PATTERNS.line(kind, covered(kind)));
        // A pattern the workers do for this kind that never ran checked nothing (issue 46).
        assertEquals(List.of(), PATTERNS.missing(kind, covered(kind)), kind + ": user patterns that never ran");
    }

    /** One storm of {@code seconds} with {@code seed}; its violations, each prefixed with the seed. */
    List<String> storm(String kind, long seed, int seconds) throws Exception {
        redis.command("FLUSHALL");
        Storm storm = new Storm(kind, seed, seconds);
        List<String> found;
        try {
            found = storm.run();
        } finally {
            storm.close();
        }
        System.out.println("[fuzz " + kind + "] seed " + seed + ": " + storm.summary() + "; "
                + (found.isEmpty() ? "no violation" : found.size() + " violations"));
        List<String> tagged = new ArrayList<>();
        for (int i = 0; i < found.size(); i++) {
            if (i < 20) {
                System.out.println("[fuzz " + kind + "] seed " + seed + " VIOLATION " + found.get(i));
            }
            tagged.add("seed " + seed + ": " + found.get(i));
        }
        return tagged.size() > 20 ? tagged.subList(0, 20) : tagged;
    }

    /** The clients, threads, history and checks of one storm. */
    private final class Storm implements AutoCloseable {
        final String kind;
        final long seed;
        final long endNanos;
        final String name;
        final History history = new History(COMMAND_TIMEOUT);
        final List<Baton> batons = new ArrayList<>();
        RedissonClient redisson;
        final RedisClient counterClient;
        final StatefulRedisConnection<String, String> counterConnection;
        final RedisCommands<String, String> counter;
        final String counterKey;
        final AtomicLong increments = new AtomicLong();
        final AtomicLong operations = new AtomicLong();
        final AtomicInteger interrupts = new AtomicInteger();
        final AtomicInteger cancels = new AtomicInteger();
        final AtomicInteger forces = new AtomicInteger();
        /** Redisson's own timeouts (its subscription lock, see {@link Worker#loop}); never a Baton call's. */
        final AtomicInteger redissonTimeouts = new AtomicInteger();
        final ScheduledExecutorService timers = Executors.newScheduledThreadPool(1);
        final ExecutorService threads = Executors.newCachedThreadPool();
        final Set<String> clients = new LinkedHashSet<>();
        final Latches latches;
        /** The rate limiter's admitted calls: {start nanos, permits}. */
        final List<long[]> rateStarts = java.util.Collections.synchronizedList(new ArrayList<>());

        Storm(String kind, long seed, int seconds) {
            this.kind = kind;
            this.seed = seed;
            this.name = "fuzz-" + kind;
            this.counterKey = "fuzz-counter";
            for (int c = 0; c < BATON_CLIENTS; c++) {
                batons.add(Baton.create(BatonOptions.builder().redisUri(redis.uri()).commandTimeout(COMMAND_TIMEOUT).build()));
            }
            if (withRedisson()) {
                Config config = new Config();
                config.useSingleServer().setAddress(redis.uri());
                redisson = Redisson.create(config);
            }
            counterClient = RedisClient.create(redis.uri());
            counterConnection = counterClient.connect();
            counter = counterConnection.sync();
            counter.set(counterKey, "0");
            if (kind.equals("semaphore")) {
                batons.get(0).semaphore(name).trySetPermits(PERMITS);
            } else if (kind.equals("expirableSemaphore")) {
                batons.get(0).permitExpirableSemaphore(name).trySetPermits(PERMITS);
            }
            latches = kind.equals("latch") ? new Latches() : null;
            this.endNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        }

        boolean withRedisson() {
            return !kind.equals("fairLock") && !kind.equals("fencedLock") && !kind.equals("rateLimiter")
                    && !kind.equals("leaderElection") && Boolean.parseBoolean(System.getProperty("baton.fuzz.redisson", "true"));
        }

        String summary() {
            if (latches != null) {
                return operations.get() + " operations, " + latches.rounds.get() + " rounds, " + latches.countDowns.get()
                        + " count-downs, " + latches.opened.get() + " waits that opened, " + cancels.get() + " cancels";
            }
            return operations.get() + " operations, " + history.holds().size() + " grants"
                    + (kind.equals("semaphore") ? " (" + handOffs() + " handed over in a client)" : "") + ", " + interrupts.get()
                    + " interrupts, " + cancels.get() + " cancels, " + forces.get() + " forceUnlocks"
                    + (redissonTimeouts.get() == 0 ? "" : ", " + redissonTimeouts.get() + " Redisson calls that gave up"
                    + " with Redisson's own RedisTimeoutException");
        }

        /** Semaphore grants the Baton clients made by an in-client hand-off. */
        long handOffs() {
            return batons.stream().mapToLong(dev.baton.Inside::semaphoreHandOffs).sum();
        }

        List<String> run() throws Exception {
            List<Future<?>> workers = new ArrayList<>();
            int index = 0;
            for (int c = 0; c < batons.size(); c++) {
                String client = "baton" + c;
                clients.add(client);
                for (int t = 0; t < BATON_THREADS; t++) {
                    Worker w = new Worker(client, batons.get(c), null, new Random(seed * 31 + index), index++);
                    workers.add(threads.submit(w::loop));
                }
            }
            if (redisson != null) {
                PATTERNS.ran(kind, dev.baton.testkit.UserPattern.BESIDE_REDISSON);
                clients.add("redisson");
                for (int t = 0; t < REDISSON_THREADS; t++) {
                    Worker w = new Worker("redisson", null, redisson, new Random(seed * 31 + index), index++);
                    workers.add(threads.submit(w::loop));
                }
            }
            Future<?> driver = latches == null ? null : threads.submit(latches::drive);
            long drainUntil = endNanos + DRAIN.toNanos();
            List<String> hung = new ArrayList<>();
            for (Future<?> w : workers) {
                try {
                    w.get(Math.max(1, drainUntil - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    hung.add("a worker was still in its last operation " + DRAIN.toSeconds()
                            + " s after the storm ended (a wait that never ends, or a lock nobody releases)");
                }
            }
            if (driver != null) {
                try {
                    driver.get(Math.max(1, drainUntil - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    hung.add("the latch's driver did not finish its last round " + DRAIN.toSeconds() + " s after the storm");
                }
            }
            List<String> found = new ArrayList<>(hung);
            found.addAll(endState());
            long counted = Long.parseLong(counter.get(counterKey));
            boolean exclusive = !kind.endsWith("emaphore") && !kind.equals("latch");
            found.addAll(history.judge(PERMITS, exclusive ? increments.get() : -1, counted,
                    kind.equals("latch") || kind.equals("rateLimiter") ? Set.of() : clients)); // the rate limiter's starts: rateJudged
            if (kind.equals("semaphore") && handOffs() == 0) {
                found.add("no semaphore grant was handed over in a client: the storm never reached the in-client hand-off");
            }
            if (kind.equals("rateLimiter")) {
                found.addAll(rateJudged());
            }
            return found;
        }

        /**
         * The rate limiter's starts as the callers saw them (System.nanoTime as each call
         * returned admitted): in every window from one start to another at most
         * RATE × (w + RATE_LATE) + burst permits. RATE_LATE is how late a start may be after its
         * slot on this loaded machine (the slot timer, the hand-off to a thread, the caller's
         * wake-up) without a wrong admission: 40 ms, two permits at this rate. The exact bound on
         * Redis's clock is RateScriptsTest's and the simulation's; this judges real threads.
         */
        List<String> rateJudged() {
            List<long[]> sorted = new ArrayList<>(rateStarts);
            sorted.sort((x, y) -> Long.compare(x[0], y[0]));
            long admitted = sorted.stream().mapToLong(x -> x[1]).sum();
            System.out.println("[fuzz rateLimiter] " + admitted + " permits started in " + sorted.size() + " calls at " + RATE);
            if (admitted == 0) {
                return List.of("no rate limiter call was admitted: the storm judged nothing");
            }
            double perNano = (double) RATE.permits() / TimeUnit.MICROSECONDS.toNanos(RATE.periodMicros());
            for (int i = 0; i < sorted.size(); i++) {
                long permits = 0;
                for (int j = i; j < sorted.size(); j++) {
                    permits += sorted.get(j)[1];
                    long w = sorted.get(j)[0] - sorted.get(i)[0];
                    if (permits > (w + RATE_LATE.toNanos()) * perNano + RATE.burst() + 1e-9) {
                        return List.of(permits + " permits started within " + w / 1000 + " µs: more than " + RATE
                                + " allows (+ " + RATE_LATE.toMillis() + " ms of lateness)");
                    }
                }
            }
            return List.of();
        }

        /** After the storm: nothing held, permits exact, no lease left in any client. */
        List<String> endState() throws InterruptedException {
            List<String> found = new ArrayList<>();
            // Clean-up of cancelled and interrupted waits is answered in the background, within
            // a command timeout of the wait's end; look until then.
            long until = System.nanoTime() + Bounds.within(COMMAND_TIMEOUT).toNanos();
            String state;
            while ((state = leftOver()) != null && System.nanoTime() - until < 0) {
                Thread.sleep(20);
            }
            if (state != null) {
                found.add("after the storm: " + state);
            }
            return found;
        }

        /** What is left over that should not be, or {@code null}. */
        String leftOver() {
            switch (kind) {
                case "semaphore" -> {
                    int available = batons.get(0).semaphore(name).availablePermits();
                    if (available != PERMITS) {
                        return "the semaphore has " + available + " permits, not " + PERMITS;
                    }
                }
                case "expirableSemaphore" -> {
                    int available = batons.get(0).permitExpirableSemaphore(name).availablePermits();
                    if (available != PERMITS) {
                        return "the expirable semaphore has " + available + " permits, not " + PERMITS;
                    }
                }
                case "latch" -> {
                    return null;
                }
                case "leaderElection" -> {
                    // Every candidacy closed as its worker ended: nobody leads, nobody is in line.
                    for (String key : List.of("baton_leader:{" + name + "}", "baton_leader_queue:{" + name + "}")) { // data-layout.md
                        Long exists = counter.exists(key);
                        if (exists != null && exists > 0) {
                            return key + " is still in Redis after every candidacy closed: " + counter.type(key);
                        }
                    }
                }
                case "rateLimiter" -> {
                    // Every call has ended and every slot has passed: the limiter refills and its
                    // hash expires (a reservation nobody undid, far ahead, would keep it).
                    String hash = "baton_rate:{" + name + "}"; // data-layout.md
                    Long exists = counter.exists(hash);
                    if (exists != null && exists > 0) {
                        return "the rate limiter's hash is still there: " + counter.hgetall(hash) + " (PTTL " + counter.pttl(hash) + " ms)";
                    }
                }
                default -> {
                    Long exists = counter.exists(name);
                    if (exists != null && exists > 0) {
                        return "the lock is still held: " + counter.hgetall(name);
                    }
                }
            }
            for (int c = 0; c < batons.size(); c++) {
                int held = batons.get(c).leasesHeld();
                if (held != 0) {
                    return "client baton" + c + " still counts " + held + " leases: " + batons.get(c).heldLeases();
                }
            }
            return null;
        }

        @Override
        public void close() {
            threads.shutdownNow();
            timers.shutdownNow();
            for (Baton b : batons) {
                b.close();
            }
            if (redisson != null) {
                redisson.shutdown();
            }
            counterConnection.close();
            counterClient.shutdown(0, 2, TimeUnit.SECONDS);
        }

        /** The latch's rounds: the driver arms it, workers count down and wait (see {@link Latches#drive}). */
        final class Latches {
            /** One arming of the latch: its count, the count-downs handed out and done. */
            final class Round {
                final long count;
                final AtomicLong tickets;
                final AtomicLong done = new AtomicLong();
                /** Set before the driver arms the next round: a read after it may see the next count. */
                volatile boolean over;
                volatile long lastTicketNanos = Long.MAX_VALUE;
                volatile long lastDoneNanos = Long.MAX_VALUE;
                final CompletableFuture<Void> allDone = new CompletableFuture<>();
                final List<CompletableFuture<Boolean>> unbounded = new java.util.concurrent.CopyOnWriteArrayList<>();

                Round(long count) {
                    this.count = count;
                    this.tickets = new AtomicLong(count);
                }
            }

            final AtomicReference<Round> round = new AtomicReference<>(new Round(0));
            final AtomicInteger rounds = new AtomicInteger();
            final AtomicInteger opened = new AtomicInteger();
            final AtomicInteger countDowns = new AtomicInteger();

            Latches() {
                Round none = round.get(); // the latch does not exist yet: open
                none.lastTicketNanos = System.nanoTime();
                none.lastDoneNanos = System.nanoTime();
                none.allDone.complete(null);
            }

            /** Arms the latch with 1-6 when it is open, waits for every count-down, checks the count. */
            void drive() {
                Random rnd = new Random(seed);
                BatonCountDownLatch latch = batons.get(0).countDownLatch(name);
                while (System.nanoTime() - endNanos < 0) {
                    long count = 1 + rnd.nextInt(6);
                    Round next = new Round(count);
                    round.get().over = true;
                    if (!latch.trySetCount(count)) {
                        history.violation("trySetCount refused on an open latch (count " + latch.getCount() + ")");
                        return;
                    }
                    round.set(next);
                    rounds.incrementAndGet();
                    try {
                        // The workers count down while the storm lasts; what is left after it,
                        // the driver counts down itself.
                        long left = endNanos - System.nanoTime();
                        if (left > 0) {
                            try {
                                next.allDone.get(left, TimeUnit.NANOSECONDS);
                            } catch (TimeoutException stormOver) {
                                // the rest below
                            }
                        }
                        if (!next.allDone.isDone()) {
                            long ticket;
                            while ((ticket = next.tickets.getAndDecrement()) > 0) {
                                if (ticket == 1) {
                                    next.lastTicketNanos = System.nanoTime();
                                }
                                latch.countDown();
                                countDowns.incrementAndGet();
                                if (next.done.incrementAndGet() == next.count) {
                                    next.lastDoneNanos = System.nanoTime();
                                    next.allDone.complete(null);
                                }
                            }
                        }
                        next.allDone.get(DRAIN.toSeconds(), TimeUnit.SECONDS);
                    } catch (Exception e) {
                        history.violation("round " + rounds.get() + ": its " + count + " count-downs did not all return: " + e);
                        return;
                    }
                    long left = latch.getCount();
                    if (left != 0) {
                        history.violation("round " + rounds.get() + ": " + count + " count-downs left the count at " + left);
                        return;
                    }
                    // Every wait without a limit that joined this round ends within the wake
                    // bound of the last count-down's return.
                    long bound = next.lastDoneNanos + Bounds.within(Bounds.WAKE).toNanos();
                    for (CompletableFuture<Boolean> w : next.unbounded) {
                        try {
                            w.get(Math.max(1, bound - System.nanoTime()), TimeUnit.NANOSECONDS);
                        } catch (TimeoutException e) {
                            history.violation("round " + rounds.get() + ": a wait without a limit was not woken within "
                                    + Bounds.within(Bounds.WAKE).toMillis() + " ms of the last count-down");
                        } catch (Exception e) {
                            history.violation("round " + rounds.get() + ": a wait without a limit failed: " + e);
                        }
                    }
                    LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(rnd.nextInt(2000)));
                }
            }

            /** One latch operation by a worker. */
            void step(Worker w) throws Exception {
                w.pause(500);
                Round r = round.get();
                long ticket = r.tickets.getAndDecrement();
                if (ticket > 0) {
                    if (ticket == 1) {
                        r.lastTicketNanos = System.nanoTime();
                    }
                    long t0 = System.nanoTime();
                    if (w.redisson != null) {
                        w.redisson.getCountDownLatch(name).countDown();
                    } else if (w.rnd.nextBoolean()) {
                        w.baton.countDownLatch(name).countDown();
                    } else {
                        w.baton.countDownLatch(name).countDownAsync().toCompletableFuture().get();
                    }
                    w.bound("countDown", t0, Bounds.failure(COMMAND_TIMEOUT).toNanos());
                    countDowns.incrementAndGet();
                    if (r.done.incrementAndGet() == r.count) {
                        r.lastDoneNanos = System.nanoTime();
                        r.allDone.complete(null);
                    }
                    return;
                }
                long t0 = System.nanoTime();
                int op = w.rnd.nextInt(w.redisson != null ? 2 : 5);
                boolean opened;
                String what;
                switch (op) {
                    case 0 -> {
                        long wait = w.rnd.nextInt(6);
                        what = "await(" + wait + " ms)";
                        opened = w.redisson != null ? w.redisson.getCountDownLatch(name).await(wait, TimeUnit.MILLISECONDS)
                                : w.baton.countDownLatch(name).await(wait, TimeUnit.MILLISECONDS);
                        w.bound(what, t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                    }
                    case 1 -> {
                        long wait = 10 + w.rnd.nextInt(190);
                        what = "await(" + wait + " ms)";
                        opened = w.redisson != null ? w.redisson.getCountDownLatch(name).await(wait, TimeUnit.MILLISECONDS)
                                : w.baton.countDownLatch(name).await(wait, TimeUnit.MILLISECONDS);
                        w.bound(what, t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                    }
                    case 2 -> {
                        what = "awaitAsync() given up";
                        CompletableFuture<Void> f = w.baton.countDownLatch(name).awaitAsync().toCompletableFuture();
                        opened = w.givenUp(f);
                    }
                    case 3 -> {
                        what = "await()";
                        // A wait without a limit, run on its own thread: it must end within the
                        // wake bound of this round's last count-down (checked by the driver).
                        BatonCountDownLatch latch = w.baton.countDownLatch(name);
                        threads.submit(() -> {
                            // Joins the round that is current when it starts waiting.
                            CompletableFuture<Boolean> done = new CompletableFuture<>();
                            round.get().unbounded.add(done);
                            try {
                                latch.await();
                                done.complete(true);
                            } catch (Throwable e) {
                                done.completeExceptionally(e);
                            }
                        });
                        return;
                    }
                    default -> {
                        what = "getCount()";
                        long doneBefore = r.done.get();
                        long count = w.baton.countDownLatch(name).getCount();
                        long startedAfter = r.count - Math.max(0, r.tickets.get());
                        if (!r.over && round.get() == r && (count > r.count - doneBefore || count < r.count - startedAfter)) {
                            history.violation("getCount() read " + count + " in a round of " + r.count + " with "
                                    + doneBefore + " count-downs done before and at most " + startedAfter + " started");
                        }
                        return;
                    }
                }
                long t1 = System.nanoTime();
                if (opened) {
                    this.opened.incrementAndGet();
                }
                // Opened: the count was 0 at some instant of the wait. It cannot be before the
                // round's last count-down was handed out, unless the wait began in an earlier,
                // open round.
                long lastTicket = r.lastTicketNanos;
                if (opened && (lastTicket == Long.MAX_VALUE || lastTicket - t1 > 0)) {
                    history.violation(what + " by " + w.client + " returned true at " + t1 + " while round "
                            + rounds.get() + " of " + r.count + " had handed out " + (r.count - Math.max(0, r.tickets.get()))
                            + " count-downs");
                }
            }
        }

        /** One thread of one client, looping over random operations until the storm ends. */
        final class Worker {
            final String client;
            final Baton baton;
            final RedissonClient redisson;
            final Random rnd;
            final long ownerId;
            /** When the current operation's acquisition was called. */
            long asked;
            /** This worker in a hold's description and the traces: " @<client>/<index>/t<thread>". */
            String tag = "";

            Worker(String client, Baton baton, RedissonClient redisson, Random rnd, int index) {
                this.client = client;
                this.baton = baton;
                this.redisson = redisson;
                this.rnd = rnd;
                // Far from any thread id, so an async owner never re-enters a thread's hold.
                this.ownerId = 7_000_000_000L + index;
            }

            Object loop() {
                tag = " @" + client + "/" + (ownerId - 7_000_000_000L) + "/t" + Thread.currentThread().getId();
                while (System.nanoTime() - endNanos < 0) {
                    operations.incrementAndGet();
                    try {
                        switch (kind) {
                            case "lock" -> lockStep(baton == null ? null : baton.lock(name), Mode.EXCLUSIVE,
                                    () -> redisson.getLock(name));
                            case "fairLock" -> lockStep(baton.fairLock(name), Mode.EXCLUSIVE, null);
                            case "fencedLock" -> lockStep(baton.fencedLock(name), Mode.EXCLUSIVE, null);
                            case "readWriteLock" -> {
                                boolean write = rnd.nextInt(3) == 0;
                                lockStep(baton == null ? null : write ? baton.readWriteLock(name).writeLock()
                                                : baton.readWriteLock(name).readLock(), write ? Mode.EXCLUSIVE : Mode.SHARED,
                                        () -> write ? redisson.getReadWriteLock(name).writeLock()
                                                : redisson.getReadWriteLock(name).readLock());
                            }
                            case "semaphore" -> semaphoreStep();
                            case "expirableSemaphore" -> expirableStep();
                            case "latch" -> latches.step(this);
                            case "rateLimiter" -> rateStep();
                            case "leaderElection" -> electionStep();
                            default -> throw new IllegalArgumentException(kind);
                        }
                    } catch (org.redisson.client.RedisTimeoutException e) {
                        if (redisson == null) {
                            throw e;
                        }
                        // Redisson gave up on its own (its pub/sub subscription lock, a known Redisson
                        // weakness on a loaded machine, redisson/redisson#7264): not a Baton call, and
                        // nothing was granted. Counted and printed, not judged.
                        redissonTimeouts.incrementAndGet();
                        trace(System.nanoTime(), "Redisson gave up: " + e.getMessage());
                    } catch (Throwable e) {
                        history.failed(kind + " operation by " + client + tag + " (its last steps: "
                                + history.steps(tag.substring(2)) + ")", e);
                    }
                    Thread.interrupted(); // an interrupt meant for an operation that had already ended
                }
                if (candidacy != null) {
                    long t0 = System.nanoTime();
                    endAsyncHold(asyncHold.get());
                    candidacy.close();
                    bound("close at the storm's end", t0, Bounds.failure(COMMAND_TIMEOUT).toNanos());
                    candidacy = null;
                }
                return null;
            }

            void bound(String what, long startNanos, long boundNanos) {
                long now = System.nanoTime();
                history.call(what + " by " + client, startNanos, now, boundNanos);
                trace(startNanos, what + " took " + (now - startNanos) / 1000 + " us");
            }

            void trace(long nanos, String step) {
                history.trace(tag.substring(2), nanos, step);
            }

            /** Parks 0 to {@code maxMicros} µs. */
            void pause(int maxMicros) {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(rnd.nextInt(maxMicros + 1)));
            }

            /** Inside an exclusive hold: read, hold 0-3 ms, write the counter in Redis. */
            void inside(Mode mode) {
                if (mode == Mode.EXCLUSIVE) {
                    long read = Long.parseLong(counter.get(counterKey));
                    pause(3000);
                    counter.set(counterKey, Long.toString(read + 1));
                    increments.incrementAndGet();
                } else {
                    pause(3000);
                }
            }

            // ---- locks ------------------------------------------------------------------

            void lockStep(BatonLock lock, Mode mode, java.util.function.Supplier<RLock> theirs) throws Exception {
                if (redisson != null) {
                    redissonLockStep(theirs.get(), mode);
                    return;
                }
                if (rnd.nextInt(400) == 0 && FORCE) {
                    PATTERNS.ran(kind, dev.baton.testkit.UserPattern.FORCE_UNLOCK);
                    long f0 = System.nanoTime();
                    lock.forceUnlock();
                    history.force(f0, System.nanoTime());
                    trace(f0, "forceUnlock");
                    forces.incrementAndGet();
                    return;
                }
                long t0 = System.nanoTime();
                asked = t0;
                int op = rnd.nextInt(13);
                PATTERNS.ran(kind, switch (op) {
                    case 12 -> dev.baton.testkit.UserPattern.SCOPED_WORK;
                    case 3, 4 -> dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT;
                    case 6, 7 -> dev.baton.testkit.UserPattern.GIVEN_UP_BY_INTERRUPT;
                    default -> dev.baton.testkit.UserPattern.LONG_WAIT;
                });
                switch (op) {
                    case 12 -> scopedStep(lock, mode);
                    case 0 -> { // lock(), sometimes re-entered
                        lock.lock();
                        held("lock()", lock, mode, () -> {
                            if (rnd.nextInt(3) == 0) {
                                PATTERNS.ran(kind, dev.baton.testkit.UserPattern.REENTRY);
                                lock.lock();
                                lock.unlock();
                            }
                        }, lock::unlock);
                    }
                    case 1 -> {
                        lock.lock(LEASE_MS, TimeUnit.MILLISECONDS);
                        held("lock(lease)", lock, mode, () -> {
                            if (rnd.nextBoolean()) {
                                lock.updateLease(Duration.ofMillis(LEASE_MS + 1000));
                            }
                        }, lock::unlock);
                    }
                    case 2 -> {
                        boolean got = lock.tryLock();
                        bound("tryLock()", t0, Bounds.failure(COMMAND_TIMEOUT).toNanos());
                        if (got) {
                            held("tryLock()", lock, mode, null, lock::unlock);
                        }
                    }
                    case 3, 4, 5 -> { // short waits, as a request handler has: the most common race
                        long wait = op == 5 ? 10 + rnd.nextInt(190) : rnd.nextInt(6);
                        boolean got = op == 4 ? lock.tryLock(wait, LEASE_MS, TimeUnit.MILLISECONDS)
                                : lock.tryLock(wait, TimeUnit.MILLISECONDS);
                        bound("tryLock(" + wait + " ms)", t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        if (got) {
                            held("tryLock(" + wait + " ms)", lock, mode, null, lock::unlock);
                        }
                    }
                    case 6, 7 -> { // interrupted while waiting (or not: the interrupt may come late)
                        long wait = 50 + rnd.nextInt(150);
                        Interrupter interrupter = new Interrupter(rnd.nextInt(3001));
                        boolean got;
                        try {
                            got = op == 6 ? lockInterruptibly(lock) : lock.tryLock(wait, TimeUnit.MILLISECONDS);
                        } catch (InterruptedException e) {
                            got = false;
                        } finally {
                            interrupter.disarm();
                        }
                        trace(t0, (op == 6 ? "lockInterruptibly()" : "tryLock(" + wait + " ms)") + " with an interrupt after "
                                + interrupter.micros + " us: " + (got ? "granted" : "not granted") + " after "
                                + (System.nanoTime() - t0) / 1000 + " us");
                        if (op == 7) {
                            bound("tryLock(" + wait + " ms) interrupted", t0,
                                    Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        }
                        if (got) {
                            held(op == 6 ? "lockInterruptibly()" : "tryLock(interrupted)", lock, mode, null, lock::unlock);
                        }
                    }
                    case 8 -> { // lockAsync(owner), given up after 0-3 ms: cancelled, orTimeout, completeOnTimeout
                        CompletableFuture<?> f = lock instanceof BatonFencedLock fenced && rnd.nextBoolean()
                                ? fenced.lockAndGetTokenAsync(ownerId).toCompletableFuture()
                                : lock.lockAsync(ownerId).toCompletableFuture();
                        if (givenUp(f)) {
                            heldAsync("lockAsync(owner)", lock, mode);
                        }
                    }
                    case 9 -> {
                        long wait = rnd.nextInt(6);
                        CompletableFuture<Boolean> first = lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId).toCompletableFuture();
                        if (rnd.nextBoolean()) {
                            // Bounded by orTimeout and retried by the same owner from the timeout's
                            // own callback, as a retry library does.
                            long retryWait = rnd.nextInt(6);
                            cancels.incrementAndGet();
                            PATTERNS.ran(kind, dev.baton.testkit.UserPattern.NEXT_CALL_IN_CALLBACK);
                            first = first.orTimeout(rnd.nextInt(3001), TimeUnit.MICROSECONDS).handle((ok, e) -> e == null
                                    ? CompletableFuture.completedFuture(ok)
                                    : lock.tryLockAsync(retryWait, TimeUnit.MILLISECONDS, ownerId).toCompletableFuture())
                                    .thenCompose(f -> f);
                        }
                        boolean got = first.get();
                        bound("tryLockAsync(" + wait + " ms)", t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        if (got) {
                            heldAsync("tryLockAsync(owner)", lock, mode);
                        }
                    }
                    case 10 -> {
                        if (lock instanceof BatonFencedLock fenced) {
                            OptionalLong token = fenced.tryLockAndGetToken(rnd.nextInt(6), LEASE_MS, TimeUnit.MILLISECONDS);
                            if (token.isPresent()) {
                                History.Hold hold = history.granted(client, "tryLockAndGetToken" + tag, mode, 1, asked, System.nanoTime(),
                                        token.getAsLong());
                                inside(mode);
                                release(hold, lock::unlock);
                            }
                            return;
                        }
                        LockHold handle = lock.acquire();
                        held("acquire()", lock, mode, null, handle::close);
                    }
                    default -> {
                        if (lock instanceof BatonFencedLock fenced) {
                            long token = fenced.lockAndGetToken();
                            History.Hold hold = history.granted(client, "lockAndGetToken" + tag, mode, 1, asked, System.nanoTime(), token);
                            inside(mode);
                            release(hold, lock::unlock);
                            return;
                        }
                        LockHold handle = lock.acquire(LEASE_MS, TimeUnit.MILLISECONDS);
                        held("acquire(lease)", lock, mode, null, handle::close);
                    }
                }
            }

            /**
             * Gives up on an async acquisition after 0-3 ms the ways users do: cancel, orTimeout,
             * completeOnTimeout. Whether it had been granted first (then the caller holds it).
             */
            boolean givenUp(CompletableFuture<?> f) throws InterruptedException {
                boolean got = givenUpWithoutTrace(f);
                trace(asked, "async acquisition given up: " + (got ? "had been granted" : "not granted"));
                return got;
            }

            boolean givenUpWithoutTrace(CompletableFuture<?> f) throws InterruptedException {
                cancels.incrementAndGet();
                int how = rnd.nextInt(3);
                PATTERNS.ran(kind, how == 0 ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL : how == 1 ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT
                        : dev.baton.testkit.UserPattern.GIVEN_UP_BY_COMPLETE);
                if (how == 0) {
                    pause(3000);
                    return !f.cancel(true) && !f.isCompletedExceptionally();
                }
                int micros = rnd.nextInt(3001);
                @SuppressWarnings("unchecked")
                CompletableFuture<Object> any = (CompletableFuture<Object>) f;
                CompletableFuture<Object> bounded = how == 1 ? any.orTimeout(micros, TimeUnit.MICROSECONDS)
                        : any.completeOnTimeout(GAVE_UP, micros, TimeUnit.MICROSECONDS);
                try {
                    return bounded.get() != GAVE_UP;
                } catch (ExecutionException timedOut) {
                    if (!(timedOut.getCause() instanceof TimeoutException)) {
                        history.failed("an async acquisition", timedOut.getCause());
                    }
                    return false;
                }
            }

            boolean lockInterruptibly(BatonLock lock) throws InterruptedException {
                lock.lockInterruptibly();
                return true;
            }

            /** Records a hold of the current thread, runs {@code during} and the section, then releases. */
            void held(String how, BatonLock lock, Mode mode, ThrowingRunnable during, ThrowingRunnable release) throws Exception {
                long token = lock instanceof BatonFencedLock fenced ? fenced.getToken() : 0;
                History.Hold hold = history.granted(client, how + tag, mode, 1, asked, System.nanoTime(), token);
                Throwable told = null;
                try {
                    if (during != null) {
                        during.run(); // re-entry, updateLease
                    }
                } catch (Exception e) {
                    told = e; // the hold was told of a loss: judged as its release's error
                }
                inside(mode);
                release(hold, release, told);
            }

            /**
             * Lease-scoped work, blocking or async: granted as the work starts, released from the
             * work's end until the call returns; a LeaseLostException from the call is the loss
             * the hold was told of. The async form's work runs on a thread of its own (never the
             * thread that completed the acquisition).
             */
            void scopedStep(BatonLock lock, Mode mode) throws Exception {
                History.Hold[] hold = new History.Hold[1];
                long[] workEnded = new long[1];
                boolean async = rnd.nextBoolean();
                String how = async ? "withLockAsync" : "withLock";
                Throwable error = null;
                try {
                    if (async) {
                        lock.withLockAsync(scope -> CompletableFuture.runAsync(() -> {
                            hold[0] = history.granted(client, how + tag, mode, 1, asked, System.nanoTime(),
                                    scope.fencingToken().orElse(0));
                            inside(mode);
                            workEnded[0] = System.nanoTime();
                        }, task -> new Thread(task, "fuzz-scoped-work").start())).toCompletableFuture().get();
                    } else {
                        lock.withLock(scope -> {
                            hold[0] = history.granted(client, how + tag, mode, 1, asked, System.nanoTime(),
                                    scope.fencingToken().orElse(0));
                            inside(mode);
                            workEnded[0] = System.nanoTime();
                            return null;
                        });
                    }
                } catch (ExecutionException e) {
                    error = e.getCause();
                } catch (Exception e) {
                    error = e;
                }
                if (hold[0] == null) {
                    if (error instanceof Exception e) {
                        throw e; // the acquisition failed: judged as any call's failure
                    }
                    return;
                }
                long r1 = System.nanoTime();
                history.released(hold[0], workEnded[0] == 0 ? r1 : workEnded[0], r1, error);
                trace(workEnded[0], how + " returned" + (error == null ? "" : " " + error.getClass().getSimpleName()));
                history.call("release by " + client, workEnded[0] == 0 ? r1 : workEnded[0], r1,
                        Bounds.failure(COMMAND_TIMEOUT).toNanos());
            }

            void heldAsync(String how, BatonLock lock, Mode mode) {
                History.Hold hold = history.granted(client, how + tag, mode, 1, asked, System.nanoTime(), 0);
                inside(mode);
                release(hold, () -> lock.unlockAsync(ownerId).toCompletableFuture().get());
            }

            void release(History.Hold hold, ThrowingRunnable release) {
                release(hold, release, null);
            }

            /** Releases the hold; {@code told}: what an earlier call within the hold threw, if anything. */
            void release(History.Hold hold, ThrowingRunnable release, Throwable told) {
                long r0 = System.nanoTime();
                Throwable error = told;
                try {
                    release.run();
                } catch (ExecutionException e) {
                    error = error != null ? error : e.getCause();
                } catch (Throwable e) {
                    error = error != null ? error : e;
                }
                long r1 = System.nanoTime();
                history.released(hold, r0, r1, error);
                trace(r0, "release of " + hold.how.split(" @")[0] + " took " + (r1 - r0) / 1000 + " us"
                        + (error == null ? "" : " threw " + error.getClass().getSimpleName()));
                history.call("release by " + client, r0, r1, Bounds.failure(COMMAND_TIMEOUT).toNanos());
            }

            void redissonLockStep(RLock lock, Mode mode) throws Exception {
                long t0 = System.nanoTime();
                asked = t0;
                // No untimed Redisson wait on a read-write lock: Redisson 4.7 answers a write
                // release's broadcast with permits for the threads parked at that instant, so a
                // waiter between its attempt and its wait sleeps until the TTL it saw (up to the
                // 60 s lease here, past the drain); see InteropTest.awaitParkedInRedisson.
                int op = kind.equals("readWriteLock") ? 1 + rnd.nextInt(2) : rnd.nextInt(3);
                switch (op) {
                    case 0 -> {
                        lock.lock();
                        redissonHeld("redisson lock()", lock, mode);
                    }
                    case 1 -> {
                        long wait = rnd.nextInt(6);
                        if (lock.tryLock(wait, TimeUnit.MILLISECONDS)) {
                            redissonHeld("redisson tryLock(" + wait + " ms)", lock, mode);
                        }
                    }
                    default -> {
                        long wait = 10 + rnd.nextInt(190);
                        if (lock.tryLock(wait, LEASE_MS, TimeUnit.MILLISECONDS)) {
                            redissonHeld("redisson tryLock(" + wait + " ms, lease)", lock, mode);
                        }
                    }
                }
            }

            void redissonHeld(String how, RLock lock, Mode mode) {
                History.Hold hold = history.granted(client, how + tag, mode, 1, asked, System.nanoTime(), 0);
                inside(mode);
                release(hold, lock::unlock);
            }

            // ---- leader election ------------------------------------------------------------

            /** This worker's candidacy, or null. */
            dev.baton.Candidacy candidacy;

            /**
             * One step of a candidate: join (blocking work on the candidacy's thread, or async
             * work), or, joined: relinquish (one in three interrupted), close (and join again
             * later), wait for leadership a little, or let the work run. A blocking work reads and
             * writes the counter while it leads (a lost update is two leaders) and records its
             * hold with its epoch as the token (epochs must rise); it returns after 1-5 rounds, or
             * one in four leads until stopped.
             */
            void electionStep() throws Exception {
                if (candidacy == null) {
                    dev.baton.BatonLeaderElection election = baton.leaderElection(name);
                    PATTERNS.ran(kind, dev.baton.testkit.UserPattern.LONG_WAIT);
                    String identity = client + tag;
                    asked = System.nanoTime();
                    candidacy = rnd.nextInt(3) == 0 ? election.joinAsync(identity, this::leadAsync)
                            : election.join(identity, this::lead);
                    trace(asked, "joined as " + identity);
                    pause(3000);
                    return;
                }
                long t0 = System.nanoTime();
                switch (rnd.nextInt(10)) {
                    case 0 -> {
                        PATTERNS.ran(kind, dev.baton.testkit.UserPattern.RELINQUISH);
                        boolean interrupt = rnd.nextInt(3) == 0;
                        Interrupter interrupter = interrupt ? new Interrupter(rnd.nextInt(3001)) : null;
                        try {
                            endAsyncHold(asyncHold.get());
                            boolean was = candidacy.relinquish();
                            trace(t0, "relinquish: " + was);
                            // A blocking work ends at its next interruptible step (at most 3 ms of a
                            // round here), then the release: one command's bound.
                            bound("relinquish", t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(10)).toNanos());
                        } catch (InterruptedException e) {
                            PATTERNS.ran(kind, dev.baton.testkit.UserPattern.GIVEN_UP_BY_INTERRUPT);
                            trace(t0, "relinquish interrupted");
                        } finally {
                            if (interrupter != null) {
                                interrupter.disarm();
                            }
                        }
                    }
                    case 1 -> {
                        PATTERNS.ran(kind, dev.baton.testkit.UserPattern.CLOSE_AND_REJOIN);
                        endAsyncHold(asyncHold.get());
                        candidacy.close();
                        bound("close", t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(10)).toNanos());
                        trace(t0, "closed");
                        candidacy = null;
                    }
                    case 2 -> {
                        boolean leads = candidacy.awaitLeadership(rnd.nextInt(50), TimeUnit.MILLISECONDS);
                        trace(t0, "awaitLeadership: " + leads);
                    }
                    default -> pause(3000);
                }
            }

            /** A blocking leadership work: 1-5 rounds of the counter, or until stopped. */
            void lead(dev.baton.Leadership leadership) throws Exception {
                PATTERNS.ran(kind, dev.baton.testkit.UserPattern.SCOPED_WORK);
                History.Hold hold = history.granted(client, "leads (epoch " + leadership.epoch() + ")" + tag, Mode.EXCLUSIVE, 1,
                        asked, System.nanoTime(), leadership.epoch());
                java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
                try {
                    boolean untilStopped = r.nextInt(4) == 0;
                    int rounds = 1 + r.nextInt(5);
                    for (int i = 0; untilStopped || i < rounds; i++) {
                        leadership.checkValid();
                        long read = Long.parseLong(counter.get(counterKey));
                        Thread.sleep(r.nextInt(4));
                        // Once sent, the write is waited for through an interrupt (a relinquish's)
                        // and counted: Lettuce's sync call would throw with the SET applied.
                        java.util.concurrent.Future<String> written = counterConnection.async().set(counterKey, Long.toString(read + 1));
                        boolean interrupted = false;
                        while (true) {
                            try {
                                written.get();
                                break;
                            } catch (InterruptedException e) {
                                interrupted = true;
                            }
                        }
                        increments.incrementAndGet();
                        if (interrupted) {
                            throw new InterruptedException("interrupted while writing the counter (written)");
                        }
                    }
                    PATTERNS.ran(kind, dev.baton.testkit.UserPattern.WORK_RETURNS);
                } finally {
                    long now = System.nanoTime();
                    history.released(hold, now, now, null);
                }
            }

            /**
             * The open hold of this worker's async work, or null. Its end is recorded before the
             * stage completes (the timer) or before this worker asks for the stop (relinquish,
             * close): a callback on the stage runs after Baton's own, which sends the release.
             */
            final java.util.concurrent.atomic.AtomicReference<History.Hold> asyncHold = new java.util.concurrent.atomic.AtomicReference<>();

            void endAsyncHold(History.Hold hold) {
                if (hold != null && asyncHold.compareAndSet(hold, null)) {
                    long now = System.nanoTime();
                    history.released(hold, now, now, null);
                }
            }

            /** An async leadership work: holds for 0-20 ms on a timer (no counter: its stop cannot stop running code). */
            CompletionStage<Void> leadAsync(dev.baton.Leadership leadership) {
                PATTERNS.ran(kind, dev.baton.testkit.UserPattern.SCOPED_WORK);
                History.Hold hold = history.granted(client, "leads async (epoch " + leadership.epoch() + ")" + tag, Mode.EXCLUSIVE, 1,
                        asked, System.nanoTime(), leadership.epoch());
                asyncHold.set(hold);
                CompletableFuture<Void> work = new CompletableFuture<>();
                work.whenComplete((ok, e) -> endAsyncHold(hold)); // a stop this worker did not ask for (none without faults)
                timers.schedule(() -> {
                    PATTERNS.ran(kind, dev.baton.testkit.UserPattern.WORK_RETURNS);
                    endAsyncHold(hold);
                    work.complete(null);
                }, java.util.concurrent.ThreadLocalRandom.current().nextInt(20), TimeUnit.MILLISECONDS);
                return work;
            }

            // ---- the rate limiter -----------------------------------------------------------

            void rateStep() throws Exception {
                int k = 1 + rnd.nextInt(2);
                if (k > 1) {
                    PATTERNS.ran(kind, dev.baton.testkit.UserPattern.MULTI_PERMIT);
                }
                dev.baton.BatonRateLimiter r = baton.rateLimiter(name, RATE);
                long t0 = System.nanoTime();
                asked = t0;
                switch (rnd.nextInt(7)) {
                    case 0 -> {
                        PATTERNS.ran(kind, dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT);
                        boolean got = r.tryAcquire(k);
                        bound("tryAcquire(" + k + ")", t0, Bounds.failure(COMMAND_TIMEOUT).toNanos());
                        started(got, k, "tryAcquire");
                    }
                    case 1, 2 -> {
                        long wait = rnd.nextBoolean() ? rnd.nextInt(6) : 10 + rnd.nextInt(190);
                        PATTERNS.ran(kind, wait < 6 ? dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT : dev.baton.testkit.UserPattern.LONG_WAIT);
                        boolean got = r.tryAcquire(k, wait, TimeUnit.MILLISECONDS);
                        bound("tryAcquire(" + k + ", " + wait + " ms)", t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        started(got, k, "tryAcquire(wait)");
                    }
                    case 3 -> {
                        PATTERNS.ran(kind, dev.baton.testkit.UserPattern.LONG_WAIT);
                        r.acquire(k);
                        started(true, k, "acquire");
                    }
                    case 4 -> {
                        long wait = rnd.nextInt(200);
                        boolean got = r.tryAcquireAsync(k, wait, TimeUnit.MILLISECONDS).toCompletableFuture().get();
                        bound("tryAcquireAsync(" + k + ", " + wait + " ms)", t0,
                                Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        started(got, k, "tryAcquireAsync");
                    }
                    case 5 -> {
                        CompletableFuture<Void> f = r.acquireAsync(k).toCompletableFuture();
                        started(givenUp(f), k, "acquireAsync given up too late");
                    }
                    default -> {
                        PATTERNS.ran(kind, dev.baton.testkit.UserPattern.GIVEN_UP_BY_INTERRUPT);
                        Interrupter interrupter = new Interrupter(rnd.nextInt(3001));
                        boolean got;
                        try {
                            r.acquire(k);
                            got = true;
                        } catch (InterruptedException e) {
                            got = false;
                        } finally {
                            interrupter.disarm();
                        }
                        started(got, k, "acquire interrupted too late");
                    }
                }
            }

            /** An admitted call starts now, as its caller sees it. */
            void started(boolean admitted, int k, String how) {
                if (admitted) {
                    long now = System.nanoTime();
                    rateStarts.add(new long[] {now, k});
                    trace(now, how + " admitted " + k);
                }
            }

            // ---- semaphores ---------------------------------------------------------------

            void semaphoreStep() throws Exception {
                int k = 1 + rnd.nextInt(2);
                if (k > 1) {
                    PATTERNS.ran(kind, dev.baton.testkit.UserPattern.MULTI_PERMIT);
                }
                long t0 = System.nanoTime();
                asked = t0;
                if (redisson != null) {
                    RSemaphore s = redisson.getSemaphore(name);
                    boolean got = rnd.nextBoolean() ? s.tryAcquire(k, Duration.ofMillis(rnd.nextInt(200))) : acquireRedisson(s, k);
                    if (got) {
                        permitsHeld("redisson", k, () -> s.release(k));
                    }
                    return;
                }
                BatonSemaphore s = baton.semaphore(name);
                switch (rnd.nextInt(9)) {
                    case 0 -> {
                        s.acquire(k);
                        permitsHeld("acquire(" + k + ")", k, () -> releaseSome(s, k));
                    }
                    case 1 -> {
                        if (s.tryAcquire(k)) {
                            permitsHeld("tryAcquire(" + k + ")", k, () -> releaseSome(s, k));
                        }
                        bound("tryAcquire(k)", t0, Bounds.failure(COMMAND_TIMEOUT).toNanos());
                    }
                    case 2, 3 -> {
                        long wait = rnd.nextBoolean() ? rnd.nextInt(6) : 10 + rnd.nextInt(190);
                        boolean got = s.tryAcquire(k, wait, TimeUnit.MILLISECONDS);
                        bound("tryAcquire(" + k + ", " + wait + " ms)", t0,
                                Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        if (got) {
                            permitsHeld("tryAcquire(" + k + ", wait)", k, () -> releaseSome(s, k));
                        }
                    }
                    case 4 -> {
                        CompletableFuture<Void> f = s.acquireAsync(k).toCompletableFuture();
                        if (givenUp(f)) {
                            permitsHeld("acquireAsync(" + k + ")", k, () -> s.releaseAsync(k).toCompletableFuture().get());
                        }
                    }
                    case 5 -> {
                        long wait = rnd.nextInt(6);
                        boolean got = s.tryAcquireAsync(k, wait, TimeUnit.MILLISECONDS).toCompletableFuture().get();
                        bound("tryAcquireAsync(" + wait + " ms)", t0,
                                Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        if (got) {
                            permitsHeld("tryAcquireAsync(" + k + ")", k, () -> s.releaseAsync(k).toCompletableFuture().get());
                        }
                    }
                    case 6 -> {
                        SemaphorePermits handle = s.acquirePermits(k);
                        permitsHeld("acquirePermits(" + k + ")", k, handle::close);
                    }
                    default -> {
                        Interrupter interrupter = new Interrupter(rnd.nextInt(3001));
                        boolean got;
                        try {
                            s.acquire(k);
                            got = true;
                        } catch (InterruptedException e) {
                            got = false;
                        } finally {
                            interrupter.disarm();
                        }
                        if (got) {
                            permitsHeld("acquire(" + k + ") interrupted late", k, () -> releaseSome(s, k));
                        }
                    }
                }
            }

            boolean acquireRedisson(RSemaphore s, int k) throws InterruptedException {
                s.acquire(k);
                return true;
            }

            void releaseSome(BatonSemaphore s, int k) {
                if (k == 1 && rnd.nextBoolean()) {
                    s.release();
                } else {
                    s.release(k);
                }
            }

            void permitsHeld(String how, int k, ThrowingRunnable release) {
                History.Hold hold = history.granted(client, how + tag, Mode.PERMITS, k, asked, System.nanoTime(), 0);
                pause(3000);
                release(hold, release);
            }

            /**
             * Lease-scoped work under one permit: granted as the work starts, released from the
             * work's end until the call returns; a LeaseLostException is a loss the call told.
             */
            void scopedPermit(BatonPermitExpirableSemaphore s) throws Exception {
                History.Hold[] hold = new History.Hold[1];
                long[] workEnded = new long[1];
                Exception error = null;
                try {
                    s.withPermit(LEASE_MS, TimeUnit.MILLISECONDS, scope -> {
                        hold[0] = history.granted(client, "withPermit" + tag, Mode.PERMITS, 1, asked, System.nanoTime(), 0);
                        pause(3000);
                        workEnded[0] = System.nanoTime();
                        return null;
                    });
                } catch (Exception e) {
                    error = e;
                }
                if (hold[0] == null) {
                    if (error != null) {
                        throw error; // the acquisition failed: judged as any call's failure
                    }
                    return;
                }
                long r1 = System.nanoTime();
                long r0 = workEnded[0] == 0 ? r1 : workEnded[0];
                history.released(hold[0], r0, r1, error);
                history.call("release by " + client, r0, r1, Bounds.failure(COMMAND_TIMEOUT).toNanos());
            }

            void expirableStep() throws Exception {
                long t0 = System.nanoTime();
                asked = t0;
                if (redisson != null) {
                    RPermitExpirableSemaphore s = redisson.getPermitExpirableSemaphore(name);
                    String id = rnd.nextBoolean() ? s.acquire(LEASE_MS, TimeUnit.MILLISECONDS)
                            : s.tryAcquire(rnd.nextInt(200), LEASE_MS, TimeUnit.MILLISECONDS);
                    if (id != null) {
                        permitsHeld("redisson", 1, () -> s.release(id));
                    }
                    return;
                }
                BatonPermitExpirableSemaphore s = baton.permitExpirableSemaphore(name);
                switch (rnd.nextInt(9)) {
                    case 0 -> {
                        String id = s.acquire(LEASE_MS, TimeUnit.MILLISECONDS);
                        permitsHeld("acquire(lease)", 1, () -> s.release(id));
                    }
                    case 1 -> {
                        Optional<String> id = s.tryAcquire();
                        bound("tryAcquire()", t0, Bounds.failure(COMMAND_TIMEOUT).toNanos());
                        if (id.isPresent()) {
                            permitsHeld("tryAcquire()", 1, () -> {
                                if (!s.tryRelease(id.get())) {
                                    throw new IllegalStateException("tryRelease of a held permit returned false");
                                }
                            });
                        }
                    }
                    case 2, 3 -> {
                        long wait = rnd.nextBoolean() ? rnd.nextInt(6) : 10 + rnd.nextInt(190);
                        Optional<String> id = s.tryAcquire(wait, LEASE_MS, TimeUnit.MILLISECONDS);
                        bound("tryAcquire(" + wait + " ms)", t0, Bounds.failure(COMMAND_TIMEOUT, Duration.ofMillis(wait)).toNanos());
                        if (id.isPresent()) {
                            permitsHeld("tryAcquire(wait)", 1, () -> s.releaseAsync(id.get()).toCompletableFuture().get());
                        }
                    }
                    case 4 -> {
                        CompletableFuture<Optional<String>> f = s.tryAcquireAsync(200, LEASE_MS, TimeUnit.MILLISECONDS)
                                .toCompletableFuture();
                        if (givenUp(f) && f.get().isPresent()) {
                            String id = f.get().get();
                            permitsHeld("tryAcquireAsync", 1, () -> s.release(id));
                        }
                    }
                    case 5 -> {
                        int k = 1 + rnd.nextInt(2);
                        if (k > 1) {
                            PATTERNS.ran(kind, dev.baton.testkit.UserPattern.MULTI_PERMIT);
                        }
                        List<String> ids = s.tryAcquire(k, rnd.nextInt(100), LEASE_MS, TimeUnit.MILLISECONDS);
                        if (!ids.isEmpty()) {
                            permitsHeld("tryAcquire(" + k + ")", ids.size(), () -> ids.forEach(s::release));
                        }
                    }
                    case 6 -> {
                        ExpirablePermit permit = s.acquirePermit(LEASE_MS, TimeUnit.MILLISECONDS);
                        permitsHeld("acquirePermit", 1, permit::close);
                    }
                    case 7 -> scopedPermit(s);
                    default -> {
                        Interrupter interrupter = new Interrupter(rnd.nextInt(3001));
                        String id;
                        try {
                            id = s.acquire(LEASE_MS, TimeUnit.MILLISECONDS);
                        } catch (InterruptedException e) {
                            id = null;
                        } finally {
                            interrupter.disarm();
                        }
                        if (id != null) {
                            String held = id;
                            permitsHeld("acquire(lease) interrupted late", 1, () -> s.release(held));
                        }
                    }
                }
            }
        }

        /**
         * Interrupts the current thread after {@code micros} µs unless disarmed first; after
         * {@link #disarm()} no interrupt comes and the flag is clear.
         */
        final class Interrupter {
            private final Thread target = Thread.currentThread();
            private final ScheduledFuture<?> timer;
            private boolean done;
            final int micros;

            Interrupter(int micros) {
                this.micros = micros;
                timer = timers.schedule(this::fire, micros, TimeUnit.MICROSECONDS);
            }

            private synchronized void fire() {
                if (!done) {
                    done = true;
                    interrupts.incrementAndGet();
                    target.interrupt();
                }
            }

            void disarm() {
                synchronized (this) {
                    done = true;
                }
                timer.cancel(false);
                Thread.interrupted();
            }
        }
    }

    /** What completeOnTimeout puts in a future the caller gave up on. */
    private static final Object GAVE_UP = new Object();

    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws Exception;
    }
}
