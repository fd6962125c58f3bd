package dev.baton.internal.time;

import java.util.concurrent.TimeUnit;

/**
 * A {@link Scheduler} for what belongs to no single client (a RedLock spans several): the system
 * clock, one timer thread of Baton's own for the whole JVM ({@code baton-system-timer}, a daemon,
 * started with the first task) that keeps the times, and daemon worker threads
 * ({@code baton-system-N}, made as needed, kept a minute idle) that run the tasks: a task may
 * complete a caller's future, whose callbacks then run there, so no callback can hold up another
 * task's time. Tasks must still be short.
 *
 * <p>Not the JDK's shared delayed executor: its one delay thread also runs every
 * {@code orTimeout}'s callbacks of the application, and on two cores it started a new thread for
 * each task; a RedLock's lease-scoped work was stopped late behind them, after another holder had
 * got in (issue 45). That stop is now the {@link StopTimer}'s.
 */
public final class SystemScheduler implements Scheduler {
    public static final SystemScheduler INSTANCE = new SystemScheduler();

    private static final DaemonTimer TIMER = new DaemonTimer("baton-system-timer", Thread.NORM_PRIORITY);

    private static final java.util.concurrent.atomic.AtomicInteger WORKER = new java.util.concurrent.atomic.AtomicInteger();

    /** Runs the tasks the timer hands over: threads made as needed, ended after a minute idle. */
    private static final java.util.concurrent.ExecutorService WORKERS = new java.util.concurrent.ThreadPoolExecutor(0,
            Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new java.util.concurrent.SynchronousQueue<>(), task -> {
                Thread t = new Thread(task, "baton-system-" + WORKER.incrementAndGet());
                t.setDaemon(true);
                return t;
            });

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
    public Scheduler slots() {
        return SlotTimer.INSTANCE;
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        return TIMER.schedule(task, delay, unit, WORKERS);
    }
}
