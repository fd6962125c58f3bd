package dev.baton.internal.latch;

import dev.baton.BatonCountDownLatch;
import dev.baton.BatonObserver;
import dev.baton.SynchronizerDeletedException;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.pubsub.PubSubService;
import dev.baton.internal.pubsub.WakeRule;
import dev.baton.internal.pubsub.Waiter;
import dev.baton.internal.support.Args;
import dev.baton.internal.unconfirmed.Requests;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/*
 * The count-down latch recipe: Redisson's layout (a STRING count at the name; "0" on the
 * channel when it reaches zero, "1" when a new count is set or the latch is deleted) and the
 * shared acquire engine for await().
 *
 * await() is an acquisition whose attempt only reads the count: zero or absent grants, a
 * positive count refuses. Every waiter on the channel is woken by every message (the whole
 * point of a latch), and a waiter whose announcement was lost re-checks after RECHECK_SECONDS:
 * a bounded re-check, not a polling loop.
 *
 * Deleted versus reached zero: both leave the key absent. The message tells them apart: a
 * waiter that saw the count positive, and then finds the latch gone after a "1" (new count or
 * deletion), knows it was deleted and fails with SynchronizerDeletedException instead of waiting
 * forever as Redisson's waiters do. A waiter whose re-check finds the key gone before the message
 * arrived waits up to MESSAGE_GRACE_MS for it; only if it never comes is the latch taken to have
 * reached zero.
 */
public final class RedisCountDownLatch implements BatonCountDownLatch {
    private static final String ZERO_MESSAGE = "0";
    private static final String NEW_COUNT_OR_DELETED_MESSAGE = "1";
    private static final long RECHECK_MS = TimeUnit.SECONDS.toMillis(RECHECK_SECONDS);
    private static final long MESSAGE_GRACE_MS = 500;

    private final Services services;
    private final String name;
    private final String channel;
    private final List<String> keys;

    public RedisCountDownLatch(Services services, String name) {
        this.services = services;
        this.name = Args.name(name);
        this.channel = Layout.latchChannel(name);
        this.keys = List.of(name, channel);
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public void await() throws InterruptedException {
        Blocking.awaitInterruptibly(() -> start(-1), services.cleanupNanos());
    }

    @Override
    public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        long waitNanos = Args.timeoutNanos(timeout, unit);
        return Blocking.awaitInterruptibly(() -> start(waitNanos), services.cleanupNanos());
    }

    @Override
    public CompletionStage<Boolean> trySetCountAsync(long count) {
        Args.count(count);
        CommandExecutor executor = services.executor();
        return executor.<Long>evalUntilAnswered(Script.LATCH_TRY_SET_COUNT, CommandExecutor.Reply.INTEGER,
                        List.of(name, channel, Requests.key(name, Requests.newId())),
                        List.of(Long.toString(count), NEW_COUNT_OR_DELETED_MESSAGE, services.requests().memoryArg()),
                        executor.timeout().toNanos())
                .thenApply(set -> set.value() == 1L);
    }

    @Override
    public CompletionStage<Void> countDownAsync() {
        services.checkOpen();
        Requests ids = services.requests();
        String key = Requests.key(name, Requests.newId());
        return Requests.notToBeRepeated(ids.<Long>deliver(Script.LATCH_COUNT_DOWN, CommandExecutor.Reply.INTEGER,
                        ids.withForgotten(name, List.of(name, channel, key)),
                        List.of(ZERO_MESSAGE, ids.memoryArg()), name, key,
                        "countDown of latch '" + name + "'").foreground())
                .thenApply(left -> null);
    }

    @Override
    public CompletionStage<Long> waiterCountAsync() {
        services.checkOpen();
        return services.executor().subscribers(channel);
    }

    @Override
    public CompletionStage<Long> getCountAsync() {
        return readCount();
    }

    @Override
    public CompletionStage<Void> awaitAsync() {
        return start(-1).untilGranted();
    }

    @Override
    public CompletionStage<Boolean> awaitAsync(long timeout, TimeUnit unit) {
        return start(Args.timeoutNanos(timeout, unit)).result();
    }

    @Override
    public CompletionStage<Boolean> deleteAsync() {
        return services.executor().<Long>eval(Script.LATCH_DELETE, CommandExecutor.Reply.INTEGER, keys,
                List.of(NEW_COUNT_OR_DELETED_MESSAGE)).thenApply(deleted -> deleted == 1L);
    }

    private CompletableFuture<Long> readCount() {
        return services.executor().read("GET", name, c -> c.get(name))
                .thenApply(value -> value == null ? 0L : Math.max(0L, Long.parseLong(value)));
    }



    private AcquireEngine.Acquisition start(long waitNanos) {
        services.checkOpen();
        return services.engine().acquire(new ZeroWatch(), channel, WakeRule.ALL, waitNanos);
    }

    /**
     * One await's attempts: read the count; zero grants, and so does a "0" that is known to have
     * been published after this await began (without a read: a round trip between the message
     * and the return).
     *
     * <p>"Known to" is the point. The "0" comes on the pub/sub connection, the count on the
     * command connection, and the two are read independently: a "0" Redis published before the
     * await began (the previous round's zero, just before a re-arm) can reach the waiter after its
     * read found the new round's count, and granting on it would open the latch early (issue 45,
     * a storm found it). So once subscribed, the waiter places a mark in the channel's stream (a
     * PING on the pub/sub connection, answered in order with the messages): a "0" heard after
     * the mark was published after the await began; one heard before it may be older, and the
     * next attempt reads the count instead.
     */
    private final class ZeroWatch implements AcquireEngine.Attempt {
        private volatile PubSubService.Subscription subscription;
        private volatile boolean sawPositive;
        /** Whether, and when (scheduler time), the grace for a "0" after finding the latch gone began. */
        private boolean graceStarted;
        private long graceFrom;
        private volatile String lastMessage;
        /** The mark placed once subscribed, on {@code subscription}'s waiter; null until its PING is answered. */
        private volatile Mark mark;
        /**
         * Where the channel's stream stood when the latest read that found the count positive
         * (while subscribed) was sent: every message published after that read ran is heard
         * after it (0 before any message; {@link #sawPositive} says whether there was such a read).
         */
        private volatile long positiveReadAt;
        /** The mark's PING, once sent (its answer sets {@link #mark}). */
        private volatile CompletableFuture<?> marking;

        /** A point in the channel's stream after this await began: messages heard after {@code heard} were published after it. */
        private record Mark(Waiter waiter, long heard) {
        }

        @Override
        public BatonObserver.Kind kind() {
            return BatonObserver.Kind.COUNT_DOWN_LATCH;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return "awaiting count-down latch '" + name + "'";
        }

        @Override
        public void messageSeen(String message) {
            lastMessage = message;
        }

        @Override
        public void subscribed(PubSubService.Subscription s) {
            s.waiter().watch(ZERO_MESSAGE, NEW_COUNT_OR_DELETED_MESSAGE);
            subscription = s;
            // The mark at once, before the first read while subscribed: a "0" heard after it was
            // published after this await began, so the count it waits on reached zero, however
            // soon the latch was armed again (placed after a read instead, a "0" between the
            // read and the PING would be taken for an older one: a review found that window).
            mark(s);
        }

        @Override
        public CompletableFuture<AcquireEngine.Outcome> attempt() {
            PubSubService.Subscription s = subscription;
            long started = services.executor().scheduler().nanoTime();
            Mark m = mark;
            if (s != null && m != null && m.waiter() == s.waiter() && s.waiter().heardOf(ZERO_MESSAGE) > m.heard()) {
                // A "0" published after this await began: the count it waits on reached zero since,
                // which is all await() waits for, even if it was re-armed after.
                return CompletableFuture.completedFuture(AcquireEngine.Outcome.GRANTED);
            }
            // Where the stream stood when the read was sent: any message published after the read
            // ran is heard later; a "1" heard by then was published before it ran.
            long heardBeforeRead = s == null ? 0 : s.waiter().heard();
            long oneBeforeRead = s == null ? 0 : s.waiter().heardOf(NEW_COUNT_OR_DELETED_MESSAGE);
            return services.executor().read("GET", name, c -> c.get(name)).thenCompose(value -> {
                if (value != null && Long.parseLong(value) > 0) {
                    // Only a count seen while subscribed promises a message when it changes.
                    sawPositive = s != null;
                    lastMessage = null; // a "1" followed by a count was a new round, not a deletion
                    if (s != null) {
                        mark(s); // if the first mark failed (a PING that timed out), try again
                        positiveReadAt = heardBeforeRead;
                    }
                    return CompletableFuture.completedFuture(new AcquireEngine.Outcome(false, RECHECK_MS));
                }
                if (value != null || !sawPositive || ZERO_MESSAGE.equals(lastMessage)) {
                    return CompletableFuture.completedFuture(AcquireEngine.Outcome.GRANTED);
                }
                // Gone, and no "0" seen yet: reached zero, or deleted? Whatever made it go was
                // published before this read, so a PING sent now is answered after it: then the
                // stream says which (the simulation found a timed await that decided on a "1" of
                // a re-arm while the zero after it was still on its way, and threw
                // SynchronizerDeletedException for a latch nobody deleted).
                if (s != null && m != null && m.waiter() == s.waiter()) {
                    // Within what is left of one command timeout from this attempt's start, so a
                    // wait still ends within its bound (its last attempt takes one command timeout).
                    long left = services.executor().timeout().toNanos() - (services.executor().scheduler().nanoTime() - started);
                    return s.barrier(left).handle((heard, e) -> e == null ? gone(s, m, oneBeforeRead) : afterGrace());
                }
                return CompletableFuture.completedFuture(afterGrace());
            });
        }

        /**
         * The latch is gone, and every message Redis published before the read that found it
         * gone has been heard (a PING sent after that read has been answered). A "0" after the
         * mark, or since the last read that found the count positive was sent: it reached zero.
         * Else, with no reconnect since that read, a "1" heard after it was sent and before the
         * read that found the latch gone was sent ({@code oneBeforeRead}), so published between
         * the two: the latch went away by a deletion (a zero would have said "0"; an arm would
         * have left it present). Anything else cannot prove a deletion (the "0" lost on a
         * reconnect, a re-arm's "1" published after the read, no message at all) and is taken as
         * having reached zero, as a lost message always is. (Earlier forms of this rule, the
         * last message heard or a "1" after a PING of the positive read, reported deletions where
         * the simulation's rounds, re-armed at once, had only reached zero; or missed a deletion
         * made right after that read.)
         */
        private AcquireEngine.Outcome gone(PubSubService.Subscription s, Mark m, long oneBeforeRead) {
            Waiter w = s.waiter();
            long since = positiveReadAt;
            if (w.heardOf(ZERO_MESSAGE) > Math.min(m.heard(), since) || w.lostBefore() > since) {
                return AcquireEngine.Outcome.GRANTED;
            }
            if (sawPositive && oneBeforeRead > since) {
                throw deleted();
            }
            return AcquireEngine.Outcome.GRANTED;
        }

        /**
         * The latch is gone and the order of the messages cannot be known (no PING in order with
         * them): give a "0" a moment to arrive, then decide by the last message. A wait whose
         * deadline cut that moment short cannot tell, and returns as if it reached zero (an absent
         * latch counts as zero) rather than report a deletion that may not have been one.
         */
        private AcquireEngine.Outcome afterGrace() {
            long now = services.executor().scheduler().nanoTime();
            if (!graceStarted) {
                graceStarted = true;
                graceFrom = now;
                return new AcquireEngine.Outcome(false, MESSAGE_GRACE_MS);
            }
            boolean fullGrace = now - graceFrom >= TimeUnit.MILLISECONDS.toNanos(MESSAGE_GRACE_MS);
            if (fullGrace && NEW_COUNT_OR_DELETED_MESSAGE.equals(lastMessage)) {
                throw deleted();
            }
            // No message at all (lost), or no time to wait for one: taken as having reached zero.
            return AcquireEngine.Outcome.GRANTED;
        }

        private SynchronizerDeletedException deleted() {
            return new SynchronizerDeletedException(name, "count-down latch '" + name
                    + "' was deleted while this caller was waiting for it to reach zero");
        }

        /**
         * Places the mark once per subscription (the first is the earliest, so later ones would
         * only say less): a PING sent now, after this await began.
         */
        private void mark(PubSubService.Subscription s) {
            Mark m = mark;
            CompletableFuture<?> placing = marking;
            if ((placing != null && !placing.isDone()) || (m != null && m.waiter() == s.waiter())) {
                return;
            }
            marking = s.barrier(services.executor().timeout().toNanos()).whenComplete((heard, e) -> {
                if (e == null) {
                    mark = new Mark(s.waiter(), heard);
                }
            });
        }

        @Override
        public CompletableFuture<?> abandonUnknown() {
            return CompletableFuture.completedFuture(null); // a read changes nothing
        }

        @Override
        public CompletableFuture<?> releaseGranted() {
            return CompletableFuture.completedFuture(null); // nothing is held
        }
    }

    @Override
    public String toString() {
        return "BatonCountDownLatch{" + name + "}";
    }
}
