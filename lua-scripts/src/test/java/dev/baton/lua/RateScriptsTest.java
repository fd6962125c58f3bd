package dev.baton.lua;

import dev.baton.testkit.RedisServer;
import dev.baton.testkit.ServerClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rate limiter's scripts run raw on a server whose clock the test sets (the testkit's
 * {@link ServerClock}), so every reply, every stored field and every expiry is compared exactly
 * with a model written here in exact integers: the generic cell rate algorithm as the guide
 * states it. And the promise itself, on the slots the scripts hand out: in every window of
 * length w of Redis's time, the admitted permits add up to at most rate × w + burst, and under
 * saturation the slots come exactly as early as that bound allows.
 */
class RateScriptsTest {
    private static final String KEY = "baton_rate:{r}";
    private static final String MEMORY = "60000";
    private static ServerClock clock;
    private static RedisServer redis;
    private int ids;

    @BeforeAll
    static void start() {
        Optional<String> missing = ServerClock.unavailable();
        if (missing.isPresent()) {
            System.out.println("[rate-scripts] NOT RUN: the rate limiter's scripts are compared exactly on a server clock"
                    + " the test sets, which this machine cannot build (" + missing.get() + ")");
            Assumptions.abort("NOT RUN: no ServerClock (" + missing.get() + ")");
        }
        clock = ServerClock.at(1_790_000_000_123_456L);
        redis = RedisServer.start(clock);
    }

    @AfterAll
    static void stop() {
        if (redis != null) {
            redis.close();
        }
        if (clock != null) {
            clock.close();
        }
    }

    @BeforeEach
    void flush() {
        redis.command("FLUSHALL");
    }

    private String newRequest() {
        return Layout.request("r", String.format("%016x", ++ids));
    }

    private List<Object> acquire(String request, long n, long p, long d, long b, long longest) {
        @SuppressWarnings("unchecked")
        List<Object> reply = (List<Object>) ScriptRunner.run(redis::command, Script.RATE_ACQUIRE, List.of(KEY, request),
                Long.toString(n), Long.toString(p), Long.toString(d), Long.toString(b), Long.toString(longest), MEMORY);
        return reply;
    }

    private long cancel(String request, long n) {
        return (Long) ScriptRunner.run(redis::command, Script.RATE_CANCEL, List.of(KEY, request), Long.toString(n), MEMORY);
    }

    /** The model: the arrival time in 1/P µs since the epoch, exact; null: no limiter. */
    private static final class Model {
        long p;
        long d;
        long b;
        BigInteger tat; // in 1/p µs
        long expiresAtMs; // the last ms the hash is alive

        /** {status, wait} as the script must answer, changing the model as Redis must change. */
        long[] acquire(long now, long n, long cp, long cd, long cb, long longest) {
            if (tat != null && now / 1000 > expiresAtMs) {
                tat = null;
            }
            if (tat == null) {
                p = cp;
                d = cd;
                b = cb;
            }
            BigInteger nowScaled = BigInteger.valueOf(now).multiply(BigInteger.valueOf(p));
            BigInteger start = tat == null || tat.compareTo(nowScaled) < 0 ? nowScaled : tat;
            BigInteger after = start.subtract(nowScaled).add(BigInteger.valueOf(n * d));
            BigInteger over = after.subtract(BigInteger.valueOf(b * d));
            long wait = over.signum() > 0 ? over.add(BigInteger.valueOf(p - 1)).divide(BigInteger.valueOf(p)).longValueExact() : 0;
            if (n > b || (longest >= 0 && wait > longest)) {
                return new long[] {0, wait};
            }
            tat = nowScaled.add(after);
            long q = after.divide(BigInteger.valueOf(p)).longValueExact();
            expiresAtMs = now / 1000 + q / 1000 + 2;
            return new long[] {1, wait};
        }
    }

    /**
     * Random calls at random times (bursts, waits and refusals, idle gaps long enough to expire
     * the hash), each reply and each stored arrival time equal to the model's, and every slot
     * handed out within the bound.
     */
    @Test
    void everyReplyAndStoredTimeIsTheModelsExactly() {
        for (long seed = 1; seed <= 6; seed++) {
            redis.command("FLUSHALL");
            Random random = new Random(seed);
            long p = List.of(1L, 3L, 7L, 50L, 1_000L).get(random.nextInt(5));
            long d = List.of(1_000L, 333_333L, 1_000_000L, 60_000_000L).get(random.nextInt(4));
            long b = 1 + random.nextInt(6);
            Model model = new Model();
            long now = clock.micros();
            List<long[]> admitted = new ArrayList<>(); // {slot, permits}
            for (int call = 0; call < 600; call++) {
                String context = "seed " + seed + " (" + p + " per " + d + " µs, burst " + b + "), call " + call;
                int gap = random.nextInt(10);
                long step = gap < 6 ? random.nextInt(Math.max(1, (int) Math.min(d / p, 2_000_000))) : gap < 9 ? 0
                        : (long) (d / p) * (b + 2) + random.nextInt(3_000);
                clock.advance(step, TimeUnit.MICROSECONDS);
                now = clock.micros();
                long n = 1 + random.nextInt((int) b + 1); // sometimes more than the burst
                long longest = switch (random.nextInt(4)) {
                    case 0 -> 0;
                    case 1 -> -1;
                    default -> random.nextInt((int) Math.min(3 * d, 5_000_000));
                };
                long[] expected = model.acquire(now, n, p, d, b, longest);
                List<Object> reply = acquire(newRequest(), n, p, d, b, longest);
                assertEquals(List.of(expected[0], expected[1], p, d, b), reply, context);
                if (expected[0] == 1) {
                    admitted.add(new long[] {now + expected[1], n});
                    assertEquals(model.tat.divide(BigInteger.valueOf(p)).toString(), redis.command("HGET", KEY, "tat"), context);
                    assertEquals(model.tat.mod(BigInteger.valueOf(p)).toString(), redis.command("HGET", KEY, "tatp"), context);
                    assertEquals(model.expiresAtMs - now / 1000, (Long) redis.command("PTTL", KEY), context + ": PTTL");
                }
            }
            assertWithinTheBound(admitted, p, d, b, "seed " + seed);
        }
    }

    /**
     * In every window [s_i, s_j] of the slots handed out, the permits add up to at most
     * (s_j - s_i + 1 µs) × P / D + B: the bound on Redis's clock, whose resolution is a
     * microsecond (a slot is the first whole microsecond at or after the exact one, so two slots
     * can lie up to 1 µs closer than their exact times; without that microsecond seed 2 fails by
     * one part in 50 million).
     */
    static void assertWithinTheBound(List<long[]> admitted, long p, long d, long b, String context) {
        List<long[]> slots = new ArrayList<>(admitted);
        slots.sort((x, y) -> Long.compare(x[0], y[0]));
        for (int i = 0; i < slots.size(); i++) {
            long permits = 0;
            for (int j = i; j < slots.size(); j++) {
                permits += slots.get(j)[1];
                BigInteger allowed = BigInteger.valueOf(slots.get(j)[0] - slots.get(i)[0] + 1).multiply(BigInteger.valueOf(p))
                        .add(BigInteger.valueOf(b * d));
                assertTrue(BigInteger.valueOf(permits * d).compareTo(allowed) <= 0, context + ": " + permits + " permits in the"
                        + " window from slot " + slots.get(i)[0] + " to " + slots.get(j)[0] + ", more than "
                        + p + " per " + d + " µs (+ 1 µs) + " + b);
            }
        }
    }

    /**
     * Saturation: callers that always wait get slots exactly as early as the bound allows: the
     * burst at once, then the k-th permit after it at ceil(k × D / P) µs (3 per second: 333,334,
     * 666,667, 1,000,000 µs), so nothing is lost to rounding across a long run.
     */
    @Test
    void underSaturationTheSlotsComeAsEarlyAsTheBoundAllows() {
        long start = clock.micros();
        for (int k = 1; k <= 2; k++) {
            assertEquals(List.of(1L, 0L, 3L, 1_000_000L, 2L), acquire(newRequest(), 1, 3, 1_000_000, 2, -1), "burst " + k);
        }
        for (long k = 1; k <= 3_000; k++) {
            long expected = (k * 1_000_000 + 2) / 3; // ceil(k × 10^6 / 3)
            clock.advance(1, TimeUnit.MICROSECONDS);
            long now = clock.micros();
            List<Object> reply = acquire(newRequest(), 1, 3, 1_000_000, 2, -1);
            assertEquals(1L, reply.get(0), "permit " + k);
            assertEquals(start + expected, now + (Long) reply.get(1), "the slot of permit " + k + " after the burst");
        }
    }

    /** A refusal changes nothing; a reservation the caller gives up comes back only if it was the last. */
    @Test
    void aGivenUpReservationComesBackOnlyIfNothingWasReservedAfterIt() {
        assertEquals(List.of(1L, 0L, 10L, 1_000_000L, 1L), acquire(newRequest(), 1, 10, 1_000_000, 1, -1));
        String second = newRequest();
        assertEquals(List.of(1L, 100_000L, 10L, 1_000_000L, 1L), acquire(second, 1, 10, 1_000_000, 1, -1));
        assertEquals(List.of(0L, 200_000L, 10L, 1_000_000L, 1L), acquire(newRequest(), 1, 10, 1_000_000, 1, 199_999),
                "refused: its slot lies beyond what it accepts");
        assertEquals(1L, cancel(second, 1), "the latest reservation comes back");
        assertEquals(-2L, cancel(second, 1), "a copy of the undo changes nothing");
        assertEquals(List.of(-1L, 0L, 10L, 1_000_000L, 1L), acquire(second, 1, 10, 1_000_000, 1, -1),
                "a copy of the undone request reserves nothing");
        assertEquals(List.of(1L, 100_000L, 10L, 1_000_000L, 1L), acquire(newRequest(), 1, 10, 1_000_000, 1, -1),
                "its slot is handed out again");
        String third = newRequest();
        assertEquals(List.of(1L, 200_000L, 10L, 1_000_000L, 1L), acquire(third, 1, 10, 1_000_000, 1, -1));
        String fourth = newRequest();
        assertEquals(List.of(1L, 300_000L, 10L, 1_000_000L, 1L), acquire(fourth, 1, 10, 1_000_000, 1, -1));
        assertEquals(0L, cancel(third, 1), "a reservation with another behind it does not come back");
        String late = newRequest();
        assertEquals(-1L, cancel(late, 1), "an undo that runs before its request");
        assertEquals(List.of(-1L, 0L, 10L, 1_000_000L, 1L), acquire(late, 1, 10, 1_000_000, 1, -1),
                "a copy arriving after its undo reserves nothing");
        assertEquals(List.of(1L, 400_000L, 10L, 1_000_000L, 1L), acquire(newRequest(), 1, 10, 1_000_000, 1, -1));
        clock.advance(50_000, TimeUnit.MICROSECONDS);
        assertEquals(List.of(1L, 250_000L, 10L, 1_000_000L, 1L), acquire(fourth, 1, 10, 1_000_000, 1, -1),
                "a copy of an admitted request gets its slot again, and reserves nothing more");
    }

    /** The stored limit wins while the hash lives; rate_set_limit changes it and keeps the backlog. */
    @Test
    void theStoredLimitWinsAndSetLimitKeepsTheBacklog() {
        assertEquals(List.of(1L, 0L, 10L, 1_000_000L, 1L), acquire(newRequest(), 1, 10, 1_000_000, 1, -1));
        assertEquals(List.of(1L, 100_000L, 10L, 1_000_000L, 1L), acquire(newRequest(), 1, 100, 1_000_000, 5, -1),
                "another caller's limit: served under the stored one, which it is told");
        // Backlog now: 200,000 µs at 10 per s = 2 permits; at 100 per s they cost 20,000 µs.
        assertEquals(List.of(1L, 10L, 1_000_000L, 1L),
                ScriptRunner.run(redis::command, Script.RATE_SET_LIMIT, List.of(KEY), "100", "1000000", "1"));
        assertEquals(List.of(1L, 100L, 1_000_000L, 1L, 2_000_000L, 22L),
                ScriptRunner.run(redis::command, Script.RATE_STATE, List.of(KEY)), "limit, backlog in 1/P µs, PTTL");
        assertEquals(List.of(1L, 20_000L, 100L, 1_000_000L, 1L), acquire(newRequest(), 1, 10, 1_000_000, 1, -1));
        assertEquals(1L, ScriptRunner.run(redis::command, Script.RATE_DELETE, List.of(KEY)));
        assertEquals(List.of(0L), ScriptRunner.run(redis::command, Script.RATE_STATE, List.of(KEY)));
        assertEquals(List.of(0L), ScriptRunner.run(redis::command, Script.RATE_SET_LIMIT, List.of(KEY), "5", "1000000", "1"),
                "a limiter that does not exist is not created by a change of limit");
    }

    /** The hash expires once the limiter has refilled, never before: the millisecond after it is full again. */
    @Test
    void theHashGoesOnceFullAgainAndNeverBefore() {
        clock.set(1_790_000_001_000_999L); // the last µs of a millisecond: Redis counts the TTL from its start
        assertEquals(1L, acquire(newRequest(), 1, 1, 2_500, 1, -1).get(0));
        long tat = Long.parseLong((String) redis.command("HGET", KEY, "tat"));
        assertEquals(1_790_000_001_003_499L, tat, "full again at now + 2,500 µs");
        clock.set(tat);
        assertEquals(1L, redis.command("EXISTS", KEY), "alive at the moment it is full again");
        clock.set((tat / 1000 + 1) * 1000 + 999);
        assertEquals(1L, redis.command("EXISTS", KEY), "alive to the end of the next millisecond");
        clock.advance(1, TimeUnit.MILLISECONDS);
        assertEquals(0L, redis.command("EXISTS", KEY), "gone after it");
    }
}
