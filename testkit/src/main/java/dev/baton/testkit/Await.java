package dev.baton.testkit;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Polls a condition until it holds or a deadline passes; every fixture wait is bounded. For
 * state that only Redis can show (no signal exists in the client), checked every 10 ms.
 */
public final class Await {
    private Await() {
    }

    /** Waits until {@code condition} holds or {@code timeout} passes; whether it held. */
    public static boolean holdsWithin(Duration timeout, BooleanSupplier condition) {
        try {
            until(timeout, () -> "", condition);
            return true;
        } catch (AssertionError e) {
            return false;
        }
    }

    /** Waits until {@code condition} holds; fails naming {@code what} when {@code timeout} passes first. */
    public static void until(Duration timeout, Supplier<String> what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        RuntimeException last = null;
        while (System.nanoTime() < deadline) {
            try {
                if (condition.getAsBoolean()) {
                    return;
                }
            } catch (RuntimeException e) {
                last = e;
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + what.get(), e);
            }
        }
        throw new AssertionError("timed out after " + timeout + " waiting for " + what.get(), last);
    }
}
