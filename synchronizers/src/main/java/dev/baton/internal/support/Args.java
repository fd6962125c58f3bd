package dev.baton.internal.support;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Every check of a caller's argument, in one place, so that the same mistake gets the same
 * message from every synchronizer: each names the argument, what it must be and what it was, and
 * is thrown before any command reaches Redis.
 */
public final class Args {
    private Args() {
    }

    /** The longest lease accepted: 10 years. Redis refuses expiries it cannot represent. */
    static final long MAX_LEASE_MS = TimeUnit.DAYS.toMillis(3_650);

    private static final Pattern PERMIT_ID = Pattern.compile("[0-9a-fA-F]{32}");

    /** A synchronizer's name: not null, not blank. */
    public static String name(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("name must not be blank");
        }
        return name;
    }

    /**
     * A lock's wait time ({@code waitTime}) in nanoseconds. A time of zero or less means "try once,
     * do not wait", as the JDK's {@code Lock.tryLock(long, TimeUnit)} says: a computed
     * {@code deadline - now} that has run out is not a mistake.
     */
    public static long waitNanos(long waitTime, TimeUnit unit) {
        return notWaitingBelowZero(waitTime, unit);
    }

    /**
     * A semaphore's or latch's wait ({@code timeout}) in nanoseconds; zero or less means "try once",
     * as {@code Semaphore.tryAcquire} and {@code CountDownLatch.await} say.
     */
    public static long timeoutNanos(long timeout, TimeUnit unit) {
        return notWaitingBelowZero(timeout, unit);
    }

    private static long notWaitingBelowZero(long value, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        return value <= 0 ? 0 : unit.toNanos(value);
    }

    /**
     * Whether a {@code leaseTime} means "no lease time": any negative value, as Redisson's -1. Every
     * {@code long leaseTime} of Baton reads it so: a watchdog-renewed lock, a permit that never
     * expires, exactly what the overload without a lease does. A kind that has no such overload
     * (the RedLock) refuses it through {@link #validityMs}.
     */
    public static boolean noLease(long leaseTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        return leaseTime < 0;
    }

    /**
     * A fixed lease ({@code leaseTime}) that is not {@link #noLease no lease}: positive, at most
     * {@link #MAX_LEASE_MS}; in ms, at least 1. Zero is refused, with the rule for negative values.
     */
    public static long leaseMs(long leaseTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (leaseTime <= 0) {
            throw new IllegalArgumentException("leaseTime must not be " + leaseTime + " " + unit
                    + ": give a positive lease, or a negative one (as Redisson's -1) for no lease time:"
                    + " a watchdog-renewed lock, a permit that never expires");
        }
        return upTo10Years(leaseTime, unit);
    }

    /** A RedLock's lease, which is its validity: positive, at most {@link #MAX_LEASE_MS}; in ms. */
    public static long validityMs(long leaseTime, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        if (leaseTime <= 0) {
            throw new IllegalArgumentException("leaseTime must be positive, was " + leaseTime + " " + unit
                    + ": a RedLock's lease is its validity, and it has no watchdog (Redisson's -1 has no twin here)");
        }
        return upTo10Years(leaseTime, unit);
    }

    private static long upTo10Years(long leaseTime, TimeUnit unit) {
        long ms = unit.toMillis(leaseTime);
        if (ms > MAX_LEASE_MS) {
            throw new IllegalArgumentException("leaseTime must be at most 3650 days, was " + leaseTime + " " + unit);
        }
        return Math.max(1, ms);
    }

    /** A new fixed lease as a Duration: the same rules as {@link #leaseMs(long, TimeUnit)}. */
    public static long leaseMs(Duration leaseTime) {
        Objects.requireNonNull(leaseTime, "leaseTime");
        if (leaseTime.isNegative() || leaseTime.isZero()) {
            throw new IllegalArgumentException("leaseTime must be positive, was " + leaseTime);
        }
        if (leaseTime.compareTo(Duration.ofMillis(MAX_LEASE_MS)) > 0) {
            throw new IllegalArgumentException("leaseTime must be at most 3650 days, was " + leaseTime);
        }
        return Math.max(1, leaseTime.toMillis());
    }

    /** The most permits of a permit-expirable semaphore one call takes: each is an id in the command. */
    static final int MAX_PERMITS_PER_CALL = 10_000;

    /** Permits of a permit-expirable semaphore to take in one call: 1 to {@link #MAX_PERMITS_PER_CALL}. */
    public static int permitsPerCall(int permits) {
        permits(permits);
        if (permits > MAX_PERMITS_PER_CALL) {
            throw new IllegalArgumentException("permits must be at most " + MAX_PERMITS_PER_CALL
                    + " per call (each permit has its own id), was " + permits);
        }
        return permits;
    }

    /** Permits to take or give back: at least 1. */
    public static int permits(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits);
        }
        return permits;
    }

    /** Permits to set or add: not negative. */
    public static int permitsNotNegative(int permits) {
        if (permits < 0) {
            throw new IllegalArgumentException("permits must not be negative, was " + permits);
        }
        return permits;
    }

    /** A latch's count: at least 1. */
    public static long count(long count) {
        if (count < 1) {
            throw new IllegalArgumentException("count must be at least 1, was " + count);
        }
        return count;
    }

    /** A permit id: 16 bytes as 32 hex characters (Redisson's format); lower-cased. */
    public static String permitId(String permitId) {
        Objects.requireNonNull(permitId, "permitId");
        if (!PERMIT_ID.matcher(permitId).matches()) {
            throw new IllegalArgumentException("permitId must be 32 hex characters, was '" + permitId + "'");
        }
        return permitId.toLowerCase(Locale.ROOT);
    }
}
