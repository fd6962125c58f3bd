package dev.baton.internal;

import dev.baton.RedisUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

/*
 * The acquire engine is the one wait loop every blocking synchronizer uses, in the spirit of
 * the JDK's AbstractQueuedSynchronizer: a recipe supplies an Attempt (one script call that
 * either grants or says how long the current holder's lease has left) and the engine does the
 * rest, once, for everybody:
 *
 *   attempt ── granted ──────────────────────────────────────────────► done (true)
 *      │ refused, no time left ──────────────────────────────────────► done (false)
 *      │ refused, first time: subscribe to the channel, then attempt again (a release
 *      │   between the first attempt and the SUBSCRIBE would otherwise be missed)
 *      └ refused again: park until a message rings, the holder's TTL runs out or the
 *        deadline comes, whichever is first; then attempt again
 *
 * The uncontended path is exactly one script call: nothing subscribes, nothing is scheduled.
 *
 * Exits and their clean-up, each handled here and nowhere else:
 *   - granted: unsubscribe;
 *   - deadline: one last attempt at the deadline, then false; unsubscribe;
 *   - cancelled (interrupt, Future.cancel): the engine stops at its next step; a grant that
 *     arrives after the cancel is handed back through Attempt.releaseGranted(); unsubscribe;
 *   - an attempt failed without a reply (timeout, connection lost): it may still have been
 *     applied, so Attempt.abandonUnknown() undoes it idempotently; unsubscribe; fail.
 * A wait that ends without a grant completes its result only after all clean-up commands were
 * answered, so a caller told "timed out" (or "failed") knows nothing is left behind in Redis; a
 * grant is reported at once and its unsubscribe goes on in the background.
 *
 * Only one step of an acquisition is in flight at a time, so the state below needs no locks:
 * the fields are handed from one completion callback to the next.
 */
final class AcquireEngine {
    private static final Logger log = LoggerFactory.getLogger(AcquireEngine.class);

    /** One try at the synchronizer's script, supplied by a recipe. */
    interface Attempt {
        /** Runs the acquire script once. */
        CompletableFuture<Outcome> attempt();

        /**
         * The last attempt got no reply and may have been applied: make sure it holds nothing.
         * Completes when the undo was answered (or failed; failures are logged, not thrown).
         */
        CompletableFuture<?> abandonUnknown();

        /** The last attempt was granted after the caller gave up: give the grant back. */
        CompletableFuture<?> releaseGranted();

        /**
         * Before a retry: the latest message seen on the channel since the previous attempt, for
         * recipes whose messages carry meaning beyond "try again" (a deleted latch, say).
         */
        default void messageSeen(String message) {
        }

        /** The channel's subscription is confirmed: every later change will be announced to us. */
        default void subscribed() {
        }

        /**
         * The acquisition ends without a grant (timed out, cancelled, failed): take back whatever
         * the attempts left in Redis while waiting (a queue entry, say). Completes when done.
         */
        default CompletableFuture<?> leave() {
            return CompletableFuture.completedFuture(null);
        }

        /** The tag this acquisition's waiter answers to, for {@link PubSubService#WAKE_TAGGED}. */
        default String waiterTag() {
            return null;
        }
    }

    /**
     * The outcome of one attempt.
     *
     * @param granted      whether the attempt acquired
     * @param retryAfterMs when refused, how long the holder's lease has left (-1 if unknown);
     *                     a lost wake-up message delays the waiter at most this long
     */
    record Outcome(boolean granted, long retryAfterMs) {
        static final Outcome GRANTED = new Outcome(true, 0);
    }

    /** When a lease has no TTL to wait for, re-check at least this often. */
    private static final long UNKNOWN_TTL_RECHECK_MS = 1_000;

    private final PubSubService pubSub;
    private final Scheduler scheduler;

    AcquireEngine(PubSubService pubSub, Scheduler scheduler) {
        this.pubSub = pubSub;
        this.scheduler = scheduler;
    }

    /**
     * Starts an acquisition.
     *
     * @param waitNanos how long to wait; 0 = one attempt only; negative = no limit
     */
    Acquisition acquire(Attempt attempt, String channel, ToIntFunction<String> wakeRule, long waitNanos) {
        Acquisition acquisition = new Acquisition(attempt, channel, wakeRule, waitNanos);
        acquisition.step();
        return acquisition;
    }

    /** One running acquisition. */
    final class Acquisition {
        private final Attempt attempt;
        private final String channel;
        private final ToIntFunction<String> wakeRule;
        private final long deadline;
        private final boolean unlimited;
        private final CompletableFuture<Boolean> result = new CompletableFuture<>();
        private final CompletableFuture<Void> finished = new CompletableFuture<>();
        private volatile boolean cancelled;
        private volatile PubSubService.Subscription subscription;
        private volatile CompletableFuture<Void> parked;
        private volatile CompletableFuture<?> undo = CompletableFuture.completedFuture(null);

        private Acquisition(Attempt attempt, String channel, ToIntFunction<String> wakeRule, long waitNanos) {
            this.attempt = attempt;
            this.channel = channel;
            this.wakeRule = wakeRule;
            this.unlimited = waitNanos < 0;
            this.deadline = scheduler.nanoTime() + Math.max(0, waitNanos);
            result.whenComplete((ok, e) -> {
                if (e instanceof CancellationException) {
                    cancel();
                }
            });
        }

        /** Completes with whether the synchronizer was acquired (false: the wait time ran out). */
        CompletableFuture<Boolean> result() {
            return result;
        }

        /**
         * The acquisition as a {@code Void} stage for "wait until granted" APIs; cancelling that
         * stage {@link #abandon() abandons} the acquisition.
         */
        CompletableFuture<Void> untilGranted() {
            CompletableFuture<Void> granted = result.thenApply(ok -> null);
            granted.whenComplete((ok, e) -> {
                if (e instanceof CancellationException) {
                    abandon();
                }
            });
            return granted;
        }

        /** Completes when the acquisition and all its clean-up are over. */
        CompletableFuture<Void> finished() {
            return finished;
        }

        /**
         * For a caller that no longer wants the outcome (its own future was cancelled): cancels
         * the acquisition, or, if it had already been granted, gives the grant back.
         */
        void abandon() {
            if (!result.cancel(false) && !result.isCompletedExceptionally() && Boolean.TRUE.equals(result.getNow(false))) {
                attempt.releaseGranted();
            }
        }

        /** Abandons the acquisition; whatever it had obtained is given back. */
        void cancel() {
            cancelled = true;
            CompletableFuture<Void> p = parked;
            if (p != null) {
                p.complete(null);
            }
        }

        private void step() {
            if (cancelled) {
                finish(false, new CancellationException("acquisition cancelled"));
                return;
            }
            CompletableFuture<Outcome> tried;
            try {
                PubSubService.Subscription s = subscription;
                if (s != null) {
                    String message = s.waiter().takeMessage();
                    if (message != null) {
                        attempt.messageSeen(message);
                    }
                }
                tried = attempt.attempt();
            } catch (RuntimeException e) {
                finish(false, e);
                return;
            }
            tried.whenComplete(this::afterAttempt);
        }

        private void afterAttempt(Outcome outcome, Throwable error) {
            if (error != null) {
                Throwable cause = CommandExecutor.unwrap(error);
                if (cause instanceof RedisUnavailableException) {
                    undo = attempt.abandonUnknown();
                }
                finish(false, cause);
                return;
            }
            if (outcome.granted()) {
                if (cancelled) {
                    undo = attempt.releaseGranted();
                    finish(false, new CancellationException("acquisition cancelled"));
                } else {
                    finish(true, null);
                }
                return;
            }
            long remaining = unlimited ? Long.MAX_VALUE : deadline - scheduler.nanoTime();
            if (remaining <= 0 || cancelled) {
                finish(false, cancelled ? new CancellationException("acquisition cancelled") : null);
                return;
            }
            if (subscription == null) {
                try {
                    subscription = pubSub.subscribe(channel, wakeRule, attempt.waiterTag());
                } catch (RuntimeException e) {
                    finish(false, e);
                    return;
                }
                subscription.ready().whenComplete((ok, e) -> {
                    if (e != null) {
                        finish(false, CommandExecutor.unwrap(e));
                    } else {
                        attempt.subscribed();
                        step();
                    }
                });
                return;
            }
            park(outcome.retryAfterMs(), remaining);
        }

        private void park(long retryAfterMs, long remainingNanos) {
            long ttlNanos = TimeUnit.MILLISECONDS.toNanos(retryAfterMs >= 0 ? retryAfterMs : UNKNOWN_TTL_RECHECK_MS);
            long waitNanos = Math.min(remainingNanos, ttlNanos);
            Waiter waiter = subscription.waiter();
            CompletableFuture<Void> bell = waiter.park();
            parked = bell;
            if (cancelled) {
                bell.complete(null);
            }
            Scheduler.Cancellable timer = scheduler.schedule(() -> bell.complete(null), waitNanos, TimeUnit.NANOSECONDS);
            bell.whenComplete((ok, e) -> {
                timer.cancel();
                parked = null;
                waiter.consume();
                step();
            });
        }

        private void finish(Boolean acquired, Throwable error) {
            boolean granted = error == null && Boolean.TRUE.equals(acquired);
            if (!granted) {
                CompletableFuture<?> before = undo;
                undo = before.handle((ok, e) -> null).thenCompose(ignored -> attempt.leave());
            }
            PubSubService.Subscription s = subscription;
            CompletableFuture<Void> left = s == null ? CompletableFuture.completedFuture(null) : s.close();
            if (granted && !result.complete(true)) {
                // The caller cancelled the result future between our grant and now.
                undo = attempt.releaseGranted();
            }
            CompletableFuture.allOf(left, undo.handle((ok, e) -> null)).whenComplete((ok, e) -> {
                if (e != null) {
                    log.debug("leaving channel {} failed", channel, e);
                }
                // A wait that ends without a grant reports only once its clean-up is done, so
                // the caller never sees a queue entry or subscription it left behind.
                if (error != null) {
                    result.completeExceptionally(error);
                } else if (!granted) {
                    result.complete(false);
                }
                finished.complete(null);
            });
        }
    }
}
