package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code baton force-unlock NAME}: delete a lock whoever holds it (asks first). */
@Command(name = "force-unlock", mixinStandardHelpOptions = true,
        description = "Release lock NAME whoever holds it and wake its waiters. Asks for confirmation unless --yes.")
final class ForceUnlockCommand implements Callable<Integer> {
    @Mixin
    RedisOption redis;

    @Parameters(paramLabel = "NAME", description = "The lock's name.")
    String name;

    @Option(names = {"-y", "--yes"}, description = "Do not ask for confirmation.")
    boolean yes;

    @ParentCommand
    BatonCli parent;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        String kind;
        BatonOptions options;
        try (RedisOption.Connection c = redis.connect()) {
            options = redis.batonOptions(c);
            Map<String, Object> info = Inspector.inspect(c, name);
            kind = String.valueOf(info.get("kind"));
            if (!kind.equals("lock") && !kind.equals("fair lock")) {
                spec.commandLine().getErr().println("'" + name + "' is " + kind + ", not a lock: nothing done");
                return 1;
            }
            out.print(Inspector.render(info));
        }
        if (!yes) {
            out.print("Force-unlock " + kind + " '" + name + "'? Its holders will lose it. [y/N] ");
            out.flush();
            String answer = new BufferedReader(new InputStreamReader(parent.in, StandardCharsets.UTF_8)).readLine();
            if (answer == null || !answer.trim().equalsIgnoreCase("y")) {
                out.println("Not unlocked.");
                return 1;
            }
        }
        try (Baton baton = Baton.create(options)) {
            boolean released = kind.equals("fair lock") ? baton.fairLock(name).forceUnlock() : baton.lock(name).forceUnlock();
            out.println(released ? "Unlocked '" + name + "'." : "'" + name + "' was no longer held.");
            return 0;
        }
    }
}
