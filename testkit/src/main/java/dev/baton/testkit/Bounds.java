package dev.baton.testkit;

import java.time.Duration;

/**
 * The bounds the documentation promises, as the tests check them. The rule (docs/guarantees.md,
 * "How the bounds are tested"): a promise of {@code d} is checked at {@code d} plus a margin of
 * 20 % of {@code d} or 300 ms, whichever is larger, never at a multiple of it, so a test fails
 * when the promise breaks rather than when it merely gets worse.
 */
public final class Bounds {
    private Bounds() {
    }

    /** The smallest margin: timer granularity, thread scheduling and a loaded CI machine. */
    public static final Duration MIN_MARGIN = Duration.ofMillis(300);

    /**
     * How late a failure may be reported after the command that failed was sent, beyond the
     * command timeout (docs/guarantees.md).
     */
    public static final Duration FAILURE_SLACK = Duration.ofMillis(150);

    /**
     * A wait that ends without a grant has dispatched its clean-up (unsubscribe, leaving a
     * queue, undo) before it returns, so Redis has it within a round trip: promised 0, checked
     * with the smallest margin.
     */
    public static final Duration CLEAN_UP = within(Duration.ZERO);

    /** A release or countDown wakes a waiter by its message within 1 s (in practice a millisecond or two). */
    public static final Duration WAKE = Duration.ofSeconds(1);

    /** The margin for a promise of {@code promised}. */
    public static Duration margin(Duration promised) {
        Duration fifth = promised.dividedBy(5);
        return fifth.compareTo(MIN_MARGIN) > 0 ? fifth : MIN_MARGIN;
    }

    /** A promise of {@code promised}, as checked: the promise plus its margin. */
    public static Duration within(Duration promised) {
        return promised.plus(margin(promised));
    }

    /**
     * The latest a call that fails because Redis did not answer may report it, measured from the
     * call: the command timeout + 150 ms (the promise), with its margin.
     */
    public static Duration failure(Duration commandTimeout) {
        return within(commandTimeout.plus(FAILURE_SLACK));
    }

    /**
     * Runs {@code call}, which must throw {@code expected} within {@code bound} of its start; returns
     * what it threw.
     */
    public static <T extends Throwable> T assertThrowsWithin(Class<T> expected, Duration bound,
                                                            org.junit.jupiter.api.function.Executable call, String what) {
        long start = System.nanoTime();
        T thrown = org.junit.jupiter.api.Assertions.assertThrows(expected, call, what);
        long tookMs = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        org.junit.jupiter.api.Assertions.assertTrue(tookMs <= bound.toMillis(),
                what + ": threw after " + tookMs + " ms, bound " + bound.toMillis() + " ms");
        return thrown;
    }

    /** The same for a wait with a budget: its last attempt may be sent at the end of the budget. */
    public static Duration failure(Duration commandTimeout, Duration waitBudget) {
        return within(waitBudget.plus(commandTimeout).plus(FAILURE_SLACK));
    }
}
