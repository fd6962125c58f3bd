package dev.baton.internal.time;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Scheduler} for what belongs to no single client (a RedLock spans several): the system
 * clock and the JDK's shared delayed executor, so there is no timer thread to start or stop.
 * Tasks run on the common pool; like every scheduled task here they must be short.
 */
public final class SystemScheduler implements Scheduler {
    public static final SystemScheduler INSTANCE = new SystemScheduler();

    private SystemScheduler() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        Executor later = CompletableFuture.delayedExecutor(Math.max(0, delay), unit);
        CompletableFuture<Void> cancelled = new CompletableFuture<>();
        later.execute(() -> {
            if (cancelled.complete(null)) {
                task.run();
            }
        });
        return () -> cancelled.complete(null);
    }
}
