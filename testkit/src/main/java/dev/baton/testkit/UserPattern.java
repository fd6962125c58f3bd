package dev.baton.testkit;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The user-pattern catalog: what application code does with Baton's synchronizers, as users
 * write it rather than as Baton's authors would (issue 46: storms written from the docs alone
 * broke three kinds that the simulation had passed a million seeds of, with patterns its actors
 * never used). The simulation's actors and the interleaving fuzzer's workers tag every operation
 * they start with the pattern it is; each run prints how often each pattern ran, per kind, and
 * fails when a pattern the tool says it covers for a kind never ran ({@link Counts#missing}).
 *
 * <p>Adding a kind (a rate limiter, leader election) adds its patterns here and declares them in
 * each tool that runs the kind; adding a pattern means teaching at least one tool to do it.
 */
public enum UserPattern {
    /** A wait that ends at once or within a few ms: {@code tryLock()}, {@code tryLock(0-5 ms)}, as request handlers do. */
    SHORT_TIMED_WAIT("a timed wait of 0-5 ms"),
    /** A wait of tens to hundreds of ms, or an untimed one. */
    LONG_WAIT("a wait of 10 ms or more, or untimed"),
    /** A hold with a fixed lease instead of the watchdog. */
    FIXED_LEASE("a hold with a fixed lease"),
    /** The returned future cancelled by the caller; the same owner's next call follows. */
    GIVEN_UP_BY_CANCEL("a call given up by cancel(), its owner reused next"),
    /** The returned future failed by the caller's own timeout ({@code orTimeout}'s shape); the owner reused. */
    GIVEN_UP_BY_OR_TIMEOUT("a call given up by the caller's orTimeout, its owner reused next"),
    /** The returned future completed by the caller with a value ({@code completeOnTimeout}, {@code complete}); the owner reused. */
    GIVEN_UP_BY_COMPLETE("a call given up by complete/completeOnTimeout, its owner reused next"),
    /** A blocking call interrupted while it waits (real threads: the fuzzer). */
    GIVEN_UP_BY_INTERRUPT("a blocking call interrupted while it waits"),
    /** The owner's next call started inside the callback of the call it gave up (or that ended). */
    NEXT_CALL_IN_CALLBACK("the next call started in the ended call's own callback"),
    /** The owner re-enters a lock it holds. */
    REENTRY("a re-entry of a held lock"),
    /** Lease-scoped work ({@code withLock}, {@code withPermit}). */
    SCOPED_WORK("lease-scoped work"),
    /** Lease-scoped work that runs past the first renewal of its lease, towards its validity's end. */
    SCOPED_WORK_LONG("lease-scoped work held past its lease's first renewal"),
    /** Multi-lock calls of one owner whose member sets overlap, one after the other. */
    OVERLAPPING_MEMBER_SETS("multi-lock sets that overlap across an owner's calls"),
    /** A latch armed again at once after its round reached zero (from an await's callback). */
    REARM_RIGHT_AFTER_ZERO("a latch re-armed right after zero"),
    /** {@code forceUnlock} while the lock is held or waited for. */
    FORCE_UNLOCK("forceUnlock while held or waited for"),
    /** A write hold downgraded to a read hold (take the read side, then release the write side). */
    DOWNGRADE("a write hold downgraded to a read"),
    /** More than one permit at once. */
    MULTI_PERMIT("several permits in one call"),
    /** A permit's lease changed while it is held. */
    LEASE_UPDATED("a held permit's lease updated"),
    /** Redisson clients on the same names at the same time. */
    BESIDE_REDISSON("Redisson beside Baton on one name"),
    /** A leader hands leadership on with relinquish() while its work runs. */
    RELINQUISH("a leader relinquishes while its work runs"),
    /** A leader's work returns on its own (a round done), and the candidate queues again. */
    WORK_RETURNS("a leader's work returns on its own"),
    /** A candidacy closed while it leads, or while it waits in line, and a new one joined later. */
    CLOSE_AND_REJOIN("a candidacy closed (leading or waiting) and a new one joined");

    private final String what;

    UserPattern(String what) {
        this.what = what;
    }

    /** What the pattern is, in a user's words. */
    public String what() {
        return what;
    }

    /** How often each pattern ran, per kind; thread-safe (the fuzzer's workers count from many threads). */
    public static final class Counts {
        private final Map<String, Map<UserPattern, LongAdder>> byKind = new ConcurrentHashMap<>();

        /** One operation of {@code kind} started that is {@code pattern}. */
        public void ran(String kind, UserPattern pattern) {
            byKind.computeIfAbsent(kind, k -> new ConcurrentHashMap<>())
                    .computeIfAbsent(pattern, p -> new LongAdder()).increment();
        }

        /** How often {@code pattern} ran for {@code kind}. */
        public long count(String kind, UserPattern pattern) {
            LongAdder n = byKind.getOrDefault(kind, Map.of()).get(pattern);
            return n == null ? 0 : n.sum();
        }

        /** Adds every count of {@code other} to this one. */
        public void addAll(Counts other) {
            other.byKind.forEach((kind, counts) -> counts.forEach((p, n) -> byKind
                    .computeIfAbsent(kind, k -> new ConcurrentHashMap<>())
                    .computeIfAbsent(p, x -> new LongAdder()).add(n.sum())));
        }

        /** The patterns of {@code covered} that never ran for {@code kind}, in catalog order. */
        public List<UserPattern> missing(String kind, Set<UserPattern> covered) {
            List<UserPattern> missing = new ArrayList<>();
            for (UserPattern p : values()) {
                if (covered.contains(p) && count(kind, p) == 0) {
                    missing.add(p);
                }
            }
            return missing;
        }

        /** "pattern=count, ..." for {@code kind}, every pattern of {@code covered}, in catalog order. */
        public String line(String kind, Set<UserPattern> covered) {
            Map<UserPattern, Long> shown = new EnumMap<>(UserPattern.class);
            for (UserPattern p : values()) {
                if (covered.contains(p)) {
                    shown.put(p, count(kind, p));
                }
            }
            StringBuilder b = new StringBuilder();
            shown.forEach((p, n) -> b.append(b.length() == 0 ? "" : ", ").append(p.name().toLowerCase(java.util.Locale.ROOT))
                    .append('=').append(n));
            return b.toString();
        }
    }
}
