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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
        // Two carriers, so that one pinned by a thread parked inside Baton would stall the probe.
        Process process = new ProcessBuilder(java.get().toString(), "-cp", System.getProperty("java.class.path"),
                "-Djdk.virtualThreadScheduler.parallelism=2", "-Djdk.virtualThreadScheduler.maxPoolSize=2",
                VirtualThreadWorkload.class.getName(), redis.uri())
                .redirectErrorStream(true).start();
        boolean exited = process.waitFor(90, TimeUnit.SECONDS); // inside the 120 s default test timeout
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!exited) {
            process.destroyForcibly();
        }
        System.out.println("[virtual-threads] " + java.get() + ": " + output.lines().filter(l -> l.startsWith("virtual-threads"))
                .reduce((x, y) -> x + "; " + y).orElse(output));
        assertTrue(exited, "the workload hung: " + output);
        assertEquals(0, process.exitValue(), output);
        assertTrue(output.contains("virtual-threads done=1000 overlaps=0 wrongOwner=0"), output);
        assertTrue(output.contains("virtual-threads contended=2000 "), "every contended thread got the lock: " + output);
        // JFR's jdk.VirtualThreadPinned (threshold 0), read from a recording of the whole workload:
        // no virtual thread pinned with a Baton frame on its stack.
        Matcher pinned = Pattern.compile("pinnedInBaton=(\\d+)").matcher(output);
        assertTrue(pinned.find(), "the workload reported its JFR count: " + output);
        assertEquals("0", pinned.group(1), "virtual threads pinned inside Baton: " + output);
        Matcher gap = Pattern.compile("probeLargestGapMs=(\\d+)").matcher(output);
        assertTrue(gap.find(), output);
        // The probe sleeps 10 ms a tick; with two carriers shared by 2,000 lock waiters, a tick
        // that waited a whole second would mean a carrier was held, not shared.
        assertTrue(Long.parseLong(gap.group(1)) <= 1_000, "the probe virtual thread kept ticking: " + output);
    }

    /**
     * No monitor in the synchronizers' code: a virtual thread that parks while holding one pins
     * its carrier on JDK 21 to 23 (which JFR on this machine's newer JDK cannot show, since JDK 24
     * no longer pins on monitors), and every lock Baton takes is held while it talks to Lettuce or
     * a future. java.util.concurrent locks unmount instead.
     */
    @Test
    void theSynchronizersHoldNoMonitor() throws IOException {
        Path main = Path.of("src/main/java").toAbsolutePath();
        List<String> found = new java.util.ArrayList<>();
        try (Stream<Path> files = Files.walk(main)) {
            for (Path file : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                List<String> lines = Files.readAllLines(file);
                for (int i = 0; i < lines.size(); i++) {
                    String code = lines.get(i).replaceAll("//.*", "").strip();
                    if (code.startsWith("*") || code.startsWith("/*")) {
                        continue;
                    }
                    if (code.matches(".*\\bsynchronized\\b.*")) {
                        found.add(main.relativize(file) + ":" + (i + 1) + ": " + code);
                    }
                }
            }
        }
        assertEquals(List.of(), found, "synchronized in the synchronizers' code");
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
