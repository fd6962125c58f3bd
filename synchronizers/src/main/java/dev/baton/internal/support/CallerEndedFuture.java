package dev.baton.internal.support;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * A stage Baton hands a caller that must learn, before any callback runs, that the caller ended
 * it: completing it from outside in any way ({@code complete}, {@code completeExceptionally},
 * {@code cancel}, {@code completeAsync}, and so {@code orTimeout} and {@code completeOnTimeout},
 * which call them) first runs {@link #endedByCaller}, on the caller's thread. So a callback the
 * caller registered, which runs before Baton's own on the same stage, already finds what Baton
 * did about it (the give-backs of what the call held registered, its work stopped). Baton
 * completes it through {@link #completeByOwner} and {@link #failByOwner}, which run no hook. It
 * completes once: {@code obtrudeValue} and {@code obtrudeException} are refused.
 */
public abstract class CallerEndedFuture<T> extends CompletableFuture<T> {

    /**
     * The caller is ending this stage ({@code how}: with a value, an exception's class name,
     * cancelled, completeAsync), before it is completed; called for every such call, also when
     * the stage is done already.
     */
    protected abstract void endedByCaller(String how);

    /** Baton's own completion: no hook. */
    protected final boolean completeByOwner(T value) {
        return super.complete(value);
    }

    /** Baton's own failure: no hook. */
    protected final boolean failByOwner(Throwable failure) {
        return super.completeExceptionally(failure);
    }

    @Override
    public boolean complete(T value) {
        endedByCaller("with a value");
        return super.complete(value);
    }

    @Override
    public boolean completeExceptionally(Throwable failure) {
        endedByCaller(failure.getClass().getSimpleName());
        return super.completeExceptionally(failure);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        endedByCaller("cancelled");
        return super.cancel(mayInterruptIfRunning);
    }

    @Override
    public CompletableFuture<T> completeAsync(Supplier<? extends T> supplier, Executor executor) {
        endedByCaller("completeAsync");
        return super.completeAsync(supplier, executor);
    }

    @Override
    public CompletableFuture<T> completeAsync(Supplier<? extends T> supplier) {
        endedByCaller("completeAsync");
        return super.completeAsync(supplier);
    }

    /** Not supported: the stage completes once. */
    @Override
    public void obtrudeValue(T value) {
        throw new UnsupportedOperationException("this stage completes once; use complete or cancel");
    }

    /** Not supported: the stage completes once. */
    @Override
    public void obtrudeException(Throwable failure) {
        throw new UnsupportedOperationException("this stage completes once; use completeExceptionally or cancel");
    }
}
