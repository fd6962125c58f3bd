package dev.baton.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.time.LocalTime;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.Callable;

/** {@code baton watch NAME}: inspect again every interval. */
@Command(name = "watch", mixinStandardHelpOptions = true,
        description = "Show NAME's state every interval (Ctrl-C to stop, or --count).")
final class WatchCommand implements Callable<Integer> {
    @Mixin
    RedisOption redis;

    @Parameters(paramLabel = "NAME", description = "The synchronizer's name.")
    String name;

    @Option(names = "--interval-ms", defaultValue = "1000", description = "Milliseconds between views (default: ${DEFAULT-VALUE}).")
    long intervalMs;

    @Option(names = "--count", defaultValue = "0", description = "Stop after this many views (default: 0 = until Ctrl-C).")
    int count;

    @Option(names = "--json", description = "One JSON object per line.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        if (intervalMs < 100) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--interval-ms must be at least 100");
        }
        PrintWriter out = spec.commandLine().getOut();
        try (RedisOption.Connection c = redis.connect()) {
            for (int i = 0; count == 0 || i < count; i++) {
                if (i > 0) {
                    Thread.sleep(intervalMs); // the pacing of a live view, not synchronization
                }
                var info = Inspector.inspect(c, name);
                if (json) {
                    out.println(Json.of(info));
                } else {
                    out.println("--- " + LocalTime.now().truncatedTo(ChronoUnit.SECONDS));
                    out.print(Inspector.render(info));
                }
                out.flush();
            }
        }
        return 0;
    }
}
