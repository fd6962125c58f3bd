package dev.baton.internal.engine;

// Over 300 lines on purpose: the loop is one state machine (attempt, subscribe, park, retry,
// finish) whose exits and clean-up rules must be read together; the essay below is its map.

import dev.baton.BatonObserver;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.command.Failures;
import dev.baton.internal.engine.Observer;
import dev.baton.internal.pubsub.PubSubService;
import dev.baton.internal.pubsub.Waiter;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.internal.support.Durations;
import dev.baton.internal.time.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/*
 * The acquire engine is the one wait loop every blocking synchronizer uses, in the spirit of
 * the JDK's AbstractQueuedSynchronizer: a recipe supplies an Attempt (one script call that
 * either grants or says how long the current holder's lease has left) and the engine does the
 * rest, once, for everybody:
 *
 *   attempt ── granted ──────────────────────────────────────────────► done (true)
 *      │ refused, no time left ──────────────────────────────────────► done (false)
 *      │ refused, first time: subscribe to the channel, then attempt again (a release
 *      │   between the first attempt and the SUBSCRIBE would otherwise be missed); a semaphore
 *      │   whose channel was subscribed already as the attempt was sent, and has carried no
 *      │   message since, parks at once instead (nothing can have been missed)
 *      │ failed on the connection (reset, reconnecting, no answer in time), and the wait has
 *      │   a budget with time left: undo the attempt, pause briefly, attempt again
 *      └ refused again: park until a message rings, the holder's TTL runs out or the
 *        deadline comes, whichever is first; then attempt again; a wait rung for what it cannot
 *        use (Outcome.leftForOthers: a semaphore's permits, too few for it) first passes the
 *        ring to a waiter that can (Attempt.passWakeUp)
 *
 * The uncontended path is exactly one script call: nothing subscribes, nothing is scheduled.
 *
 * A grant in the client (the semaphore's hand-off, PermitHandOff): a parked acquisition can also
 * be granted by another thread of the client, without an attempt. It is offered only while
 * parked, and the park's wake-ups and the hand-off take one slot (handSlot) by an atomic swap, so
 * exactly one of them decides the next step: an attempt (no hand-off can take it until the next
 * park) or the hand-off's grant (no attempt is made). The grant then goes the way an attempt's
 * grant goes: delivered, or given back through Attempt.releaseGranted() when the caller has given
 * up meanwhile.
 *
 * Exits and their clean-up, each handled here and nowhere else:
 *   - granted: unsubscribe;
 *   - deadline: one last attempt at the deadline, then false; leave the queue; unsubscribe;
 *   - given up (an interrupt, or the caller completing the result or its derived future: cancel,
 *     orTimeout, completeOnTimeout, complete): the engine stops at its next step; a grant that
 *     arrives after it, or raced it, is handed back through Attempt.releaseGranted(), always
 *     before settled() completes; leave; unsubscribe. givenUp() tells an owner's next
 *     acquisition to wait for that settling (Leases.acquiring), so the give-back by owner id
 *     reaches Redis first;
 *   - its turn never came: an owner's acquisitions of one lock take turns (Leases.acquiring);
 *     one whose deadline or cancel comes while an earlier one still runs ends (false, or the
 *     cancellation) without an attempt, and so with nothing to clean up;
 *   - an attempt failed without a reply: it may still have been applied, so
 *     Attempt.abandonUnknown() undoes it idempotently. A wait with a budget then tries again
 *     after a short pause while the budget lasts, so a reconnect inside the budget costs the
 *     caller nothing; it reports RedisUnavailableException only if the last attempt failed
 *     that way. A wait without a budget (lock(), await()) and a single try report at once.
 *
 * The caller is never held by clean-up. Every clean-up command (undo, leaving a queue,
 * unsubscribing) is dispatched on the connection before the caller's result completes, so it
 * reaches Redis in order, ahead of anything the caller does next; its reply is awaited in the
 * background and a failure is logged. So a wait that fails because Redis did not answer ends
 * one command timeout after the attempt that failed was sent, not one per clean-up command
 * (an earlier version awaited each, and a paused Redis made callers wait two or three times
 * the timeout).
 *
 * Only one step of an acquisition is in flight at a time, so the state below needs no locks:
 * the fields are handed from one completion callback to the next.
 */
public final class AcquireEngine {
    private static final Logger log = LoggerFactory.getLogger(AcquireEngine.class);

    /** One try at the synchronizer's script, supplied by a recipe. */
    public interface Attempt {
        /** Runs the acquire script once. */
        CompletableFuture<Outcome> attempt();

        /**
         * The last attempt got no reply and may have been applied: make sure it holds nothing.
         * The undo command must be dispatched before this method returns (so it reaches Redis
         * behind the attempt and ahead of the caller's next command); the future completes when
         * it was answered.
         */
        CompletableFuture<?> abandonUnknown();

        /** The last attempt was granted after the caller gave up: give the grant back (dispatched at once). */
        CompletableFuture<?> releaseGranted();

        /** What this acquisition does, for messages: e.g. {@code acquiring lock 'orders'}. */
        String description();

        /**
         * Before a retry: the latest message seen on the channel since the previous attempt, for
         * recipes whose messages carry meaning beyond "try again" (a deleted latch, say).
         */
        default void messageSeen(String message) {
        }

        /**
         * The channel's subscription is confirmed: every later change will be announced to us,
         * through {@code subscription}'s waiter.
         */
        default void subscribed(PubSubService.Subscription subscription) {
        }

        /**
         * The acquisition ends without a grant (timed out, cancelled, failed): take back whatever
         * the attempts left in Redis while waiting (a queue entry, say). Dispatched at once, like
         * {@link #abandonUnknown()}; completes when answered.
         */
        default CompletableFuture<?> leave() {
            return CompletableFuture.completedFuture(null);
        }

        /**
         * The acquisition is about to park between attempts (it has no attempt in flight): a
         * recipe that hands grants over in the client registers it here to be offered them
         * ({@link Acquisition#handOff}). Called at every park.
         */
        default void parking(Acquisition acquisition) {
        }

        /**
         * Whether a refused first attempt may park at once when the channel was subscribed before
         * it was sent and has carried nothing since: the attempt's refusal is then as fresh as a
         * second attempt's would be. Only for recipes whose attempt means the same subscribed or
         * not (not the latch: it trusts only a count read while subscribed).
         */
        default boolean parksOnAQuietChannel() {
            return false;
        }

        /**
         * This acquisition was rung by a message and refused with something left that a smaller
         * request could take ({@link Outcome#leftForOthers()}): ring another waiter that can use
         * it, if the recipe knows one. Never blocks.
         */
        default void passWakeUp(Acquisition acquisition) {
        }

        /** The tag this acquisition's waiter answers to, for {@link WakeRule#TAGGED}. */
        default String waiterTag() {
            return null;
        }

        /** What the observer hears this acquisition's end as; {@code null}: not told (a part of a composite). */
        default BatonObserver.Kind kind() {
            return null;
        }

        /** The synchronizer's name, for the observer. */
        default String name() {
            return null;
        }
    }

    /**
     * The outcome of one attempt.
     *
     * @param granted      whether the attempt acquired
     * @param retryAfterMs when refused, how long the holder's lease has left (-1 if unknown);
     *                     a lost wake-up message delays the waiter at most this long
     * @param leftForOthers when refused, whether something is free that a smaller request could
     *                     take (a semaphore's permits, too few for this one): a wait woken by a
     *                     message passes its wake-up on (Attempt.passWakeUp) to a waiter the
     *                     message's wake rule may not have rung
     */
    public record Outcome(boolean granted, long retryAfterMs, boolean leftForOthers) {
        public static final Outcome GRANTED = new Outcome(true, 0);

        public Outcome(boolean granted, long retryAfterMs) {
            this(granted, retryAfterMs, false);
        }
    }

    /** When a lease has no TTL to wait for, re-check at least this often. */
    private static final long UNKNOWN_TTL_RECHECK_MS = 1_000;

    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    /** What a parked acquisition's hand-off slot holds once a hand-off took it. */
    private static final CompletableFuture<Void> HANDED = new CompletableFuture<>();

    private final PubSubService pubSub;
    private final Scheduler scheduler;
    private final Observer observer;

    /**
     * Wakes this client's waiters on {@code channel} as {@code rule} wakes them for a message:
     * the client learned by itself that what they wait for may be free.
     */
    public void wakeLocal(String channel, WakeRule rule) {
        if (pubSub != null) {
            pubSub.ring(channel, rule);
        }
    }

    public AcquireEngine(PubSubService pubSub, Scheduler scheduler, Observer observer) {
        this.pubSub = pubSub;
        this.scheduler = scheduler;
        this.observer = observer;
    }

    /** The client's observer, for a kind that waits without the engine (the rate limiter). */
    public Observer observer() {
        return observer;
    }

    /**
     * Starts an acquisition.
     *
     * @param channel   where releases are announced; {@code null} for an acquisition that is told
     *                  of nothing (a RedLock over several servers) and re-tries when each refusal's
     *                  {@link Outcome#retryAfterMs()} has passed
     * @param waitNanos how long to wait; 0 = one attempt only; negative = no limit
     */
    public Acquisition acquire(Attempt attempt, String channel, WakeRule wakeRule, long waitNanos) {
        Acquisition acquisition = prepare(attempt, channel, wakeRule, waitNanos);
        acquisition.start(null, null);
        return acquisition;
    }

    /** Makes an acquisition without starting it (see {@link Acquisition#start}). */
    public Acquisition prepare(Attempt attempt, String channel, WakeRule wakeRule, long waitNanos) {
        return new Acquisition(attempt, channel, wakeRule, waitNanos);
    }

    /** One running acquisition. */
    public final class Acquisition {
        private final Attempt attempt;
        private final String channel;
        private final WakeRule wakeRule;
        private final long started;
        /** What the observer returned when told the acquisition started. */
        private final Object observed;
        private final long deadline;
        private final boolean unlimited;
        /** Whether connection-level failures are retried: a wait with a budget. */
        private final boolean ridesThroughFailures;
        private final CompletableFuture<Boolean> result = new CompletableFuture<>();
        private final CompletableFuture<Void> settled = new CompletableFuture<>();
        private final CompletableFuture<Void> finished = new CompletableFuture<>();
        private volatile boolean cancelled;
        /** Set as the engine starts to deliver the outcome: a completion of the result before it is the caller's. */
        private volatile boolean ending;
        /** The future the caller was given, when it is derived from {@link #result} (resultAs). */
        private volatile CompletableFuture<?> derived;
        /**
         * Who completed the result, for {@link #givenUp}: {@code delivered} once the engine's own
         * grant reached the caller; {@code deliverer} while the engine's thread delivers it, so a
         * callback of that delivery (which runs inside it, before {@link #settled}) that starts
         * the owner's next acquisition does not wait for this one (a blocking call there would
         * wait for itself), while another thread that completed the result first (a timeout)
         * counts as giving up. Likewise {@code propagated} and {@code propagator} for the derived
         * future of {@link #resultAs}.
         */
        private volatile boolean delivered;
        private volatile Thread deliverer;
        private volatile boolean propagated;
        private volatile Thread propagator;
        private volatile PubSubService.Subscription subscription;
        private volatile CompletableFuture<Void> parked;
        /**
         * The hand-off slot: while the acquisition is parked between attempts, the bell it parks
         * on; {@link #HANDED} once a hand-off took it; {@code null} otherwise. The bell's callback
         * empties it before anything else, so a wake-up (a message, the timer, a cancel) and a
         * hand-off are decided by one atomic swap: either the next step is an attempt and no
         * hand-off can happen until the next park, or it is the hand-off's grant and no attempt
         * is made.
         */
        private final AtomicReference<CompletableFuture<Void>> handSlot =
                new AtomicReference<>();
        /**
         * Whether a hand-off's grant may be delivered on whatever thread rings the bell (a
         * blocking caller's), or only through {@link Scheduler#offload} (an async caller's: the
         * bell may be rung by the releasing thread, or by a pub/sub wake-up passed on under the
         * pub/sub service's lock).
         */
        private volatile boolean handedInline;
        private volatile CompletableFuture<?> cleanup = DONE;
        private int failures;
        /** Whether the step under way was started by a ring of the channel (a message or a passed-on wake-up). */
        private boolean rung;
        /** The channel as the first attempt was sent, when subscribed then (see Attempt.parksOnAQuietChannel). */
        private PubSubService.Mark mark;
        /** Whether the loop has run (an acquisition that ended waiting for its turn left nothing in Redis to leave). */
        private volatile boolean attempted;

        private Acquisition(Attempt attempt, String channel, WakeRule wakeRule, long waitNanos) {
            this.attempt = attempt;
            this.channel = channel;
            this.wakeRule = wakeRule;
            this.unlimited = waitNanos < 0;
            this.ridesThroughFailures = waitNanos > 0;
            this.started = scheduler.nanoTime();
            this.observed = observer.acquisitionStarted(attempt.kind(), attempt.name());
            this.deadline = started + Math.max(0, waitNanos);
            // Completed by anybody but the engine (cancel, an orTimeout or completeOnTimeout, a
            // complete by hand): the caller has given up, so the acquisition is abandoned, and a
            // grant that arrives later is given back (finish finds the result taken).
            result.whenComplete((ok, e) -> {
                if (!ending) {
                    cancel();
                }
            });
        }

        /**
         * Whether the caller has given up on this acquisition, or it has ended: its result or the
         * future derived from it is complete (a cancel, timeout or completion by hand shows here
         * at once, before any callback has run).
         */
        public boolean givenUp() {
            Thread current = Thread.currentThread();
            // The engine completes the result with a grant (true) before it settles; every other
            // outcome it gives after settling. So a result that failed (cancel, timeout) was
            // given up whoever runs this, and a grant only when another thread made it.
            if (result.isDone() && (result.isCompletedExceptionally() || !(delivered || deliverer == current))) {
                return true;
            }
            CompletableFuture<?> d = derived;
            return d != null && d.isDone() && (d.isCompletedExceptionally() || !(propagated || propagator == current));
        }

        /** Completes with whether the synchronizer was acquired (false: the wait time ran out). */
        public CompletableFuture<Boolean> result() {
            return result;
        }

        /**
         * The acquisition as a {@code Void} stage for "wait until granted" APIs; cancelling that
         * stage {@link #abandon() abandons} the acquisition.
         */
        public CompletableFuture<Void> untilGranted() {
            return resultAs(ok -> null);
        }

        /**
         * The result mapped for an API whose future is derived from it. Completing the returned
         * future before the acquisition ends, in any way (cancel, orTimeout, completeOnTimeout,
         * complete), abandons the acquisition as completing {@link #result()} does; a grant that
         * had just arrived when the caller gave up is given back.
         */
        public <T> CompletableFuture<T> resultAs(Function<Boolean, T> map) {
            CompletableFuture<T> mapped = new CompletableFuture<>();
            derived = mapped;
            result.whenComplete((ok, e) -> {
                boolean took;
                if (e != null) {
                    took = mapped.completeExceptionally(e);
                } else {
                    T value;
                    try {
                        value = map.apply(ok);
                    } catch (RuntimeException | Error failure) {
                        mapped.completeExceptionally(failure);
                        return;
                    }
                    // Not completed already by the caller: only then may this thread run the
                    // caller's callbacks as the propagation's (a lost complete runs them too).
                    if (mapped.isDone()) {
                        took = false;
                    } else {
                        propagator = Thread.currentThread();
                        took = mapped.complete(value);
                        propagated = took;
                        propagator = null;
                    }
                }
                if (!took && e == null && Boolean.TRUE.equals(ok)) {
                    attempt.releaseGranted(); // the caller gave up just before the grant reached it
                }
            });
            mapped.whenComplete((ok, e) -> {
                if (!result.isDone()) {
                    result.cancel(false); // the caller gave up first: abandon (see the constructor)
                }
            });
            return mapped;
        }

        /**
         * Completes when the engine has stopped and every clean-up command has been dispatched:
         * whatever the caller sends next reaches Redis after them. At most one attempt is in
         * flight when a caller cancels, so this comes at most one command timeout later.
         */
        public CompletableFuture<Void> settled() {
            return settled;
        }

        /** Completes when the acquisition has ended and its clean-up commands have all been answered (or failed). */
        public CompletableFuture<Void> finished() {
            return finished;
        }

        /**
         * Grants this acquisition in the client, without an attempt, if it is parked between
         * attempts and has not been given up; otherwise does nothing.
         *
         * @param inline whether the grant may be delivered on the thread that rings the
         *               acquisition's bell (this one, or a wake-up's); otherwise it is delivered
         *               through {@link Scheduler#offload}, so no caller callback runs there
         * @return whether the acquisition took the grant: the caller of this method must then
         *         count whatever it handed over as given; if the acquisition turns out to be
         *         cancelled meanwhile, the engine gives the grant back through
         *         {@link Attempt#releaseGranted()}
         */
        public boolean handOff(boolean inline) {
            CompletableFuture<Void> bell = handSlot.get();
            if (bell == null || bell == HANDED || cancelled) {
                return false;
            }
            handedInline = inline; // the same for every hand-off offered to one acquisition
            if (!handSlot.compareAndSet(bell, HANDED)) {
                return false;
            }
            bell.complete(null);
            return true;
        }

        /**
         * Rings this acquisition's doorbell as a message would, if it waits on a channel and has
         * no ring pending: it attempts again. Whether it was rung.
         */
        public boolean ring() {
            PubSubService.Subscription s = subscription;
            return s != null && s.waiter().signal();
        }

        /** Whether the acquisition is parked between attempts, open to a {@link #handOff}. */
        public boolean parkedForHandOff() {
            CompletableFuture<Void> bell = handSlot.get();
            return bell != null && bell != HANDED;
        }

        /** Abandons the acquisition; whatever it had obtained is given back. */
        public void cancel() {
            cancelled = true;
            CompletableFuture<Void> p = parked;
            if (p != null) {
                p.complete(null);
            }
        }

        /**
         * Starts the loop; its first attempt waits for {@code turn}, then for {@code after} (each
         * when not {@code null}; see {@code Leases.acquiring}). {@code turn}: the owner's earlier
         * acquisitions of the same lock have settled; if the deadline comes or the caller cancels
         * first, the acquisition ends without an attempt (false, or the cancellation) and leaves
         * nothing to clean up. {@code after}: the clean-up of an earlier acquisition the caller
         * gave up, which must reach Redis first; bounded (one command timeout), counted against
         * the budget, and followed by an attempt however short the wait; a cancel meanwhile ends
         * it when {@code after} completes.
         */
        public void start(CompletableFuture<?> after, CompletableFuture<?> turn) {
            Runnable begin = () -> {
                if (after == null || after.isDone()) {
                    step();
                } else {
                    after.whenComplete((ok, e) -> guarded(this::step));
                }
            };
            if (turn == null || turn.isDone()) {
                begin.run();
            } else {
                awaitTurn(turn, begin);
            }
        }

        /**
         * Whether the engine delivered a grant to the caller: only its settling is left, so an
         * owner's next acquisition need not wait for it. While the delivery is under way, only
         * for its own thread (a callback of the grant): another thread waits the few
         * microseconds until it settles, since a caller's cancel racing the delivery still
         * makes the engine give the grant back.
         */
        public boolean grantDelivered() {
            Thread current = Thread.currentThread();
            return delivered || propagated || deliverer == current || propagator == current;
        }

        /**
         * Waits for {@code turn} (an owner's earlier acquisitions of the same lock), at most until
         * the deadline or a cancel; then {@code start}s if it came, or ends without an attempt.
         */
        private void awaitTurn(CompletableFuture<?> turn, Runnable start) {
            CompletableFuture<Void> gate = new CompletableFuture<>();
            parked = gate; // a cancel completes it
            if (cancelled) {
                gate.complete(null);
            }
            turn.whenComplete((ok, e) -> gate.complete(null));
            Scheduler.Cancellable timer = unlimited ? null
                    : scheduler.schedule(() -> gate.complete(null), Math.max(0, deadline - scheduler.nanoTime()), TimeUnit.NANOSECONDS);
            gate.whenComplete((ok, e) -> guarded(() -> {
                if (timer != null) {
                    timer.cancel();
                }
                parked = null;
                if (turn.isDone() && !cancelled) {
                    start.run();
                } else {
                    finish(false, cancelled ? new CancellationException("acquisition cancelled") : null);
                }
            }));
        }

        private void step() {
            attempted = true;
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
                if (s == null && channel != null && attempt.parksOnAQuietChannel()) {
                    mark = pubSub.mark(channel); // before the attempt is sent
                }
                tried = attempt.attempt();
            } catch (RuntimeException e) {
                finish(false, e);
                return;
            }
            tried.whenComplete((outcome, error) -> guarded(() -> afterAttempt(outcome, error)));
        }

        /**
         * Runs one step of the loop from a completion callback; an unexpected exception (a bug,
         * or a recipe failing in a way it should not) ends the wait with it instead of leaving
         * the caller waiting on a chain that silently stopped.
         */
        private void guarded(Runnable next) {
            try {
                next.run();
            } catch (RuntimeException | Error e) {
                log.error("{}: unexpected failure in the wait loop", attempt.description(), e);
                settled.complete(null); // first: a retry from the failure's callback waits for it
                if (!result.isDone()) {
                    ending = true;
                    result.completeExceptionally(e);
                }
            }
        }

        private void afterAttempt(Outcome outcome, Throwable error) {
            if (error != null) {
                Throwable cause = Failures.unwrap(error);
                if (cause instanceof RedisUnavailableException) {
                    addCleanup(attempt.abandonUnknown());
                }
                if (mayRetry(cause)) {
                    retry(cause);
                } else {
                    finish(false, cause);
                }
                return;
            }
            if (outcome.granted()) {
                if (cancelled) {
                    addCleanup(attempt.releaseGranted());
                    finish(false, new CancellationException("acquisition cancelled"));
                } else {
                    finish(true, null);
                }
                return;
            }
            boolean wokenByRing = rung;
            rung = false;
            if (wokenByRing && outcome.leftForOthers()) {
                // Rung for what this wait cannot use (a semaphore's count rings the oldest
                // waiters, whatever they ask for): another waiter may be able to.
                attempt.passWakeUp(this);
            }
            long remaining = remainingNanos();
            if (remaining <= 0 || cancelled) {
                finish(false, cancelled ? new CancellationException("acquisition cancelled") : null);
                return;
            }
            long ttlNanos = TimeUnit.MILLISECONDS.toNanos(outcome.retryAfterMs() >= 0 ? outcome.retryAfterMs() : UNKNOWN_TTL_RECHECK_MS);
            if (subscription == null && channel != null) {
                subscribe(Math.min(remaining, ttlNanos));
                return;
            }
            park(Math.min(remaining, ttlNanos));
        }

        /**
         * Joins the channel after a refusal, then attempts again once the subscription is
         * confirmed; or, when the channel was subscribed as the refused attempt was sent and has
         * carried nothing since (Attempt.parksOnAQuietChannel), parks at once for {@code quietParkNanos}:
         * any release after the attempt rings this waiter as it would ring one already parked.
         */
        private void subscribe(long quietParkNanos) {
            PubSubService.Mark before = mark;
            mark = null;
            PubSubService.Subscription s;
            try {
                s = pubSub.subscribe(channel, wakeRule, attempt.waiterTag());
            } catch (RuntimeException e) {
                finish(false, e);
                return;
            }
            subscription = s;
            if (s.quietSince(before)) {
                attempt.subscribed(s);
                park(quietParkNanos);
                return;
            }
            // The deadline does not wait for the subscription: if SUBSCRIBE is still unconfirmed
            // then (the pub/sub connection reconnecting), the last attempt goes out at the
            // deadline, so a wait with a budget still ends within the budget + the command
            // timeout. (Found by the simulation: a confirmation that came just inside its own
            // timeout was followed by an attempt with a timeout of its own.)
            AtomicBoolean movedOn = new AtomicBoolean();
            // Read once: the channel's future is replaced when a failed SUBSCRIBE is sent again.
            CompletableFuture<Void> ready = s.ready();
            Scheduler.Cancellable atDeadline = unlimited || ready.isDone() ? null : scheduler.schedule(() -> guarded(() -> {
                if (movedOn.compareAndSet(false, true)) {
                    step();
                }
            }), Math.max(0, remainingNanos()), TimeUnit.NANOSECONDS);
            ready.whenComplete((ok, e) -> guarded(() -> {
                if (atDeadline != null) {
                    atDeadline.cancel();
                }
                if (!movedOn.compareAndSet(false, true)) {
                    return; // the deadline came first and made the last attempt
                }
                if (e == null) {
                    attempt.subscribed(s);
                    step();
                    return;
                }
                Throwable cause = Failures.unwrap(e);
                if (!mayRetry(cause)) {
                    finish(false, cause);
                    return;
                }
                // Leave the failed subscription; the next refusal subscribes afresh.
                subscription = null;
                addCleanup(s.close());
                retry(cause);
            }));
        }

        /** Whether a failure is one a wait with a budget rides through, with budget left. */
        private boolean mayRetry(Throwable cause) {
            return ridesThroughFailures && !cancelled && remainingNanos() > 0 && Failures.isConnectionFailure(cause);
        }

        /** Pauses briefly and attempts again; the last attempt comes at the deadline at the latest. */
        private void retry(Throwable cause) {
            log.debug("{}: {}; attempting again within the wait budget", attempt.description(), cause.getMessage());
            park(Math.min(remainingNanos(), Failures.backoffNanos(failures++)));
        }

        private long remainingNanos() {
            return unlimited ? Long.MAX_VALUE : deadline - scheduler.nanoTime();
        }

        /** Waits for a message (if subscribed), the timer or a cancel, then attempts again. */
        private void park(long waitNanos) {
            PubSubService.Subscription s = subscription;
            Waiter waiter = s == null ? null : s.waiter();
            CompletableFuture<Void> bell = waiter == null ? new CompletableFuture<>() : waiter.park();
            parked = bell;
            attempt.parking(this);
            handSlot.set(bell);
            if (cancelled) {
                bell.complete(null);
            }
            Scheduler.Cancellable timer = scheduler.schedule(() -> bell.complete(null), waitNanos, TimeUnit.NANOSECONDS);
            bell.whenComplete((ok, e) -> guarded(() -> {
                timer.cancel();
                parked = null;
                if (handSlot.getAndSet(null) == HANDED) {
                    // Granted in the client. A message's ring pending on the waiter stays
                    // pending: leaving the channel (finish) passes it on to another waiter.
                    if (handedInline) {
                        afterAttempt(Outcome.GRANTED, null);
                    } else {
                        scheduler.offload(() -> guarded(() -> afterAttempt(Outcome.GRANTED, null)));
                    }
                    return;
                }
                if (waiter != null && !cancelled) {
                    // Kept until a refusal uses it, across a connection failure's retry too.
                    rung |= waiter.hasPendingSignal();
                    waiter.consume(); // a cancelled wait keeps its ring: leaving passes it on
                }
                step();
            }));
        }

        private void addCleanup(CompletableFuture<?> dispatched) {
            CompletableFuture<?> before = cleanup;
            cleanup = CompletableFuture.allOf(before.handle((ok, e) -> null), dispatched.handle((ok, e) -> {
                if (e == null) {
                    return null;
                }
                Throwable cause = Failures.unwrap(e);
                if (Failures.isConnectionFailure(cause) || cause instanceof IllegalStateException) {
                    // Still in line on the connection (or re-sent by its recipe): it lands when
                    // Redis answers again; recipes log what could be lost. Or the client closed.
                    log.debug("{}: clean-up not answered yet: {}", attempt.description(), cause.getMessage());
                } else {
                    log.warn("{}: clean-up after the wait failed: {}", attempt.description(), cause.toString());
                }
                return null;
            }));
        }

        private void finish(boolean acquired, Throwable error) {
            ending = true;
            boolean granted = error == null && acquired;
            // Clean-up is dispatched first, so it reaches Redis ahead of the caller's next command.
            if (!granted && attempted) {
                addCleanup(attempt.leave());
            }
            PubSubService.Subscription s = subscription;
            if (s != null) {
                if (!granted && rung) {
                    // Rung by a message, then ended without a reply that used the ring (Redis did
                    // not answer, the deadline passed during a retry): ring it again, so leaving
                    // the channel passes the wake-up on to the next local waiter, which would
                    // otherwise wait for its lease timer while the lock is free (the simulation's
                    // lock seed 449108: 3 s).
                    rung = false;
                    s.waiter().signal();
                }
                addCleanup(s.close());
            }
            // The observer hears before the caller does, so what it records (a meter, a span's
            // end) is there when the caller goes on. A cancellation that lands between this and
            // the delivery below is told as acquired; the grant is then given back at once.
            observer.acquisitionEnded(attempt.kind(), attempt.name(), granted && result.isDone()
                    ? BatonObserver.Outcome.INTERRUPTED : Observer.outcome(granted, error), scheduler.nanoTime() - started,
                    observed);
            boolean delivered = false;
            if (granted && !result.isDone()) {
                // Only when the caller has not completed the result already: a complete that
                // loses the race still runs the callbacks, which must then count as giving up.
                deliverer = Thread.currentThread();
                delivered = result.complete(true);
                this.delivered = delivered;
                deliverer = null;
            }
            if (granted && !delivered) {
                // The caller cancelled the result future between our grant and now.
                addCleanup(attempt.releaseGranted());
            }
            settled.complete(null);
            // The caller hears at once; clean-up replies are awaited in the background.
            if (error != null) {
                result.completeExceptionally(described(error));
            } else if (!granted) {
                result.complete(false);
            }
            cleanup.whenComplete((ok, e) -> finished.complete(null));
        }

        /** A Redis failure, told with what was being done and how long the caller waited. */
        private Throwable described(Throwable error) {
            if (error.getClass() != RedisUnavailableException.class) {
                return error;
            }
            return new RedisUnavailableException(attempt.description() + " failed after "
                    + Durations.readableNanos(scheduler.nanoTime() - started) + ": " + error.getMessage(), error);
        }
    }
}
