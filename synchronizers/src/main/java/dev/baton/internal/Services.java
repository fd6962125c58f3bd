package dev.baton.internal;

import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.lease.Leases;
import dev.baton.internal.lease.ScriptRenewer;
import dev.baton.internal.unconfirmed.Requests;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What a synchronizer needs from its client's runtime, handed to it once when it is made: the
 * command executor, the acquire engine, the lease table and its renewer, the request memory,
 * the client's id and timeouts, and whether the client is still open. Immutable; one instance
 * per client, built by the client's runtime ({@code runtime.ClientRuntime}). What only one kind
 * needs (the semaphore's in-client hand-off) is handed to that kind alone.
 *
 * @param target   where the client's Redis is, without credentials (orders multi-locks)
 * @param lifecycle whether the client is still open
 */
public record Services(CommandExecutor executor, AcquireEngine engine, Leases leases, ScriptRenewer renewer,
                       Requests requests, String clientId, Duration commandTimeout, Duration watchdogTimeout,
                       String target, Lifecycle lifecycle) {

    /** Whether a client is open; {@link #close()} is final. */
    public static final class Lifecycle {
        private final AtomicBoolean closed = new AtomicBoolean();
        private final Set<Supplier<CompletableFuture<?>>> beforeClose = ConcurrentHashMap.newKeySet();

        /**
         * Starts the hooks registered to run while the client is still open (a leader election's
         * candidacies hand leadership on), all at once, and waits for them at most
         * {@code hookBound} in all; then marks the client closed. Whether this call did it (false
         * if it was closed already).
         */
        public boolean close(Duration hookBound) {
            if (closed.get()) {
                return false;
            }
            List<CompletableFuture<?>> started = new ArrayList<>();
            for (Supplier<CompletableFuture<?>> hook : List.copyOf(beforeClose)) {
                started.add(hook.get());
            }
            if (!started.isEmpty()) {
                boolean interrupted = false;
                long deadline = System.nanoTime() + hookBound.toNanos();
                for (CompletableFuture<?> hook : started) {
                    while (true) {
                        try {
                            hook.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                            break;
                        } catch (InterruptedException e) {
                            interrupted = true;
                        } catch (ExecutionException | TimeoutException e) {
                            break;
                        }
                    }
                }
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
            return closed.compareAndSet(false, true);
        }

        /** Whether the client is closed (or closing past its hooks). */
        public boolean isClosed() {
            return closed.get();
        }

        /**
         * Starts {@code hook} when the client closes, before anything of it is closed; the close
         * waits for the stage it returns, within its bound.
         */
        public void beforeClose(Supplier<CompletableFuture<?>> hook) {
            beforeClose.add(hook);
        }

        /** Forgets a hook of {@link #beforeClose}. */
        public void forget(Supplier<CompletableFuture<?>> hook) {
            beforeClose.remove(hook);
        }

        /** @throws IllegalStateException if the client is closed */
        public void checkOpen() {
            if (closed.get()) {
                throw new IllegalStateException("this Baton client is closed");
            }
        }
    }

    /** @throws IllegalStateException if the client is closed */
    public void checkOpen() {
        lifecycle.checkOpen();
    }

    /** The command executor, once the client is checked to be open. */
    @Override
    public CommandExecutor executor() {
        checkOpen();
        return executor;
    }

    public long watchdogMs() {
        return watchdogTimeout.toMillis();
    }

    /**
     * How long an interrupted wait may take to stop: the attempt in flight (one command timeout)
     * and a little for dispatching its clean-up.
     */
    public long cleanupNanos() {
        return commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(250);
    }

}
