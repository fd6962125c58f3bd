package dev.baton.internal.time;

import java.util.concurrent.TimeUnit;

/**
 * The timer that wakes rate-limiter calls at their slots: one daemon thread for the whole JVM
 * ({@code baton-slot-timer}), each task at its time (no tick; a client's own 10 ms wheel would
 * start a call up to a tick after its slot). A task only hands the caller's completion to
 * another thread ({@link Scheduler#offload}), so one slot never waits behind another's work.
 */
public final class SlotTimer implements Scheduler {
    public static final SlotTimer INSTANCE = new SlotTimer();

    private static final DaemonTimer TIMER = new DaemonTimer("baton-slot-timer", Thread.NORM_PRIORITY);

    private SlotTimer() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        return TIMER.schedule(task, delay, unit, Runnable::run);
    }
}
