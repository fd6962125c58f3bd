package dev.baton.internal;

import dev.baton.BatonLock;
import dev.baton.BatonRedLock;
import dev.baton.RedisUnavailableException;
import dev.baton.internal.composite.RedLock;
import dev.baton.internal.engine.AcquireEngine;
import dev.baton.internal.engine.Observer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of the RedLock: {@value #MASTERS} independent simulated Redis masters, two
 * applications, each with a Baton client per master (six clients, every connection with the
 * seed's faults) and one RedLock over them, three async owners each: timed waits of every length,
 * leases of 100 ms to 1 s, futures cancelled or ended by their caller's own timeout.
 *
 * <p>Checked against the masters' keyspaces: a grant reaches its caller only while a majority of
 * the masters hold the lock for that owner; no two owners are ever inside their validity at once
 * (RedLock's promise: a holder counts on the lock until the validity it was told); an unlock
 * within the validity finds the lock held; every timed call ends within its bound; after the run
 * and a drain, every call has ended, nothing is held on any master, and no client counts a lease.
 * Now and then a call builds a new RedLock object over new lock objects, as code that calls
 * {@code Baton.redLock(...)} per use does, and a holder re-enters its RedLock (a refused re-entry
 * must leave the outer hold on a majority).
 */
final class RedLockSimulation extends Simulation {

    static final String NAME = "sim-redlock";
    static final int MASTERS = 3;
    static final int QUORUM = MASTERS / 2 + 1;
    static final Duration NODE_TIMEOUT = BatonRedLock.DEFAULT_NODE_TIMEOUT;

    /** Each application's clients, one per master (the first on the world's first server). */
    final List<List<SimClient>> apps = new ArrayList<>();
    final List<Owner> owners = new ArrayList<>();

    RedLockSimulation(long seed, boolean trace, Duration run) {
        super("redLock", seed, trace, run);
        List<SimClient> first = List.copyOf(clients);
        for (SimClient base : first) {
            List<SimClient> perMaster = new ArrayList<>(List.of(base));
            for (int m = 2; m <= MASTERS; m++) {
                SimClient c = new SimClient(world, world.server("m" + m), base.id, base.id + "@m" + m, faults, COMMAND_TIMEOUT,
                        WATCHDOG, lossListener(), base.clock);
                clients.add(c);
                perMaster.add(c);
            }
            apps.add(perMaster);
            RedLock redLock = redLock(perMaster);
            for (int i = 1; i <= 3; i++) {
                owners.add(new Owner(base.id, perMaster, redLock, i));
            }
        }
    }

    /** A RedLock over new lock objects of these clients, its pauses drawn from the seed. */
    RedLock redLock(List<SimClient> perMaster) {
        List<BatonLock> nodes = new ArrayList<>();
        perMaster.forEach(c -> nodes.add(c.runtime.lock(NAME)));
        return new RedLock(NAME, nodes, NODE_TIMEOUT, new AcquireEngine(null, perMaster.get(0).clock, Observer.NONE),
                perMaster.get(0).clock, (from, to) -> from + (long) (world.rnd.nextDouble() * (to - from)));
    }

    @Override
    List<Owner> actors() {
        return owners;
    }

    @Override
    java.util.Set<dev.baton.testkit.UserPattern> covered() {
        return java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT, dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL, dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT, dev.baton.testkit.UserPattern.REENTRY);
    }

    @Override
    Duration settle() {
        return LONGEST_STALL.plusSeconds(2).plus(WATCHDOG);
    }

    @Override
    void endChecks() {
        for (int m = 1; m <= MASTERS; m++) {
            Object[] left = keyspace(m).get(NAME);
            if (left != null) {
                violation("after the drain master " + m + " still holds the lock: " + java.util.Arrays.toString(left));
            }
        }
        for (SimClient c : clients) {
            if (c.runtime.leasesHeld() != 0) {
                violation("client " + c.id + " still counts leases: " + c.runtime.heldLeases());
            }
        }
    }

    Map<String, Object[]> keyspace(int master) {
        return (master == 1 ? world.server : world.server("m" + master)).keyspace();
    }

    /** On how many masters Redis holds the lock for {@code field} now. */
    int mastersHolding(String field) {
        int holding = 0;
        for (int m = 1; m <= MASTERS; m++) {
            Object[] entry = keyspace(m).get(NAME);
            if (entry != null && entry[1] instanceof Map<?, ?> hash && hash.get(field) != null) {
                holding++;
            }
        }
        return holding;
    }

    /** One async owner of one application: one operation at a time. */
    final class Owner extends BaseActor {
        @Override
        SimClient.Clock process() {
            return perMaster.get(0).clock;
        }

        final String app;
        final List<SimClient> perMaster;
        final RedLock shared;
        /** The RedLock object of the current operation: the application's, or one made for it. */
        RedLock redLock;
        final long ownerId;
        int holds;
        /** While holding: when its validity ends (virtual ns), and whether its unlock was called. */
        long validUntil = -1;
        boolean releasing;

        Owner(String app, List<SimClient> perMaster, RedLock shared, int index) {
            this.app = app;
            this.perMaster = perMaster;
            this.shared = shared;
            this.redLock = shared;
            this.ownerId = 7_000_000_000L + index;
        }

        String field() {
            return app + ":" + ownerId;
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
            redLock = world.rnd.nextInt(4) == 0 ? redLock(perMaster) : shared;
            long lease = 100 + world.rnd.nextInt(900);
            int op = world.rnd.nextInt(6);
            ran(op <= 1 ? dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT : op <= 3 ? dev.baton.testkit.UserPattern.LONG_WAIT : op == 4 ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL
                    : dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT);
            switch (op) {
                case 0 -> acquire(0, lease, "");
                case 1 -> acquire(world.rnd.nextInt(6), lease, "");
                case 2, 3 -> acquire(10 + world.rnd.nextInt(190), lease, "");
                default -> {
                    // The future Baton returned, ended by its caller: cancel(), or its own timeout.
                    CompletableFuture<Boolean> f = redLock.tryLockAsync(1_000, lease, TimeUnit.MILLISECONDS, ownerId)
                            .toCompletableFuture();
                    endedByCaller(f, op == 4);
                    judge(1_000, lease, f, op == 4 ? " cancelled" : " timed out by its caller");
                }
            }
        }

        void acquire(long waitMs, long lease, String end) {
            judge(waitMs, lease, redLock.tryLockAsync(waitMs, lease, TimeUnit.MILLISECONDS, ownerId), end);
        }

        void judge(long waitMs, long lease, CompletionStage<Boolean> call, String end) {
            String how = "tryLockAsync(" + waitMs + " ms, lease " + lease + " ms)" + end;
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
            call.whenComplete((got, error) -> {
                if (ended(how, asked, boundOf(waitMs), error) != null) {
                    return;
                }
                if (!got) {
                    world.note(this + " " + how + " not granted");
                    pause();
                    return;
                }
                granted(how);
            });
        }

        void granted(String how) {
            grants++;
            long validity = redLock.validityMillis(ownerId);
            int holding = mastersHolding(field());
            world.note(this + " GRANTED by " + how + " (held on " + holding + " of " + MASTERS + " masters, valid "
                    + validity + " ms)");
            if (holding < QUORUM) {
                violation(this + " was granted by " + how + " but only " + holding + " of " + MASTERS + " masters hold it");
                return;
            }
            validUntil = world.now() + TimeUnit.MILLISECONDS.toNanos(validity);
            releasing = false;
            holds = 1;
            for (Owner other : owners) {
                if (other != this && other.validUntil > world.now() && !other.releasing) {
                    violation(this + " was granted by " + how + " while " + other + " is inside its validity for "
                            + (other.validUntil - world.now()) / 1000 + " µs more");
                    return;
                }
            }
            doing = "holding (" + how + ")";
            later(world.micros(0, 3_000), "hold", world.rnd.nextInt(4) == 0 ? this::reenter : this::release);
        }

        /** While holding, takes the RedLock again (a re-entry); a refusal must leave the outer hold in place. */
        void reenter() {
            ran(dev.baton.testkit.UserPattern.REENTRY);
            long wait = world.rnd.nextInt(3) == 0 ? 0 : world.rnd.nextInt(30);
            long lease = 100 + world.rnd.nextInt(900);
            String how = "tryLockAsync(" + wait + " ms, lease " + lease + " ms), re-entered";
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
            CompletionStage<Boolean> call = redLock.tryLockAsync(wait, lease, TimeUnit.MILLISECONDS, ownerId);
            // A re-entry with a shorter lease shortens the outer hold at once (one expiry per
            // lock): the RedLock's validity says so from the start of the call.
            validUntil = Math.min(validUntil, world.now() + TimeUnit.MILLISECONDS.toNanos(redLock.validityMillis(ownerId)));
            call.whenComplete((got, error) -> {
                checkBound(how, asked, boundOf(wait));
                Throwable e = unwrap(error);
                if (e != null && !(e instanceof RedisUnavailableException)) {
                    violation(this + ": " + how + " threw " + e);
                    return;
                }
                if (e == null && got) {
                    holds = 2;
                    long validity = redLock.validityMillis(ownerId);
                    validUntil = world.now() + TimeUnit.MILLISECONDS.toNanos(validity);
                    world.note(this + " re-entered (valid " + validity + " ms)");
                } else {
                    world.note(this + " " + how + " " + (e == null ? "not granted" : "ended: " + e));
                    // A re-entry that touched some masters with a shorter lease cuts the outer
                    // hold's validity (one expiry per lock): the RedLock says by how much.
                    validUntil = Math.min(validUntil, world.now() + TimeUnit.MILLISECONDS.toNanos(redLock.validityMillis(ownerId)));
                    int holding = mastersHolding(field());
                    // The refused round gave back what it took, not the outer hold (whose validity
                    // this RedLock object may have forgotten: the sim keeps its own).
                    if (world.now() < validUntil && holding < QUORUM) {
                        violation(this + ": a refused re-entry left the outer hold on " + holding + " of " + MASTERS
                                + " masters, inside its validity");
                        return;
                    }
                }
                later(world.micros(0, 2_000), "hold", this::release);
            });
        }

        void release() {
            doing = "unlocking";
            releasing = true;
            boolean valid = world.now() < validUntil;
            world.note(this + " calls unlockAsync" + (valid ? "" : " (past its validity)"));
            long asked = world.now();
            redLock.unlockAsync(ownerId).whenComplete((v, error) -> {
                checkBound("unlockAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof RedisUnavailableException) {
                    world.note(this + " unlock unconfirmed, calling it again: " + e.getMessage());
                    later(world.micros(0, 2_000), "unlock again", this::release);
                    return;
                }
                // A release that lands after the leases ran out (it sat in a stalled or dropped
                // connection) reports the lock lost; "never held" is wrong for a lock held when
                // unlock was called.
                if (e instanceof IllegalMonitorStateException && !(e instanceof dev.baton.LeaseLostException) && valid) {
                    violation(this + ": unlock within the validity found the lock held nowhere: " + e);
                } else if (e != null && !(e instanceof IllegalMonitorStateException) && !(e instanceof dev.baton.LeaseLostException)) {
                    violation(this + ": unlock threw " + e);
                }
                holds--;
                if (holds > 0) {
                    release();
                    return;
                }
                validUntil = -1;
                releasing = false;
                pause();
            });
        }
    }
}
