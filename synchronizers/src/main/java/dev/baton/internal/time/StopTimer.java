package dev.baton.internal.time;

import org.slf4j.LoggerFactory;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
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

    private static final ScheduledThreadPoolExecutor TIMER = new ScheduledThreadPoolExecutor(1, task -> {
        Thread t = new Thread(task, "baton-stop-timer");
        t.setDaemon(true);
        t.setPriority(Thread.MAX_PRIORITY);
        return t;
    });

    static {
        TIMER.setRemoveOnCancelPolicy(true);
    }

    private StopTimer() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        ScheduledFuture<?> scheduled = TIMER.schedule(() -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                LoggerFactory.getLogger(StopTimer.class).error("stopping lease-scoped work failed", e);
            }
        }, Math.max(0, delay), unit);
        return () -> scheduled.cancel(false);
    }
}
