package dev.baton.internal.time;

import java.util.concurrent.TimeUnit;

/**
 * The timer that stops lease-scoped work when its validity runs out: one daemon thread for the
 * whole JVM ({@code baton-stop-timer}) that runs nothing else, each task at its time (no tick).
 *
 * <p>A scope's margin (1 % of the lease + 25 ms, LeaseScope) is all there is between its stop
 * and the moment Redis may let the lease expire and grant it to someone else. On a client's own
 * timer (a 10 ms wheel that also runs every command timeout, the renewal and what their failures
 * set off) a stop came up to 32 ms after the scope's end just as a partition began, when those
 * timeouts all fire together, and once after a competitor had been granted (issue 45, item 4).
 * Here a stop waits for no other task; a check only reads clocks and interrupts a thread (async
 * work's cancel is handed off, Scheduler.offload).
 */
public final class StopTimer implements Scheduler {
    public static final StopTimer INSTANCE = new StopTimer();

    private static final DaemonTimer TIMER = new DaemonTimer("baton-stop-timer", Thread.MAX_PRIORITY);

    private StopTimer() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        return TIMER.schedule(task, delay, unit, Runnable::run); // a check: clocks and an interrupt
    }
}
