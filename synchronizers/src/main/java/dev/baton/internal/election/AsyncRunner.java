package dev.baton.internal.election;

import dev.baton.Leadership;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * Runs an asynchronous leadership work: calls it with the term's leadership and follows the stage
 * it returns; stops it by cancelling that stage (which cannot stop code already running for it).
 */
final class AsyncRunner implements Candidate.Runner {
    private final Function<? super Leadership, ? extends CompletionStage<?>> work;
    private final dev.baton.internal.time.Scheduler scheduler;

    AsyncRunner(Function<? super Leadership, ? extends CompletionStage<?>> work, dev.baton.internal.time.Scheduler scheduler) {
        this.work = work;
        this.scheduler = scheduler;
    }

    @Override
    public CompletableFuture<Void> start(Candidate.Term term, Runnable first) {
        CompletionStage<?> stage;
        try {
            first.run();
            stage = work.apply(term.leadership());
        } catch (RuntimeException | Error e) {
            return CompletableFuture.failedFuture(e);
        }
        if (stage == null) {
            return CompletableFuture.failedFuture(new NullPointerException("the leadership work returned no stage"));
        }
        CompletableFuture<?> users = stage.toCompletableFuture();
        CompletableFuture<Void> done = new CompletableFuture<>();
        users.whenComplete((ok, e) -> {
            if (e == null) {
                done.complete(null);
            } else {
                done.completeExceptionally(e);
            }
        });
        done.whenComplete((ok, e) -> {
            if (done.isCancelled()) {
                users.cancel(false);
            }
        });
        return done;
    }

    @Override
    public void stop(Candidate.Term term) {
        CompletableFuture<Void> running = term.work;
        if (running != null) {
            running.cancel(false);
        }
    }

    @Override
    public void onWorkThread(Runnable call) {
        scheduler.offload(call); // off Baton's I/O and timer threads, as withLockAsync's work
    }

    @Override
    public boolean isWorkThread() {
        return false;
    }

    @Override
    public void shutdown() {
    }
}
