package dev.baton.internal.support;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/** Durations as people read them in messages: {@code 750 ms}, {@code 3 s}, {@code 6.02 s}. */
public final class Durations {
    private Durations() {
    }

    static String readable(Duration duration) {
        return readableNanos(duration.toNanos());
    }

    public static String readableNanos(long nanos) {
        long ms = TimeUnit.NANOSECONDS.toMillis(nanos);
        if (ms < 1_000) {
            return ms + " ms";
        }
        if (ms % 1_000 == 0) {
            return ms / 1_000 + " s";
        }
        return String.format(Locale.ROOT, "%.2f s", ms / 1_000.0);
    }
}
