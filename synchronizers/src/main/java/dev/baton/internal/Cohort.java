package dev.baton.internal;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/*
 * Cohort waiting: the threads of one client that wait for the same reentrant lock queue here,
 * in this JVM, and only one of them (the leader) asks Redis for the lock. When a thread that
 * got the lock through its cohort releases it while another thread of the cohort waits, the
 * release hands the lock to that thread in Redis with one script call (lock_pass.lua changes
 * the owner field of Redisson's hash; nothing is published, nobody is woken over the network),
 * so a hand-off inside a client costs one round trip instead of a release, a message, a
 * wake-up and an acquire. A thread that arrives while its client holds the lock or already
 * asks for it sends nothing at all: it queues behind the others.
 *
 * Turns keep other clients from starving. A cohort keeps the lock for at most MAX_PASSES
 * hand-offs or MAX_TURN_NANOS after it took the lock from Redis, whichever comes first. The
 * hand-off that ends a turn asks Redis whether anybody else listens on the lock's channel (a
 * waiting Baton client or Redisson client does); if so, it releases the lock and publishes as
 * an ordinary release does, and the cohort's next leader waits YIELD_NANOS before it asks (as a
 * refused acquisition waits: subscribed, so it counts as a listener when the other client's turn
 * ends, and asking at once when a release is announced), so the other client's woken waiter gets
 * there first. If nobody listens, the hand-off goes on
 * and a new turn starts.
 *
 * States of a member (one waiting acquisition):
 *   QUEUED  waits in this JVM; parks on its turn future, re-checking that the holder still has
 *           its lease (a fixed lease that runs out, or a lease lost, lets the queue go on)
 *   LEADER  asks Redis like any acquisition (subscribing, parking on messages and TTLs)
 *   CHOSEN  a release is handing the lock to it (the lock_pass call is in flight)
 *   HANDED  holds the lock in Redis and in the lease table; its acquisition has not seen it yet
 *   HOLDER  its acquisition has seen the grant; the cohort's holder until it releases
 *   FAILED  a wait without a budget (lock()) queued behind a leader whose call Redis did not
 *           answer: it fails with that, as it would have had it asked itself
 *   GONE    ended without the lock
 *
 * A queued member whose wait has a deadline asks Redis itself at the deadline (one last
 * attempt, like any acquisition), so a timed wait says "Redis unavailable" rather than "timed
 * out" when Redis does not answer.
 *
 * The cohort is only an optimisation of who asks when: Redis stays the truth. A thread that
 * is handed the lock has it in Redis before it hears so; a hand-off whose reply was lost is
 * found again by the receiver's own acquire (lock_acquire reports an existing hold as granted).
 * Every transition happens under the cohort's mutex, which never waits on I/O.
 */
final class Cohort {
    /** Hand-offs inside one client before its turn is over. */
    static final int MAX_PASSES = 8;
    /** How long one client may keep a contended lock through hand-offs before its turn is over. */
    static final long MAX_TURN_NANOS = TimeUnit.MILLISECONDS.toNanos(4);
    /** How long a cohort's next leader waits after its turn ended with a release to others. */
    static final long YIELD_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    /** How often a queued member re-checks that the holder still holds (a watchdog holder). */
    static final long RECHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

    enum State { QUEUED, LEADER, CHOSEN, HANDED, HOLDER, FAILED, GONE }

    /** What a member's next attempt does. */
    sealed interface Turn {
    }

    /** Ask Redis. */
    record AskRedis() implements Turn {
    }

    /** The lock was handed to this member: it holds it (lease registered). */
    record Handed() implements Turn {
    }

    /** Not this member's turn: park until {@code bell} rings or {@code recheckNanos} pass. */
    record Wait(CompletableFuture<Void> bell, long recheckNanos) implements Turn {
    }

    /**
     * The leader of a cohort that just gave the lock up to other clients: wait as a refused
     * acquisition does (subscribed, so the other client's turn ends towards it) for at most
     * {@code nanos}, then ask Redis.
     */
    record Yield(long nanos) implements Turn {
    }

    /** Redis did not answer the leader this member queued behind, and it cannot wait longer. */
    record Fail(Throwable cause) implements Turn {
    }

    private static final Turn ASK_REDIS = new AskRedis();
    private static final Turn HANDED = new Handed();

    /** One waiting acquisition of the cohort. */
    static final class Member {
        final String owner;
        final long leaseMs;
        final boolean watchdog;
        /** When its wait ends ({@link Long#MAX_VALUE}: no limit), on the registry's clock. */
        private final long deadlineNanos;
        private State state;
        private Throwable failure;
        private CompletableFuture<Void> bell = new CompletableFuture<>();
        private long notBeforeNanos;
        private Cohort cohort;

        Member(String owner, long leaseMs, boolean watchdog, long deadlineNanos) {
            this.owner = owner;
            this.leaseMs = leaseMs;
            this.watchdog = watchdog;
            this.deadlineNanos = deadlineNanos;
        }

        /** Rings this member's bell once the cohort's mutex is released (see {@link Cohort#exit()}). */
        private void ring() {
            cohort.ringing.add(bell);
        }
    }

    /** A chosen hand-off: to {@code to}; {@code turnOver}: release instead if others listen. */
    record Pass(Member to, boolean turnOver) {
    }

    /** The cohorts of one client, one per lock name while it has members or a holder. */
    static final class Registry {
        private final ConcurrentHashMap<String, Cohort> cohorts = new ConcurrentHashMap<>();
        private final Scheduler scheduler;

        Registry(Scheduler scheduler) {
            this.scheduler = scheduler;
        }

        /**
         * A new waiting acquisition by {@code member.owner}: it leads (asks Redis) if its client
         * neither holds the lock through the cohort nor asks for it already; otherwise it queues.
         */
        Member enter(String name, Member member) {
            while (true) {
                Cohort cohort = cohorts.computeIfAbsent(name, n -> new Cohort(this, n));
                cohort.mutex.lock();
                try {
                    if (cohort.retired) {
                        continue;
                    }
                    member.cohort = cohort;
                    if (cohort.leader == null && cohort.holder == null) {
                        member.state = State.LEADER;
                        cohort.leader = member;
                    } else {
                        member.state = State.QUEUED;
                        cohort.queue.addLast(member);
                    }
                    return member;
                } finally {
                    cohort.exit();
                }
            }
        }

        /**
         * {@code owner} is about to release its last hold: a hand-off to the next queued member,
         * or {@code null} for an ordinary release (it is not the cohort's holder, or nobody
         * waits; then it stops being the holder here).
         */
        Pass passFrom(String name, String owner) {
            Cohort cohort = cohorts.get(name);
            return cohort == null ? null : cohort.passFrom(owner);
        }

        /** {@code owner} no longer holds the lock as far as this client knows (released, lost). */
        void ownerGone(String name, String owner) {
            Cohort cohort = cohorts.get(name);
            if (cohort != null) {
                cohort.ownerGone(owner);
            }
        }

        /**
         * The client is closing: rings every member, so each waiting acquisition steps once more
         * and ends on the closed client instead of sleeping on a bell nobody will ring.
         */
        void wakeAll() {
            for (Cohort cohort : cohorts.values()) {
                cohort.mutex.lock();
                try {
                    for (Member m : cohort.queue) {
                        m.ring();
                    }
                    if (cohort.leader != null) {
                        cohort.leader.ring();
                    }
                } finally {
                    cohort.exit();
                }
            }
        }

        /** How many cohorts exist (for tests). */
        int size() {
            return cohorts.size();
        }
    }

    private final Registry registry;
    private final String name;
    private final ReentrantLock mutex = new ReentrantLock();
    private final ArrayDeque<Member> queue = new ArrayDeque<>();
    private Member leader;
    private String holder;
    private int passes;
    private long turnStartedNanos;
    private boolean retired;
    /** Bells rung under the mutex, completed after it is released (a bell runs its waiter's next step). */
    private final java.util.List<CompletableFuture<Void>> ringing = new java.util.ArrayList<>();

    private Cohort(Registry registry, String name) {
        this.registry = registry;
        this.name = name;
    }

    /**
     * What {@code member}'s next attempt does. {@code holds} tells whether an owner still has
     * its lease in this client (a queued member re-checks the holder with it).
     */
    static Turn turn(Member member, Predicate<String> holds) {
        Cohort c = member.cohort;
        long nowNanos = c.registry.scheduler.nanoTime();
        c.mutex.lock();
        try {
            switch (member.state) {
                case HANDED:
                    member.state = State.HOLDER;
                    return HANDED;
                case FAILED:
                    member.state = State.GONE;
                    return new Fail(member.failure);
                case QUEUED:
                    if (member.deadlineNanos != Long.MAX_VALUE && nowNanos - member.deadlineNanos >= 0) {
                        return ASK_REDIS; // the last attempt at the deadline; it stays queued
                    }
                    if (c.holder != null && !holds.test(c.holder)) {
                        c.holder = null;
                    }
                    if (c.holder == null && c.leader == null) {
                        c.promote(0);
                    }
                    if (member.state == State.QUEUED) {
                        return c.waitFor(member, RECHECK_NANOS);
                    }
                    return turnAsLeader(c, member, nowNanos);
                case CHOSEN:
                    return c.waitFor(member, RECHECK_NANOS);
                case LEADER:
                    return turnAsLeader(c, member, nowNanos);
                default:
                    return ASK_REDIS;
            }
        } finally {
            c.exit();
        }
    }

    private static Turn turnAsLeader(Cohort c, Member member, long nowNanos) {
        long wait = member.notBeforeNanos - nowNanos;
        return wait > 0 ? new Yield(wait) : ASK_REDIS;
    }

    private Turn waitFor(Member member, long nanos) {
        if (member.bell.isDone()) {
            member.bell = new CompletableFuture<>();
        }
        return new Wait(member.bell, nanos);
    }

    /** A release was announced on the channel: a yielding leader's wait is over, it asks now. */
    static void releaseSeen(Member member) {
        Cohort c = member.cohort;
        c.mutex.lock();
        try {
            member.notBeforeNanos = 0;
        } finally {
            c.exit();
        }
    }

    /** The leader's own attempt was granted by Redis: it holds the lock and a turn starts. */
    static void grantedByRedis(Member member) {
        Cohort c = member.cohort;
        c.mutex.lock();
        try {
            if (c.leader == member) {
                c.leader = null;
            } else if (member.state == State.QUEUED) {
                c.queue.remove(member);
            }
            member.state = State.HOLDER;
            c.holder = member.owner;
            c.passes = 0;
            c.turnStartedNanos = c.registry.scheduler.nanoTime();
        } finally {
            c.exit();
        }
    }

    /**
     * The member's acquisition ended without seeing a grant ({@code unanswered}: its last call
     * to Redis got no answer, or {@code null}). Whether the lock had been handed to
     * it meanwhile: the caller must then release it (the lease is registered already).
     */
    static boolean leave(Member member, Throwable unanswered) {
        Cohort c = member.cohort;
        c.mutex.lock();
        try {
            State was = member.state;
            if (was == State.HOLDER || was == State.GONE) {
                return false;
            }
            member.state = State.GONE;
            switch (was) {
                case QUEUED -> c.queue.remove(member);
                case LEADER -> {
                    c.leader = null;
                    if (unanswered != null) {
                        c.failUnbounded(unanswered);
                    }
                    c.promote(member.notBeforeNanos);
                }
                default -> {
                    // CHOSEN: the hand-off's reply decides; HANDED: the caller gives the lock back.
                }
            }
            c.retireIfIdle();
            return was == State.HANDED;
        } finally {
            c.exit();
        }
    }

    private Pass passFrom(String owner) {
        mutex.lock();
        try {
            if (!owner.equals(holder)) {
                return null;
            }
            Member next = queue.pollFirst();
            if (next == null) {
                holder = null;
                retireIfIdle();
                return null;
            }
            next.state = State.CHOSEN;
            boolean turnOver = passes >= MAX_PASSES
                    || registry.scheduler.nanoTime() - turnStartedNanos >= MAX_TURN_NANOS;
            return new Pass(next, turnOver);
        } finally {
            exit();
        }
    }

    private void ownerGone(String owner) {
        mutex.lock();
        try {
            if (owner.equals(holder)) {
                holder = null;
                if (leader == null) {
                    promote(0);
                }
                retireIfIdle();
            }
        } finally {
            exit();
        }
    }

    /**
     * The hand-off chosen by {@link Registry#passFrom} landed: {@code pass.to} holds the lock.
     * Whether the receiver had already given up: the caller must then release for it.
     */
    static boolean handed(Pass pass) {
        Member to = pass.to;
        Cohort c = to.cohort;
        c.mutex.lock();
        try {
            c.holder = to.owner;
            if (pass.turnOver) {
                // Nobody else listened: a new turn.
                c.passes = 0;
                c.turnStartedNanos = c.registry.scheduler.nanoTime();
            } else {
                c.passes++;
            }
            if (to.state == State.GONE) {
                return true;
            }
            to.state = State.HANDED;
            to.ring();
            return false;
        } finally {
            c.exit();
        }
    }

    /**
     * The hand-off did not happen: the lock was released to everybody (the turn was over and
     * others listen: {@code yielded}), the releaser's lease was gone, or the call failed. The
     * chosen member leads now (after {@link #YIELD_NANOS} if the cohort yields).
     */
    static void notHanded(Pass pass, boolean yielded) {
        Member to = pass.to;
        Cohort c = to.cohort;
        c.mutex.lock();
        try {
            c.holder = null;
            long notBefore = yielded ? c.registry.scheduler.nanoTime() + YIELD_NANOS : 0;
            if (to.state == State.GONE) {
                if (c.leader == null) {
                    c.promote(notBefore);
                }
            } else if (c.leader == null) {
                to.state = State.LEADER;
                to.notBeforeNanos = notBefore;
                c.leader = to;
                to.ring();
            } else {
                to.state = State.QUEUED;
                c.queue.addFirst(to);
            }
            c.retireIfIdle();
        } finally {
            c.exit();
        }
    }

    /** Fails every queued wait without a deadline with {@code cause}: they would have had it too. */
    private void failUnbounded(Throwable cause) {
        for (java.util.Iterator<Member> it = queue.iterator(); it.hasNext(); ) {
            Member m = it.next();
            if (m.deadlineNanos == Long.MAX_VALUE) {
                it.remove();
                m.state = State.FAILED;
                m.failure = cause;
                m.ring();
            }
        }
    }

    /** Makes the oldest queued member the leader and rings it. */
    private void promote(long notBeforeNanos) {
        Member next = queue.pollFirst();
        if (next != null) {
            next.state = State.LEADER;
            next.notBeforeNanos = notBeforeNanos;
            leader = next;
            next.ring();
        }
    }

    private void retireIfIdle() {
        if (leader == null && holder == null && queue.isEmpty()) {
            retired = true;
            registry.cohorts.remove(name, this);
        }
    }

    /**
     * Releases the mutex, then rings the bells rung under it: a bell may run its waiter's next
     * attempt on this thread, which must not happen inside the critical section.
     */
    private void exit() {
        if (ringing.isEmpty()) {
            mutex.unlock();
            return;
        }
        java.util.List<CompletableFuture<Void>> bells = new java.util.ArrayList<>(ringing);
        ringing.clear();
        mutex.unlock();
        bells.forEach(b -> b.complete(null));
    }
}
