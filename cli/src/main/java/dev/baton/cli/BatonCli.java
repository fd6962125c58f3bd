package dev.baton.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;

/**
 * The {@code baton} command: a batch-workers demo that shows what Baton is for, and operator
 * commands to look at and repair synchronizers in a Redis.
 */
@Command(name = "baton", mixinStandardHelpOptions = true, version = "baton 0.1.0",
        description = "Distributed synchronizers on Redis: a demo and operator commands.",
        subcommands = {DemoCommand.class, InspectCommand.class, ListCommand.class, ForceUnlockCommand.class,
                WatchCommand.class, CommandLine.HelpCommand.class})
public final class BatonCli implements Runnable {
    /** Exit code when Redis cannot be reached. */
    static final int EXIT_UNREACHABLE = 3;

    final InputStream in;

    BatonCli(InputStream in) {
        this.in = in;
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(new CommandLine(this), "a command is required: demo, inspect, list, force-unlock, watch");
    }

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err, System.in));
    }

    /** Runs the command line with the given streams; returns the exit code. */
    static int run(String[] args, PrintStream out, PrintStream err, InputStream in) {
        CommandLine cli = new CommandLine(new BatonCli(in));
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        cli.setExecutionExceptionHandler((e, commandLine, parsed) -> {
            commandLine.getErr().println("error: " + e.getMessage());
            return e instanceof dev.baton.RedisUnavailableException ? EXIT_UNREACHABLE : 1;
        });
        return cli.execute(args);
    }
}
