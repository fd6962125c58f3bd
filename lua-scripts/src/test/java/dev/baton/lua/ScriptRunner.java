package dev.baton.lua;

import dev.baton.testkit.RedisErrorReply;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * Runs a catalog script as the client sends it: EVALSHA (after a NOSCRIPT, SCRIPT LOAD and once
 * more), its keys, its arguments, and the publish command the client adds as every script's last
 * ARGV. {@code send} is a connection's raw call (a server's {@code command}, a
 * {@code RespClient}'s {@code call}).
 */
final class ScriptRunner {
    private ScriptRunner() {
    }

    static Object run(Function<String[], Object> send, Script script, List<String> keys, String... args) {
        List<String> command = new ArrayList<>(List.of("EVALSHA", script.sha1(), Integer.toString(keys.size())));
        command.addAll(keys);
        command.addAll(Arrays.asList(args));
        command.add("publish");
        String[] call = command.toArray(String[]::new);
        try {
            return send.apply(call);
        } catch (RedisErrorReply e) {
            if (!String.valueOf(e.getMessage()).contains("NOSCRIPT")) {
                throw e;
            }
            send.apply(new String[] {"SCRIPT", "LOAD", script.text()});
            return send.apply(call);
        }
    }
}
