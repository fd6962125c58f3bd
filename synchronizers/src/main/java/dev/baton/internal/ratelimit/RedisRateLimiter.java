package dev.baton.internal.ratelimit;

import dev.baton.BatonObserver;
import dev.baton.BatonRateLimiter;
import dev.baton.RateLimit;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.Failures;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.engine.Observer;
import dev.baton.internal.support.Args;
import dev.baton.internal.support.CallerEndedFuture;
import dev.baton.internal.time.Scheduler;
import dev.baton.internal.unconfirmed.Requests;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/*
 * A rate limiter over one Redis hash (rate_acquire.lua says how it counts). Each acquisition is
 * one script call: admitted now, reserved for a slot within what the caller accepts, or
 * refused. A reservation is slept out on the client's scheduler (the drift allowance added),
 * then the caller's stage completes on a Baton thread. Giving up before the slot (interrupt,
 * cancel, a caller's orTimeout) undoes the reservation by its request id (rate_cancel.lua),
 * as does a call whose reply never came, so a late copy reserves nothing; every request key is
 * the unconfirmed package's, forgotten early once answered exactly once.
 */
public final class RedisRateLimiter implements BatonRateLimiter {
    private static final Logger log = LoggerFactory.getLogger(RedisRateLimiter.class);

    /** The scripts' sums stay below this (exact in a double); the longest reservation follows from it. */
    private static final long EXACT_SUMS = 1L << 52;

    private final Services services;
    private final String name;
    private final String key;
    private final RateLimit limit;
    private final Observer observer;
    /** The stored limit this handle last warned about (once per limit). */
    private volatile RateLimit warned;

    public RedisRateLimiter(Services services, String name, RateLimit limit) {
        this.services = services;
        this.name = name;
        this.key = Layout.rateLimiter(name);
        this.limit = Objects.requireNonNull(limit, "limit");
        this.observer = services.engine().observer();
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public RateLimit getLimit() {
        return limit;
    }

    @Override
    public boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException {
        return await(acquisition(checked(permits), waitMicros(Args.timeoutNanos(timeout, unit))));
    }

    @Override
    public void acquire(int permits) throws InterruptedException {
        await(acquisition(checked(permits), -1));
    }

    @Override
    public CompletionStage<Boolean> tryAcquireAsync(int permits) {
        return acquisition(checked(permits), 0);
    }

    @Override
    public CompletionStage<Boolean> tryAcquireAsync(int permits, long timeout, TimeUnit unit) {
        return acquisition(checked(permits), waitMicros(Args.timeoutNanos(timeout, unit)));
    }

    @Override
    public CompletionStage<Void> acquireAsync(int permits) {
        // The stage the caller gets is the acquisition itself (not one derived from it), so that
        // cancelling it undoes the reservation.
        return acquisition(checked(permits), -1, true);
    }

    /** The longest sleep toward a slot that still ends within {@code nanos}, the drift allowance added. */
    private long waitMicros(long nanos) {
        return (long) (TimeUnit.NANOSECONDS.toMicros(nanos) / (1 + services.leases().clockDriftAllowance()));
    }

    private int checked(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits + " (rate limiter '" + name + "')");
        }
        if (permits > limit.burst()) {
            throw new IllegalArgumentException("rate limiter '" + name + "' admits at most its burst of " + limit.burst()
                    + " permits at once (" + limit + "); " + permits + " can never go");
        }
        return permits;
    }

    /** Waits for an acquisition interruptibly; an interrupt ends it (undoing the reservation) and is thrown. */
    private static boolean await(Acquisition<Boolean> acquisition) throws InterruptedException {
        if (Thread.interrupted()) {
            acquisition.cancel(false);
            throw new InterruptedException();
        }
        try {
            return acquisition.get();
        } catch (InterruptedException e) {
            if (!acquisition.cancel(false) && !acquisition.isCompletedExceptionally() && Boolean.TRUE.equals(acquisition.getNow(false))) {
                Thread.currentThread().interrupt(); // admitted first: the call went, the interrupt stays
                return true;
            }
            throw e;
        } catch (ExecutionException e) {
            throw Blocking.rethrow(e.getCause());
        }
    }

    /**
     * Starts one acquisition: a call of rate_acquire that admits, reserves within
     * {@code longestMicros} (0: now or never, -1: however long) or refuses.
     */
    private Acquisition<Boolean> acquisition(int permits, long longestMicros) {
        return acquisition(permits, longestMicros, false);
    }

    /** {@code empty}: the stage completes with null at the slot (acquireAsync's Void). */
    private <T> Acquisition<T> acquisition(int permits, long longestMicros, boolean empty) {
        services.checkOpen();
        Acquisition<T> acquisition = new Acquisition<>(permits, empty);
        Requests ids = services.requests();
        // rate_acquire's sum is at most longest * P + 2 * B * D + P: kept below 2^52.
        long exact = (EXACT_SUMS - 2 * limit.burst() * limit.periodMicros() - limit.permits()) / limit.permits();
        long longest = longestMicros < 0 ? exact : Math.min(longestMicros, exact);
        services.executor().<List<Object>>evalTracked(Script.RATE_ACQUIRE, CommandExecutor.Reply.ARRAY,
                ids.withForgotten(name, List.of(key, acquisition.requestKey)),
                List.of(Integer.toString(permits), Long.toString(limit.permits()), Long.toString(limit.periodMicros()),
                        Long.toString(limit.burst()), Long.toString(longest), ids.memoryArg()))
                .whenComplete((delivered, error) -> {
                    if (error != null) {
                        acquisition.unanswered(error);
                        return;
                    }
                    List<Object> reply = delivered.value();
                    noteLimit(reply);
                    long status = (Long) reply.get(0);
                    long wait = (Long) reply.get(1);
                    if (status == 1) {
                        if (!delivered.resent()) {
                            ids.answered(name, acquisition.requestKey);
                        }
                        acquisition.admitted(wait);
                        return;
                    }
                    if (delivered.resent()) {
                        // A refusal answered by a copy written again: the first copy may still
                        // run and reserve for nobody; undo it by its id.
                        acquisition.undo("undoing a refused acquisition whose earlier copy may still run");
                    }
                    long burstInForce = (Long) reply.get(4);
                    if (longestMicros < 0 && status == 0) {
                        acquisition.fail(new IllegalStateException(permits > burstInForce
                                ? "rate limiter '" + name + "' is under the limit " + limitOf(reply) + " in Redis, whose"
                                + " burst of " + burstInForce + " permits can never let " + permits + " go at once"
                                : "rate limiter '" + name + "': the reservations ahead reach further than " + longest
                                + " µs, the longest this limit can count exactly"));
                        return;
                    }
                    acquisition.refused();
                });
        return acquisition;
    }

    private static RateLimit limitOf(List<Object> reply) {
        return RateLimit.of((Long) reply.get(2), Duration.ofNanos((Long) reply.get(3) * 1_000L)).withBurst((Long) reply.get(4));
    }

    /** Logs once per stored limit that differs from this handle's. */
    private void noteLimit(List<Object> reply) {
        if ((Long) reply.get(2) == limit.permits() && (Long) reply.get(3) == limit.periodMicros()
                && (Long) reply.get(4) == limit.burst()) {
            return;
        }
        RateLimit stored = limitOf(reply);
        if (!stored.equals(warned)) {
            warned = stored;
            log.warn("rate limiter '{}': Redis holds the limit {} (another client's, or set by setLimit); this handle"
                    + " was created with {}. The limit in Redis applies until setLimit changes it or the limiter"
                    + " refills and expires", name, stored, limit);
        }
    }

    /** One acquisition as its caller sees it; ended early by the caller, it undoes its request. */
    private final class Acquisition<T> extends CallerEndedFuture<T> {
        private final int permits;
        /** Whether the stage completes with null (acquireAsync) instead of whether it was admitted. */
        private final boolean empty;
        private final String requestKey = Requests.key(name, Requests.newId());
        private final long started = services.executor().scheduler().nanoTime();
        private final Object observed = observer.acquisitionStarted(BatonObserver.Kind.RATE_LIMITER, name);
        /** Set once the request is settled from Redis's side: admitted and slept out, refused, or undone. */
        private final AtomicBoolean settled = new AtomicBoolean();
        private volatile Scheduler.Cancellable sleep;

        Acquisition(int permits, boolean empty) {
            this.permits = permits;
            this.empty = empty;
        }

        @Override
        protected void endedByCaller(String how) {
            if (!isDone() && settled.compareAndSet(false, true)) {
                Scheduler.Cancellable s = sleep;
                if (s != null) {
                    s.cancel();
                }
                undo("undoing a reservation given up (" + how + ")");
                told(null, new CancellationException(how));
            }
        }

        void admitted(long waitMicros) {
            if (waitMicros <= 0) {
                if (settled.compareAndSet(false, true)) {
                    finish(true); // on the reply's thread, as every kind's reply is delivered
                } else {
                    undo("undoing an admission its caller had given up");
                }
                return;
            }
            if (isDone()) {
                if (settled.compareAndSet(false, true)) {
                    undo("undoing a reservation its caller had given up");
                }
                return;
            }
            double allowance = services.leases().clockDriftAllowance();
            long sleepMicros = waitMicros + (long) Math.ceil(waitMicros * allowance);
            sleep = services.executor().scheduler().slots().schedule(() -> {
                if (settled.compareAndSet(false, true)) {
                    finish(true); // on the slot timer's pooled thread (SlotTimer)
                }
            }, sleepMicros, TimeUnit.MICROSECONDS);
            if (isDone() && settled.compareAndSet(false, true)) {
                // Given up between the reply and the timer's scheduling.
                sleep.cancel();
                undo("undoing a reservation given up");
            }
        }

        void refused() {
            if (settled.compareAndSet(false, true)) {
                finish(false);
            }
        }

        void fail(Throwable error) {
            if (settled.compareAndSet(false, true)) {
                told(null, error);
                failByOwner(error);
            }
        }

        /** No reply: whatever a copy did is undone by the request's id, and the caller hears why. */
        void unanswered(Throwable error) {
            Throwable cause = Failures.unwrap(error);
            if (Failures.isConnectionFailure(cause)) {
                undo("undoing an acquisition whose reply never came");
            }
            fail(cause);
        }

        @SuppressWarnings("unchecked")
        private void finish(boolean admitted) {
            told(admitted, null);
            completeByOwner(empty ? null : (T) Boolean.valueOf(admitted));
        }

        private void told(Boolean admitted, Throwable error) {
            observer.acquisitionEnded(BatonObserver.Kind.RATE_LIMITER, name,
                    Observer.outcome(Boolean.TRUE.equals(admitted), error),
                    services.executor().scheduler().nanoTime() - started, observed);
        }

        /**
         * Undoes this request by its id: its permits come back if nothing was reserved after it.
         * Sent as a clean-up (CommandExecutor.evalCleanup: once, as EVAL, never cancelled), so
         * it reaches Redis ahead of the caller's next command even on a server that never ran
         * the script (an EVALSHA refused with NOSCRIPT would be sent again behind that command:
         * the blind storm found the caller's next call reserving behind the copy it undoes). If
         * its connection fails, the undo is delivered in the background until answered (it
         * counts once: rate_cancel marks the request).
         */
        void undo(String why) {
            Requests ids = services.requests();
            List<String> keys = List.of(key, requestKey);
            List<String> args = List.of(Integer.toString(permits), ids.memoryArg());
            String what = why + " of " + permits + (permits == 1 ? " permit" : " permits") + " of rate limiter '" + name + "'";
            services.executor().<Long>evalCleanup(Script.RATE_CANCEL, CommandExecutor.Reply.INTEGER, keys, args)
                    .whenComplete((undone, error) -> {
                        if (error != null && Failures.isConnectionFailure(error)) {
                            ids.deliver(Script.RATE_CANCEL, CommandExecutor.Reply.INTEGER, keys, args, null, null, what);
                        }
                    });
        }
    }

    @Override
    public CompletionStage<State> stateAsync() {
        services.checkOpen();
        return services.executor().<List<Object>>eval(Script.RATE_STATE, CommandExecutor.Reply.ARRAY, List.of(key), List.of())
                .thenApply(reply -> {
                    if ((Long) reply.get(0) == 0L) {
                        return new State(limit, limit.burst(), Duration.ZERO, Duration.ZERO);
                    }
                    long p = (Long) reply.get(1);
                    long d = (Long) reply.get(2);
                    long b = (Long) reply.get(3);
                    long backlog = (Long) reply.get(4);
                    RateLimit inForce = RateLimit.of(p, Duration.ofNanos(d * 1_000L)).withBurst(b);
                    long room = b * d - backlog; // in 1/p µs
                    long available = Math.max(0, Math.floorDiv(room, d));
                    Duration next = Duration.ZERO;
                    if (backlog > 0) {
                        long target = b * d - (available + 1) * d; // the backlog at which one more fits
                        next = Duration.ofNanos(ceilDiv(backlog - target, p) * 1_000L);
                    }
                    long ahead = Math.max(0, ceilDiv(backlog + d - b * d, p));
                    return new State(inForce, available, next, Duration.ofNanos(ahead * 1_000L));
                });
    }

    private static long ceilDiv(long a, long b) {
        return -Math.floorDiv(-a, b);
    }

    @Override
    public CompletionStage<Void> setLimitAsync(RateLimit newLimit) {
        Objects.requireNonNull(newLimit, "limit");
        services.checkOpen();
        return services.executor().<List<Object>>eval(Script.RATE_SET_LIMIT, CommandExecutor.Reply.ARRAY, List.of(key),
                List.of(Long.toString(newLimit.permits()), Long.toString(newLimit.periodMicros()),
                        Long.toString(newLimit.burst()))).thenApply(reply -> null);
    }

    @Override
    public CompletionStage<Boolean> deleteAsync() {
        services.checkOpen();
        return services.executor().<Long>eval(Script.RATE_DELETE, CommandExecutor.Reply.INTEGER, List.of(key), List.of())
                .thenApply(deleted -> deleted == 1L);
    }

    @Override
    public String toString() {
        return "BatonRateLimiter{" + name + ", " + limit + "}";
    }
}
