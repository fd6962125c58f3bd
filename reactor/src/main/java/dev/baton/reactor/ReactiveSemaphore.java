package dev.baton.reactor;

import dev.baton.BatonSemaphore;
import dev.baton.RedisUnavailableException;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A Baton semaphore as Reactor publishers ({@link ReactiveBaton}). Permits have no owner, so
 * nothing here depends on the thread or the Context. Publishers signal on a Reactor scheduler,
 * never on Baton's own threads.
 */
public final class ReactiveSemaphore {
    private final BatonSemaphore semaphore;

    ReactiveSemaphore(BatonSemaphore semaphore) {
        this.semaphore = semaphore;
    }

    /** The semaphore's name. */
    public String name() {
        return semaphore.getName();
    }

    /**
     * Takes {@code permits} for the time the Mono {@code work} gives runs (subscribed on Reactor's
     * bounded-elastic scheduler, with the subscriber's Context), and gives them back however it
     * ends: completes, errors, or the subscription is cancelled (which cancels the work: a signal,
     * see {@link ReactiveLock}). Cancelling the subscription while it waits abandons the wait,
     * and permits granted as it was cancelled are given back: none stay taken. Errors with
     * {@link RedisUnavailableException} if Redis does not answer within the command timeout.
     */
    public <T> Mono<T> withPermits(int permits, Supplier<? extends Mono<T>> work) {
        return Mono.deferContextual(context -> Mono.fromFuture(() -> {
            CompletableFuture<T> result = new CompletableFuture<>();
            CompletableFuture<Void> acquired = semaphore.acquireAsync(permits).toCompletableFuture();
            result.whenComplete((r, e) -> acquired.cancel(false)); // given up while waiting: the wait is abandoned
            // The work is started off Baton's I/O thread.
            acquired.whenCompleteAsync((granted, acquireFailure) -> {
                if (acquireFailure != null) {
                    result.completeExceptionally(ReactiveLock.unwrap(acquireFailure));
                    return;
                }
                if (result.isDone()) {
                    semaphore.releaseAsync(permits); // granted as the subscriber gave up
                    return;
                }
                CompletableFuture<T> inner = new CompletableFuture<>();
                reactor.core.Disposable subscription = work.get().contextWrite(context)
                        .subscribeOn(Schedulers.boundedElastic())
                        .subscribe(inner::complete, inner::completeExceptionally, () -> inner.complete(null));
                result.whenComplete((r, e) -> {
                    if (!inner.isDone()) {
                        subscription.dispose(); // the subscriber gave up: so does the work
                        inner.cancel(false);
                    }
                });
                inner.whenComplete((value, failure) -> semaphore.releaseAsync(permits).whenComplete((v, releaseError) -> {
                    if (failure != null) {
                        result.completeExceptionally(ReactiveLock.unwrap(failure));
                    } else if (releaseError != null) {
                        result.completeExceptionally(ReactiveLock.unwrap(releaseError));
                    } else {
                        result.complete(value);
                    }
                }));
            });
            return result;
        }, false)).publishOn(Schedulers.parallel());
    }

    /**
     * Takes {@code permits}, waiting as long as it takes; cancelling the subscription abandons the
     * wait, but permits granted just as it was cancelled may stay taken (nobody can tell the
     * grant from a completed acquisition then): use {@link #withPermits} where a pipeline can be
     * cancelled.
     */
    public Mono<Void> acquire(int permits) {
        return call(() -> semaphore.acquireAsync(permits), false);
    }

    /** Takes {@code permits} if they become free within {@code wait}; emits whether it did; on cancel, as {@link #acquire}. */
    public Mono<Boolean> tryAcquire(int permits, Duration wait) {
        return call(() -> semaphore.tryAcquireAsync(permits, wait.toMillis(), TimeUnit.MILLISECONDS), false);
    }

    /** Gives back {@code permits}; cancelling the subscription does not cancel the release (see {@link BatonSemaphore#release(int)}). */
    public Mono<Void> release(int permits) {
        return call(() -> semaphore.releaseAsync(permits), true);
    }

    /** The permits free now. */
    public Mono<Integer> availablePermits() {
        return call(semaphore::availablePermitsAsync, false);
    }

    /** Sets the permits if the semaphore does not exist yet; emits whether it did. */
    public Mono<Boolean> trySetPermits(int permits) {
        return call(() -> semaphore.trySetPermitsAsync(permits), false);
    }

    /** A Baton call as a Mono that signals on a Reactor scheduler; {@code keep}: a cancel does not cancel the call. */
    static <T> Mono<T> call(Supplier<? extends CompletionStage<T>> call, boolean keep) {
        return Mono.fromFuture(() -> call.get().toCompletableFuture(), keep)
                .onErrorMap(ReactiveLock::unwrap).publishOn(Schedulers.parallel());
    }

    @Override
    public String toString() {
        return "ReactiveSemaphore{" + semaphore.getName() + "}";
    }
}
