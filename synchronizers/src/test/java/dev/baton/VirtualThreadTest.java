package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Locks, a semaphore and a latch used from 200 virtual threads. The tests run on Java 17, so this
 * finds a JDK 21 or later on the machine (next to the running JDK, or under JAVA_HOME's parent)
 * and runs {@link VirtualThreadWorkload} in it; with none, it is skipped with the reason printed.
 */
@ExtendWith(RedisExtension.class)
class VirtualThreadTest {

    @Test
    void locksSemaphoresAndLatchesWorkFromVirtualThreads(RedisServer redis) throws Exception {
        Optional<Path> java = modernJava();
        if (java.isEmpty()) {
            System.out.println("[virtual-threads] skipped: no JDK 21 or later found next to " + System.getProperty("java.home"));
        }
        Assumptions.assumeTrue(java.isPresent(), "no JDK 21+ on this machine");
        Process process = new ProcessBuilder(java.get().toString(), "-cp", System.getProperty("java.class.path"),
                "-Djdk.tracePinnedThreads=short", VirtualThreadWorkload.class.getName(), redis.uri())
                .redirectErrorStream(true).start();
        boolean exited = process.waitFor(90, TimeUnit.SECONDS); // inside the 120 s default test timeout
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!exited) {
            process.destroyForcibly();
        }
        System.out.println("[virtual-threads] " + java.get() + ": " + output.lines().filter(l -> l.startsWith("virtual-threads"))
                .findFirst().orElse(output));
        assertTrue(exited, "the workload hung: " + output);
        assertEquals(0, process.exitValue(), output);
        assertTrue(output.contains("virtual-threads done=1000 overlaps=0 wrongOwner=0"), output);
        assertTrue(!output.contains("onPinned") && !output.contains("<== monitors"), "a virtual thread was pinned: " + output);
    }

    /** A java executable of version 21 or later among the JDKs installed beside the running one. */
    private static Optional<Path> modernJava() throws IOException {
        Path home = Path.of(System.getProperty("java.home"));
        List<Path> roots = List.of(home.getParent(), home.getParent().getParent());
        for (Path root : roots) {
            if (root == null || !Files.isDirectory(root)) {
                continue;
            }
            try (Stream<Path> jdks = Files.list(root)) {
                Optional<Path> found = jdks.map(jdk -> jdk.resolve("bin/java"))
                        .filter(Files::isExecutable)
                        .filter(candidate -> featureVersion(candidate) >= 21)
                        .max(Comparator.comparingInt(VirtualThreadTest::featureVersion));
                if (found.isPresent()) {
                    return found;
                }
            }
        }
        return Optional.empty();
    }

    private static int featureVersion(Path java) {
        try {
            Path release = java.getParent().getParent().resolve("release");
            if (Files.exists(release)) {
                for (String line : Files.readAllLines(release)) {
                    if (line.startsWith("JAVA_VERSION=")) {
                        String v = line.substring(line.indexOf('"') + 1);
                        return Integer.parseInt(v.split("[.\"]")[0]);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }
}
