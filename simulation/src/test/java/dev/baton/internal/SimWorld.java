package dev.baton.internal;

import dev.baton.sim.SimRedis;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One simulated world: a virtual clock, one queue of events run one at a time on the calling
 * thread, one seeded random source that decides every delay, loss and choice, and the simulated
 * Redis (keyspace, scripts, subscriptions). Nothing in it reads the real clock or starts a
 * thread, so a seed replays the same run, event for event; the trace it keeps is the evidence.
 *
 * <p>Ids Baton draws at random (request ids, permit ids) do not change what happens, but they
 * would change the trace's text: the trace names each one by its first appearance ({@code id1},
 * {@code id2}, ...), so two runs of one seed print the same bytes.
 */
final class SimWorld {

    /** Virtual time starts here (ms since the epoch), so Redis's TIME looks like a real date. */
    static final long EPOCH_MS = 1_800_000_000_000L;

    private record Event(long at, long seq, String what, Runnable run) {
    }

    final Random rnd;
    /** The first simulated Redis, the one every kind but the RedLock uses. */
    final Server server;
    private final Map<String, Server> servers = new java.util.LinkedHashMap<>();
    private final PriorityQueue<Event> events = new PriorityQueue<>((a, b) -> a.at != b.at
            ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    private long seq;
    private long now;
    private final List<String> trace = new ArrayList<>();
    private final boolean keepTrace;
    private final Map<String, String> aliases = new HashMap<>();
    private long steps;
    /** Set for the drain: no more stalls, resets or lost messages (what is under way goes on). */
    boolean calm;
    /**
     * What a simulation watches on the keyspace: run just before and just after every command the
     * first simulated Redis serves (a check that needs the moments between commands, such as how
     * long permits stayed free).
     */
    Runnable watch = () -> { };
    /**
     * Owners (client id:owner id) a copy of whose release or acquire ran on a connection that had
     * already dropped or past its command timeout: a late copy, which guarantees.md lists with what Baton cannot promise (a
     * release can free the owner's later hold of the same lock; an acquire sets that hold's lease
     * to its own).
     */
    final Set<String> lateReleasesBy = new java.util.TreeSet<>();
    private static final Pattern OWNER_FIELD = Pattern.compile("^[ab]:\\d+(:write)?$");
    private static final Set<String> RELEASES = Set.of("lock_release", "fair_release", "rwlock_write_release",
            "rwlock_read_release", "lock_acquire", "fair_acquire", "fenced_acquire", "rwlock_write_acquire",
            "rwlock_read_acquire");
    private static final Set<String> FORCES = Set.of("lock_force_unlock", "fair_force_unlock", "rwlock_force_unlock");

    /**
     * When (world time) a copy of a forceUnlock ran late: its call may have been answered long
     * before, by another copy (Lettuce writes again what a dropped connection left unanswered,
     * while the first copy sat in a stalled server's input). It is a force all the same, at the
     * time it ran (seed 470101 of the lock: a copy sent at 6 ms ran at 262 ms and ended a hold
     * taken at 142 ms).
     */
    final List<Long> lateForces = new ArrayList<>();

    /**
     * A command ran after its caller gave up (on a connection that had dropped, or past its
     * command timeout in a stalled server's input): if it is a release or an acquire, remember whose.
     */
    void ranLate(String[] args) {
        if (args.length < 4 || !(args[0].equalsIgnoreCase("EVAL") || args[0].equalsIgnoreCase("EVALSHA"))) {
            return;
        }
        String script = args[0].equalsIgnoreCase("EVAL") ? scriptOf(args[1]) : RELEASE_SHAS.getOrDefault(args[1], "");
        if (FORCES.contains(script)) {
            lateForces.add(now());
            note("a late copy of " + script + " ran: a force now (guarantees.md: what Baton cannot promise)");
            return;
        }
        if (!RELEASES.contains(script)) {
            return;
        }
        for (int i = 3 + Integer.parseInt(args[2]); i < args.length; i++) {
            if (OWNER_FIELD.matcher(args[i]).matches()) {
                lateReleasesBy.add(args[i].replace(":write", ""));
                note("a late copy of " + script + " by " + args[i] + " ran (guarantees.md: what Baton cannot promise)");
                return;
            }
        }
    }

    private static final java.util.Map<String, String> RELEASE_SHAS = new java.util.HashMap<>();

    static {
        for (dev.baton.lua.Script s : dev.baton.lua.Script.values()) {
            String file = s.fileName().replace(".lua", "");
            if (RELEASES.contains(file) || FORCES.contains(file)) {
                RELEASE_SHAS.put(s.sha1(), file);
            }
        }
    }

    private static String scriptOf(String text) {
        int colon = text.indexOf(':');
        return text.startsWith("-- ") && colon > 0 ? text.substring(3, colon) : "";
    }

    private static final Pattern RANDOM_ID = Pattern.compile("\\b[0-9a-f]{16,32}\\b");

    SimWorld(long seed, boolean keepTrace) {
        // Not new Random(seed): the first values of java.util.Random for neighbouring seeds are
        // alike, and the first draw picks the run's faults, so seeds 1 to 1,000 all drew two of the
        // four shapes (never "none", never "short stalls and lost messages"). SplittableRandom's
        // first value of a seed is mixed well; the seed still decides everything.
        this.rnd = new Random(new java.util.SplittableRandom(seed).nextLong());
        this.keepTrace = keepTrace;
        this.server = server("redis");
    }

    /** The simulated Redis of that name, made on first use (independent servers: a RedLock's masters). */
    Server server(String name) {
        return servers.computeIfAbsent(name, Server::new);
    }

    /** Virtual now, in nanoseconds from the start of the run. */
    long now() {
        return now;
    }

    /** Runs {@code run} {@code delayNanos} from now (0: after the events already due now). */
    void at(long delayNanos, String what, Runnable run) {
        events.add(new Event(now + Math.max(0, delayNanos), seq++, what, run));
    }

    /**
     * Runs events in time order until none is left before {@code untilNanos} or {@code stop}
     * says so; the clock ends at {@code untilNanos} or at the stop.
     */
    void runUntil(long untilNanos, java.util.function.BooleanSupplier stop) {
        while (!events.isEmpty() && events.peek().at <= untilNanos && !stop.getAsBoolean()) {
            Event e = events.poll();
            now = e.at;
            steps++;
            e.run.run();
        }
        if (!stop.getAsBoolean()) {
            now = Math.max(now, untilNanos);
        }
    }

    /** How many events have run. */
    long steps() {
        return steps;
    }

    /** A uniformly random delay between the two bounds, in nanoseconds. */
    long micros(long fromMicros, long toMicros) {
        return TimeUnit.MICROSECONDS.toNanos(fromMicros + (long) (rnd.nextDouble() * (toMicros - fromMicros)));
    }

    /** True with probability {@code p}. */
    boolean chance(double p) {
        return rnd.nextDouble() < p;
    }

    /** Empties every simulated server's script cache (SCRIPT FLUSH): each client's next EVALSHA there gets NOSCRIPT. */
    void flushScripts() {
        note("SCRIPT FLUSH on every server");
        servers.values().forEach(s -> s.serve(new String[] {"SCRIPT", "FLUSH"}));
    }

    /** How many EVALSHA every simulated server refused with NOSCRIPT. */
    long noScripts() {
        return servers.values().stream().mapToLong(s -> s.redis.noScripts()).sum();
    }

    /** Runs one command on the first simulated Redis at virtual now; publishes what it published. */
    Object serve(String[] args) {
        return server.serve(args);
    }

    /** The first simulated Redis's keys as they are at virtual now (expired ones gone). */
    Map<String, Object[]> keyspace() {
        return server.keyspace();
    }

    /** One simulated Redis server: its keyspace and scripts, and its subscriptions. */
    final class Server {
        final String name;
        final SimRedis redis = new SimRedis();
        /** The server's subscriptions: channel to the connections subscribed to it, in the order they subscribed. */
        private final Map<String, Set<SimWire.PubSub>> subscribers = new HashMap<>();

        Server(String name) {
            this.name = name;
            redis.receivers(channel -> subscribers.getOrDefault(channel, Set.of()).size());
        }

        /** Runs one command at virtual now; publishes what it published. */
        Object serve(String[] args) {
            redis.setMicros(EPOCH_MS * 1000 + now / 1000);
            boolean watched = this == server;
            if (watched) {
                watch.run();
            }
            try {
                return redis.command(args);
            } finally {
                if (watched) {
                    watch.run();
                }
                for (SimRedis.Published p : redis.takePublished()) {
                    note("publish " + p.channel() + " " + p.message());
                    for (SimWire.PubSub s : List.copyOf(subscribers.getOrDefault(p.channel(), Set.of()))) {
                        s.deliver(p.channel(), p.message());
                    }
                }
            }
        }

        /** The keys as they are at virtual now (expired ones gone). */
        Map<String, Object[]> keyspace() {
            redis.setMicros(EPOCH_MS * 1000 + now / 1000);
            return redis.dump();
        }

        /** The server side of SUBSCRIBE; the number of channels the connection is subscribed to after it. */
        long subscribe(SimWire.PubSub connection, String channel) {
            subscribers.computeIfAbsent(channel, c -> new LinkedHashSet<>()).add(connection);
            return channelsOf(connection);
        }

        /** The server side of UNSUBSCRIBE. */
        long unsubscribe(SimWire.PubSub connection, String channel) {
            Set<SimWire.PubSub> on = subscribers.get(channel);
            if (on != null) {
                on.remove(connection);
                if (on.isEmpty()) {
                    subscribers.remove(channel);
                }
            }
            return channelsOf(connection);
        }

        /** The server forgets a dropped connection's subscriptions. */
        void dropSubscriptions(SimWire.PubSub connection) {
            subscribers.values().forEach(on -> on.remove(connection));
            subscribers.values().removeIf(Set::isEmpty);
        }

        private long channelsOf(SimWire.PubSub connection) {
            return subscribers.values().stream().filter(on -> on.contains(connection)).count();
        }
    }

    /** Adds a line to the trace: virtual time in µs, then {@code what} with random ids named by first appearance. */
    void note(String what) {
        if (!keepTrace) {
            return;
        }
        Matcher m = RANDOM_ID.matcher(what);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(out, aliases.computeIfAbsent(m.group(), id -> "id" + (aliases.size() + 1)));
        }
        m.appendTail(out);
        trace.add(String.format("%10d %s", now / 1000, out));
    }

    /** The trace so far. */
    List<String> trace() {
        return trace;
    }
}
