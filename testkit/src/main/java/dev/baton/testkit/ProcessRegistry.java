package dev.baton.testkit;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every process the fixture started, so a JVM shutdown hook can kill whatever a failed or
 * aborted test left running.
 */
final class ProcessRegistry {
    private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        reapOrphans();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Process p : RUNNING) {
                p.destroyForcibly();
            }
        }, "baton-testkit-cleanup"));
    }

    private ProcessRegistry() {
    }

    /**
     * A JVM killed without running its shutdown hooks (SIGKILL, a halted JMH fork) leaves its
     * servers behind. Each server directory names its JVM and its redis-server; servers whose JVM
     * is gone are killed here and their directories removed.
     */
    static void reapOrphans() {
        java.nio.file.Path tmp = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"));
        try (java.util.stream.Stream<java.nio.file.Path> dirs = java.nio.file.Files.list(tmp)) {
            dirs.filter(d -> d.getFileName().toString().startsWith("baton-redis-"))
                    .filter(d -> java.nio.file.Files.exists(d.resolve("jvm.pid")))
                    .forEach(ProcessRegistry::reapIfOrphaned);
        } catch (java.io.IOException | RuntimeException e) {
            // best effort: a leftover from an earlier run must not stop this one
        }
    }

    private static void reapIfOrphaned(java.nio.file.Path dir) {
        try {
            long jvm = Long.parseLong(java.nio.file.Files.readString(dir.resolve("jvm.pid")).trim());
            if (ProcessHandle.of(jvm).map(ProcessHandle::isAlive).orElse(false)) {
                return;
            }
            java.nio.file.Path redisPid = dir.resolve("redis.pid");
            if (java.nio.file.Files.exists(redisPid)) {
                long pid = Long.parseLong(java.nio.file.Files.readString(redisPid).trim());
                ProcessHandle.of(pid).filter(p -> p.info().command().map(c -> c.contains("redis")).orElse(false))
                        .ifPresent(ProcessHandle::destroyForcibly);
            }
            try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        } catch (java.io.IOException | RuntimeException e) {
            // best effort
        }
    }

    static void started(Process process) {
        RUNNING.add(process);
    }

    static void stopped(Process process) {
        RUNNING.remove(process);
    }
}
