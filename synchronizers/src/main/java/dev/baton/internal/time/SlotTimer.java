package dev.baton.internal.time;

import java.util.concurrent.TimeUnit;

/**
 * The timer that wakes rate-limiter calls at their slots: one daemon thread for the whole JVM
 * ({@code baton-slot-timer}) keeps each task's time (no tick; a client's own 10 ms wheel would
 * start a call up to a tick after its slot), and runs it on a pooled daemon thread
 * ({@code baton-slot-N}), where the caller's stage completes and its callbacks run, so one slot
 * never waits behind another's callbacks and no thread is made per call.
 */
public final class SlotTimer implements Scheduler {
    public static final SlotTimer INSTANCE = new SlotTimer();

    private static final DaemonTimer TIMER = new DaemonTimer("baton-slot-timer", Thread.NORM_PRIORITY);
    private static final java.util.concurrent.atomic.AtomicInteger THREADS = new java.util.concurrent.atomic.AtomicInteger();
    private static final java.util.concurrent.Executor RUN = java.util.concurrent.Executors.newCachedThreadPool(task -> {
        Thread t = new Thread(task, "baton-slot-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    private SlotTimer() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        return TIMER.schedule(task, delay, unit, RUN);
    }
}
