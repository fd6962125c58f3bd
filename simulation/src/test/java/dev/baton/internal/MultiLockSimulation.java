package dev.baton.internal;

import dev.baton.BatonLock;
import dev.baton.BatonMultiLock;
import dev.baton.LeaseLostException;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.composite.MultiLock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One seeded run of the multi-lock: three locks of different kinds (reentrant, fair, fenced) on
 * one simulated Redis; two clients, three async owners each, every operation over a subset of two
 * or three of them (given in a random order; the multi-lock takes them in its own), or now and
 * then one member alone, so that sets overlap and race. Calls as users make them: lock, short and
 * long timed waits, a fixed lease, a future cancelled or ended by its caller's own timeout, and
 * an unlock called again after a {@code RedisUnavailableException} (the retry rule).
 *
 * <p>Checked against the simulated keyspace: a grant reaches its caller only while Redis holds
 * every member for that owner (all or nothing); a hold that another grant overtook on any member
 * ends with the loss reported (listener or the unlock's exception); an unlock that returns
 * normally released holds nobody overtook; every timed call ends within its bound; after the
 * run and a drain, every call has ended, no member is held in Redis, and neither client counts a
 * lease.
 */
final class MultiLockSimulation extends Simulation {

    static final List<String> NAMES = List.of("sim-ml-1", "sim-ml-2", "sim-ml-3");

    final List<Owner> owners;

    MultiLockSimulation(long seed, boolean trace, Duration run) {
        super("multiLock", seed, trace, run);
        owners = threeEach(clients, Owner::new);
    }

    @Override
    List<Owner> actors() {
        return owners;
    }

    @Override
    java.util.Set<dev.baton.testkit.UserPattern> covered() {
        return java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT, dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.FIXED_LEASE, dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL, dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_COMPLETE, dev.baton.testkit.UserPattern.NEXT_CALL_IN_CALLBACK, dev.baton.testkit.UserPattern.OVERLAPPING_MEMBER_SETS);
    }

    /** A late acquire copy of the fair member queues a ghost waiter, kept for the fair waiter timeout. */
    @Override
    Duration settle() {
        return LONGEST_STALL.plus(LockSimulation.FAIR_WAITER_TIMEOUT).plus(WATCHDOG).plusSeconds(1);
    }

    @Override
    void endChecks() {
        for (String name : NAMES) {
            Object[] left = world.keyspace().get(name);
            if (left != null) {
                violation("after the drain " + name + " is still held in Redis: " + java.util.Arrays.toString(left));
            }
        }
        for (SimClient c : clients) {
            if (c.runtime.leasesHeld() != 0) {
                violation("client " + c.id + " still counts leases: " + c.runtime.heldLeases());
            }
        }
    }

    /** The owner's hold count of a member in Redis (0: not held by it). */
    long heldInRedis(String name, String field) {
        Object[] entry = world.keyspace().get(name);
        if (entry == null || !(entry[1] instanceof Map<?, ?> hash)) {
            return 0;
        }
        Object count = hash.get(field);
        return count == null ? 0 : Long.parseLong((String) count);
    }

    /** One async owner: one operation at a time, over a subset of the members. */
    final class Owner extends BaseActor {
        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        final SimClient client;
        final long ownerId;
        /** The members of this owner's previous call (to count overlapping sets). */
        List<Integer> lastChosen;
        final List<BatonLock> members;

        /** What it holds now (indexes into {@link #NAMES}), since when, and its state. */
        List<Integer> holding = List.of();
        long grantedAt = -1;
        long askedAt;
        long leaseMs;
        boolean overtaken;
        /** When another grant last overtook this hold (world time). */
        long overtakenAt;
        boolean releasing;
        /** Its previous call was abandoned: the next may wait one command timeout for its clean-up. */
        boolean followsAbandoned;

        Owner(SimClient client, int index) {
            this.client = client;
            this.ownerId = 7_000_000_000L + index;
            this.members = List.of(client.runtime.lock(NAMES.get(0)), client.runtime.fairLock(NAMES.get(1)),
                    client.runtime.fencedLock(NAMES.get(2)));
        }

        String field() {
            return client.id + ":" + ownerId;
        }

        @Override
        public String toString() {
            return "owner " + field();
        }

        @Override
        public void next() {
            if (stopIfStopping()) {
                return;
            }
            operations++;
            askedAt = world.now();
            List<Integer> set = new ArrayList<>(List.of(0, 1, 2));
            java.util.Collections.shuffle(set, world.rnd);
            int size = world.rnd.nextInt(6) == 0 ? 1 : 2 + world.rnd.nextInt(2);
            List<Integer> chosen = List.copyOf(set.subList(0, size));
            List<BatonLock> locks = new ArrayList<>();
            chosen.forEach(i -> locks.add(members.get(i)));
            // One member alone is that lock itself; a set is a multi-lock over them.
            BatonMultiLock multi = size > 1 ? new MultiLock(locks, client.clock) : null;
            BatonLock single = size == 1 ? locks.get(0) : null;
            int op = world.rnd.nextInt(8);
            ran(switch (op) {
                case 0 -> dev.baton.testkit.UserPattern.LONG_WAIT;
                case 1, 7 -> dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT;
                case 2 -> dev.baton.testkit.UserPattern.LONG_WAIT;
                case 3 -> dev.baton.testkit.UserPattern.FIXED_LEASE;
                case 4 -> dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL;
                case 5 -> dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT;
                default -> dev.baton.testkit.UserPattern.GIVEN_UP_BY_COMPLETE;
            });
            if (lastChosen != null && lastChosen.stream().anyMatch(chosen::contains) && !lastChosen.equals(chosen)) {
                ran(dev.baton.testkit.UserPattern.OVERLAPPING_MEMBER_SETS);
            }
            lastChosen = List.copyOf(chosen);
            switch (op) {
                case 0 -> acquire("lockAsync()", chosen, multi, single,
                        (multi != null ? multi.lockAsync(ownerId) : single.lockAsync(ownerId)).thenApply(v -> true), -1, 0);
                case 1, 2 -> {
                    long wait = op == 1 ? world.rnd.nextInt(6) : 10 + world.rnd.nextInt(190);
                    acquire("tryLockAsync(" + wait + " ms)", chosen, multi, single, multi != null
                            ? multi.tryLockAsync(wait, -1, TimeUnit.MILLISECONDS, ownerId)
                            : single.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId), wait, 0);
                }
                case 3 -> {
                    long wait = world.rnd.nextInt(100);
                    long lease = 200 + world.rnd.nextInt(800);
                    acquire("tryLockAsync(" + wait + " ms, lease " + lease + " ms)", chosen, multi, single, multi != null
                            ? multi.tryLockAsync(wait, lease, TimeUnit.MILLISECONDS, ownerId)
                            : single.tryLockAsync(wait, lease, TimeUnit.MILLISECONDS, ownerId), wait, lease);
                }
                case 4, 5 -> {
                    // The future Baton returned, ended by its caller: cancel(), or its own timeout.
                    // Judged through the future itself, so that half the time the owner's next call
                    // starts in that future's own callback (the user pattern of issue 45).
                    CompletableFuture<Void> f = (multi != null ? multi.lockAsync(ownerId) : single.lockAsync(ownerId))
                            .toCompletableFuture();
                    endedByCaller(f, op == 4);
                    boolean fromCallback = world.rnd.nextBoolean();
                    acquire((op == 4 ? "lockAsync() cancelled" : "lockAsync() timed out by its caller")
                            + (fromCallback ? ", next call from its callback" : ""), chosen, multi, single, f, -1, 0, fromCallback);
                }
                case 6 -> {
                    // A timed wait its caller completes with false first (completeOnTimeout's shape).
                    long wait = 20 + world.rnd.nextInt(80);
                    CompletableFuture<Boolean> f = (multi != null ? multi.tryLockAsync(wait, -1, TimeUnit.MILLISECONDS, ownerId)
                            : single.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId)).toCompletableFuture();
                    later(world.micros(0, 3_000), "caller completes", () -> f.complete(false));
                    boolean fromCallback = world.rnd.nextBoolean();
                    acquire("tryLockAsync(" + wait + " ms) completed false by its caller"
                            + (fromCallback ? ", next call from its callback" : ""), chosen, multi, single, f, wait, 0, fromCallback);
                }
                default -> {
                    long wait = world.rnd.nextInt(3) == 0 ? 0 : world.rnd.nextInt(30);
                    acquire("tryLockAsync(" + wait + " ms) at once", chosen, multi, single, multi != null
                            ? multi.tryLockAsync(wait, -1, TimeUnit.MILLISECONDS, ownerId)
                            : single.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId), wait, 0);
                }
            }
        }

        void acquire(String how, List<Integer> chosen, BatonMultiLock multi, BatonLock single, CompletionStage<Boolean> call,
                     long waitMs, long lease) {
            acquire(how, chosen, multi, single, call, waitMs, lease, false);
        }

        /**
         * A call, judged when {@code call} completes ({@code null} or {@code true}: granted); with
         * {@code nextFromCallback}, a call that ends without the set is followed by the owner's
         * next call at once, inside {@code call}'s own callback.
         */
        void acquire(String how, List<Integer> chosen, BatonMultiLock multi, BatonLock single, CompletionStage<?> call,
                     long waitMs, long lease, boolean nextFromCallback) {
            String what = how + " of " + names(chosen);
            doing = what;
            world.note(this + " calls " + what);
            // guarantees.md: the lock waited for at the deadline may take one command timeout,
            // then the locks not yet taken get one attempt each, all at once: one more; after
            // this owner's abandoned call (or a multi-lock call that ended without the set), each
            // of those two may first wait one command timeout for that call's clean-up or
            // give-backs. (A single lock: its own bound.)
            long t = COMMAND_TIMEOUT.toNanos() + SLACK_NANOS;
            long bound = waitMs < 0 ? -1 : chosen.size() == 1
                    ? boundOf(waitMs) + (followsAbandoned ? COMMAND_TIMEOUT.toNanos() : 0)
                    : boundOf(waitMs) + t + (followsAbandoned ? 2 * COMMAND_TIMEOUT.toNanos() : 0);
            followsAbandoned = false;
            long asked = world.now();
            call.whenComplete((value, error) -> {
                boolean got = value == null || Boolean.TRUE.equals(value);
                nextInCallback = nextFromCallback && (error != null || !got);
                Throwable failed = unwrap(error);
                if (failed != null) {
                    // A multi-lock's next call may first wait for the give-backs this one sent (set
                    // before ended(), which may start that call at once).
                    followsAbandoned = failed instanceof CancellationException || failed instanceof TimeoutException
                            || multi != null;
                }
                if (ended(what, asked, bound, error) != null) {
                    return;
                }
                if (!got) {
                    followsAbandoned = multi != null;
                    world.note(this + " " + what + " not granted");
                    pause();
                    return;
                }
                nextInCallback = false;
                granted(what, chosen, multi, single, lease);
            });
        }

        void granted(String what, List<Integer> chosen, BatonMultiLock multi, BatonLock single, long lease) {
            grants++;
            grantedAt = world.now();
            leaseMs = lease;
            overtaken = false;
            holding = chosen;
            StringBuilder redis = new StringBuilder();
            boolean pausedPastLease = pausedPastLease(askedAt, leaseMs);
            List<Integer> heldNow = new ArrayList<>();
            for (int i : chosen) {
                long held = heldInRedis(NAMES.get(i), field());
                redis.append(NAMES.get(i)).append('=').append(held).append(' ');
                if (held < 1 && pausedPastLease) {
                    // As for a single lock (LockSimulation): the grant reached a process stopped
                    // past the lease since the call began; what it holds may have run out.
                    world.note(this + " granted " + what + " after its process stopped past the lease; Redis no longer holds "
                            + NAMES.get(i));
                    if (!overtaken && leaseMs == 0) {
                        grantsAfterLongPause++;
                    }
                    overtaken = leaseMs == 0;
                    continue;
                }
                if (held < 1) {
                    violation(this + " was granted " + what + " but Redis does not hold " + NAMES.get(i) + " for it: "
                            + java.util.Arrays.toString(world.keyspace().get(NAMES.get(i))));
                    return;
                }
                heldNow.add(i);
            }
            world.note(this + " GRANTED " + what + " (Redis: " + redis.toString().trim() + ")");
            for (Owner other : owners) {
                if (other != this && other.grantedAt >= 0 && !other.overtaken && !other.releasing
                        && other.holding.stream().anyMatch(heldNow::contains)) {
                    other.overtaken = true;
                    other.overtakenAt = world.now();
                    boolean leaseRanOut = other.leaseMs > 0
                            && world.now() >= other.askedAt + TimeUnit.MILLISECONDS.toNanos(other.leaseMs);
                    world.note(other + "'s hold was overtaken by " + this + (leaseRanOut ? " (its fixed lease had run out)" : ""));
                    if (leaseRanOut) {
                        other.overtaken = false; // a fixed lease that ran out: the holder is not told
                        other.grantedAt = -1;
                    }
                }
            }
            doing = "holding " + names(chosen);
            later(world.micros(0, 3_000), "hold", () -> release(multi, single));
        }

        void release(BatonMultiLock multi, BatonLock single) {
            doing = "unlocking " + names(holding);
            releasing = true;
            world.note(this + " calls unlockAsync of " + names(holding));
            long asked = world.now();
            CompletionStage<Void> call = multi != null ? multi.unlockAsync(ownerId) : single.unlockAsync(ownerId);
            call.whenComplete((v, error) -> {
                checkBound("unlockAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof RedisUnavailableException && !(e instanceof dev.baton.ReplicaSyncException)) {
                    world.note(this + " unlock unconfirmed, calling it again: " + e.getMessage());
                    later(world.micros(0, 2_000), "unlock again", () -> release(multi, single));
                    return;
                }
                boolean reported = lossReported(field(), grantedAt);
                if (e == null) {
                    // Unless the reply waited out a pause of the owner's process that the
                    // overtaking fell in (as in LockSimulation: it ran before, heard later).
                    if (overtaken && !reported && !replyHeldByPause(asked, overtakenAt)) {
                        violation(this + "'s hold of " + names(holding) + " was overtaken by another grant, and its unlock"
                                + " returned normally with no loss reported");
                    }
                } else if (e instanceof LeaseLostException || e instanceof IllegalMonitorStateException) {
                    world.note(this + " unlock: " + e);
                    if (!overtaken && !(leaseMs > 0) && !reported && !(e instanceof LeaseLostException)) {
                        violation(this + ": unlock of a hold nobody overtook threw " + e);
                    }
                } else {
                    violation(this + ": unlock threw " + e);
                }
                grantedAt = -1;
                overtaken = false;
                releasing = false;
                holding = List.of();
                pause();
            });
        }

        private String names(List<Integer> chosen) {
            List<String> out = new ArrayList<>();
            chosen.forEach(i -> out.add(NAMES.get(i)));
            return out.toString();
        }
    }
}
