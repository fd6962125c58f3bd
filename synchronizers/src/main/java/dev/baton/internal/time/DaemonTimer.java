package dev.baton.internal.time;

import org.slf4j.LoggerFactory;

import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * One timer thread of Baton's own (a daemon, started with the first task) that keeps each task's
 * time precisely (no tick) and drops cancelled tasks at once; the task then runs on the executor
 * the caller names (the timer thread itself, for tasks that only read clocks and interrupt). The
 * JVM-wide timers of {@link StopTimer} and {@link SystemScheduler}.
 */
final class DaemonTimer {
    private final ScheduledThreadPoolExecutor timer;

    DaemonTimer(String threadName, int priority) {
        timer = new ScheduledThreadPoolExecutor(1, task -> {
            Thread t = new Thread(task, threadName);
            t.setDaemon(true);
            t.setPriority(priority);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
    }

    /** Runs {@code task} on {@code runOn} after {@code delay}; a task's failure is logged, never ends the timer. */
    Scheduler.Cancellable schedule(Runnable task, long delay, TimeUnit unit, Executor runOn) {
        ScheduledFuture<?> scheduled = timer.schedule(() -> runOn.execute(() -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                LoggerFactory.getLogger(DaemonTimer.class).error("a scheduled task failed", e);
            }
        }), Math.max(0, delay), unit);
        return () -> scheduled.cancel(false);
    }
}
