package dev.baton.internal.semaphore;

import dev.baton.BatonSemaphore;
import dev.baton.internal.engine.AcquireEngine;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/*
 * The plain semaphore's in-client hand-off: a release on a client where an acquisition of the
 * same semaphore is parked gives the permits to that acquisition without a command. The released
 * permits were counted out of Redis when their holder took them and the waiter's are counted out
 * by the same token, so Redis's count is the same as after a release and the waiter's acquire:
 * what callers hold plus what Redis counts never changes. Nothing is sent, so nothing can be
 * lost, re-sent or counted twice on the way.
 *
 * Who may be handed permits is the engine's business, not this class's: only an acquisition
 * parked between attempts, with no attempt of its own in flight, and the engine takes a hand-off
 * and a wake-up (a message, its timer, a cancel) from one atomic slot, so a hand-off never meets
 * an attempt that could be granted too (AcquireEngine.Acquisition.handOff). A parked acquisition
 * that asks for more permits than a release carries is passed over; what no waiter here takes
 * goes to Redis as a release always does.
 *
 * Turns: a client hands at most TURNS releases of one semaphore in a row to its own waiters; the
 * next release goes to Redis, which publishes the count, so waiters on other clients (Baton's and
 * Redisson's) race for it as they would without hand-offs. A release that sends any permits to
 * Redis starts the count again. A semaphore's line (its parked acquisitions and the count) stays
 * while anybody is parked or the count is not zero, so the count survives the moments when the
 * one thread that would be handed to is busy holding: it goes when a release to Redis has reset
 * the count with nobody parked.
 */
public final class PermitHandOff {
    /** How many releases in a row a client hands to its own waiters before one goes to Redis. */
    static final int TURNS = BatonSemaphore.LOCAL_TURNS;

    /** One semaphore's parked acquisitions on this client, oldest first, and the turn count. */
    private static final class Line {
        final ConcurrentLinkedQueue<Parked> parked = new ConcurrentLinkedQueue<>();
        final AtomicInteger handedInARow = new AtomicInteger();

        /**
         * Nobody parked and the turn count at zero: the line may go. One whose count is not zero
         * stays although nobody is parked (its last hand-off's taker will release, and parks of
         * the same threads come back), so the count is not lost between parks: two threads passing
         * one permit back and forth empty the line at every hand-off.
         */
        boolean idle() {
            return parked.isEmpty() && handedInARow.get() == 0;
        }
    }

    /**
     * An acquisition of {@code permits} that has parked at least once.
     *
     * @param inline whether a hand-off may run its completion on the releasing thread: only for
     *               a blocking caller, whose only dependent is its own parked thread; an async
     *               caller's callbacks run off the releasing thread (Scheduler.offload)
     */
    record Parked(AcquireEngine.Acquisition acquisition, int permits, boolean inline) {
    }

    private final ConcurrentHashMap<String, Line> lines = new ConcurrentHashMap<>();
    /** Acquisitions granted by a hand-off so far (for tests and the simulation's coverage). */
    private final AtomicLong handed = new AtomicLong();
    private final AtomicLong passedOn = new AtomicLong();

    /** Registers {@code parked} for hand-offs on semaphore {@code name} until its acquisition settles. */
    void parked(String name, Parked parked) {
        lines.compute(name, (k, line) -> {
            Line l = line == null ? new Line() : line;
            l.parked.add(parked);
            return l;
        });
        parked.acquisition().settled().whenComplete((ok, e) -> lines.computeIfPresent(name, (k, line) -> {
            line.parked.remove(parked);
            return line.idle() ? null : line;
        }));
    }

    /**
     * A release of {@code permits} on semaphore {@code name}: hands them to this client's parked
     * acquisitions, oldest first, each taking all it asked for or nothing, unless this client has
     * handed {@link #TURNS} releases in a row.
     *
     * @return the permits left for Redis (0: every one was handed)
     */
    int release(String name, int permits) {
        Line line = lines.get(name);
        if (line == null) {
            return permits;
        }
        int turn;
        do {
            turn = line.handedInARow.get();
            if (turn >= TURNS) {
                if (line.handedInARow.compareAndSet(turn, 0)) {
                    dropIfIdle(name);
                    return permits; // this one goes to Redis: other clients' turn
                }
                turn = -1;
            }
        } while (turn < 0 || !line.handedInARow.compareAndSet(turn, turn + 1));
        int left = permits;
        for (Parked p : line.parked) {
            if (p.permits() <= left && p.acquisition().handOff(p.inline())) {
                handed.incrementAndGet();
                left -= p.permits();
                if (left == 0) {
                    return 0;
                }
            }
        }
        line.handedInARow.set(0); // permits go to Redis: the count starts again
        dropIfIdle(name);
        return left;
    }

    private void dropIfIdle(String name) {
        lines.computeIfPresent(name, (k, line) -> line.idle() ? null : line);
    }

    /**
     * A wait of {@code self} was rung by a message and refused while {@code free} permits were
     * free, too few for it: rings the oldest other acquisition of semaphore {@code name} parked
     * on this client that asks for no more than {@code free} and has no ring pending. Only one
     * that fits, so a message costs at most one more attempt per refusal it meets, not one per
     * waiter (a review found a pass to every younger waiter in turn made each release of a few
     * permits wake a whole queue of larger requests).
     */
    void passWakeUp(String name, long free, AcquireEngine.Acquisition self) {
        Line line = lines.get(name);
        if (line == null) {
            return;
        }
        for (Parked p : line.parked) {
            if (p.acquisition() != self && p.permits() <= free && p.acquisition().ring()) {
                passedOn.incrementAndGet();
                return;
            }
        }
    }

    /** How many wake-ups were passed on (for the simulation's coverage). */
    public long passedOn() {
        return passedOn.get();
    }

    /** How many acquisitions were granted by a hand-off on this client (for tests). */
    public long handed() {
        return handed.get();
    }

    /** How many acquisitions of semaphore {@code name} are parked on this client, open to a hand-off (for tests). */
    public int parkedCount(String name) {
        Line line = lines.get(name);
        return line == null ? 0 : (int) line.parked.stream().filter(p -> p.acquisition().parkedForHandOff()).count();
    }
}
