package dev.baton.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One redis-server process on a free loopback port (never 6379), without persistence, for a
 * test. It can be killed, paused (SIGSTOP), resumed (SIGCONT) and restarted empty on the same
 * port; {@link #close()} kills it and deletes its directory, and a JVM shutdown hook kills it
 * if a test never got that far.
 */
public final class RedisServer implements AutoCloseable {
    private static final String HOST = "127.0.0.1";

    private final RedisBinary binary;
    /** The wall clock the server reads, or null for the machine's. */
    private final ServerClock clock;
    private final boolean sentinel;
    /** Config lines it starts with; the {@code replicaof} line follows the role it last had (see {@link #restart()}). */
    private volatile List<String> extraConfig;
    private final Path dir;
    private final int port;
    private Process process;
    private boolean closed;

    private RedisServer(RedisBinary binary, ServerClock clock, boolean sentinel, List<String> extraConfig, Path dir, int port) {
        this.binary = binary;
        this.clock = clock;
        this.sentinel = sentinel;
        this.extraConfig = extraConfig;
        this.dir = dir;
        this.port = port;
    }

    /** Starts a standalone server. */
    public static RedisServer start() {
        return start(new String[0]);
    }

    /**
     * Starts a server with extra configuration, each element one directive with its arguments,
     * e.g. {@code "requirepass secret"} or {@code "cluster-enabled yes"}.
     */
    public static RedisServer start(String... extraConfigLines) {
        return start(null, false, List.of(extraConfigLines));
    }

    /**
     * Starts a standalone server whose wall clock ({@code TIME}, key expiry, every time a script
     * reads) is {@code clock}, with extra configuration as {@link #start(String...)}; it keeps
     * that clock across {@link #restart()}.
     *
     * @throws IllegalStateException when {@link ServerClock#unavailable()} is not empty
     */
    public static RedisServer start(ServerClock clock, String... extraConfigLines) {
        java.util.Objects.requireNonNull(clock, "clock");
        return start(clock, false, List.of(extraConfigLines));
    }

    /** Starts a Sentinel (the server binary with {@code --sentinel}) with these config lines. */
    static RedisServer startSentinel(List<String> configLines) {
        return start(null, true, configLines);
    }

    private static RedisServer start(ServerClock clock, boolean sentinel, List<String> extraConfigLines) {
        RedisBinary binary = RedisBinary.resolve();
        for (int attempt = 1; ; attempt++) {
            int port = freePort();
            Path dir;
            try {
                dir = Files.createTempDirectory("baton-redis-" + port + "-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            RedisServer server = new RedisServer(binary, clock, sentinel, List.copyOf(extraConfigLines), dir, port);
            try {
                server.launch();
                return server;
            } catch (RuntimeException e) {
                server.close();
                if (attempt >= 5) {
                    throw e;
                }
            }
        }
    }

    private static int freePort() {
        for (int i = 0; i < 50; i++) {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
                int port = socket.getLocalPort();
                if (port != 6379) {
                    return port;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("no free loopback port", e);
            }
        }
        throw new IllegalStateException("no free loopback port");
    }

    private synchronized void launch() {
        if (sentinel) {
            launchSentinel();
            return;
        }
        List<String> command = new ArrayList<>(List.of(binary.server().toString(),
                "--port", Integer.toString(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--dir", dir.toString(), "--protected-mode", "no", "--daemonize", "no",
                "--logfile", logFile().toString()));
        for (String line : extraConfig) {
            String[] parts = line.trim().split("\\s+");
            command.add("--" + parts[0]);
            for (int i = 1; i < parts.length; i++) {
                command.add(parts[i]);
            }
        }
        spawn(command);
    }

    /** Starts the process, registers it for clean-up and waits for its PING. */
    private void spawn(List<String> command) {
        try {
            ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("stdout.txt").toFile());
            if (clock != null) {
                builder.environment().putAll(clock.environment());
            }
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + binary.server(), e);
        }
        ProcessRegistry.started(process);
        try {
            Files.writeString(dir.resolve("jvm.pid"), Long.toString(ProcessHandle.current().pid()));
            Files.writeString(dir.resolve("redis.pid"), Long.toString(process.pid()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot record the server's pid in " + dir, e);
        }
        awaitPing();
    }

    private void launchSentinel() {
        // Sentinel rewrites its config file, so it gets a writable file of its own.
        List<String> config = new ArrayList<>(List.of("port " + port, "bind " + HOST, "protected-mode no",
                "daemonize no", "dir " + dir, "logfile " + logFile()));
        config.addAll(extraConfig);
        Path file = dir.resolve("sentinel.conf");
        try {
            Files.write(file, config);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        spawn(List.of(binary.server().toString(), file.toString(), "--sentinel"));
    }

    private void awaitPing() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        RuntimeException last = null;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server on port " + port + " exited: " + logTail());
            }
            try (RespClient client = new RespClient(HOST, port, 500)) {
                if ("PONG".equals(client.call("PING"))) {
                    return;
                }
            } catch (RuntimeException e) {
                last = e;
            }
            sleep(10);
        }
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING within 10 s: " + logTail(), last);
    }

    /** The host, always {@code 127.0.0.1}. */
    public String host() {
        return HOST;
    }

    /** The port. */
    public int port() {
        return port;
    }

    /** {@code redis://127.0.0.1:<port>}. */
    public String uri() {
        return "redis://" + HOST + ":" + port;
    }

    /** The binary this server runs. */
    public RedisBinary binary() {
        return binary;
    }

    /** The server's process id. */
    public synchronized long pid() {
        return process.pid();
    }

    /** Whether the process is running. */
    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** The server's log file. */
    public Path logFile() {
        return dir.resolve("redis.log");
    }

    /** The server's working directory (config files, node tables). */
    public Path dir() {
        return dir;
    }

    /**
     * Writes {@code key} and then WAITs, on that same connection, for {@code replicas} replicas
     * to acknowledge it, at most {@code timeoutMs}; returns how many did. Replication is one
     * ordered stream, so once they acknowledge this write they have every write the server took
     * before it. (A WAIT on a connection that wrote nothing returns at once with the count of
     * connected replicas, whatever they have received.) In a cluster, {@code key} must be in a
     * slot this node serves.
     */
    public long writeAndWaitForReplicas(String key, int replicas, long timeoutMs) {
        try (RespClient client = new RespClient(HOST, port)) {
            client.call("SET", key, "replicated");
            return (Long) client.call("WAIT", Integer.toString(replicas), Long.toString(timeoutMs));
        }
    }

    /** Sends one command on a fresh connection and returns the reply (see {@link RespClient#call}). */
    public Object command(String... args) {
        try (RespClient client = new RespClient(HOST, port)) {
            return client.call(args);
        }
    }

    /** How many clients are subscribed to a classic pub/sub channel ({@code PUBSUB NUMSUB}). */
    public long subscribers(String channel) {
        return (Long) ((java.util.List<?>) command("PUBSUB", "NUMSUB", channel)).get(1);
    }

    /** Waits, at most 10 s, until exactly {@code expected} clients are subscribed to {@code channel}. */
    public void awaitSubscribers(String channel, long expected) {
        awaitSubscribers(channel, expected, java.time.Duration.ofSeconds(10));
    }

    /**
     * Waits at most {@code within} until exactly {@code expected} clients are subscribed to
     * {@code channel}; for checking a promised bound, not only "eventually".
     */
    public void awaitSubscribers(String channel, long expected, java.time.Duration within) {
        Await.until(within,
                () -> channel + " to have " + expected + " subscribers (has " + subscribers(channel) + ")",
                () -> subscribers(channel) == expected);
    }

    /** Waits, at most 10 s, until some client is subscribed to {@code channel}. */
    public void awaitAnySubscriber(String channel) {
        Await.until(java.time.Duration.ofSeconds(10), () -> "a subscriber on " + channel, () -> subscribers(channel) > 0);
    }

    /**
     * How many times Redis ran {@code command} since start or the last {@code CONFIG RESETSTAT}
     * ({@code INFO commandstats}; commands run inside scripts count too).
     */
    public long calls(String command) {
        String prefix = "cmdstat_" + command.toLowerCase(java.util.Locale.ROOT) + ":";
        for (String line : ((String) command("INFO", "commandstats")).split("\r?\n")) {
            if (line.startsWith(prefix)) {
                return Long.parseLong(line.replaceAll("^[^:]*:calls=(\\d+),.*", "$1"));
            }
        }
        return 0;
    }

    /**
     * Waits, at most 10 s, until Redis has run {@code command} at least {@code atLeast} times
     * (as {@link #calls} counts them): the signal that a waiter's read has reached the server,
     * where a subscriber count alone says only that it subscribed.
     */
    public void awaitCalls(String command, long atLeast) {
        Await.until(java.time.Duration.ofSeconds(10),
                () -> command + " run at least " + atLeast + " times (ran " + calls(command) + ")",
                () -> calls(command) >= atLeast);
    }

    /** SIGKILL, waiting for the process to exit. */
    public synchronized void kill() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (process != null) {
            ProcessRegistry.stopped(process);
        }
    }

    /** SIGSTOP: the server stops answering but keeps its connections and data. */
    public synchronized void pause() {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause()}. */
    public synchronized void resume() {
        signal("CONT");
    }

    /**
     * Kills the server if running and starts it again on the same port: with no data, unless it
     * was started with {@code appendonly yes} (then it reloads its AOF).
     */
    public synchronized void restart() {
        keepRole();
        kill();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                launch();
                return;
            } catch (RuntimeException e) {
                kill();
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                sleep(50);
            }
        }
    }

    /**
     * SIGKILLs the server and starts it again on the same port after deleting its persistence
     * files (AOF and RDB): a crash that loses the data even with {@code appendonly yes}.
     */
    public synchronized void restartWithoutData() {
        keepRole();
        kill();
        try (var files = Files.list(dir)) {
            for (Path file : files.toList()) {
                String name = file.getFileName().toString();
                if (name.startsWith("appendonly") || name.endsWith(".rdb")) {
                    if (Files.isDirectory(file)) {
                        try (var inner = Files.list(file)) {
                            for (Path f : inner.toList()) {
                                Files.delete(f);
                            }
                        }
                    }
                    Files.delete(file);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the data files in " + dir, e);
        }
        restart();
    }

    /**
     * Makes the next start keep the role the server has now, as a server whose config file
     * Sentinel rewrote would: a replica that Sentinel promoted comes back as a master, not as a
     * replica of the master it replaced (which then fails every write with READONLY). A server
     * that does not answer keeps the role it was started with.
     */
    private void keepRole() {
        if (sentinel || process == null || !process.isAlive()) {
            return;
        }
        Object role;
        try (RespClient client = new RespClient(HOST, port, 500)) {
            role = client.call("ROLE");
        } catch (RuntimeException e) {
            return;
        }
        if (!(role instanceof List<?> reply) || reply.isEmpty()) {
            return;
        }
        List<String> lines = new ArrayList<>();
        for (String line : extraConfig) {
            if (!line.trim().toLowerCase(java.util.Locale.ROOT).startsWith("replicaof ")) {
                lines.add(line);
            }
        }
        if ("slave".equals(reply.get(0)) && reply.size() > 2) {
            lines.add("replicaof " + reply.get(1) + " " + reply.get(2));
        }
        extraConfig = List.copyOf(lines);
    }

    private void signal(String name) {
        try {
            Process p = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).start();
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private String logTail() {
        try {
            List<String> lines = new ArrayList<>();
            for (Path p : List.of(logFile(), dir.resolve("stdout.txt"))) {
                if (Files.exists(p)) {
                    lines.addAll(Files.readAllLines(p));
                }
            }
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Kills the server (resuming it first if paused) and deletes its directory; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (process != null && process.isAlive()) {
            try {
                signal("CONT");
            } catch (RuntimeException ignored) {
                // it is being killed anyway
            }
        }
        kill();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a leftover temp directory is harmless
        }
    }

    @Override
    public String toString() {
        return "RedisServer{" + uri() + ", " + binary.version() + "}";
    }
}
