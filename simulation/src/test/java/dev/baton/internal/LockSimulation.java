package dev.baton.internal;

import dev.baton.BatonLock;
import dev.baton.LeaseLostException;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.UserPattern;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One seeded run of a lock kind (reentrant, fair, fenced, read-write with both sides): two
 * clients, three async owners each, calling the lock as users do (lock, short and long timed waits, a fixed lease, a future cancelled or completed by
 * its caller's own timeout, re-entry) while the wire delays, stalls and resets as the seed says.
 *
 * <p>The checker knows what no real test knows, the simulated Redis's keyspace at every instant,
 * and holds at every grant and release:
 * <ul>
 *   <li>a grant reaches its caller only while Redis holds the lock for that owner (no hold that
 *       Redis never gave: the cohort race's shape);</li>
 *   <li>a hold that another owner's grant overtook (its lease was gone in Redis) ends with the
 *       loss reported, by the listener or by its unlock's LeaseLostException;</li>
 *   <li>an unlock that returns normally released a hold Redis still had;</li>
 *   <li>every timed call ends within its documented bound on virtual time (the wait + the command
 *       timeout + 150 ms);</li>
 *   <li>after the run and a drain, every call has ended, nothing is held in Redis, and neither
 *       client counts a lease.</li>
 * </ul>
 */
final class LockSimulation extends Simulation {

    static final String NAME = "sim-lock";
    static final Duration FAIR_WAITER_TIMEOUT = dev.baton.BatonOptions.builder().redisUri("redis://sim:6379").build()
            .fairLockWaiterTimeout();

    /** The lock kinds simulated: "lock", "fairLock", "fencedLock", "readWriteLock". */
    static final List<String> KINDS = List.of("lock", "fairLock", "fencedLock", "readWriteLock");

    final List<Owner> owners;

    /**
     * How long a wait may go on while the lock is free in Redis with nobody taking it
     * ({@link Simulation#unawareBound}); where a release's message can be lost, a waiter learns
     * of the free lock when the lease it last read would have run out (the longest: the watchdog,
     * or a fixed lease of up to 1 s). Not judged for the fair lock, where the queue names who
     * takes the lock next and a dead head keeps it for the fair waiter timeout.
     */
    final long freeBound;

    LockSimulation(String kind, long seed, boolean trace, Duration run) {
        super(requireKind(kind), seed, trace, run);
        // A reader a waiting writer's mark refused waits for the mark's time to live (3 s,
        // WriteLockRecipe.MARK_TTL_MS) at the latest: if that writer then gets in and its lease
        // runs out unrenewed (its process stopped), the lock is free with the readers still
        // waiting for it (read-write seed 400280, the first of the long pauses; read-write-lock.md).
        long longestRecheck = Math.max(watchdog.toNanos(), TimeUnit.SECONDS.toNanos(kind.equals("readWriteLock") ? 3 : 1));
        freeBound = unawareBound(longestRecheck);
        owners = threeEach(clients, Owner::new);
        if (kind.equals("fencedLock")) {
            // When Redis issued each token (what the server ran, heard as it ran it): a grant heard
            // late is judged in the order Redis issued it.
            world.server.redis.onScript((text, keys, argv, reply, nowMicros) -> {
                if (text.equals(dev.baton.lua.Script.FENCED_ACQUIRE.text()) && reply instanceof List<?> r
                        && Long.valueOf(1).equals(r.get(0))) {
                    tokenIssuedAt.putIfAbsent((Long) r.get(2), world.now());
                    tokenLastGrantedAt.put((Long) r.get(2), world.now());
                }
            });
        }
        if (!kind.equals("fairLock")) {
            world.watch = () -> {
                boolean free = freeInRedis();
                boolean writerWaits = writerWaits();
                owners.forEach(o -> o.clock.watch(() -> free && (o.write || !writerWaits)));
            };
        } else {
            world.watch = new FairOrder();
        }
    }

    /**
     * The fair lock's promise, judged at every command (issue 46: the judge exempted the fair lock
     * from order): a lock that gets a new holder goes to the first live waiter of the queue as
     * it stood before the command (by ticket; live: its deadline in {@code baton_fair_waiters} not
     * yet passed on the server's clock, the scripts' own rule), and to a caller that is not
     * queued only when no live waiter was. So grants follow arrival order, and a newcomer never
     * barges past a queued waiter (docs/guarantees.md, fair lock).
     */
    private final class FairOrder implements Runnable {
        private boolean before = true;
        private java.util.Set<String> holdersBefore = java.util.Set.of();
        private List<String> liveBefore = List.of();

        @Override
        public void run() {
            Map<String, Object[]> keys = world.keyspace();
            if (before) {
                holdersBefore = holders(keys);
                liveBefore = liveQueue(keys);
            } else {
                for (String holder : holders(keys)) {
                    if (!holdersBefore.contains(holder) && !liveBefore.isEmpty() && !liveBefore.get(0).equals(holder)) {
                        violation("the fair lock went to owner " + holder + " while owner " + liveBefore.get(0)
                                + " was the first live waiter (live queue before: " + liveBefore + ")");
                    }
                }
            }
            before = !before;
        }

        private java.util.Set<String> holders(Map<String, Object[]> keys) {
            Object[] entry = keys.get(NAME);
            return entry != null && entry[1] instanceof Map<?, ?> hash
                    ? new java.util.TreeSet<>(hash.keySet().stream().map(String::valueOf).toList()) : java.util.Set.of();
        }

        private List<String> liveQueue(Map<String, Object[]> keys) {
            Object[] queue = keys.get("baton_fair_queue:{" + NAME + "}");
            Object[] waiters = keys.get("baton_fair_waiters:{" + NAME + "}");
            if (queue == null || !(queue[1] instanceof List<?> members)) {
                return List.of();
            }
            Map<?, ?> deadlines = waiters != null && waiters[1] instanceof Map<?, ?> m ? m : Map.of();
            long nowMs = (SimWorld.EPOCH_MS * 1000 + world.now() / 1000) / 1000;
            List<String> live = new java.util.ArrayList<>();
            for (int i = 0; i < members.size(); i += 2) {
                String owner = String.valueOf(members.get(i));
                Object deadline = deadlines.get(owner);
                if (deadline != null && Long.parseLong(String.valueOf(deadline)) >= nowMs) {
                    live.add(owner);
                }
            }
            return live;
        }
    }

    /**
     * Whether this run's stalls can outlast a watchdog lease between two renewals (a stall of two
     * thirds of the watchdog after a renewal): then a hold can run out in Redis with nobody told
     * in time and nobody else taking it (the short-watchdog runs), and an unlock may find it gone.
     */
    boolean stallsOutlastLeases() {
        return TimeUnit.MICROSECONDS.toNanos(faults.stallMaxMicros()) >= watchdog.toNanos() * 2 / 3;
    }

    /** The highest fencing token granted so far (fenced lock), and by whom. */
    private long highestToken = Long.MIN_VALUE;
    private String highestTokenBy;

    /**
     * A fenced lock's token, judged at its grant: above every token granted before it (they rise
     * in grant order, the promise storage relies on; docs/fencing.md), and the one Redis last
     * issued (no grant since has issued another).
     */
    /** When (world time) Redis first granted with each fencing token, and last (fenced lock only). */
    private final Map<Long, Long> tokenIssuedAt = new java.util.HashMap<>();
    private final Map<Long, Long> tokenLastGrantedAt = new java.util.HashMap<>();

    void judgeToken(Owner o, String how, long token) {
        Object[] counter = world.keyspace().get("redisson_lock_token:{" + NAME + "}");
        String issued = counter == null ? null : String.valueOf(counter[1]);
        Long mine = tokenIssuedAt.get(token);
        Long theirs = tokenIssuedAt.get(highestToken);
        if (token <= highestToken && mine != null && theirs != null && mine < theirs && restartedSince(o.askedAt)
                && tokenLastGrantedAt.get(token) < restartedAt) {
            // Issued before the higher one, and granted by no script since the failover (so this is
            // that early reply, heard late, not a token handed out again after it: sabotage
            // fenced-found-hold-token), heard after a failover to a replica that kept this hold and
            // lost the higher one's (fenced seed 572038 of the 200,000-seed run: the owner's
            // process was paused across the failover). Tokens rose in the order Redis issued them.
            world.note(o + " heard token " + token + " after a failover; Redis issued it before " + highestToken
                    + ", a grant the failover lost");
            return;
        }
        if (token <= highestToken) {
            violation(o + " was granted fencing token " + token + " by " + how + ", not above " + highestToken
                    + " granted before to " + highestTokenBy);
        } else if (!Long.toString(token).equals(issued) && !restartedSince(o.askedAt)) {
            // (Redis's counter is compared only if Redis kept its data since the call began: a
            // grant from the old master heard after a failover was issued by a counter that is gone.)
            violation(o + " was granted fencing token " + token + " by " + how + " but Redis last issued " + issued);
        }
        highestToken = Math.max(highestToken, token);
        highestTokenBy = o.toString();
    }

    /**
     * Whether a writer waits on the read-write lock ({@code baton_rwlock_writer}): new readers are
     * refused while it does, so for a reader the lock is not free (its writer may be a paused
     * process's, whose wait ends only when the process runs again).
     */
    boolean writerWaits() {
        return kind.equals("readWriteLock") && world.server.redis.exists("baton_rwlock_writer:{" + NAME + "}");
    }

    /** Whether nobody holds the lock in Redis now (either side, for the read-write lock). */
    boolean freeInRedis() {
        return !world.server.redis.exists(NAME);
    }

    /** Starts judging {@code o}'s wait, or (waiting false) ends it; never for the fair lock. */
    void waiting(Owner o, boolean waiting) {
        if (kind.equals("fairLock")) {
            return;
        }
        if (waiting) {
            o.clock.start(freeInRedis() && (o.write || !writerWaits()));
        } else {
            o.clock.end();
        }
    }

    private static String requireKind(String kind) {
        if (!KINDS.contains(kind)) {
            throw new IllegalArgumentException("no lock kind " + kind + "; one of " + KINDS);
        }
        return kind;
    }

    @Override
    List<Owner> actors() {
        return owners;
    }

    @Override
    java.util.Set<UserPattern> covered() {
        java.util.Set<UserPattern> c = java.util.EnumSet.of(UserPattern.SHORT_TIMED_WAIT, UserPattern.LONG_WAIT,
                UserPattern.FIXED_LEASE, UserPattern.GIVEN_UP_BY_CANCEL, UserPattern.GIVEN_UP_BY_OR_TIMEOUT,
                UserPattern.NEXT_CALL_IN_CALLBACK, UserPattern.REENTRY, UserPattern.SCOPED_WORK, UserPattern.SCOPED_WORK_LONG,
                UserPattern.FORCE_UNLOCK);
        if (kind.equals("readWriteLock")) {
            c.add(UserPattern.DOWNGRADE);
        }
        return c;
    }

    /**
     * The forceUnlock calls so far, each {sent, until} in world time: until its reply, or, with
     * none, as long as a copy of it may still run (a command timeout and the longest stall).
     */
    private final List<long[]> forces = new java.util.ArrayList<>();

    /** Whether a forceUnlock, or Redis restarting empty, may have ended a hold taken since {@code since}. */
    boolean endedByOthersSince(long since) {
        return forcedSince(since) || restartedSince(since);
    }

    /** Whether a forceUnlock may have run in Redis since {@code since} (it may have ended a hold taken since). */
    boolean forcedSince(long since) {
        for (long[] f : forces) {
            if (f[1] >= since) {
                return true;
            }
        }
        for (long late : world.lateForces) {
            if (late >= since) {
                return true;
            }
        }
        return false;
    }

    /**
     * An acquire whose copy reached Redis only after its undo (it sat in a dropped connection or a
     * stalled server's input) holds the lock for nobody: it is never renewed, so it is gone within
     * one lease of its arrival. A fair lock's late acquire copy queues a waiter nobody is: the
     * lock is handed to it and kept for it for the fair waiter timeout, as for a waiter that died.
     */
    @Override
    Duration settle() {
        Duration ghost = kind.equals("fairLock") ? FAIR_WAITER_TIMEOUT : Duration.ZERO;
        return LONGEST_STALL.plus(ghost).plus(WATCHDOG).plusSeconds(1);
    }

    @Override
    void endChecks() {
        Object[] left = world.keyspace().get(NAME);
        if (left != null) {
            violation("after the drain the lock is still held in Redis: " + java.util.Arrays.toString(left));
        }
        for (SimClient c : clients) {
            if (c.runtime.leasesHeld() != 0) {
                violation("client " + c.id + " still counts leases: " + c.runtime.heldLeases());
            }
        }
    }

    /**
     * The owner's hold count in Redis for the mode it is in (0: not held by it): the reentrant,
     * fair and fenced locks keep it in the lock's hash under the owner id; the read-write lock
     * keeps a write hold under "<owner id>:write" with mode "write", a read hold under the owner id.
     */
    long heldInRedis(Owner o) {
        Object[] entry = world.keyspace().get(NAME);
        if (entry == null || !(entry[1] instanceof Map<?, ?> hash)) {
            return 0;
        }
        if (kind.equals("readWriteLock") && o.write && !"write".equals(hash.get("mode"))) {
            return 0;
        }
        Object count = hash.get(o.write && kind.equals("readWriteLock") ? o.field() + ":write" : o.field());
        return count == null ? 0 : Long.parseLong((String) count);
    }

    /** One async owner: one operation at a time, as a request handler does. */
    final class Owner extends BaseActor {
        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        final SimClient client;
        final long ownerId;
        /** The lock this operation uses: the kind's lock, or the read or the write side. */
        BatonLock lock;
        /** Whether this operation excludes every other holder (all kinds but a read). */
        boolean write = true;
        private final BatonLock exclusive;
        private final BatonLock shared;

        /** This owner's pending acquisition, as the judge of waits on a free lock sees it. */
        final WaitClock clock = new WaitClock(this, "the lock was free in Redis", freeBound);
        /** While holding: when granted, and whether another grant overtook this hold. */
        long grantedAt = -1;
        long askedAt;
        long leaseMs;
        boolean overtaken;
        /** When another grant last overtook this hold (world time). */
        long overtakenAt;
        /**
         * Whether this owner's previous call was abandoned (cancelled, or ended by its caller): the
         * next call first lets that call's clean-up go out, which may wait one command timeout
         * for the abandoned attempt's answer (guarantees.md, failures within the timeout).
         */
        boolean followsAbandoned;
        /** The final unlock was called: Redis may have released the lock already. */
        boolean releasing;
        int holds;

        Owner(SimClient client, int index) {
            this.client = client;
            this.ownerId = 7_000_000_000L + index;
            switch (kind) {
                case "lock" -> exclusive = client.runtime.lock(NAME);
                case "fairLock" -> exclusive = client.runtime.fairLock(NAME);
                case "fencedLock" -> exclusive = client.runtime.fencedLock(NAME);
                default -> exclusive = client.runtime.readWriteLock(NAME).writeLock();
            }
            shared = kind.equals("readWriteLock") ? client.runtime.readWriteLock(NAME).readLock() : null;
            lock = exclusive;
        }

        String field() {
            return client.id + ":" + ownerId;
        }

        /** Whether the unlock's reply sent at {@code sent} may have been heard only after an overtaking (see BaseActor). */
        boolean replyHeldByPause(long sent) {
            return replyHeldByPause(sent, overtakenAt);
        }

        /** Whether this owner's lease may have run out while its process stopped since the call began (see BaseActor). */
        boolean pausedPastLease() {
            return pausedPastLease(askedAt, leaseMs);
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
            token = -1;
            write = shared == null || world.rnd.nextInt(3) == 0;
            lock = write ? exclusive : shared;
            int op = world.rnd.nextInt(10);
            switch (op) {
                case 0 -> {
                    ran(UserPattern.LONG_WAIT);
                    if (lock instanceof dev.baton.BatonFencedLock fenced) {
                        acquire("lockAndGetTokenAsync()", fenced.lockAndGetTokenAsync(ownerId).thenApply(t -> {
                            token = t;
                            return true;
                        }), -1, 0);
                    } else {
                        acquire("lockAsync()", lock.lockAsync(ownerId).thenApply(v -> true), -1, 0);
                    }
                }
                case 1 -> {
                    ran(UserPattern.SHORT_TIMED_WAIT);
                    long wait = world.rnd.nextInt(6);
                    acquire("tryLockAsync(" + wait + " ms)", lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId), wait, 0);
                }
                case 2 -> {
                    ran(UserPattern.LONG_WAIT);
                    long wait = 10 + world.rnd.nextInt(190);
                    acquire("tryLockAsync(" + wait + " ms)", lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId), wait, 0);
                }
                case 3 -> {
                    long wait = world.rnd.nextInt(100);
                    long lease = 200 + world.rnd.nextInt(800);
                    ran(UserPattern.FIXED_LEASE);
                    if (lock instanceof dev.baton.BatonFencedLock fenced) {
                        acquire("tryLockAndGetTokenAsync(" + wait + " ms, lease " + lease + " ms)",
                                fenced.tryLockAndGetTokenAsync(wait, lease, TimeUnit.MILLISECONDS, ownerId).thenApply(t -> {
                                    t.ifPresent(v -> token = v);
                                    return t.isPresent();
                                }), wait, lease);
                    } else {
                        acquire("tryLockAsync(" + wait + " ms, lease " + lease + " ms)",
                                lock.tryLockAsync(wait, lease, TimeUnit.MILLISECONDS, ownerId), wait, lease);
                    }
                }
                case 4 -> {
                    ran(UserPattern.SHORT_TIMED_WAIT);
                    acquire("tryLockAsync()", lock.tryLockAsync(ownerId), 0, 0);
                }
                case 5, 6 -> {
                    // The future Baton returned, ended by its caller: cancel(), or its own timeout
                    // (orTimeout's shape). (A stage derived from it is the caller's own business:
                    // ending that one leaves Baton's acquisition running, as with any future.)
                    CompletableFuture<Void> f = lock.lockAsync(ownerId).toCompletableFuture();
                    ran(op == 5 ? UserPattern.GIVEN_UP_BY_CANCEL : UserPattern.GIVEN_UP_BY_OR_TIMEOUT);
                    // Half the time the owner's next call starts in this call's own callback, as
                    // a retry written in whenComplete does (issue 45).
                    nextInCallback = world.rnd.nextBoolean();
                    endedByCaller(f, op == 5);
                    acquire(op == 5 ? "lockAsync() cancelled" : "lockAsync() timed out by its caller", f.thenApply(v -> true), -1, 0);
                }
                case 8 -> scoped();
                case 9 -> forceUnlock();
                default -> {
                    long wait = world.rnd.nextInt(30);
                    acquire("tryLockAsync(" + wait + " ms), re-entered", lock.tryLockAsync(wait, TimeUnit.MILLISECONDS, ownerId),
                            wait, 0);
                }
            }
        }

        /**
         * An operator's (or a stuck job's cleaner's) forceUnlock, on whatever state the lock is
         * in: it ends any hold, and a waiter must then be woken as by a release. What it ends is
         * not judged as a lost hold: the holder's unlock may fail, its grant may find itself
         * gone, its scoped work may be told late.
         */
        void forceUnlock() {
            ran(UserPattern.FORCE_UNLOCK);
            doing = "forceUnlockAsync";
            world.note(this + " calls forceUnlockAsync");
            long[] window = {world.now(), Long.MAX_VALUE};
            forces.add(window);
            long asked = world.now();
            lock.forceUnlockAsync().whenComplete((done, error) -> {
                Throwable e = unwrap(error);
                window[1] = e == null ? world.now()
                        : asked + COMMAND_TIMEOUT.toNanos() + LONGEST_STALL.toNanos() + SLACK_NANOS;
                if (ended("forceUnlockAsync", asked, boundOf(0), e) == null) {
                    world.note(this + " forceUnlockAsync: " + done);
                    pause();
                }
            });
        }

        void acquire(String how, java.util.concurrent.CompletionStage<Boolean> call, long waitMs, long lease) {
            doing = how;
            world.note(this + " calls " + how + (kind.equals("readWriteLock") ? (write ? " (write)" : " (read)") : ""));
            long bound = waitMs < 0 ? -1 : boundOf(waitMs) + (followsAbandoned ? COMMAND_TIMEOUT.toNanos() : 0);
            followsAbandoned = false;
            long asked = world.now();
            waiting(this, true);
            call.whenComplete((got, error) -> {
                waiting(this, false);
                // Set before ended(), which may start the next call at once (from this callback):
                // that call's bound must know (lock seed 540162, found by the 200,000-seed run).
                Throwable given = unwrap(error);
                followsAbandoned = given instanceof CancellationException || given instanceof TimeoutException;
                Throwable e = ended(how, asked, bound, error);
                if (e != null) {
                    return;
                }
                followsAbandoned = false;
                if (!got) {
                    world.note(this + " " + how + " not granted");
                    pause();
                    return;
                }
                granted(how, lease);
            });
        }

        /**
         * Lease-scoped work (withLockAsync): granted as the work starts, which holds 0-3 ms (one in
         * four up to 400 ms) unless
         * its stage is cancelled first (a loss, its validity's end, or the caller ending the
         * returned stage, one call in four); Baton releases it as the work's stage completes.
         * Judged: the grant as any; no other grant while its scope still claims validity; a hold
         * overtaken ends with LeaseLostException or a reported loss, never a normal result.
         */
        void scoped() {
            String how = "withLockAsync()";
            doing = how;
            world.note(this + " calls " + how + (kind.equals("readWriteLock") ? (write ? " (write)" : " (read)") : ""));
            followsAbandoned = false;
            long asked = world.now();
            boolean[] ran = {false};
            waiting(this, true);
            CompletableFuture<String> result = lock.withLockAsync(ownerId, s -> {
                ran[0] = true;
                waiting(this, false);
                CompletableFuture<String> work = new CompletableFuture<>();
                work.whenComplete((v, e) -> releasing = true);
                if (!grant(how, 0)) {
                    work.complete("not judged further");
                    return work;
                }
                scope = s;
                doing = "holding (" + how + ")";
                // One in four runs long (up to 400 ms, past a short watchdog's lease): only its
                // renewals keep it, and its scope must stop it before Redis lets the lease go.
                long holdMicros = world.rnd.nextInt(4) == 0 ? world.micros(0, 400_000) : world.micros(0, 3_000);
                ran(holdMicros > TimeUnit.MILLISECONDS.toNanos(watchdog.toMillis() / 3) ? UserPattern.SCOPED_WORK_LONG : UserPattern.SCOPED_WORK);
                later(holdMicros, "scoped work ends", () -> work.complete("done"));
                return work;
            }).toCompletableFuture();
            int giveUp = world.rnd.nextInt(8);
            if (giveUp < 2) {
                endedByCaller(result, giveUp == 0);
            }
            result.whenComplete((v, error) -> {
                if (!ran[0]) {
                    waiting(this, false);
                }
                Throwable e = unwrap(error);
                dev.baton.LeaseScope held = scope;
                scope = null;
                if (!ran[0]) { // not granted (abandoned, Redis unavailable), or lost (or past its validity) before the work began
                    if (e instanceof LeaseLostException) {
                        world.note(this + " " + how + ": lost before its work began: " + e.getMessage());
                        pause();
                        return;
                    }
                    followsAbandoned = e instanceof CancellationException || e instanceof TimeoutException;
                    if (ended(how, asked, -1, error) == null) {
                        violation(this + ": " + how + " ended normally without running its work");
                        pause();
                    }
                    return;
                }
                boolean reported = lossReportedForHold();
                world.note(this + " " + how + " ended" + (e == null ? "" : ": " + e));
                if (e == null && overtaken && !reported && !endedByOthersSince(askedAt)) {
                    violation(this + "'s scoped hold was overtaken by another grant, and withLockAsync ended normally"
                            + " with no loss reported");
                } else if (e != null && !(e instanceof LeaseLostException || e instanceof CancellationException
                        || e instanceof TimeoutException || e instanceof RedisUnavailableException)) {
                    violation(this + ": " + how + " threw " + e);
                }
                if (held != null && e instanceof LeaseLostException && held.isValid()) {
                    violation(this + ": " + how + " reported a loss while its scope still claimed validity");
                }
                followsAbandoned = e instanceof CancellationException || e instanceof TimeoutException;
                grantedAt = -1;
                overtaken = false;
                releasing = false;
                holds = 0;
                pause();
            });
        }

        /** Whether an unlock of the current hold was already told of its loss (a re-entered hold's next unlock is too). */
        boolean lossTold;

        /** Whether a loss of this owner's current hold was reported (a write hold's lease is the owner's "…:write" field's). */
        boolean lossReportedForHold() {
            return lossReported(field(), grantedAt) || lossReported(field() + ":write", grantedAt);
        }

        /** The fencing token the running token call returned (fenced lock), or -1. */
        long token = -1;

        /** The scope of this owner's running scoped work, or null. */
        dev.baton.LeaseScope scope;

        void granted(String how, long lease) {
            if (!grant(how, lease)) {
                return;
            }
            doing = "holding (" + how + ")";
            boolean reenter = how.endsWith("re-entered");
            if (reenter) {
                ran(UserPattern.REENTRY);
            }
            boolean downgrade = !reenter && shared != null && write && world.rnd.nextInt(4) == 0;
            later(world.micros(0, 3_000), "hold", () -> {
                if (downgrade) {
                    downgrade();
                } else if (reenter) {
                    lock.lockAsync(ownerId).whenComplete((v, e) -> {
                        Throwable t = unwrap(e);
                        if (t != null) {
                            world.note(this + " re-entry ended: " + t);
                            release(); // the first hold is still to be released
                            return;
                        }
                        holds = 2;
                        release();
                    });
                } else {
                    release();
                }
            });
        }

        /**
         * A write hold downgraded, as Redisson's docs show it: the read side taken while the write
         * side is held (granted at once: the owner's own write lets its read in), then the write
         * side released; the owner goes on holding the read, and releases it later. Judged: the
         * read hold is in Redis once the write is released (unless the hold was overtaken or forced).
         */
        void downgrade() {
            ran(UserPattern.DOWNGRADE);
            doing = "downgrading";
            world.note(this + " downgrades: lockAsync on the read side while it holds the write side");
            long asked = world.now();
            shared.lockAsync(ownerId).whenComplete((v, error) -> {
                Throwable e = unwrap(error);
                if (e != null) {
                    world.note(this + " downgrade's read acquire ended: " + e);
                    if (!(e instanceof RedisUnavailableException || e instanceof LeaseLostException)) {
                        violation(this + ": the read acquire of a downgrade threw " + e);
                    }
                    release(); // the write hold is still to be released
                    return;
                }
                world.note(this + " holds the read side too; releasing the write side");
                releaseWriteThenHoldRead(asked);
            });
        }

        private void releaseWriteThenHoldRead(long asked) {
            exclusive.unlockAsync(ownerId).whenComplete((v, error) -> {
                checkBound("unlockAsync (downgrade)", world.now(), boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof RedisUnavailableException && !(e instanceof dev.baton.ReplicaSyncException)) {
                    world.note(this + " downgrade's write unlock unconfirmed, calling it again: " + e.getMessage());
                    later(world.micros(0, 2_000), "unlock again", () -> releaseWriteThenHoldRead(asked));
                    return;
                }
                // As for any unlock (see release): a loss told only if it could have happened; a
                // downgrade whose steps took a third of the watchdog may have let the lease run out.
                boolean ranLate = world.now() - asked >= watchdog.toNanos() / 3 || stallsOutlastLeases();
                if (e != null && !(overtaken || lossReportedForHold() || endedByOthersSince(askedAt) || ranLate || leaseMs > 0
                        || pausedPastLease())) {
                    violation(this + ": the write unlock of a downgrade threw " + e + " for a hold nobody overtook");
                }
                boolean writeLost = e != null || overtaken || endedByOthersSince(askedAt) || pausedPastLease();
                lock = shared;
                write = false;
                if (writeLost) {
                    // Not a downgrade after all: the write hold was gone (overtaken, forced or run
                    // out), and what ended it may have ended the read hold with it (a force
                    // deletes every hold; a lease that ran out under stalls ran out for both).
                    // Not judged further: the read's unlock may report the loss.
                    world.note(this + "'s downgrade found its write hold lost; the read hold is not judged");
                    holds = 1;
                    overtaken = false;
                    lossTold = true;
                    doing = "holding (read, after a downgrade)";
                    later(world.micros(0, 3_000), "hold", this::release);
                    return;
                }
                holds = 1;
                if (!endedByOthersSince(asked) && heldInRedis(this) < 1) {
                    violation(this + " downgraded, but Redis does not hold the read side for it: "
                            + java.util.Arrays.toString(world.keyspace().get(NAME)));
                    return;
                }
                doing = "holding (read, after a downgrade)";
                later(world.micros(0, 3_000), "hold", this::release);
            });
        }

        /** Judges a grant (see the class comment) and marks the holds it overtook; false after a violation. */
        boolean grant(String how, long lease) {
            grants++;
            grantedAt = world.now();
            lossTold = false;
            leaseMs = lease;
            overtaken = false;
            holds = 1;
            long inRedis = heldInRedis(this);
            world.note(this + " GRANTED by " + how + " (Redis: " + inRedis + ")");
            if (inRedis < 1 && endedByOthersSince(askedAt)) {
                // Held for a moment: a forceUnlock since the call began ended it; the client still
                // counts it, so the owner goes on to its unlock, which may fail (accepted: forced).
                world.note(this + " granted by " + how + ", and a forceUnlock since its call began ended it already");
                return true;
            }
            if (inRedis < 1 && pausedPastLease()) {
                // The grant reached a process that had stopped longer than the lease since the
                // call began: the hold may have run out before the caller heard of it, which Baton
                // cannot promise against (guarantees.md); its unlock must still say so.
                world.note(this + " granted by " + how + " after its process stopped past the lease; Redis no longer holds it");
                grantsAfterLongPause++;
                overtaken = leaseMs == 0;
                return true;
            }
            if (inRedis < 1) {
                violation(this + " was granted the " + (write ? "" : "read side of the ") + "lock by " + how
                        + " but Redis does not hold it for it: "
                        + java.util.Arrays.toString(world.keyspace().get(NAME)));
                return false;
            }
            if (token >= 0) {
                judgeToken(this, how, token);
                token = -1;
            }
            for (Owner other : owners) {
                if (other != this && other.scope != null && !other.releasing && (write || other.write)
                        && other.scope.isValid() && !endedByOthersSince(other.askedAt)) {
                    violation(this + " was granted by " + how + " while " + other + "'s scoped work still had "
                            + other.scope.remaining().toNanos() / 1000 + " µs of validity");
                }
            }
            for (Owner other : owners) {
                if (other != this && other.grantedAt >= 0 && !other.overtaken && !other.releasing && (write || other.write)) {
                    other.overtaken = true;
                    other.overtakenAt = world.now();
                    boolean leaseRanOut = other.leaseMs > 0 && world.now() >= other.askedAt + TimeUnit.MILLISECONDS.toNanos(other.leaseMs);
                    world.note(other + "'s hold was overtaken by " + this + (leaseRanOut ? " (its fixed lease had run out)" : ""));
                    if (leaseRanOut) {
                        other.overtaken = false; // a fixed lease that ran out: the holder is not told
                        other.grantedAt = -1;
                    }
                }
            }
            return true;
        }

        void release() {
            doing = "unlocking";
            releasing = holds == 1;
            long inRedis = heldInRedis(this);
            world.note(this + " calls unlockAsync (holds " + holds + ", Redis: " + inRedis + ")");
            long asked = world.now();
            lock.unlockAsync(ownerId).whenComplete((v, error) -> {
                checkBound("unlockAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof RedisUnavailableException && !(e instanceof dev.baton.ReplicaSyncException)) {
                    world.note(this + " unlock unconfirmed, calling it again: " + e.getMessage());
                    later(world.micros(0, 2_000), "unlock again", this::release);
                    return;
                }
                boolean reported = lossReportedForHold();
                if (e == null) {
                    if (overtaken && !reported && !endedByOthersSince(askedAt) && !replyHeldByPause(asked)) {
                        violation(this + "'s hold was overtaken by another grant, and its unlock returned normally"
                                + " with no loss reported");
                    }
                } else if (e instanceof LeaseLostException || e instanceof IllegalMonitorStateException) {
                    world.note(this + " unlock: " + e);
                    boolean toldBefore = lossTold;
                    lossTold = true;
                    // Told of a loss: only if another grant overtook the hold, its fixed lease may
                    // have run out, a loss was reported (the watchdog found the lease gone), a
                    // forceUnlock ended it, or the unlock ran so late that the lease, no longer
                    // renewed once a final unlock is sent, may have run out meanwhile (a third of
                    // the watchdog: what is left of a lease renewed on time is at least two thirds)
                    // (issue 46: any LeaseLostException used to pass).
                    boolean ranLate = world.now() - asked >= watchdog.toNanos() / 3 || stallsOutlastLeases();
                    if (!overtaken && !(leaseMs > 0) && !reported && !endedByOthersSince(askedAt) && !ranLate && !toldBefore
                            && !pausedPastLease()) {
                        violation(this + ": unlock of a hold nobody overtook, forced or let run out threw " + e);
                    }
                } else {
                    violation(this + ": unlock threw " + e);
                }
                holds--;
                if (holds > 0) {
                    release();
                    return;
                }
                grantedAt = -1;
                overtaken = false;
                releasing = false;
                pause();
            });
        }

    }

}
