package dev.baton.internal.lease;

import dev.baton.internal.time.Scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A {@link Scheduler} whose clock only moves when a test says so. */
final class FakeScheduler implements Scheduler {
    private long now;
    private final List<Task> tasks = new ArrayList<>();

    private final class Task implements Cancellable {
        final long due;
        final Runnable run;
        boolean cancelled;

        Task(long due, Runnable run) {
            this.due = due;
            this.run = run;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }
    }

    @Override
    public synchronized long nanoTime() {
        return now;
    }

    @Override
    public synchronized Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        Task t = new Task(now + unit.toNanos(delay), task);
        tasks.add(t);
        return t;
    }

    /** The delays of pending tasks, from now. */
    synchronized List<Long> pendingDelaysNanos() {
        List<Long> delays = new ArrayList<>();
        for (Task t : tasks) {
            if (!t.cancelled) {
                delays.add(t.due - now);
            }
        }
        return delays;
    }

    /** Moves the clock forward, running every task that falls due on the way. */
    void advance(long amount, TimeUnit unit) {
        long target;
        synchronized (this) {
            target = now + unit.toNanos(amount);
        }
        while (true) {
            Task next;
            synchronized (this) {
                next = tasks.stream().filter(t -> !t.cancelled && t.due <= target)
                        .min(Comparator.comparingLong(t -> t.due)).orElse(null);
                if (next == null) {
                    now = target;
                    return;
                }
                tasks.remove(next);
                now = next.due;
            }
            next.run.run();
        }
    }
}
