package dev.baton.reactor;

import dev.baton.BatonLock;
import dev.baton.LeaseLostException;
import dev.baton.LeaseScope;
import dev.baton.RedisUnavailableException;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.ContextView;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A Baton lock as Reactor publishers ({@link ReactiveBaton}).
 *
 * <p>The scoped forms, {@link #withLock} and {@link #withLockMany}, are the ones to use: the lock
 * is held for the subscription (an owner id of its own), released however the inner publisher
 * ends (completes, errors, or is cancelled), and the inner publisher is cancelled, and the
 * subscriber gets {@link LeaseLostException}, when the lease is lost or no longer known to be
 * held ({@link BatonLock#withLockAsync}, whose bounds apply). The inner publisher is subscribed
 * on Reactor's bounded-elastic scheduler, so work that runs synchronously when subscribed can
 * still be cancelled. Cancelling is a signal: code already running for the inner publisher (a
 * blocking call) may go on after the lock is released, so check the scope before each side
 * effect that must not overlap another holder's.
 *
 * <p>Every publisher here signals on a Reactor scheduler, never on Baton's own I/O or timer
 * threads: block downstream only after {@code publishOn(Schedulers.boundedElastic())}.
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
     * waits abandons the wait (nothing stays held or queued, the work does not run); while the
     * work runs, it cancels the work and releases the lock. The work's Mono is subscribed with
     * the subscriber's Context.
     *
     * @param work called once per subscription, with the scope of the hold
     */
    public <T> Mono<T> withLock(Function<? super LeaseScope, ? extends Mono<T>> work) {
        return Mono.deferContextual(context -> Mono.fromFuture(() -> lock.<T>withLockAsync(scope -> {
            Inner<T> inner = new Inner<>();
            inner.run(work.apply(scope).contextWrite(context).subscribeOn(Schedulers.boundedElastic())
                    .subscribe(inner::complete, inner::completeExceptionally, () -> inner.complete(null)));
            return inner;
        }).toCompletableFuture(), false)).publishOn(Schedulers.parallel());
    }

    /**
     * The stage of an inner publisher's subscription: cancelling it disposes of the subscription
     * before anything waiting on the stage runs (a signal to the publisher; see the class comment).
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
     * its items are passed on as the subscriber requests them, and it ends as {@link #withLock}
     * does (a loss's {@link LeaseLostException} after the items already passed on).
     *
     * @param work called once per subscription, with the scope of the hold
     */
    public <T> Flux<T> withLockMany(Function<? super LeaseScope, ? extends Publisher<T>> work) {
        return Flux.deferContextual(context -> Flux.<T>create(sink -> {
            CompletableFuture<Void> done = lock.<Void>withLockAsync(scope -> {
                Inner<Void> finished = new Inner<>();
                Forwarder<T> forwarder = new Forwarder<>(sink, finished);
                Flux.from(work.apply(scope)).contextWrite(context).subscribeOn(Schedulers.boundedElastic())
                        .subscribe(forwarder);
                finished.run(forwarder);
                return finished;
            }).toCompletableFuture();
            done.whenComplete((v, e) -> {
                if (e == null) {
                    sink.complete();
                } else {
                    sink.error(unwrap(e));
                }
            });
            sink.onCancel(() -> done.cancel(false));
        }).publishOn(Schedulers.parallel()));
    }

    /** Passes the inner publisher's items on as the outer subscriber requests them. */
    private static final class Forwarder<T> extends BaseSubscriber<T> {
        private final FluxSink<T> sink;
        private final CompletableFuture<Void> finished;

        Forwarder(FluxSink<T> sink, CompletableFuture<Void> finished) {
            this.sink = sink;
            this.finished = finished;
        }

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            sink.onRequest(this::request);
        }

        @Override
        protected void hookOnNext(T value) {
            sink.next(value);
        }

        @Override
        protected void hookOnError(Throwable error) {
            finished.completeExceptionally(error);
        }

        @Override
        protected void hookOnComplete() {
            finished.complete(null);
        }
    }

    /**
     * Acquires the lock for the owner in the subscriber's Context ({@link ReactiveBaton#OWNER};
     * see {@link ReactiveBaton#newOwner()}), with the watchdog; completes when it is held.
     * Cancelling the subscription abandons the wait; a cancel that comes as the lock is granted
     * gives the hold back, but one that comes after the grant was passed on cannot be told
     * from a completed lock: the hold then stays (renewed) until {@link #unlock()} for that owner.
     * An error downstream skips a later {@code unlock()} in the same pipeline too: where a
     * pipeline can fail or be cancelled, use {@link #withLock}. Errors with
     * {@link IllegalStateException} if the Context has no owner, {@link RedisUnavailableException}
     * as {@link BatonLock#lock()}.
     */
    public Mono<Void> lock() {
        return owned(owner -> lock.lockAsync(owner).toCompletableFuture(), granted -> true);
    }

    /**
     * Tries to acquire the lock for the Context's owner, waiting at most {@code wait}; emits
     * whether it did. Ends as {@link BatonLock#tryLock(long, TimeUnit)} does, and as
     * {@link #lock()} on cancel.
     */
    public Mono<Boolean> tryLock(Duration wait) {
        long waitMs = wait.toMillis();
        return owned(owner -> lock.tryLockAsync(waitMs, TimeUnit.MILLISECONDS, owner).toCompletableFuture(),
                Boolean.TRUE::equals);
    }

    /**
     * Releases one hold of the Context's owner. Errors as {@link BatonLock#unlock()} does:
     * {@link IllegalMonitorStateException} if that owner does not hold it, {@link LeaseLostException}
     * if its lease was lost, {@link RedisUnavailableException} if Redis did not confirm (the hold
     * is kept: subscribe again). Cancelling the subscription does not cancel the release.
     */
    public Mono<Void> unlock() {
        return Mono.deferContextual(context -> {
            long owner = owner(context);
            return Mono.fromFuture(() -> lock.unlockAsync(owner).toCompletableFuture(), true);
        }).publishOn(Schedulers.parallel());
    }

    /**
     * An acquisition for the Context's owner: a subscriber's cancel abandons it, and a grant that
     * the cancel raced is given back ({@code granted} says whether a result is a hold).
     */
    private <T> Mono<T> owned(Function<Long, CompletableFuture<T>> acquire, Predicate<T> granted) {
        return Mono.deferContextual(context -> {
            long owner = owner(context);
            return Mono.<T>create(sink -> {
                AtomicInteger state = new AtomicInteger(); // 0 waiting, 1 passed on, 2 given up
                CompletableFuture<T> f = acquire.apply(owner);
                sink.onCancel(() -> {
                    if (state.compareAndSet(0, 2)) {
                        f.cancel(false); // abandons the wait (Baton gives back a grant it could not deliver)
                    }
                });
                f.whenComplete((value, error) -> {
                    if (!state.compareAndSet(0, 1)) {
                        if (error == null && granted.test(value)) {
                            lock.unlockAsync(owner); // granted as the subscriber gave up: nobody will unlock it
                        }
                        return;
                    }
                    if (error != null) {
                        sink.error(unwrap(error));
                    } else {
                        sink.success(value);
                    }
                });
            });
        }).publishOn(Schedulers.parallel());
    }

    static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    private long owner(ContextView context) {
        Object owner = context.getOrDefault(ReactiveBaton.OWNER, null);
        if (owner == null) {
            throw new IllegalStateException("no lock owner in the subscriber's Context for '" + lock.getName()
                    + "': end the pipeline with .contextWrite(ReactiveBaton.newOwner()), or use withLock(...)");
        }
        if (!(owner instanceof Long id)) {
            throw new IllegalStateException("the lock owner in the subscriber's Context (" + ReactiveBaton.OWNER
                    + ") must be a Long from Baton.newOwnerId(), not a " + owner.getClass().getName());
        }
        return id;
    }

    @Override
    public String toString() {
        return "ReactiveLock{" + lock.getName() + "}";
    }
}
