package dev.baton.reactor;

import dev.baton.BatonLock;
import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.RedisUnavailableException;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A Baton lock as Reactor publishers ({@link ReactiveBaton}).
 *
 * <p>The scoped forms, {@link #withLock} and {@link #withLockMany}, are the ones to use: the lock
 * is held for the subscription (an owner id of its own), released however the inner publisher
 * ends (completes, errors, or is cancelled), and the inner publisher is cancelled, and the
 * subscriber gets {@link LeaseLostException}, when the lease is lost or no longer known to be
 * held ({@link BatonLock#withLockAsync}, whose bounds apply).
 */
public final class ReactiveLock {
    private final BatonLock lock;

    ReactiveLock(BatonLock lock) {
        this.lock = lock;
    }

    /** The lock's name. */
    public String name() {
        return lock.getName();
    }

    /**
     * Holds the lock while the Mono {@code work} returns runs, for this subscription alone.
     * How it can end: with the work's value (or empty), after the release; with the work's error,
     * after the release; with {@link LeaseLostException} if the lease was lost while the work ran
     * (the work was cancelled); with {@link RedisUnavailableException} if Redis does not answer
     * the acquisition within the command timeout (+ 150 ms). Cancelling the subscription while it
     * waits abandons the wait (nothing stays held or queued); while the work runs, it cancels the
     * work and releases the lock. The work's Mono is subscribed with the subscriber's Context.
     *
     * @param work called once per subscription, with the scope of the hold
     */
    public <T> Mono<T> withLock(Function<? super LeaseScope, ? extends Mono<T>> work) {
        return Mono.deferContextual(context -> Mono.fromFuture(() -> lock.<T>withLockAsync(scope -> {
            Inner<T> inner = new Inner<>();
            inner.run(work.apply(scope).contextWrite(context)
                    .subscribe(inner::complete, inner::completeExceptionally, () -> inner.complete(null)));
            return inner;
        }).toCompletableFuture(), false)).onErrorMap(CompletionException.class, e -> e.getCause() != null ? e.getCause() : e);
    }

    /**
     * The stage of an inner publisher's subscription: cancelling it cancels the subscription
     * before anything waiting on the stage runs, so the inner publisher has stopped by the time
     * the lock is released and the subscriber is told.
     */
    private static final class Inner<T> extends CompletableFuture<T> {
        private volatile Disposable subscription;

        void run(Disposable subscription) {
            this.subscription = subscription;
            if (isCancelled()) {
                subscription.dispose();
            }
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            Disposable s = subscription;
            if (s != null) {
                s.dispose();
            }
            return super.cancel(mayInterruptIfRunning);
        }
    }

    /**
     * Holds the lock while the publisher {@code work} returns emits, for this subscription alone:
     * its items are passed on as they come (buffered if the subscriber requests fewer), and it
     * ends as {@link #withLock} does.
     *
     * @param work called once per subscription, with the scope of the hold
     */
    public <T> Flux<T> withLockMany(Function<? super LeaseScope, ? extends Publisher<T>> work) {
        return Flux.deferContextual(context -> Flux.create(sink -> {
            CompletableFuture<Void> done = lock.<Void>withLockAsync(scope -> {
                Inner<Void> finished = new Inner<>();
                finished.run(Flux.from(work.apply(scope)).contextWrite(context)
                        .subscribe(sink::next, finished::completeExceptionally, () -> finished.complete(null)));
                return finished;
            }).toCompletableFuture();
            done.whenComplete((v, e) -> {
                if (e == null) {
                    sink.complete();
                } else {
                    sink.error(e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
                }
            });
            sink.onCancel(() -> done.cancel(false));
        }));
    }

    /**
     * Acquires the lock for the owner in the subscriber's Context ({@link ReactiveBaton#OWNER};
     * see {@link ReactiveBaton#newOwner()}), with the watchdog; completes when it is held.
     * Cancelling the subscription abandons the wait. Errors with {@link IllegalStateException}
     * if the Context has no owner, {@link RedisUnavailableException} as {@link BatonLock#lock()}.
     */
    public Mono<Void> lock() {
        return owned(owner -> lock.lockAsync(owner).toCompletableFuture());
    }

    /**
     * Tries to acquire the lock for the Context's owner, waiting at most {@code wait}; emits
     * whether it did. Ends as {@link BatonLock#tryLock(long, TimeUnit)} does.
     */
    public Mono<Boolean> tryLock(Duration wait) {
        long waitMs = wait.toMillis();
        return owned(owner -> lock.tryLockAsync(waitMs, TimeUnit.MILLISECONDS, owner).toCompletableFuture());
    }

    /**
     * Releases one hold of the Context's owner. Errors as {@link BatonLock#unlock()} does:
     * {@link IllegalMonitorStateException} if that owner does not hold it, {@link LeaseLostException}
     * if its lease was lost, {@link RedisUnavailableException} if Redis did not confirm (the hold
     * is kept: subscribe again).
     */
    public Mono<Void> unlock() {
        return owned(owner -> lock.unlockAsync(owner).toCompletableFuture());
    }

    private <T> Mono<T> owned(Function<Long, CompletableFuture<T>> call) {
        return Mono.deferContextual(context -> Mono.fromFuture(() -> call.apply(owner(context)), false))
                .onErrorMap(CompletionException.class, e -> e.getCause() != null ? e.getCause() : e);
    }

    private long owner(ContextView context) {
        Object owner = context.getOrDefault(ReactiveBaton.OWNER, null);
        if (!(owner instanceof Long id)) {
            throw new IllegalStateException("no lock owner in the subscriber's Context for '" + lock.getName()
                    + "': end the pipeline with .contextWrite(ReactiveBaton.newOwner()), or use withLock(...)");
        }
        return id;
    }

    @Override
    public String toString() {
        return "ReactiveLock{" + lock.getName() + "}";
    }
}
