package dev.baton.internal;

import dev.baton.BatonSemaphore;
import dev.baton.DoNotRetryException;
import dev.baton.RedisUnavailableException;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of the semaphore: {@value #PERMITS} permits, two clients, three actors each
 * taking one or two permits as users do (an untimed acquire, short and long timed waits, a future
 * cancelled or ended by its caller's own timeout), holding them a moment and releasing them.
 *
 * <p>Checked against the simulated keyspace: at every grant, the permits Redis counts as
 * available plus those callers hold never exceed {@value #PERMITS} (no permit given twice); every
 * timed call ends within its bound on virtual time; a release either returns or throws
 * {@code DoNotRetryException} (Baton finishes it); no wait goes on while Redis counts the permits
 * it asks for as available for longer than {@link #strandBound} (a wake-up lost where no message
 * was); and after the run and a calm drain every call has ended and Redis counts exactly
 * {@value #PERMITS} available: nothing lost, nothing counted twice.
 */
final class SemaphoreSimulation extends Simulation {

    static final String NAME = "sim-sem";
    static final int PERMITS = 3;

    final List<Taker> takers;

    /**
     * How long a wait may go on while Redis counts at least the permits it asks for as available,
     * with nobody taking any ({@link Simulation#unawareBound}).
     */
    final long strandBound;

    SemaphoreSimulation(long seed, boolean trace, Duration run) {
        super("semaphore", seed, trace, run);
        strandBound = unawareBound(TimeUnit.SECONDS.toNanos(BatonSemaphore.RECHECK_SECONDS));
        takers = threeEach(clients, Taker::new);
        world.watch = () -> {
            long available = availableInRedis();
            takers.forEach(t -> t.clock.watch(() -> available >= t.waitingFor));
        };
    }

    @Override
    List<Taker> actors() {
        return takers;
    }

    @Override
    java.util.Set<dev.baton.testkit.UserPattern> covered() {
        return java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT, dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL, dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT, dev.baton.testkit.UserPattern.MULTI_PERMIT);
    }

    @Override
    void setUp() {
        setKey(NAME, PERMITS);
    }

    @Override
    void endChecks() {
        handedInClient = clients.stream().mapToLong(c -> c.runtime.permitHandOff().handed()).sum();
        quietParks = clients.stream().mapToLong(c -> c.runtime.pubSub().quietJoins()).sum();
        passedOn = clients.stream().mapToLong(c -> c.runtime.permitHandOff().passedOn()).sum();
        Object[] value = world.keyspace().get(NAME);
        String available = value == null ? "missing" : String.valueOf(value[1]);
        if (restartedAt >= 0) {
            // After Redis lost its data the count is what the releases since add up to (the
            // permits of holds taken before the loss and given back after it), never below zero
            // (guarantees.md, "Redis losing its data").
            // At most every permit once more: a release Baton sends again after the loss counts
            // again (its request key went with the data; semaphore seed 400505), and a replica
            // promoted behind the master lacks acquisitions whose permits come back after it.
            long most = 2L * PERMITS;
            long left = value == null ? 0 : Long.parseLong(available);
            if (left < 0 || left > most) {
                violation("after a data loss and the drain Redis counts " + available + " permits available, outside 0.." + most);
            }
        } else if (!Integer.toString(PERMITS).equals(available)) {
            violation("after the drain Redis counts " + available + " permits available, not " + PERMITS
                    + " (a permit lost or counted twice)");
        }
    }

    /**
     * After a data loss an untimed acquisition of more permits than Redis counts waits for ever:
     * the permits it waits for went with the data, and nobody holds them to give them back.
     */
    @Override
    boolean mayWaitForever(Actor a) {
        return restartedAt >= 0 && a instanceof Taker t && heldByCallers() == 0 && availableInRedis() < t.waitingFor;
    }

    /** Permits callers hold now: granted, release not yet called. */
    int heldByCallers() {
        return takers.stream().mapToInt(t -> t.held).sum();
    }

    long availableInRedis() {
        String value = world.server.redis.peekString(NAME);
        return value == null ? 0 : Long.parseLong(value);
    }

    /** One actor: takes 1 or 2 permits, holds them, releases them; one operation at a time. */
    final class Taker extends BaseActor {
        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        final SimClient client;
        final int index;
        final BatonSemaphore semaphore;
        int held;
        /** The permits this taker's latest acquire asks for. */
        int waitingFor;
        final WaitClock clock = new WaitClock(this, "Redis counted the permits it asked for available and nobody took any",
                strandBound);

        Taker(SimClient client, int index) {
            this.client = client;
            this.index = index;
            this.semaphore = client.runtime.semaphore(NAME);
        }

        @Override
        public String toString() {
            return "taker " + client.id + "/" + index;
        }

        @Override
        public void next() {
            if (stopIfStopping()) {
                return;
            }
            operations++;
            int k = 1 + world.rnd.nextInt(2);
            int op = world.rnd.nextInt(6);
            ran(op == 1 ? dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT : op <= 3 ? dev.baton.testkit.UserPattern.LONG_WAIT : op == 4 ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL
                    : dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT);
            if (k > 1) {
                ran(dev.baton.testkit.UserPattern.MULTI_PERMIT);
            }
            switch (op) {
                case 0 -> acquire("acquireAsync(" + k + ")", k, semaphore.acquireAsync(k).thenApply(v -> true), -1);
                case 1 -> {
                    long wait = world.rnd.nextInt(6);
                    acquire("tryAcquireAsync(" + k + ", " + wait + " ms)", k,
                            semaphore.tryAcquireAsync(k, wait, TimeUnit.MILLISECONDS), wait);
                }
                case 2, 3 -> {
                    long wait = 10 + world.rnd.nextInt(190);
                    acquire("tryAcquireAsync(" + k + ", " + wait + " ms)", k,
                            semaphore.tryAcquireAsync(k, wait, TimeUnit.MILLISECONDS), wait);
                }
                default -> {
                    // The future Baton returned, ended by its caller: cancel(), or its own timeout.
                    CompletableFuture<Void> f = semaphore.acquireAsync(k).toCompletableFuture();
                    endedByCaller(f, op == 4);
                    acquire("acquireAsync(" + k + ") " + (op == 4 ? "cancelled" : "timed out by its caller"), k,
                            f.thenApply(v -> true), -1);
                }
            }
        }

        void acquire(String how, int k, CompletionStage<Boolean> call, long waitMs) {
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
            waitingFor = k;
            clock.start(availableInRedis() >= k);
            call.whenComplete((got, error) -> {
                clock.end();
                if (ended(how, asked, boundOf(waitMs), error) != null) {
                    return;
                }
                if (!got) {
                    world.note(this + " " + how + " not granted");
                    pause();
                    return;
                }
                grants++;
                held = k;
                long available = availableInRedis();
                world.note(this + " GRANTED " + k + " by " + how + " (Redis: " + available + " available, callers hold "
                        + heldByCallers() + ")");
                if (available + heldByCallers() > PERMITS && restartedAt < 0) {
                    violation(this + " was granted " + k + " by " + how + ": Redis counts " + available
                            + " available while callers hold " + heldByCallers() + " of " + PERMITS);
                    return;
                }
                doing = "holding " + k;
                later(world.micros(0, 3_000), "hold", () -> release(k));
            });
        }

        void release(int k) {
            doing = "releasing " + k;
            held = 0;
            world.note(this + " calls releaseAsync(" + k + ")");
            long asked = world.now();
            semaphore.releaseAsync(k).whenComplete((v, error) -> {
                checkBound("releaseAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof DoNotRetryException) {
                    world.note(this + " release finished by Baton in the background: " + e.getMessage());
                } else if (e != null) {
                    violation(this + ": releaseAsync(" + k + ") threw " + e);
                }
                pause();
            });
        }
    }
}
