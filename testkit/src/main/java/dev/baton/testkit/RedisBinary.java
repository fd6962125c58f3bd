package dev.baton.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The redis-server binary the fixture runs. Resolution order: the system property
 * {@code baton.redis.binary} (a path, or {@code embedded}); {@code redis-server} on
 * {@code PATH}; the Redis 6.2 binary shipped inside the embedded-redis 1.4.3 jar, extracted
 * once per JVM. Testcontainers would come next, but no Docker engine exists where this
 * project's tests run, so the resolution fails with a message saying what was tried.
 */
public final class RedisBinary {
    private static final String EMBEDDED_JAR = "embedded-redis 1.4.3 jar";
    private static volatile RedisBinary resolved;
    private static volatile RedisBinary embedded;

    private final Path server;
    private final String product;
    private final String version;
    private final String source;

    private RedisBinary(Path server, String source) {
        this.server = server;
        this.source = source;
        String[] productAndVersion = readVersion(server);
        this.product = productAndVersion[0];
        this.version = productAndVersion[1];
    }

    /** The binary every fixture in this JVM uses; prints which one, once. */
    public static RedisBinary resolve() {
        RedisBinary r = resolved;
        if (r == null) {
            synchronized (RedisBinary.class) {
                r = resolved;
                if (r == null) {
                    r = find();
                    System.out.println("[baton-testkit] " + r.product + " " + r.version + " from " + r.source + " (" + r.server + ")"
                            + (r.majorVersion() < 7 ? "; before 7 there is no sharded pub/sub, so cluster tests run "
                            + "classic pub/sub and say so" : ""));
                    resolved = r;
                }
            }
        }
        return r;
    }

    private static RedisBinary find() {
        String forced = System.getProperty("baton.redis.binary");
        if (forced != null && !forced.isBlank()) {
            return forced.equals("embedded") ? embedded() : new RedisBinary(Path.of(forced), "system property baton.redis.binary");
        }
        Optional<Path> onPath = onPath("redis-server");
        if (onPath.isPresent()) {
            return new RedisBinary(onPath.get(), "PATH");
        }
        try {
            return embedded();
        } catch (RuntimeException e) {
            throw new IllegalStateException("no redis-server found: not on PATH, not usable from the " + EMBEDDED_JAR
                    + " (" + e.getMessage() + "), and no Docker engine for Testcontainers; install redis-server", e);
        }
    }

    /** The Redis 6.2 binary from the embedded-redis jar, extracted once per JVM. */
    public static RedisBinary embedded() {
        RedisBinary e = embedded;
        if (e == null) {
            synchronized (RedisBinary.class) {
                e = embedded;
                if (e == null) {
                    e = new RedisBinary(extract(), EMBEDDED_JAR);
                    embedded = e;
                }
            }
        }
        return e;
    }

    private static Path extract() {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        boolean arm = arch.contains("aarch64") || arch.contains("arm");
        String resource;
        if (os.contains("linux")) {
            resource = arm ? "redis-server-6.2.7-linux-arm64" : "redis-server-6.2.6-v5-linux-amd64";
        } else if (os.contains("mac")) {
            resource = arm ? "redis-server-6.2.6-v5-darwin-arm64" : "redis-server-6.2.6-v5-darwin-amd64";
        } else {
            throw new IllegalStateException("the embedded Redis has no binary for " + os + "/" + arch);
        }
        try (InputStream in = RedisBinary.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException(resource + " is not on the classpath");
            }
            Path dir = Files.createTempDirectory("baton-redis-bin");
            Path target = dir.resolve("redis-server");
            Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
            if (!target.toFile().setExecutable(true)) {
                throw new IllegalStateException("cannot make " + target + " executable");
            }
            target.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract the embedded redis-server", e);
        }
    }

    private static Optional<Path> onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String dir : path.split(java.io.File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** {"Redis" or "Valkey", version}. */
    private static String[] readVersion(Path server) {
        try {
            Process p = new ProcessBuilder(server.toString(), "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            p.waitFor(10, TimeUnit.SECONDS);
            Matcher m = Pattern.compile("v=([0-9.]+)").matcher(out);
            if (!m.find()) {
                throw new IllegalStateException(server + " --version printed no version: " + out);
            }
            return new String[] {out.startsWith("Valkey") ? "Valkey" : "Redis", m.group(1)};
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + server, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The server binary. */
    public Path server() {
        return server;
    }

    /** "Redis" or "Valkey". */
    public String product() {
        return product;
    }

    /** The version, e.g. {@code 7.0.15} (Valkey's own version for Valkey, e.g. {@code 8.0.1}). */
    public String version() {
        return version;
    }

    /** The major version, e.g. 7. */
    public int majorVersion() {
        return Integer.parseInt(version.substring(0, version.indexOf('.')));
    }

    /** Where the binary came from. */
    public String source() {
        return source;
    }

    /**
     * {@code redis-sentinel} (or {@code valkey-sentinel}) next to the server, if present
     * ({@code <server> --sentinel} always works).
     */
    public Optional<Path> sentinel() {
        for (String name : new String[] {"redis-sentinel", "valkey-sentinel"}) {
            Path s = server.resolveSibling(name);
            if (Files.isExecutable(s)) {
                return Optional.of(s);
            }
        }
        return Optional.empty();
    }
}
