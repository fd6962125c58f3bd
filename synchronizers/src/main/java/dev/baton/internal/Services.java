package dev.baton.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What a synchronizer needs from its client's runtime, handed to it once when it is made: the
 * command executor, the acquire engine, the lease table and its renewer, the request memory,
 * the semaphore's in-client hand-off,
 * the client's id and timeouts, and whether the client is still open. Immutable; one instance
 * per client, built by {@link ClientRuntime}.
 *
 * @param target   where the client's Redis is, without credentials (orders multi-locks)
 * @param lifecycle whether the client is still open
 */
record Services(CommandExecutor executor, AcquireEngine engine, Leases leases, ScriptRenewer renewer,
                Requests requests, PermitHandOff permitHandOff, String clientId, Duration commandTimeout, Duration watchdogTimeout,
                String target, Lifecycle lifecycle) {

    /** Whether a client is open; {@link #close()} is final. */
    static final class Lifecycle {
        private final AtomicBoolean closed = new AtomicBoolean();

        /** Marks the client closed; whether this call did it (false if it was closed already). */
        boolean close() {
            return closed.compareAndSet(false, true);
        }

        /** @throws IllegalStateException if the client is closed */
        void checkOpen() {
            if (closed.get()) {
                throw new IllegalStateException("this Baton client is closed");
            }
        }
    }

    /** @throws IllegalStateException if the client is closed */
    void checkOpen() {
        lifecycle.checkOpen();
    }

    /** The command executor, once the client is checked to be open. */
    @Override
    public CommandExecutor executor() {
        checkOpen();
        return executor;
    }

    long watchdogMs() {
        return watchdogTimeout.toMillis();
    }

    /**
     * How long an interrupted wait may take to stop: the attempt in flight (one command timeout)
     * and a little for dispatching its clean-up.
     */
    long cleanupNanos() {
        return commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(250);
    }

}
