package dev.baton.internal.time;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Scheduler} for what belongs to no single client (a RedLock spans several): the system
 * clock and one timer thread of Baton's own for the whole JVM ({@code baton-system-timer}, a
 * daemon, started with the first task), which runs each task itself, at its time. Like every
 * scheduled task here they must be short and never block.
 *
 * <p>Not the JDK's shared delayed executor: that hands each task to the common fork-join pool,
 * where an application's blocking tasks can hold it back without limit (on two cores the pool
 * has one thread), and a RedLock's lease-scoped work was stopped that late, after another holder
 * had got in (issue 45).
 */
public final class SystemScheduler implements Scheduler {
    public static final SystemScheduler INSTANCE = new SystemScheduler();

    private static final ScheduledThreadPoolExecutor TIMER = new ScheduledThreadPoolExecutor(1, task -> {
        Thread t = new Thread(task, "baton-system-timer");
        t.setDaemon(true);
        return t;
    });

    static {
        TIMER.setRemoveOnCancelPolicy(true);
    }

    private SystemScheduler() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Scheduler stops() {
        return StopTimer.INSTANCE;
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        ScheduledFuture<?> scheduled = TIMER.schedule(() -> {
            try {
                task.run();
            } catch (RuntimeException | Error e) {
                // One task's failure must not end the thread every RedLock's timers run on.
                org.slf4j.LoggerFactory.getLogger(SystemScheduler.class).error("a scheduled task failed", e);
            }
        }, Math.max(0, delay), unit);
        return () -> scheduled.cancel(false);
    }
}
