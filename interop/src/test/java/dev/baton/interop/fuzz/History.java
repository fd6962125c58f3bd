package dev.baton.interop.fuzz;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * What an interleaving storm saw, and the judgement of it.
 *
 * <p>A hold is recorded from the moment its acquisition returned ({@link Hold#granted}) to the
 * moment its release was called ({@link Hold#released}). Redis granted it before the first and
 * releases it after the second, so two recorded holds that overlap held in Redis at the same
 * instant: the check can only report real overlaps, never miss one that these intervals show.
 * A hold still open at the end counts as open for ever.
 *
 * <p>The only overlaps excused are those a {@link #force forceUnlock} explains: one of the two
 * holds (the victim) may have been held in Redis before the force returned (asked for before it,
 * and answered at most a command timeout after it) and its release reported the loss (an
 * {@code IllegalMonitorStateException}, {@code LeaseLostException} included; any other exception
 * says nothing), and the other returned after the force was called. Lost counter updates are excused up to the
 * number of excused overlaps; nothing else is.
 */
public final class History {
    /** How a hold shares its resource. */
    public enum Mode {
        /** A lock's or a write lock's hold: alone. */
        EXCLUSIVE,
        /** A read lock's hold: with other readers, never with a writer. */
        SHARED,
        /** {@link Hold#weight} permits of a semaphore. */
        PERMITS
    }

    /** One grant, from its acquisition's return to its release's call. */
    public static final class Hold {
        final String client;
        final String how;
        final Mode mode;
        final int weight;
        /** When its acquisition was called: Redis granted it after this. */
        final long asked;
        /** When its acquisition returned: Redis granted it before this. */
        final long granted;
        final long token;
        volatile long released = Long.MAX_VALUE;
        /** When the release returned: it ran in Redis before this. */
        volatile long releaseReturned = Long.MAX_VALUE;
        volatile String releaseError;
        /** Whether the release reported the hold lost or not held (an IllegalMonitorStateException, LeaseLostException included). */
        volatile boolean releaseReportedLoss;

        Hold(String client, String how, Mode mode, int weight, long asked, long granted, long token) {
            this.client = client;
            this.how = how;
            this.mode = mode;
            this.weight = weight;
            this.asked = asked;
            this.granted = granted;
            this.token = token;
        }

        @Override
        public String toString() {
            return how + " (" + mode.name().toLowerCase() + ") by " + client + " [" + granted + ", " + (released == Long.MAX_VALUE ? "open" : released) + "]"
                    + (token != 0 ? " token " + token : "") + (weight != 1 ? " x" + weight : "")
                    + (releaseError != null ? " release threw " + releaseError : "");
        }
    }

    record Force(long start, long end) {
    }

    record Call(String what, long start, long end, long boundNanos) {
    }

    /** How long before its reply Redis may have granted a hold: the clients' command timeout + 150 ms. */
    private final long grantWindowNanos;

    /** A history of clients with the default command timeout of the storms (2 s). */
    public History() {
        this(java.time.Duration.ofSeconds(2));
    }

    /** A history of clients with this command timeout: Redis granted a hold at most that + 150 ms before its reply. */
    public History(java.time.Duration commandTimeout) {
        this.grantWindowNanos = commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(150);
    }

    private final ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
    /** Each worker's recent steps (what it called, when, how it ended), for the report of a violation. */
    private final java.util.concurrent.ConcurrentHashMap<String, java.util.ArrayDeque<String>> traces =
            new java.util.concurrent.ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Force> forces = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Call> lateCalls = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> unexcusedFailures = new ConcurrentLinkedQueue<>();

    /** An acquisition called at {@code askedNanos} returned a grant at {@code grantedNanos}. */
    public Hold granted(String client, String how, Mode mode, int weight, long askedNanos, long grantedNanos, long token) {
        Hold hold = new Hold(client, how, mode, weight, askedNanos, grantedNanos, token);
        holds.add(hold);
        int at = how.lastIndexOf(" @");
        if (at >= 0) {
            trace(how.substring(at + 2), grantedNanos, "granted " + how.substring(0, at) + " asked at " + askedNanos);
        }
        return hold;
    }

    /** The hold's release was called at {@code calledNanos}; {@code error}: what it threw, or {@code null}. */
    public void released(Hold hold, long calledNanos, Throwable error) {
        released(hold, calledNanos, calledNanos, error);
    }

    /** The hold's release was called at {@code calledNanos} and returned at {@code returnedNanos}. */
    public void released(Hold hold, long calledNanos, long returnedNanos, Throwable error) {
        hold.released = calledNanos;
        hold.releaseReturned = returnedNanos;
        if (error != null) {
            hold.releaseError = error.getClass().getSimpleName() + ": " + error.getMessage();
            hold.releaseReportedLoss = error instanceof IllegalMonitorStateException;
        }
    }

    /** A forceUnlock ran between these two instants. */
    public void force(long startNanos, long endNanos) {
        forces.add(new Force(startNanos, endNanos));
    }

    /** A call took {@code end - start}; it promises to end within {@code boundNanos}. */
    public void call(String what, long startNanos, long endNanos, long boundNanos) {
        if (endNanos - startNanos > boundNanos) {
            lateCalls.add(new Call(what, startNanos, endNanos, boundNanos));
        }
    }

    /** Notes a step of {@code worker} at {@code nanos}, kept among its last 24 for a violation's report. */
    public void trace(String worker, long nanos, String step) {
        java.util.ArrayDeque<String> q = traces.computeIfAbsent(worker, w -> new java.util.ArrayDeque<>());
        synchronized (q) {
            q.addLast(nanos + " " + step);
            if (q.size() > 24) {
                q.removeFirst();
            }
        }
    }

    /** The recent steps of {@code worker}, for a report. */
    public String steps(String worker) {
        java.util.ArrayDeque<String> q = traces.get(worker);
        if (q == null) {
            return "none";
        }
        synchronized (q) {
            return String.join(" | ", q);
        }
    }

    private String tracesOf(Hold a, Hold b, List<Force> forced) {
        StringBuilder out = new StringBuilder();
        for (Hold h : List.of(a, b)) {
            int at = h.how.lastIndexOf(" @");
            String worker = at < 0 ? null : h.how.substring(at + 2);
            java.util.ArrayDeque<String> q = worker == null ? null : traces.get(worker);
            if (q != null) {
                synchronized (q) {
                    out.append("\n    steps of ").append(worker).append(": ").append(String.join(" | ", q));
                }
            }
        }
        long from = Math.min(a.asked, b.asked) - 50_000_000L;
        long to = Math.max(a.granted, b.granted) + 50_000_000L;
        for (Force f : forced) {
            if (f.end() >= from && f.start() <= to) {
                out.append("\n    forceUnlock [").append(f.start()).append(", ").append(f.end()).append("]");
            }
        }
        return out.toString();
    }

    /** A call failed in a way no promise allows (an exception on a healthy Redis, say). */
    public void failed(String what, Throwable error) {
        // What was thrown first: a CI log shows the first few hundred characters of a failure.
        unexcusedFailures.add("threw " + error + ", in " + what);
    }

    /** A violation a kind's own check found (a latch opened early, a count off). */
    public void violation(String what) {
        violations.add(what);
    }

    /** The holds recorded so far. */
    public List<Hold> holds() {
        return List.copyOf(holds);
    }

    /**
     * Every violation: overlaps beyond what the resource allows, releases of reported holds that
     * threw, calls past their bound, failures, a lost counter update, fencing tokens that did
     * not rise, a client never granted.
     *
     * @param permits         how many permits a PERMITS resource has (ignored for locks)
     * @param counterExpected increments made inside exclusive holds (-1: no counter)
     * @param counterActual   the counter read at the end
     * @param clients         every client that must have been granted at least once
     */
    public List<String> judge(int permits, long counterExpected, long counterActual, Set<String> clients) {
        List<String> found = new ArrayList<>(violations);
        List<Hold> sorted = new ArrayList<>(holds);
        sorted.sort(Comparator.comparingLong(h -> h.granted));
        List<Force> forced = List.copyOf(forces);
        int excused = 0;
        List<Hold> open = new ArrayList<>();
        for (Hold b : sorted) {
            open.removeIf(a -> a.released < b.granted);
            int exclusive = 0;
            int shared = 0;
            int weight = b.mode == Mode.PERMITS ? b.weight : 0;
            List<Hold> clashing = new ArrayList<>();
            for (Hold a : open) {
                switch (a.mode) {
                    case EXCLUSIVE -> exclusive++;
                    case SHARED -> shared++;
                    case PERMITS -> weight += a.weight;
                }
                boolean clash = switch (b.mode) {
                    case EXCLUSIVE -> a.mode != Mode.PERMITS;
                    case SHARED -> a.mode == Mode.EXCLUSIVE;
                    case PERMITS -> false;
                };
                if (clash) {
                    clashing.add(a);
                }
            }
            if (b.mode == Mode.PERMITS && weight > permits) {
                found.add(weight + " permits held at once of " + permits + " when " + b + " was granted; also held: " + open);
            }
            for (Hold a : clashing) {
                if (excusedByForce(a, b, forced)) {
                    excused++;
                } else {
                    found.add("two holders at once: " + a + " and " + b + tracesOf(a, b, forced));
                }
            }
            open.add(b);
        }
        for (Hold h : sorted) {
            if (h.releaseError != null && !forcedDuring(h, forced)) {
                found.add("the release of a reported hold threw: " + h);
            }
        }
        for (Call c : lateCalls) {
            found.add(c.what() + " took " + TimeUnit.NANOSECONDS.toMillis(c.end() - c.start()) + " ms, past its bound of "
                    + TimeUnit.NANOSECONDS.toMillis(c.boundNanos()) + " ms");
        }
        found.addAll(unexcusedFailures);
        if (counterExpected >= 0 && counterActual != counterExpected) {
            long lost = counterExpected - counterActual;
            if (lost < 0 || lost > excused) {
                found.add("lost updates: the counter is " + counterActual + " after " + counterExpected
                        + " increments inside the lock (" + excused + " overlaps excused by forceUnlock)");
            }
        }
        long lastToken = 0;
        for (Hold h : sorted) {
            // A forced-out hold may have been granted by Redis before the hold recorded ahead of
            // it (its reply came later): grant order in Redis is known only for holds not forced.
            if (h.token != 0 && !(h.releaseError != null && forcedDuring(h, forced))) {
                if (h.token <= lastToken) {
                    found.add("fencing token did not rise: " + h + " after token " + lastToken);
                }
                lastToken = h.token;
            }
        }
        Set<String> granted = new HashSet<>();
        sorted.forEach(h -> granted.add(h.client));
        for (String client : clients) {
            if (!granted.contains(client)) {
                found.add("client " + client + " was never granted (of " + sorted.size() + " grants)");
            }
        }
        return found;
    }

    /**
     * Whether a forceUnlock explains two overlapping holds: one of them (the victim) was told
     * (its release threw), it was asked for before the force ended (so Redis may have granted it
     * before the force deleted it), and the other returned after the force began.
     */
    private boolean excusedByForce(Hold a, Hold b, List<Force> forced) {
        return victimOf(a, b, forced) || victimOf(b, a, forced);
    }

    /**
     * Whether {@code victim} may have been forced out to let {@code other} in: its release
     * reported the loss (a loss report, not any exception: a release that Redis did not answer
     * says nothing), and a force ended after Redis may have granted the victim and began before
     * the other returned. Redis granted the victim no earlier than its acquisition was called, and
     * no earlier than {@link #grantWindowNanos} before its reply (an attempt that is not answered
     * within the command timeout fails), so a force during a long wait before that explains nothing.
     */
    private boolean victimOf(Hold victim, Hold other, List<Force> forced) {
        if (!victim.releaseReportedLoss) {
            return false;
        }
        long heldFrom = Math.max(victim.asked, victim.granted - grantWindowNanos);
        for (Force f : forced) {
            if (heldFrom <= f.end() && f.start() <= other.granted) {
                return true;
            }
        }
        return false;
    }

    /** Whether a force may have run while the hold was in Redis, its release included. */
    private static boolean forcedDuring(Hold h, List<Force> forced) {
        for (Force f : forced) {
            if (h.asked <= f.end() && f.start() <= h.releaseReturned) {
                return true;
            }
        }
        return false;
    }
}
