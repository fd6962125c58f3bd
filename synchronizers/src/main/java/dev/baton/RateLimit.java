package dev.baton;

import java.time.Duration;
import java.util.Objects;

/**
 * A rate: {@code permits} per {@code period}, with a {@code burst}: how many permits may go at
 * once after the limiter has been idle. Immutable.
 * <pre>{@code
 * RateLimit.perSecond(50)                            // one permit every 20 ms, never two at once
 * RateLimit.perSecond(50).withBurst(10)              // up to 10 at once, then one every 20 ms
 * RateLimit.of(10_000, Duration.ofHours(1))          // an hourly quota, spread evenly
 * }</pre>
 * The bound it sets: in <em>every</em> window of length {@code w} of Redis's time, at most
 * {@code permits × w / period + burst} permits are admitted. So a partner that allows 50
 * requests in any second is kept within it by {@code perSecond(49)} (49 + the burst of 1), or by
 * {@code of(40, 1 s).withBurst(10)}.
 *
 * <p>The period is counted in whole microseconds. {@code burst × period} must stay below
 * 2<sup>50</sup> microseconds (for a period of an hour, a burst of up to 312,000), so that the
 * limiter's sums stay exact.
 */
public final class RateLimit {
    /** The largest {@code burst × period}, in microseconds. */
    static final long LARGEST_SPAN_MICROS = 1L << 50;

    private final long permits;
    private final long periodMicros;
    private final long burst;

    private RateLimit(long permits, long periodMicros, long burst) {
        if (permits < 1) {
            throw new IllegalArgumentException("a rate limit's permits per period must be at least 1, was " + permits);
        }
        if (periodMicros < 1) {
            throw new IllegalArgumentException("a rate limit's period must be at least 1 µs, was " + periodMicros + " µs");
        }
        if (burst < 1) {
            throw new IllegalArgumentException("a rate limit's burst must be at least 1, was " + burst);
        }
        if (permits > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a rate limit's permits per period must be at most " + Integer.MAX_VALUE
                    + ", was " + permits + " (use a shorter period)");
        }
        if (burst > LARGEST_SPAN_MICROS / periodMicros) {
            throw new IllegalArgumentException("a rate limit's burst × period must stay below 2^50 µs (about 35 years),"
                    + " was " + burst + " × " + periodMicros + " µs");
        }
        this.permits = permits;
        this.periodMicros = periodMicros;
        this.burst = burst;
    }

    /**
     * {@code permits} per {@code period}, with a burst of 1: permits spread evenly, one every
     * {@code period / permits}.
     *
     * @throws IllegalArgumentException if {@code permits < 1}, the period is shorter than 1 µs,
     *                                  or the period is longer than 2<sup>50</sup> µs
     * @throws NullPointerException     if {@code period} is null
     */
    public static RateLimit of(long permits, Duration period) {
        Objects.requireNonNull(period, "period");
        long micros;
        try {
            micros = Math.multiplyExact(period.getSeconds(), 1_000_000L) + period.getNano() / 1_000;
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("a rate limit's period must stay below 2^50 µs, was " + period);
        }
        return new RateLimit(permits, micros, 1);
    }

    /** {@code permits} per second, with a burst of 1; see {@link #of}. */
    public static RateLimit perSecond(long permits) {
        return new RateLimit(permits, 1_000_000L, 1);
    }

    /**
     * This rate with another burst: how many permits may be admitted at once after the limiter
     * has been idle (it refills at the rate). A call for more permits than the burst is never
     * admitted.
     *
     * @throws IllegalArgumentException if {@code burst < 1} or {@code burst × period} reaches 2<sup>50</sup> µs
     */
    public RateLimit withBurst(long burst) {
        return new RateLimit(permits, periodMicros, burst);
    }

    /** The permits per period. */
    public long permits() {
        return permits;
    }

    /** The period, in whole microseconds. */
    public Duration period() {
        return Duration.ofNanos(Math.multiplyExact(periodMicros, 1_000L));
    }

    /** The period in microseconds. */
    public long periodMicros() {
        return periodMicros;
    }

    /** How many permits may go at once after the limiter has been idle. */
    public long burst() {
        return burst;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RateLimit r && r.permits == permits && r.periodMicros == periodMicros && r.burst == burst;
    }

    @Override
    public int hashCode() {
        return Objects.hash(permits, periodMicros, burst);
    }

    /** For example {@code "50 per 1 s, burst 1"}. */
    @Override
    public String toString() {
        String period;
        if (periodMicros % 1_000_000L == 0) {
            period = periodMicros / 1_000_000L + " s";
        } else if (periodMicros % 1_000L == 0) {
            period = periodMicros / 1_000L + " ms";
        } else {
            period = periodMicros + " µs";
        }
        return permits + " per " + period + ", burst " + burst;
    }
}
