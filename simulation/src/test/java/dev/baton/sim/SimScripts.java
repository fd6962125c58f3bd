package dev.baton.sim;

import org.luaj.vm2.Globals;
import org.luaj.vm2.LuaError;
import org.luaj.vm2.LuaString;
import org.luaj.vm2.LuaTable;
import org.luaj.vm2.LuaValue;
import org.luaj.vm2.Varargs;
import org.luaj.vm2.lib.TwoArgFunction;
import org.luaj.vm2.lib.VarArgFunction;
import org.luaj.vm2.lib.jse.JsePlatform;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/*
 * Runs Baton's scripts in LuaJ the way Redis runs them: KEYS and ARGV as global tables, redis.call
 * and redis.pcall on the simulated keyspace, redis.error_reply and redis.status_reply, and
 * Redis's conversions both ways (its "Conversion between Lua and Redis data types"):
 *
 *   Redis -> Lua: integer -> number, bulk -> string, nil bulk/array -> false, array -> table,
 *                 status -> {ok = text}, error -> {err = text} (redis.pcall) or a raised error
 *                 (redis.call, which ends the script with that error)
 *   Lua -> Redis: number -> integer (truncated), string -> bulk, table -> array (up to the first
 *                 nil), {ok = ...} -> status, {err = ...} -> error, true -> 1, false/nil -> nil
 *   a number given to redis.call as an argument -> its decimal text: integers below 1e17 with
 *                 all their digits (Redis writes "%.17g"), others as "%.17g" would
 *
 * Where LuaJ (Lua 5.2) differs from Redis's Lua 5.1 in what the scripts use, this class closes
 * the gap, and ScriptDifferentialTest holds the result to a real redis-server:
 *   - `unpack` is a global in 5.1 and only `table.unpack` in 5.2: it is defined here.
 *   - string.format's %d is 64-bit in Redis's Lua and 32-bit in LuaJ: %d is formatted here.
 *   - LuaJ offers more libraries than Redis's sandbox (io, os, ...); the scripts use none of
 *     them, and the differential test would show a script that did (Redis refuses it).
 *
 * One interpreter per simulated Redis; each script text is compiled once.
 */
final class SimScripts {
    private final SimRedis redis;
    private final Globals globals = JsePlatform.standardGlobals();
    private final Map<String, LuaValue> compiled = new HashMap<>();

    SimScripts(SimRedis redis) {
        this.redis = redis;
        LuaTable api = new LuaTable();
        api.set("call", new VarArgFunction() {
            @Override
            public Varargs invoke(Varargs args) {
                try {
                    return toLuaValue(command(args));
                } catch (SimRedis.SimError e) {
                    throw new ScriptAborted(e.getMessage());
                }
            }
        });
        api.set("pcall", new VarArgFunction() {
            @Override
            public Varargs invoke(Varargs args) {
                Object reply;
                try {
                    reply = command(args);
                } catch (SimRedis.SimError e) {
                    return errorTable(e.getMessage());
                }
                return toLuaValue(reply);
            }
        });
        api.set("error_reply", new TwoArgFunction() {
            @Override
            public LuaValue call(LuaValue message, LuaValue unused) {
                return errorTable(message.checkjstring());
            }
        });
        api.set("status_reply", new TwoArgFunction() {
            @Override
            public LuaValue call(LuaValue message, LuaValue unused) {
                LuaTable t = new LuaTable();
                t.set("ok", message);
                return t;
            }
        });
        globals.set("redis", api);
        globals.set("unpack", globals.get("table").get("unpack"));
        LuaValue format = globals.get("string").get("format");
        globals.get("string").set("format", new VarArgFunction() {
            @Override
            public Varargs invoke(Varargs args) {
                String wide = formatWide(args);
                return wide != null ? LuaValue.valueOf(wide) : format.invoke(args);
            }
        });
    }

    /**
     * string.format for a format whose only conversions are %d / %i (what the scripts use), with
     * Lua 5.1's 64-bit integer (LuaJ's %d is 32-bit: a ticket or a fencing token in microseconds
     * came out negative; found by ScriptDifferentialTest); null for any other format.
     */
    private static String formatWide(Varargs args) {
        String f = args.checkjstring(1);
        StringBuilder out = new StringBuilder();
        int arg = 2;
        for (int i = 0; i < f.length(); i++) {
            char ch = f.charAt(i);
            if (ch != '%') {
                out.append(ch);
                continue;
            }
            char spec = i + 1 < f.length() ? f.charAt(++i) : ' ';
            if (spec == '%') {
                out.append('%');
            } else if (spec == 'd' || spec == 'i') {
                out.append((long) args.checkdouble(arg++));
            } else {
                return null;
            }
        }
        return out.toString();
    }

    /** Runs {@code text} with these KEYS and ARGV; the reply as SimRedis gives replies, an error thrown as SimError. */
    Object run(String text, List<String> keys, List<String> argv) {
        LuaValue chunk = compiled.computeIfAbsent(text, t -> globals.load(t, "@user_script"));
        globals.set("KEYS", table(keys));
        globals.set("ARGV", table(argv));
        LuaValue result;
        try {
            result = chunk.call();
        } catch (RuntimeException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof ScriptAborted aborted) {
                    throw new SimRedis.SimError(aborted.getMessage());
                }
            }
            if (e instanceof LuaError) {
                throw new SimRedis.SimError("ERR user_script: " + e.getMessage());
            }
            throw e;
        }
        return toRedis(result);
    }

    /** A redis.call that got an error reply: it ends the script with that error. */
    private static final class ScriptAborted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ScriptAborted(String message) {
            super(message, null, false, false);
        }
    }

    private Object command(Varargs args) {
        if (args.narg() == 0) {
            throw new LuaError("Please specify at least one argument for this redis lib call");
        }
        String[] command = new String[args.narg()];
        for (int i = 1; i <= args.narg(); i++) {
            LuaValue a = args.arg(i);
            if (a.type() == LuaValue.TNUMBER) {
                command[i - 1] = numberText(a.todouble());
            } else if (a.type() == LuaValue.TSTRING) {
                command[i - 1] = bytes(a.checkstring());
            } else {
                throw new LuaError("Lua redis lib command arguments must be strings or integers");
            }
        }
        return redis.call(command);
    }

    private LuaValue toLuaValue(Object reply) {
        if (reply == null) {
            return LuaValue.FALSE;
        }
        if (reply instanceof Long n) {
            return LuaValue.valueOf((double) n);
        }
        if (reply instanceof String s) {
            return LuaString.valueOf(s.getBytes(StandardCharsets.ISO_8859_1));
        }
        if (reply instanceof SimRedis.Status status) {
            LuaTable t = new LuaTable();
            t.set("ok", LuaValue.valueOf(status.text()));
            return t;
        }
        if (reply instanceof List<?> items) {
            LuaTable t = new LuaTable();
            for (int i = 0; i < items.size(); i++) {
                t.set(i + 1, toLuaValue(items.get(i)));
            }
            return t;
        }
        throw new IllegalStateException("no Lua form for " + reply);
    }

    private static LuaTable errorTable(String message) {
        LuaTable t = new LuaTable();
        t.set("err", LuaValue.valueOf(message));
        return t;
    }

    private Object toRedis(LuaValue v) {
        switch (v.type()) {
            case LuaValue.TNIL:
                return null;
            case LuaValue.TBOOLEAN:
                return v.toboolean() ? 1L : null;
            case LuaValue.TNUMBER:
                return (long) v.todouble();
            case LuaValue.TSTRING:
                return bytes(v.checkstring());
            case LuaValue.TTABLE: {
                LuaValue err = v.get("err");
                if (err.isstring()) {
                    throw new SimRedis.SimError(bytes(err.checkstring()));
                }
                LuaValue ok = v.get("ok");
                if (ok.isstring()) {
                    return new SimRedis.Status(bytes(ok.checkstring()));
                }
                List<Object> items = new ArrayList<>();
                for (int i = 1; !v.get(i).isnil(); i++) {
                    items.add(toRedis(v.get(i)));
                }
                return items;
            }
            default:
                return null;
        }
    }

    private static LuaTable table(List<String> values) {
        LuaTable t = new LuaTable();
        for (int i = 0; i < values.size(); i++) {
            t.set(i + 1, LuaString.valueOf(values.get(i).getBytes(StandardCharsets.ISO_8859_1)));
        }
        return t;
    }

    private static String bytes(LuaString s) {
        byte[] b = new byte[s.rawlen()];
        s.copyInto(0, b, 0, b.length);
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    /** A Lua number as Redis writes it into a command: "%.17g" (integers below 1e17 in full). */
    static String numberText(double d) {
        if (d == Math.rint(d) && Math.abs(d) < 1e17) {
            return Long.toString((long) d);
        }
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        String g = String.format(java.util.Locale.ROOT, "%.17g", d);
        // C's %g drops trailing zeros of the fraction; Java's keeps them.
        if (g.contains("e")) {
            String mantissa = g.substring(0, g.indexOf('e'));
            String exponent = g.substring(g.indexOf('e'));
            return stripZeros(mantissa) + exponent;
        }
        return stripZeros(g);
    }

    private static String stripZeros(String s) {
        if (!s.contains(".")) {
            return s;
        }
        s = s.replaceAll("0+$", "");
        return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
    }
}
