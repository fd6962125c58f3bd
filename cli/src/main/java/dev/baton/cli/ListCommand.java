package dev.baton.cli;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code baton list [PATTERN]}: keys matching a pattern, found with SCAN (never KEYS). */
@Command(name = "list", mixinStandardHelpOptions = true,
        description = "List keys matching PATTERN (SCAN, never KEYS) with their type and TTL.")
final class ListCommand implements Callable<Integer> {
    @Mixin
    RedisOption redis;

    @Parameters(paramLabel = "PATTERN", defaultValue = "*", description = "A glob, e.g. 'orders:*' (default: every key).")
    String pattern;

    @Option(names = "--limit", defaultValue = "100", description = "At most this many keys (default: ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--json", description = "Print JSON for scripts.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        if (limit < 1) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--limit must be at least 1, was " + limit);
        }
        try (RedisOption.Connection c = redis.connect()) {
            RedisClusterCommands<String, String> sync = c.sync();
            List<Object> keys = new ArrayList<>();
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page = sync.scan(cursor, ScanArgs.Builder.matches(pattern).limit(200));
                for (String key : page.getKeys()) {
                    if (keys.size() < limit) {
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("key", key);
                        row.put("type", sync.type(key));
                        row.put("ttlMs", sync.pttl(key));
                        keys.add(row);
                    }
                }
                cursor = page;
            } while (!cursor.isFinished() && keys.size() < limit);
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                out.println(Json.of(keys));
            } else {
                for (Object row : keys) {
                    Map<?, ?> r = (Map<?, ?>) row;
                    out.printf("%-8s %10s  %s%n", r.get("type"), r.get("ttlMs"), r.get("key"));
                }
                out.printf("%d key(s)%n", keys.size());
            }
            out.flush();
            return 0;
        }
    }
}
