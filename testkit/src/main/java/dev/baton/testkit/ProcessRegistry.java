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
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Process p : RUNNING) {
                p.destroyForcibly();
            }
        }, "baton-testkit-cleanup"));
    }

    private ProcessRegistry() {
    }

    static void started(Process process) {
        RUNNING.add(process);
    }

    static void stopped(Process process) {
        RUNNING.remove(process);
    }
}
