package dev.baton.internal.time;

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.Timer;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The production {@link Scheduler}: one Netty {@link HashedWheelTimer} per Baton client (one
 * daemon thread) for command timeouts, park deadlines and renewal ticks. A 10 ms tick is fine
 * enough: waiters are normally woken by pub/sub messages, and timers only bound how long a lost
 * message can delay them.
 */
public final class NettyScheduler implements Scheduler, AutoCloseable {
    private static final AtomicInteger SEQUENCE = new AtomicInteger();

    private final Timer timer;
    private volatile boolean stopped;

    public NettyScheduler() {
        int id = SEQUENCE.incrementAndGet();
        ThreadFactory threads = task -> {
            Thread t = new Thread(task, "baton-timer-" + id);
            t.setDaemon(true);
            return t;
        };
        this.timer = new HashedWheelTimer(threads, 10, TimeUnit.MILLISECONDS, 512);
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
        if (stopped) {
            return () -> { }; // the client is closed: nothing it starts now needs a timer
        }
        try {
            Timeout timeout = timer.newTimeout(t -> task.run(), Math.max(0, delay), unit);
            return timeout::cancel;
        } catch (IllegalStateException e) {
            return () -> { }; // stopped between the check and the call
        }
    }

    @Override
    public void close() {
        stopped = true;
        timer.stop();
    }
}
