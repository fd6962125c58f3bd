package dev.baton.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.util.Map;
import java.util.concurrent.Callable;

/** {@code baton inspect NAME}: what a key is, who holds it, who waits. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Show what NAME is (lock, fair lock, read-write lock, semaphore, latch, rate limiter), its holders, TTL and waiters.")
final class InspectCommand implements Callable<Integer> {
    @Mixin
    RedisOption redis;

    @Parameters(paramLabel = "NAME", description = "The synchronizer's name (its Redis key).")
    String name;

    @Option(names = "--json", description = "Print JSON for scripts.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        try (RedisOption.Connection c = redis.connect()) {
            Map<String, Object> info = Inspector.inspect(c, name);
            spec.commandLine().getOut().print(json ? Json.of(info) + System.lineSeparator() : Inspector.render(info));
            spec.commandLine().getOut().flush();
            return "absent".equals(info.get("kind")) ? 1 : 0;
        }
    }
}
