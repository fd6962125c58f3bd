package dev.baton.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A wall clock a test sets, for a server it starts with {@link RedisServer#start(ServerClock, String...)}:
 * the server's {@code TIME}, the time its keys expire by and every deadline a script computes
 * from {@code TIME} read what {@link #set} last wrote, and stand still in between, so a test can
 * compare them exactly and let a key's TTL run out to the microsecond. The monotonic clock the
 * server's event loop runs on is left alone.
 *
 * <p>It works by preloading a small library ({@code server-clock.c} beside this class) into the
 * server process, compiled once with the machine's C compiler into
 * {@code ~/.cache/baton/server-clock/}. Where there is no compiler, or the server binary cannot
 * take a preloaded library, {@link #unavailable()} says why, and a test that needs the clock says
 * so in its output rather than passing silently.
 */
public final class ServerClock implements AutoCloseable {
    private static final String SOURCE = "server-clock.c";
    private static volatile Object library; // the compiled library's Path, or why there is none (String)

    private final Path file;
    private final FileChannel channel;
    private final MappedByteBuffer micros;

    private ServerClock(Path file, FileChannel channel, MappedByteBuffer micros) {
        this.file = file;
        this.channel = channel;
        this.micros = micros;
    }

    /** Why no server clock can be had on this machine, or empty when it can. */
    public static Optional<String> unavailable() {
        Object lib = library();
        return lib instanceof String why ? Optional.of(why) : Optional.empty();
    }

    /**
     * A clock standing at {@code epochMicros} (microseconds since the epoch, above 0).
     *
     * @throws IllegalStateException when {@link #unavailable()} is not empty, with its reason
     */
    public static ServerClock at(long epochMicros) {
        if (epochMicros <= 0) {
            throw new IllegalArgumentException("a server clock stands after the epoch, not at " + epochMicros + " µs");
        }
        Object lib = library();
        if (lib instanceof String why) {
            throw new IllegalStateException("no server clock: " + why);
        }
        try {
            Path file = Files.createTempFile("baton-server-clock-", ".bin");
            FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
            MappedByteBuffer buffer = channel.map(FileChannel.MapMode.READ_WRITE, 0, 8);
            buffer.order(ByteOrder.LITTLE_ENDIAN);
            ServerClock clock = new ServerClock(file, channel, buffer);
            clock.set(epochMicros);
            return clock;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make a server clock's file", e);
        }
    }

    /** Where the clock stands, in microseconds since the epoch. */
    public synchronized long micros() {
        return micros.getLong(0);
    }

    /** Sets the clock; every server started with it reads this time from its next reading on. */
    public synchronized void set(long epochMicros) {
        if (epochMicros <= 0) {
            throw new IllegalArgumentException("a server clock stands after the epoch, not at " + epochMicros + " µs");
        }
        micros.putLong(0, epochMicros);
    }

    /** Moves the clock forward (or back, if negative) by {@code micros} microseconds. */
    public synchronized void advance(long delta, TimeUnit unit) {
        set(micros() + unit.toMicros(delta));
    }

    /** What a server process started with this clock gets in its environment. */
    Map<String, String> environment() {
        return Map.of("LD_PRELOAD", library().toString(), "BATON_CLOCK_FILE", file.toString());
    }

    @Override
    public void close() {
        try {
            channel.close();
            Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Object library() {
        Object lib = library;
        if (lib == null) {
            synchronized (ServerClock.class) {
                lib = library;
                if (lib == null) {
                    lib = compile();
                    library = lib;
                }
            }
        }
        return lib;
    }

    /** The library compiled from {@value #SOURCE} (once per version of it), or why it could not be. */
    private static Object compile() {
        if (!System.getProperty("os.name", "").toLowerCase().contains("linux")) {
            return "a preloaded library needs Linux, this is " + System.getProperty("os.name");
        }
        byte[] source;
        try (InputStream in = ServerClock.class.getResourceAsStream(SOURCE)) {
            if (in == null) {
                return SOURCE + " is missing from the testkit";
            }
            source = in.readAllBytes();
        } catch (IOException e) {
            return "cannot read " + SOURCE + ": " + e;
        }
        String version;
        try {
            version = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(source)).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        Path dir = Path.of(System.getProperty("user.home"), ".cache", "baton", "server-clock", version);
        Path lib = dir.resolve("libbaton-server-clock.so");
        if (Files.isRegularFile(lib)) {
            return lib;
        }
        try {
            Files.createDirectories(dir);
            Path src = Files.createTempFile(dir, "server-clock-", ".c");
            Path out = Files.createTempFile(dir, "server-clock-", ".so");
            Files.write(src, source);
            Path log = Files.createTempFile(dir, "cc-", ".log");
            Process cc;
            try {
                cc = new ProcessBuilder(List.of("cc", "-shared", "-fPIC", "-O2", "-o", out.toString(), src.toString()))
                        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            } catch (IOException e) {
                return "no C compiler (cc) on PATH to build the server clock's preloaded library";
            }
            if (!cc.waitFor(60, TimeUnit.SECONDS)) {
                cc.destroyForcibly();
                return "cc did not build " + SOURCE + " within 60 s";
            }
            if (cc.exitValue() != 0) {
                return "cc could not build " + SOURCE + ": " + Files.readString(log).strip();
            }
            Files.move(out, lib, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            Files.deleteIfExists(src);
            Files.deleteIfExists(log);
            return lib;
        } catch (IOException e) {
            return "cannot build the server clock's library in " + dir + ": " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while building the server clock's library";
        }
    }
}
