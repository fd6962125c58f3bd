package dev.baton.internal.time;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The seam for time: every timeout, park deadline and renewal tick goes through one of these,
 * so time-dependent logic can be driven by a test without sleeping.
 */
public interface Scheduler {

    /** A monotonic clock in nanoseconds, like {@link System#nanoTime()}. */
    long nanoTime();

    /** Runs {@code task} once after {@code delay}; the task must be short and never block. */
    Cancellable schedule(Runnable task, long delay, TimeUnit unit);

    /**
     * Runs {@code task} soon on none of Baton's I/O or timer threads: a caller's work and the
     * callbacks it chains may block. By default on {@link java.util.concurrent.CompletableFuture}'s
     * default asynchronous executor, as its {@code *Async} methods do; the simulation runs it as
     * an event of its own, so what follows is explored by seed too.
     */
    default void offload(Runnable task) {
        CompletableFuture.runAsync(task);
    }

    /**
     * The scheduler that times the stop of lease-scoped work, on the same clock: this one by
     * default (a test's, the simulation's); Baton's own schedulers give the {@link StopTimer},
     * whose thread runs nothing else, so a stop is never late behind other tasks.
     */
    default Scheduler stops() {
        return this;
    }

    /**
     * The scheduler that wakes rate-limiter calls at their slots, on the same clock: this one by
     * default (a test's, the simulation's); Baton's own schedulers give the {@link SlotTimer},
     * which keeps each task's time without a tick.
     */
    default Scheduler slots() {
        return this;
    }

    /** A scheduled task that may be cancelled. */
    interface Cancellable {
        /** Cancels the task if it has not run yet. */
        void cancel();
    }
}
