package dev.baton.internal;

import dev.baton.BatonCountDownLatch;
import dev.baton.DoNotRetryException;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.pubsub.Waiter;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of the count-down latch: armed with a count, two clients, three actors each
 * that wait (untimed, timed, cancelled) or count down; the actor whose count-down is the last of
 * a round awaits the zero and re-arms the latch at once, in that await's own callback (the user
 * pattern of issue 45: a coordinator re-arming as soon as a round reaches zero), for {@link #rounds} rounds
 * of 1 to 6 each ({@value #COUNT} count-downs in all at most); then everyone waits once more.
 *
 * <p>Checked against the simulated keyspace: a wait that returns {@code true} does so only once
 * the round that was armed when it began has had its last count-down called (an earlier round's
 * zero, or a count-down counted twice, would open it early); every timed wait ends within its
 * bound on virtual time; a count-down either returns or throws {@code DoNotRetryException} (Baton
 * finishes it); no wait goes on while the latch is open in Redis for longer than
 * {@link Simulation#unawareBound} (a wake-up lost where no message was); after the drain every
 * wait has ended, the last ones opened, and the latch is at zero in Redis (nothing lost).
 */
final class LatchSimulation extends Simulation {

    static final String NAME = "sim-latch";
    static final int COUNT = 20;

    final List<Waiter> waiters;
    /** Each round's count, drawn per seed. */
    final List<Integer> counts = new java.util.ArrayList<>();
    final int rounds;
    /** The round armed now (1 first), confirmed by trySetCount's reply, and the count-downs called in it. */
    int round = 1;
    int countDownsCalled;
    /** Rounds whose last count-down has been called. */
    int roundsCompleted;
    /** A re-arm is under way: no count-down is called until it is confirmed (it would find the latch absent). */
    boolean rearming;

    /** How long a wait may go on while the latch is open in Redis ({@link Simulation#unawareBound}). */
    final long openBound;

    LatchSimulation(long seed, boolean trace, Duration run) {
        super("latch", seed, trace, run);
        openBound = unawareBound(TimeUnit.SECONDS.toNanos(BatonCountDownLatch.RECHECK_SECONDS));
        int left = COUNT;
        while (left > 0) {
            int n = Math.min(left, 1 + world.rnd.nextInt(6));
            counts.add(n);
            left -= n;
        }
        rounds = counts.size();
        waiters = threeEach(clients, Waiter::new);
        world.watch = () -> {
            boolean open = openInRedis();
            waiters.forEach(w -> w.clock.watch(() -> open));
        };
    }

    /** The current round's count. */
    int count() {
        return counts.get(round - 1);
    }

    /** Whether the latch is open in Redis now (its count reached zero and the key went). */
    boolean openInRedis() {
        return world.server.redis.peekString(NAME) == null;
    }

    @Override
    List<Waiter> actors() {
        return waiters;
    }

    @Override
    java.util.Set<dev.baton.testkit.UserPattern> covered() {
        return java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT, dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL, dev.baton.testkit.UserPattern.REARM_RIGHT_AFTER_ZERO);
    }

    @Override
    void setUp() {
        setKey(NAME, counts.get(0));
    }

    /**
     * After Redis lost its data the latch is what survived: a failover to a replica behind the
     * master brings back a count whose count-downs it never saw, which no count-down left will
     * take to zero, so a wait (the last ones, the coordinator's) may go on for ever while it is
     * armed in Redis.
     */
    @Override
    boolean mayWaitForever(Actor a) {
        return restartedAt >= 0 && !openInRedis();
    }

    @Override
    void endChecks() {
        Object[] left = world.keyspace().get(NAME);
        if (left != null && restartedAt >= 0) {
            world.note("after a data loss the latch counts " + left[1] + ": what survived of its count-downs");
        } else if (left != null) {
            violation("after the drain the latch still counts " + left[1] + " after " + countDownsCalled
                    + " count-downs of " + count() + " in round " + round + " of " + rounds + " (a count-down lost)");
        }
    }

    /** One actor: waits or counts down, one operation at a time; waits once more at the end. */
    final class Waiter extends BaseActor {
        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        final SimClient client;
        final int index;
        final BatonCountDownLatch latch;
        boolean lastWaitDone;
        final WaitClock clock = new WaitClock(this, "the latch was open in Redis", openBound);

        Waiter(SimClient client, int index) {
            this.client = client;
            this.index = index;
            this.latch = client.runtime.countDownLatch(NAME);
        }

        @Override
        public String toString() {
            return "waiter " + client.id + "/" + index;
        }

        @Override
        public void next() {
            if (stopping) {
                // The count-downs not called yet are called now; then a last untimed wait must open.
                if (rearming) {
                    pause();
                } else if (countDownsCalled < count()) {
                    countDown();
                } else if (!lastWaitDone) {
                    lastWaitDone = true;
                    await("awaitAsync() at the end", latch.awaitAsync().thenApply(v -> true), -1);
                } else {
                    idle = true;
                    doing = "nothing";
                }
                return;
            }
            operations++;
            int op = world.rnd.nextInt(5);
            ran(op == 1 ? dev.baton.testkit.UserPattern.LONG_WAIT : op == 2 ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL : dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT);
            if (op == 0 && !rearming && countDownsCalled < count()) {
                countDown();
                return;
            }
            switch (op) {
                case 1 -> {
                    long wait = world.rnd.nextInt(200);
                    await("awaitAsync(" + wait + " ms)", latch.awaitAsync(wait, TimeUnit.MILLISECONDS), wait);
                }
                case 2 -> {
                    CompletableFuture<Void> f = latch.awaitAsync().toCompletableFuture();
                    later(world.micros(0, 5_000), "caller cancels", () -> f.cancel(true));
                    await("awaitAsync() cancelled", f.thenApply(v -> true), -1);
                }
                default -> {
                    long wait = world.rnd.nextInt(6);
                    await("awaitAsync(" + wait + " ms)", latch.awaitAsync(wait, TimeUnit.MILLISECONDS), wait);
                }
            }
        }

        void countDown() {
            countDownsCalled++;
            boolean last = countDownsCalled == count();
            if (last) {
                roundsCompleted = round;
                // No count-down of the next round before it is armed (it would find the latch absent).
                rearming = round < rounds;
            }
            doing = "countDown";
            world.note(this + " calls countDownAsync (" + countDownsCalled + " of " + count() + ", round " + round + ")");
            long asked = world.now();
            latch.countDownAsync().whenComplete((v, error) -> {
                checkBound("countDownAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof DoNotRetryException) {
                    world.note(this + " countDown finished by Baton in the background: " + e.getMessage());
                } else if (e != null) {
                    violation(this + ": countDownAsync threw " + e);
                }
                if (last && round < rounds) {
                    awaitZeroThenRearm();
                } else {
                    pause();
                }
            });
        }

        /**
         * The coordinator's pattern: wait for the round's zero (the last count-down called may
         * land before others still on their way), then re-arm at once, in the await's own callback.
         */
        void awaitZeroThenRearm() {
            doing = "awaiting zero to re-arm";
            world.note(this + " calls awaitAsync() to re-arm round " + round + "'s latch at zero");
            latch.awaitAsync().whenComplete((v, error) -> {
                if (error != null) {
                    world.note(this + " awaitAsync() before the re-arm ended: " + unwrap(error) + "; again");
                    later(world.micros(0, 2_000), "await again", this::awaitZeroThenRearm);
                    return;
                }
                rearm();
            });
        }

        /** Whether an earlier trySetCount of this re-arm was not confirmed (it may have armed the latch). */
        boolean rearmUnconfirmed;

        /** Arms the next round, as a coordinator does the moment a round reaches zero. */
        void rearm() {
            ran(dev.baton.testkit.UserPattern.REARM_RIGHT_AFTER_ZERO);
            int next = counts.get(round);
            doing = "trySetCount";
            world.note(this + " calls trySetCountAsync(" + next + ") for round " + (round + 1));
            long asked = world.now();
            latch.trySetCountAsync(next).whenComplete((set, error) -> {
                checkBound("trySetCountAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof RedisUnavailableException) {
                    rearmUnconfirmed = true;
                    world.note(this + " trySetCount unconfirmed, calling it again: " + e.getMessage());
                    later(world.micros(0, 2_000), "trySetCount again", this::rearm);
                    return;
                }
                if (e != null) {
                    violation(this + ": trySetCountAsync threw " + e);
                    return;
                }
                if (!Boolean.TRUE.equals(set) && rearmUnconfirmed) {
                    // The unconfirmed call ran after all (a stalled copy): the latch is armed.
                    world.note(this + " trySetCount found the latch armed by its own earlier, unconfirmed call");
                } else if (!Boolean.TRUE.equals(set) && restartedAt >= 0) {
                    // A failover to a replica behind the master brought back a count: armed all the same.
                    world.note(this + " trySetCount found the latch armed by what a data loss brought back");
                } else if (!Boolean.TRUE.equals(set)) {
                    violation(this + ": trySetCountAsync found round " + round + "'s latch still armed after an await saw it"
                            + " reach zero");
                    return;
                }
                rearmUnconfirmed = false;
                round++;
                countDownsCalled = 0;
                rearming = false;
                world.note(this + " armed round " + round + " with " + next);
                pause();
            });
        }

        void await(String how, java.util.concurrent.CompletionStage<Boolean> call, long waitMs) {
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
            int armedWhenBegun = round; // the round whose trySetCount (or set-up) had returned
            clock.start(openInRedis());
            call.whenComplete((open, error) -> {
                clock.end();
                if (ended(how, asked, boundOf(waitMs), error) != null) {
                    if (how.endsWith("at the end")) {
                        lastWaitDone = false; // wait again: the last wait must open
                    }
                    return;
                }
                world.note(this + " " + how + (open ? " OPENED" : " timed out"));
                if (open) {
                    grants++;
                    // After a data loss the rounds are whatever survived of them: an await may find
                    // the latch gone (open) or brought back, so its round is not judged.
                    if (roundsCompleted < armedWhenBegun && restartedAt < 0) {
                        violation(this + ": " + how + ", begun with round " + armedWhenBegun + " armed, opened after "
                                + countDownsCalled + " of its " + count() + " count-downs (an earlier round's zero, or a"
                                + " count-down counted twice)");
                        return;
                    }
                }
                pause();
            });
        }
    }
}
