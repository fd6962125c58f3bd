package dev.baton.internal;

import dev.baton.BatonRateLimiter;
import dev.baton.RateLimit;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of the rate limiter: a limit drawn per seed (1 per ms, 3 per 10 ms or 1 per
 * 7 ms, with a burst of 1 to 4), two clients whose clocks drift apart as the seed says, three
 * actors each asking for one or two permits as users do (now or never, short and long timed
 * waits, an untimed acquire, a future cancelled or ended by its caller's own timeout), often
 * enough that the limiter is saturated.
 *
 * <p>Judged on Redis's clock, from what the server itself did (every rate_acquire and
 * rate_cancel it ran, heard as it ran them): each request admitted once (its first run; a copy
 * adds nothing) with its slot, the time it ran plus the wait it answered; slots handed out in the
 * order they were reserved (never before a slot still standing); in every window [s_i, s_j] of the slots still standing (a slot
 * given back by an undo no longer stands) at most (s_j - s_i + 1 µs) × P / D + B permits; at
 * every moment a caller starts (its stage completes with true, on Redis's clock), the permits
 * started so far at most those whose slots have come (a client that woke on its own clock
 * without the drift allowance, or that started on a reply it should not have, is early); every
 * timed call within its bound, a refusal within one round trip's bound; and at the end, after
 * a calm drain, the permits of the slots standing at most those started plus those of calls
 * given up or failed (a slot nobody asked for, as a late copy admitted again would leave, is a
 * finding).
 */
final class RateLimiterSimulation extends Simulation {

    static final String NAME = "sim-rate";
    static final String KEY = Layout.rateLimiter(NAME);

    final RateLimit limit;
    final long p;
    final long d;
    final long b;
    final List<Caller> callers;
    /** Each request admitted, by its request key: {slot µs, permits}. */
    final Map<String, long[]> admitted = new HashMap<>();
    long started;
    long givenUp;
    long undoneBack;

    RateLimiterSimulation(long seed, boolean trace, Duration run) {
        super("rateLimiter", seed, trace, run);
        java.util.Random draw = new java.util.Random(seed * 31 + 7);
        RateLimit base = switch (draw.nextInt(3)) {
            case 0 -> RateLimit.of(1, Duration.ofMillis(1));
            case 1 -> RateLimit.of(3, Duration.ofMillis(10));
            default -> RateLimit.of(1, Duration.ofMillis(7));
        };
        limit = base.withBurst(1 + draw.nextInt(4));
        p = limit.permits();
        d = limit.periodMicros();
        b = limit.burst();
        world.note("limit " + limit);
        callers = threeEach(clients, Caller::new);
        world.server.redis.onScript(this::heard);
    }

    @Override
    List<Caller> actors() {
        return callers;
    }

    @Override
    java.util.Set<dev.baton.testkit.UserPattern> covered() {
        return java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT, dev.baton.testkit.UserPattern.LONG_WAIT,
                dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL, dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT,
                dev.baton.testkit.UserPattern.MULTI_PERMIT);
    }

    /** What the server ran: admissions (first runs only), and undos that gave permits back. */
    private void heard(String text, List<String> keys, List<String> argv, Object reply, long nowMicros) {
        if (text.equals(Script.RATE_ACQUIRE.text())) {
            List<?> r = (List<?>) reply;
            String request = keys.get(1);
            if ((Long) r.get(0) != 1L || admitted.containsKey(request)) {
                return;
            }
            long slot = nowMicros + (Long) r.get(1);
            long n = Long.parseLong(argv.get(0));
            world.note("Redis admits " + n + " at slot " + slot
                    + " µs (" + r.get(1) + " µs from now)");
            // In reservation order: never before a slot still standing (an undone one no longer stands).
            long latest = admitted.values().stream().mapToLong(a -> a[0]).max().orElse(Long.MIN_VALUE);
            if (slot < latest) {
                violation("a slot handed out before one reserved earlier: " + slot + " µs after " + latest + " µs");
            }
            admitted.put(request, new long[] {slot, n});
        } else if (text.equals(Script.RATE_CANCEL.text()) && (Long) reply == 1L) {
            long[] back = admitted.remove(keys.get(1));
            if (back == null) {
                violation("an undo gave back permits of a request Redis never admitted: " + keys.get(1));
                return;
            }
            undoneBack += back[1];
            world.note("Redis takes back the slot at " + back[0] + " µs (" + back[1] + ")");
        }
    }

    /** The permits of the standing slots that have come by {@code nowMicros}. */
    long cameBy(long nowMicros) {
        long sum = 0;
        for (long[] a : admitted.values()) {
            if (a[0] <= nowMicros) {
                sum += a[1];
            }
        }
        return sum;
    }

    long nowMicros() {
        return SimWorld.EPOCH_MS * 1_000 + world.now() / 1_000;
    }

    @Override
    void endChecks() {
        List<long[]> slots = new ArrayList<>(admitted.values());
        slots.sort((x, y) -> Long.compare(x[0], y[0]));
        for (int i = 0; i < slots.size(); i++) {
            long permits = 0;
            for (int j = i; j < slots.size(); j++) {
                permits += slots.get(j)[1];
                long window = slots.get(j)[0] - slots.get(i)[0] + 1;
                if (java.math.BigInteger.valueOf(permits).multiply(java.math.BigInteger.valueOf(d)).compareTo(
                        java.math.BigInteger.valueOf(window).multiply(java.math.BigInteger.valueOf(p))
                                .add(java.math.BigInteger.valueOf(b * d))) > 0) {
                    violation(permits + " permits admitted in the window from slot " + slots.get(i)[0] + " to "
                            + slots.get(j)[0] + " µs: more than " + limit + " allows");
                    return;
                }
            }
        }
        long standing = slots.stream().mapToLong(s -> s[1]).sum();
        world.note("end: " + standing + " permits standing in " + slots.size() + " slots, " + started + " started, "
                + givenUp + " given up or failed, " + undoneBack + " taken back by undos");
        if (standing > started + givenUp) {
            violation("Redis admitted " + standing + " permits, but callers started " + started + " and gave up or failed "
                    + givenUp + ": a slot nobody asked for (a copy admitted again?)");
        }
        if (cameBy(Long.MAX_VALUE) < started) {
            violation(started + " permits started, more than the " + standing + " Redis admitted");
        }
    }

    /** One actor: asks for 1 or 2 permits, one call at a time. */
    final class Caller extends BaseActor {
        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        final SimClient client;
        final int index;
        final BatonRateLimiter limiter;

        Caller(SimClient client, int index) {
            this.client = client;
            this.index = index;
            this.limiter = client.runtime.rateLimiter(NAME, limit);
        }

        @Override
        public String toString() {
            return "caller " + client.id + "/" + index;
        }

        @Override
        public void next() {
            if (stopIfStopping()) {
                return;
            }
            operations++;
            int n = b > 1 && world.rnd.nextInt(3) == 0 ? 2 : 1;
            if (n > 1) {
                ran(dev.baton.testkit.UserPattern.MULTI_PERMIT);
            }
            int op = world.rnd.nextInt(7);
            switch (op) {
                case 0 -> {
                    ran(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT);
                    call(n, 0, limiter.tryAcquireAsync(n), "tryAcquireAsync(" + n + ")");
                }
                case 1 -> {
                    ran(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT);
                    long wait = world.rnd.nextInt(6);
                    call(n, wait, limiter.tryAcquireAsync(n, wait, TimeUnit.MILLISECONDS), "tryAcquireAsync(" + n + ", " + wait + " ms)");
                }
                case 2, 3 -> {
                    ran(dev.baton.testkit.UserPattern.LONG_WAIT);
                    long wait = 10 + world.rnd.nextInt(190);
                    call(n, wait, limiter.tryAcquireAsync(n, wait, TimeUnit.MILLISECONDS), "tryAcquireAsync(" + n + ", " + wait + " ms)");
                }
                case 4 -> {
                    ran(dev.baton.testkit.UserPattern.LONG_WAIT);
                    call(n, -1, limiter.acquireAsync(n).thenApply(v -> true), "acquireAsync(" + n + ")");
                }
                default -> {
                    boolean cancel = op == 5;
                    ran(cancel ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL : dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT);
                    CompletableFuture<Void> f = limiter.acquireAsync(n).toCompletableFuture();
                    endedByCaller(f, cancel);
                    call(n, -1, f.thenApply(v -> true), "acquireAsync(" + n + ")" + (cancel ? " cancelled" : " timed out by its caller"));
                }
            }
        }

        void call(int n, long waitMs, CompletionStage<Boolean> stage, String how) {
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
            stage.whenComplete((admittedNow, error) -> {
                if (ended(how, asked, boundOf(waitMs), error) != null) {
                    givenUp += n;
                    return;
                }
                if (!admittedNow) {
                    // Refused: at once, within one round trip's bound, whatever the timeout.
                    checkBound(how + " (refused)", asked, boundOf(0));
                    world.note(this + " " + how + " refused");
                    pause();
                    return;
                }
                grants++;
                started += n;
                long now = nowMicros();
                long came = cameBy(now);
                world.note(this + " STARTS " + n + " by " + how + " (" + started + " started, " + came + " whose slots came)");
                if (started > came) {
                    violation(this + " started " + n + " by " + how + " at " + now + " µs on Redis's clock: " + started
                            + " permits started, but the slots of only " + came + " had come");
                    return;
                }
                pause();
            });
        }
    }
}
