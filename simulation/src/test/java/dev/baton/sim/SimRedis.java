package dev.baton.sim;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.ToLongFunction;

/*
 * A simulated Redis for the deterministic simulation: one keyspace in memory, with the commands
 * Baton's scripts and tests use, TTLs on a virtual clock the caller sets, pub/sub publishing to
 * a log, and EVAL / EVALSHA / SCRIPT LOAD running the real scripts in LuaJ (SimScripts).
 *
 * Replies are what a RESP2 client decodes: Long for integers, String for bulk strings (null for
 * nil), List<Object> for arrays, Status for simple strings; an error reply is thrown as a
 * SimError. Strings are byte strings: each Java char holds one byte (ISO-8859-1), so binary
 * values (the expirable semaphore's raw permit ids) pass through unchanged; a command's
 * arguments are given the same way.
 *
 * Single-threaded on purpose: the simulation runs one event at a time, like Redis.
 */
public final class SimRedis {

    /** A simple-string reply ({@code +OK}, a TYPE's name). */
    public record Status(String text) {
    }

    /** An error reply, with Redis's text (its first word is the error code). */
    public static final class SimError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SimError(String message) {
            super(message, null, false, false);
        }
    }

    /** One message published, in order. */
    public record Published(String channel, String message) {
    }

    private static final String WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value";
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";

    /** One key's value (String, a hash, a sorted set) and its expiry in virtual ms (0: none). */
    private static final class Entry {
        Object value;
        long expiresAtMs;

        Entry(Object value) {
            this.value = value;
        }
    }

    /** A sorted set: member to score, and the members ordered by (score, member) as Redis orders them. */
    static final class ZSet {
        final Map<String, Double> scores = new HashMap<>();
        final TreeSet<String> order;

        ZSet() {
            order = new TreeSet<>(Comparator.<String>comparingDouble(scores::get).thenComparing(Comparator.naturalOrder()));
        }

        boolean add(String member, double score) {
            boolean added = !scores.containsKey(member);
            if (!added) {
                order.remove(member);
            }
            scores.put(member, score);
            order.add(member);
            return added;
        }

        boolean remove(String member) {
            if (!scores.containsKey(member)) {
                return false;
            }
            order.remove(member);
            scores.remove(member);
            return true;
        }
    }

    private final Map<String, Entry> keys = new TreeMap<>();
    private final Map<String, String> scriptsBySha = new HashMap<>();
    /** How many EVALSHA were refused with NOSCRIPT. */
    private long noScripts;

    /** How many EVALSHA this server refused with NOSCRIPT (its script cache did not have the script). */
    public long noScripts() {
        return noScripts;
    }
    private final List<Published> published = new ArrayList<>();
    private final SimScripts lua = new SimScripts(this);
    private long nowMicros;
    private long expiryMs;
    private ToLongFunction<String> receivers = channel -> 0;

    /** Sets the virtual clock, in microseconds since the epoch (it never runs by itself). */
    public void setMicros(long micros) {
        setClock(micros, Math.floorDiv(micros, 1000));
    }

    /**
     * Sets the two clocks a Redis command sees: what TIME answers ({@code timeMicros}), and the
     * time keys expire by ({@code expiryMs}: Redis takes it once when a command starts and keeps
     * it for the whole command, a script or a MULTI included, while TIME goes on).
     */
    void setClock(long timeMicros, long expiryMs) {
        this.nowMicros = timeMicros;
        this.expiryMs = expiryMs;
    }

    public long nowMs() {
        return expiryMs;
    }

    /** How many subscribers a PUBLISH reports for a channel (0 for every channel by default). */
    public void receivers(ToLongFunction<String> count) {
        this.receivers = count;
    }

    /** Every message published since the last call, oldest first. */
    public List<Published> takePublished() {
        List<Published> taken = List.copyOf(published);
        published.clear();
        return taken;
    }

    /** Whether this server refuses scripts with READONLY, as a master demoted to a replica does. */
    private boolean readOnly;
    /** How many scripts it refused so. */
    private long readOnlyRefusals;

    /** How many scripts this server refused with READONLY. */
    public long readOnlyRefusals() {
        return readOnlyRefusals;
    }

    /** Runs once at each script this server refuses with READONLY; null: nothing. */
    private Runnable onReadOnlyRefusal;

    /** Makes this server refuse every script with READONLY (a master demoted to a replica), or serve again. */
    public void readOnly(boolean on) {
        readOnly = on;
    }

    /** Sets what runs at each script refused with READONLY (null: nothing). */
    public void onReadOnlyRefusal(Runnable action) {
        onReadOnlyRefusal = action;
    }

    /** A copy of every key as it is now, expiry times included: what a replica has at this moment. */
    public Object snapshot() {
        Map<String, Entry> copy = new TreeMap<>();
        keys.forEach((key, e) -> copy.put(key, copyOf(e)));
        return copy;
    }

    /** Replaces every key with those of a {@link #snapshot()}: a replica promoted with what it had then. */
    @SuppressWarnings("unchecked")
    public void restore(Object snapshot) {
        keys.clear();
        ((Map<String, Entry>) snapshot).forEach((key, e) -> keys.put(key, copyOf(e)));
    }

    @SuppressWarnings("unchecked")
    private static Entry copyOf(Entry e) {
        Object value = e.value;
        if (value instanceof ZSet z) {
            ZSet copy = new ZSet();
            z.scores.forEach(copy::add);
            value = copy;
        } else if (value instanceof Map<?, ?> m) {
            value = new LinkedHashMap<>((Map<String, String>) m);
        }
        Entry copy = new Entry(value);
        copy.expiresAtMs = e.expiresAtMs;
        return copy;
    }

    /** Runs one command; see the class comment for the reply types. */
    public Object command(String... args) {
        String name = args[0].toUpperCase(Locale.ROOT);
        if (readOnly && (name.equals("EVAL") || name.equals("EVALSHA"))) {
            readOnlyRefusals++;
            if (onReadOnlyRefusal != null) {
                onReadOnlyRefusal.run();
            }
            throw new SimError("READONLY You can't write against a read only replica.");
        }
        return switch (name) {
            case "EVAL" -> eval(args[1], args, 2);
            case "EVALSHA" -> {
                String text = scriptsBySha.get(args[1].toLowerCase(Locale.ROOT));
                if (text == null) {
                    noScripts++;
                    throw new SimError("NOSCRIPT No matching script. Please use EVAL.");
                }
                yield eval(text, args, 2);
            }
            case "SCRIPT" -> {
                if (args[1].equalsIgnoreCase("FLUSH")) {
                    scriptsBySha.clear(); // as a restart, a failover to a replica or SCRIPT FLUSH leaves it
                    yield "OK";
                }
                if (!args[1].equalsIgnoreCase("LOAD")) {
                    throw new SimError("ERR unknown SCRIPT subcommand '" + args[1] + "'");
                }
                String sha = sha1(args[2]);
                scriptsBySha.put(sha, args[2]);
                yield sha;
            }
            case "FLUSHALL" -> {
                keys.clear();
                yield new Status("OK");
            }
            default -> call(args);
        };
    }

    private Object eval(String text, String[] args, int at) {
        int count = Integer.parseInt(args[at]);
        List<String> k = List.of(args).subList(at + 1, at + 1 + count);
        List<String> argv = List.of(args).subList(at + 1 + count, args.length);
        scriptsBySha.put(sha1(text), text);
        Object reply = lua.run(text, k, argv);
        if (scriptListener != null) {
            scriptListener.ran(text, k, argv, reply, nowMicros);
        }
        return reply;
    }

    /** Hears every script this server ran, with its reply and the server's time then (a judge's view). */
    public interface ScriptListener {
        void ran(String text, List<String> keys, List<String> argv, Object reply, long nowMicros);
    }

    private ScriptListener scriptListener;

    /** Sets who hears every script run (null: nobody). */
    public void onScript(ScriptListener listener) {
        scriptListener = listener;
    }

    /** A data command, as a script's redis.call runs it. */
    Object call(String... args) {
        String name = args[0].toUpperCase(Locale.ROOT);
        switch (name) {
            case "DEL": {
                long n = 0;
                for (int i = 1; i < args.length; i++) {
                    n += live(args[i]) != null && keys.remove(args[i]) != null ? 1 : 0;
                }
                return n;
            }
            case "EXISTS": {
                long n = 0;
                for (int i = 1; i < args.length; i++) {
                    n += live(args[i]) != null ? 1 : 0;
                }
                return n;
            }
            case "TYPE": {
                Entry e = live(args[1]);
                return new Status(e == null ? "none" : e.value instanceof String ? "string" : e.value instanceof ZSet ? "zset" : "hash");
            }
            case "GET":
                return string(args[1]);
            case "SET":
                return set(args);
            case "INCRBY":
                return incr(args[1], integer(args[2]));
            case "DECRBY":
                return incr(args[1], Math.negateExact(integer(args[2])));
            case "DECR":
                return incr(args[1], -1);
            case "PEXPIRE": {
                long ms = integer(args[2]);
                Entry e = live(args[1]);
                if (e == null) {
                    return 0L;
                }
                if (ms <= 0) {
                    keys.remove(args[1]);
                } else {
                    e.expiresAtMs = nowMs() + ms;
                }
                return 1L;
            }
            case "PTTL": {
                Entry e = live(args[1]);
                return e == null ? -2L : e.expiresAtMs == 0 ? -1L : e.expiresAtMs - nowMs();
            }
            case "HGET": {
                Map<String, String> h = hash(args[1], false);
                return h == null ? null : h.get(args[2]);
            }
            case "HMGET": {
                Map<String, String> h = hash(args[1], false);
                List<Object> values = new ArrayList<>();
                for (int i = 2; i < args.length; i++) {
                    values.add(h == null ? null : h.get(args[i]));
                }
                return values;
            }
            case "HSET": {
                if (args.length < 4 || args.length % 2 != 0) {
                    throw new SimError("ERR wrong number of arguments for 'hset' command");
                }
                Map<String, String> h = hash(args[1], true);
                long added = 0;
                for (int i = 2; i < args.length; i += 2) {
                    added += h.put(args[i], args[i + 1]) == null ? 1 : 0;
                }
                return added;
            }
            case "HDEL": {
                Map<String, String> h = hash(args[1], false);
                if (h == null) {
                    return 0L;
                }
                long n = 0;
                for (int i = 2; i < args.length; i++) {
                    n += h.remove(args[i]) != null ? 1 : 0;
                }
                dropIfEmpty(args[1]);
                return n;
            }
            case "HINCRBY": {
                long by = integer(args[3]);
                Map<String, String> h = hash(args[1], true);
                String old = h.get(args[2]);
                long value;
                try {
                    value = old == null ? 0 : Long.parseLong(old);
                } catch (NumberFormatException e) {
                    dropIfEmpty(args[1]);
                    throw new SimError("ERR hash value is not an integer");
                }
                long sum;
                try {
                    sum = Math.addExact(value, by);
                } catch (ArithmeticException e) {
                    dropIfEmpty(args[1]);
                    throw new SimError("ERR increment or decrement would overflow");
                }
                h.put(args[2], Long.toString(sum));
                return sum;
            }
            case "HEXISTS": {
                Map<String, String> h = hash(args[1], false);
                return h != null && h.containsKey(args[2]) ? 1L : 0L;
            }
            case "HLEN": {
                Map<String, String> h = hash(args[1], false);
                return h == null ? 0L : (long) h.size();
            }
            case "HKEYS": {
                Map<String, String> h = hash(args[1], false);
                return h == null ? List.of() : new ArrayList<Object>(h.keySet());
            }
            case "HGETALL": {
                Map<String, String> h = hash(args[1], false);
                List<Object> all = new ArrayList<>();
                if (h != null) {
                    h.forEach((f, v) -> {
                        all.add(f);
                        all.add(v);
                    });
                }
                return all;
            }
            case "ZADD": {
                if (args.length < 4 || args.length % 2 != 0) {
                    throw new SimError("ERR syntax error");
                }
                List<Double> scores = new ArrayList<>();
                for (int i = 2; i < args.length; i += 2) {
                    scores.add(score(args[i]));
                }
                ZSet z = zset(args[1], true);
                long added = 0;
                for (int i = 2; i < args.length; i += 2) {
                    added += z.add(args[i + 1], scores.get((i - 2) / 2)) ? 1 : 0;
                }
                return added;
            }
            case "ZREM": {
                ZSet z = zset(args[1], false);
                if (z == null) {
                    return 0L;
                }
                long n = 0;
                for (int i = 2; i < args.length; i++) {
                    n += z.remove(args[i]) ? 1 : 0;
                }
                dropIfEmpty(args[1]);
                return n;
            }
            case "ZCARD": {
                ZSet z = zset(args[1], false);
                return z == null ? 0L : (long) z.scores.size();
            }
            case "ZSCORE": {
                ZSet z = zset(args[1], false);
                Double s = z == null ? null : z.scores.get(args[2]);
                return s == null ? null : formatScore(s);
            }
            case "ZRANGE":
                return zrange(args);
            case "ZRANGEBYSCORE":
                return zrangeByScore(args);
            case "TIME":
                return List.<Object>of(Long.toString(Math.floorDiv(nowMicros, 1_000_000)),
                        Long.toString(Math.floorMod(nowMicros, 1_000_000)));
            case "PUBLISH":
            case "SPUBLISH":
                published.add(new Published(args[1], args[2]));
                return receivers.applyAsLong(args[1]);
            case "PUBSUB": {
                if (!args[1].equalsIgnoreCase("NUMSUB")) {
                    throw new SimError("ERR unknown PUBSUB subcommand '" + args[1] + "' (not simulated)");
                }
                List<Object> counts = new ArrayList<>();
                for (int i = 2; i < args.length; i++) {
                    counts.add(args[i]);
                    counts.add(receivers.applyAsLong(args[i]));
                }
                return counts;
            }
            default:
                throw new SimError("ERR unknown command '" + args[0] + "' (not simulated)");
        }
    }

    /**
     * The live entry of a key, removing it first if its TTL has run out: as in Redis, a key is
     * expired once the clock is past its expiry time (at that very millisecond it is alive, with
     * PTTL 0; ScriptDifferentialTest found the difference).
     */
    private Entry live(String key) {
        Entry e = keys.get(key);
        if (e != null && e.expiresAtMs != 0 && e.expiresAtMs < nowMs()) {
            keys.remove(key);
            return null;
        }
        return e;
    }

    private void dropIfEmpty(String key) {
        Entry e = keys.get(key);
        if (e != null && (e.value instanceof Map<?, ?> m && m.isEmpty() || e.value instanceof ZSet z && z.scores.isEmpty())) {
            keys.remove(key);
        }
    }

    private String string(String key) {
        Entry e = live(key);
        if (e == null) {
            return null;
        }
        if (!(e.value instanceof String s)) {
            throw new SimError(WRONGTYPE);
        }
        return s;
    }

    @SuppressWarnings("unchecked")
    private Map<String, String> hash(String key, boolean create) {
        Entry e = live(key);
        if (e == null) {
            if (!create) {
                return null;
            }
            e = new Entry(new LinkedHashMap<String, String>());
            keys.put(key, e);
        }
        if (!(e.value instanceof Map<?, ?>)) {
            throw new SimError(WRONGTYPE);
        }
        return (Map<String, String>) e.value;
    }

    private ZSet zset(String key, boolean create) {
        Entry e = live(key);
        if (e == null) {
            if (!create) {
                return null;
            }
            e = new Entry(new ZSet());
            keys.put(key, e);
        }
        if (!(e.value instanceof ZSet z)) {
            throw new SimError(WRONGTYPE);
        }
        return z;
    }

    private Object set(String[] args) {
        boolean nx = false;
        boolean xx = false;
        long px = 0;
        for (int i = 3; i < args.length; i++) {
            String option = args[i].toUpperCase(Locale.ROOT);
            switch (option) {
                case "NX" -> nx = true;
                case "XX" -> xx = true;
                case "PX", "EX" -> {
                    if (i + 1 >= args.length) {
                        throw new SimError("ERR syntax error");
                    }
                    long n = integer(args[++i]);
                    if (n <= 0) {
                        throw new SimError("ERR invalid expire time in 'set' command");
                    }
                    px = option.equals("EX") ? n * 1000 : n;
                }
                default -> throw new SimError("ERR syntax error");
            }
        }
        Entry e = live(args[1]);
        if (nx && e != null || xx && e == null) {
            return null;
        }
        Entry set = new Entry(args[2]);
        set.expiresAtMs = px > 0 ? nowMs() + px : 0;
        keys.put(args[1], set);
        return new Status("OK");
    }

    private long incr(String key, long by) {
        Entry e = live(key);
        long value;
        if (e == null) {
            value = 0;
        } else if (!(e.value instanceof String s)) {
            throw new SimError(WRONGTYPE);
        } else {
            try {
                value = Long.parseLong(s);
            } catch (NumberFormatException ex) {
                throw new SimError(NOT_INTEGER);
            }
        }
        long sum;
        try {
            sum = Math.addExact(value, by);
        } catch (ArithmeticException ex) {
            throw new SimError("ERR increment or decrement would overflow");
        }
        if (e == null) {
            keys.put(key, new Entry(Long.toString(sum)));
        } else {
            e.value = Long.toString(sum); // INCRBY keeps the TTL
        }
        return sum;
    }

    private Object zrange(String[] args) {
        ZSet z = zset(args[1], false);
        boolean withScores = args.length > 4 && args[4].equalsIgnoreCase("WITHSCORES");
        if (args.length > 5 || args.length == 5 && !withScores) {
            throw new SimError("ERR syntax error (ZRANGE options other than WITHSCORES are not simulated)");
        }
        long start = integer(args[2]);
        long stop = integer(args[3]);
        List<Object> out = new ArrayList<>();
        if (z == null) {
            return out;
        }
        int size = z.scores.size();
        start = start < 0 ? Math.max(0, size + start) : start;
        stop = stop < 0 ? size + stop : Math.min(stop, size - 1);
        int i = 0;
        for (String member : z.order) {
            if (i >= start && i <= stop) {
                out.add(member);
                if (withScores) {
                    out.add(formatScore(z.scores.get(member)));
                }
            }
            i++;
        }
        return out;
    }

    private Object zrangeByScore(String[] args) {
        ZSet z = zset(args[1], false);
        double min = bound(args[2]);
        double max = bound(args[3]);
        boolean minOpen = args[2].startsWith("(");
        boolean maxOpen = args[3].startsWith("(");
        boolean withScores = false;
        long offset = 0;
        long count = -1;
        for (int i = 4; i < args.length; i++) {
            if (args[i].equalsIgnoreCase("WITHSCORES")) {
                withScores = true;
            } else if (args[i].equalsIgnoreCase("LIMIT") && i + 2 < args.length) {
                offset = integer(args[++i]);
                count = integer(args[++i]);
            } else {
                throw new SimError("ERR syntax error");
            }
        }
        List<Object> out = new ArrayList<>();
        if (z == null) {
            return out;
        }
        long skipped = 0;
        for (String member : z.order) {
            double s = z.scores.get(member);
            if ((minOpen ? s <= min : s < min) || (maxOpen ? s >= max : s > max)) {
                continue;
            }
            if (skipped++ < offset) {
                continue;
            }
            if (count >= 0 && out.size() >= (withScores ? 2 * count : count)) {
                break;
            }
            out.add(member);
            if (withScores) {
                out.add(formatScore(s));
            }
        }
        return out;
    }

    private static double bound(String text) {
        String t = text.startsWith("(") ? text.substring(1) : text;
        return switch (t.toLowerCase(Locale.ROOT)) {
            case "-inf" -> Double.NEGATIVE_INFINITY;
            case "+inf", "inf" -> Double.POSITIVE_INFINITY;
            default -> {
                try {
                    yield Double.parseDouble(t);
                } catch (NumberFormatException e) {
                    throw new SimError("ERR min or max is not a float");
                }
            }
        };
    }

    private static long integer(String text) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new SimError(NOT_INTEGER);
        }
    }

    private static double score(String text) {
        try {
            double d = Double.parseDouble(text);
            if (Double.isNaN(d)) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            throw new SimError("ERR value is not a valid float");
        }
    }

    /** A score as Redis writes it: integers without a fraction, others in the shortest form that reads back the same. */
    static String formatScore(double score) {
        if (score == Math.rint(score) && Math.abs(score) < 1e17) {
            return Long.toString((long) score);
        }
        if (Double.isInfinite(score)) {
            return score > 0 ? "inf" : "-inf";
        }
        return Double.toString(score);
    }

    /** The string at {@code key} now, or {@code null} when there is none: a checker's look that runs no command. */
    public String peekString(String key) {
        Entry e = live(key);
        return e != null && e.value instanceof String s ? s : null;
    }

    /** Whether {@code key} exists now: a checker's look that runs no command. */
    public boolean exists(String key) {
        return live(key) != null;
    }

    /** The keys alive now, each with its type, value and expiry time (ms since the epoch, -1: none), for comparing keyspaces. */
    public Map<String, Object[]> dump() {
        Map<String, Object[]> out = new TreeMap<>();
        for (String key : List.copyOf(keys.keySet())) {
            Entry e = live(key);
            if (e == null) {
                continue;
            }
            Object value;
            if (e.value instanceof String s) {
                value = s;
            } else if (e.value instanceof ZSet z) {
                List<String> members = new ArrayList<>();
                for (String m : z.order) {
                    members.add(m);
                    members.add(formatScore(z.scores.get(m)));
                }
                value = members;
            } else {
                value = new TreeMap<>(hash(key, false));
            }
            out.put(key, new Object[] {((Status) call("TYPE", key)).text(), value, e.expiresAtMs == 0 ? -1L : e.expiresAtMs});
        }
        return out;
    }

    static String sha1(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.ISO_8859_1)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
