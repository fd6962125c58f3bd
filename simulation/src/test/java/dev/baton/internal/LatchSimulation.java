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
 * One seeded run of the count-down latch: set to {@value #COUNT}, two clients, three actors each
 * that wait (untimed, timed, cancelled) or count down, until {@value #COUNT} count-downs have been
 * called in all; then everyone waits once more.
 *
 * <p>Checked against the simulated keyspace: a wait that returns {@code true} does so only once
 * {@value #COUNT} count-downs have been called (a count-down counted twice would open it early);
 * every timed wait ends within its bound on virtual time; a count-down either returns or throws
 * {@code DoNotRetryException} (Baton finishes it); no wait goes on while the latch is open in Redis
 * for longer than {@link Simulation#unawareBound} (a wake-up lost where no message was); after
 * the drain every wait has ended, the last ones opened, and the latch is at zero in Redis
 * (nothing lost).
 */
final class LatchSimulation extends Simulation {

    static final String NAME = "sim-latch";
    static final int COUNT = 20;

    final List<Waiter> waiters;
    int countDownsCalled;

    /** How long a wait may go on while the latch is open in Redis ({@link Simulation#unawareBound}). */
    final long openBound;

    LatchSimulation(long seed, boolean trace, Duration run) {
        super("latch", seed, trace, run);
        openBound = unawareBound(TimeUnit.SECONDS.toNanos(BatonCountDownLatch.RECHECK_SECONDS));
        waiters = threeEach(clients, Waiter::new);
        world.watch = () -> {
            boolean open = openInRedis();
            waiters.forEach(w -> w.clock.watch(() -> open));
        };
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
    void setUp() {
        setKey(NAME, COUNT);
    }

    @Override
    void endChecks() {
        Object[] left = world.keyspace().get(NAME);
        if (left != null) {
            violation("after the drain the latch still counts " + left[1] + " after " + countDownsCalled
                    + " count-downs of " + COUNT + " (a count-down lost)");
        }
    }

    /** One actor: waits or counts down, one operation at a time; waits once more at the end. */
    final class Waiter extends BaseActor {
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
                if (countDownsCalled < COUNT) {
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
            if (op == 0 && countDownsCalled < COUNT) {
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
                    world.at(world.micros(0, 5_000), "caller cancels", () -> f.cancel(true));
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
            doing = "countDown";
            world.note(this + " calls countDownAsync (" + countDownsCalled + " of " + COUNT + ")");
            long asked = world.now();
            latch.countDownAsync().whenComplete((v, error) -> {
                checkBound("countDownAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof DoNotRetryException) {
                    world.note(this + " countDown finished by Baton in the background: " + e.getMessage());
                } else if (e != null) {
                    violation(this + ": countDownAsync threw " + e);
                }
                pause();
            });
        }

        void await(String how, java.util.concurrent.CompletionStage<Boolean> call, long waitMs) {
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
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
                    if (countDownsCalled < COUNT) {
                        violation(this + ": " + how + " opened after " + countDownsCalled + " of " + COUNT
                                + " count-downs (one counted twice)");
                        return;
                    }
                }
                pause();
            });
        }
    }
}
