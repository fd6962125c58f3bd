package dev.baton;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Run by {@link VirtualThreadTest} in a child JVM of version 21 or later: 200 virtual threads
 * over two Baton clients take 10 locks, a semaphore and a latch, and report what they saw. Uses
 * reflection for the virtual-thread API so it compiles for Java 17.
 */
public final class VirtualThreadWorkload {
    private VirtualThreadWorkload() {
    }

    public static void main(String[] args) throws Exception {
        String uri = args[0];
        // Every pinned virtual thread, however short (JFR's jdk.VirtualThreadPinned, threshold 0),
        // through reflection: this class compiles for Java 17, where jdk.jfr is not resolved.
        // A warm-up first: a class's first use loads, links and initializes it, which pins a
        // virtual thread on any JDK (the JVM's doing, not a lock Baton holds).
        run(uri, false);
        contendedWithATickingProbe(uri, 50, false);
        Class<?> recordingType = Class.forName("jdk.jfr.Recording");
        Object recording = recordingType.getConstructor().newInstance();
        Object settings = recordingType.getMethod("enable", String.class).invoke(recording, "jdk.VirtualThreadPinned");
        Class<?> settingsType = Class.forName("jdk.jfr.EventSettings");
        settingsType.getMethod("withThreshold", java.time.Duration.class).invoke(settings, java.time.Duration.ZERO);
        settingsType.getMethod("withStackTrace").invoke(settings);
        recordingType.getMethod("start").invoke(recording);
        try {
            run(uri, true);
            contendedWithATickingProbe(uri, 2_000, true);
        } finally {
            recordingType.getMethod("stop").invoke(recording);
            java.nio.file.Path dump = java.nio.file.Files.createTempFile("baton-vt-", ".jfr");
            recordingType.getMethod("dump", java.nio.file.Path.class).invoke(recording, dump);
            recordingType.getMethod("close").invoke(recording);
            List<?> events = (List<?>) Class.forName("jdk.jfr.consumer.RecordingFile")
                    .getMethod("readAllEvents", java.nio.file.Path.class).invoke(null, dump);
            Method stackOf = Class.forName("jdk.jfr.consumer.RecordedEvent").getMethod("getStackTrace");
            Method framesOf = Class.forName("jdk.jfr.consumer.RecordedStackTrace").getMethod("getFrames");
            Method methodOf = Class.forName("jdk.jfr.consumer.RecordedFrame").getMethod("getMethod");
            Method typeOf = Class.forName("jdk.jfr.consumer.RecordedMethod").getMethod("getType");
            Method nameOfMethod = Class.forName("jdk.jfr.consumer.RecordedMethod").getMethod("getName");
            Method nameOfType = Class.forName("jdk.jfr.consumer.RecordedClass").getMethod("getName");
            int pinnedInBaton = 0;
            int pinnedLoading = 0;
            StringBuilder where = new StringBuilder();
            Method typeOfEvent = Class.forName("jdk.jfr.consumer.RecordedEvent").getMethod("getEventType");
            Method nameOfEventType = Class.forName("jdk.jfr.EventType").getMethod("getName");
            Method stringField = Class.forName("jdk.jfr.consumer.RecordedObject").getMethod("getString", String.class);
            int pinnedEvents = 0;
            for (Object event : events) {
                if (!"jdk.VirtualThreadPinned".equals(nameOfEventType.invoke(typeOfEvent.invoke(event)))) {
                    continue; // other enabled events (Lettuce records its own)
                }
                pinnedEvents++;
                Object stack = stackOf.invoke(event);
                List<String> frames = new ArrayList<>();
                if (stack != null) {
                    for (Object frame : (List<?>) framesOf.invoke(stack)) {
                        Object method = methodOf.invoke(frame);
                        frames.add(nameOfType.invoke(typeOf.invoke(method)) + "." + nameOfMethod.invoke(method));
                    }
                }
                // Loading, initializing or linking a class pins a virtual thread on any JDK (once, at
                // first use): the JVM's doing, not a lock Baton holds. Counted apart.
                String why;
                try {
                    why = stringField.invoke(event, "blockingOperation") + ", " + stringField.invoke(event, "pinnedReason");
                } catch (ReflectiveOperationException | RuntimeException e) {
                    why = "(no reason recorded by this JDK)"; // the fields came with JDK 24
                }
                boolean loading = why.contains("initialization") || frames.stream().anyMatch(f -> f.startsWith("java.lang.ClassLoader.loadClass")
                        || f.startsWith("java.lang.invoke.MethodHandleNatives.link")
                        || f.startsWith("jdk.internal.misc.Unsafe.ensureClassInitialized")
                        || f.startsWith("java.lang.invoke.ClassSpecializer"));
                if (loading) {
                    pinnedLoading++;
                } else if (frames.stream().anyMatch(f -> f.startsWith("dev.baton.internal"))) {
                    pinnedInBaton++;
                    if (where.length() < 4_000) {
                        where.append("\n  ").append(why);
                        frames.stream().limit(24).forEach(f -> where.append("\n    ").append(f));
                    }
                }
            }
            java.nio.file.Files.deleteIfExists(dump);
            System.out.println("virtual-threads pinned=" + pinnedEvents + " whileLoadingClasses=" + pinnedLoading
                    + " pinnedInBaton=" + pinnedInBaton + where);
        }
    }

    /**
     * Thousands of virtual threads on one lock with the scheduler at two carriers, while a probe
     * virtual thread ticks every 10 ms: a carrier pinned by a thread parked inside Baton would
     * stall the probe. Reports the largest gap between two ticks.
     */
    private static void contendedWithATickingProbe(String uri, int count, boolean report) throws Exception {
        Method factory = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService threads = (ExecutorService) factory.invoke(null);
        java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.util.concurrent.atomic.AtomicLong largestGap = new java.util.concurrent.atomic.AtomicLong();
        AtomicInteger held = new AtomicInteger();
        try (Baton baton = Baton.create(uri)) {
            Future<?> probe = threads.submit(() -> {
                long last = System.nanoTime();
                while (running.get()) {
                    Thread.sleep(10);
                    long now = System.nanoTime();
                    largestGap.accumulateAndGet(now - last, Math::max);
                    last = now;
                }
                return null;
            });
            List<Future<?>> work = new ArrayList<>();
            for (int t = 0; t < count; t++) {
                work.add(threads.submit(() -> {
                    BatonLock lock = baton.lock("vt-contended");
                    if (lock.tryLock(60, TimeUnit.SECONDS)) {
                        try {
                            held.incrementAndGet();
                        } finally {
                            lock.unlock();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : work) {
                f.get(2, TimeUnit.MINUTES);
            }
            running.set(false);
            probe.get(10, TimeUnit.SECONDS);
        } finally {
            threads.shutdownNow();
        }
        if (report) {
            System.out.println("virtual-threads contended=" + held.get() + " probeLargestGapMs=" + largestGap.get() / 1_000_000);
        }
    }

    private static void run(String uri, boolean report) throws Exception {
        Method factory = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger wrongOwner = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        AtomicInteger[] inside = new AtomicInteger[10];
        for (int i = 0; i < inside.length; i++) {
            inside[i] = new AtomicInteger();
        }
        ExecutorService threads = (ExecutorService) factory.invoke(null);
        try (Baton a = Baton.create(uri); Baton b = Baton.create(uri)) {
            a.semaphore("vt-permits").trySetPermits(4);
            a.countDownLatch("vt-start").trySetCount(1);
            List<Future<?>> work = new ArrayList<>();
            for (int t = 0; t < 200; t++) {
                Baton client = t % 2 == 0 ? a : b;
                int k = t % inside.length;
                work.add(threads.submit(() -> {
                    client.countDownLatch("vt-start").await();
                    for (int i = 0; i < 5; i++) {
                        BatonLock lock = client.lock("vt-lock-" + k);
                        lock.lock();
                        try {
                            if (inside[k].incrementAndGet() > 1) {
                                overlaps.incrementAndGet();
                            }
                            if (!lock.isHeldByCurrentThread()) {
                                wrongOwner.incrementAndGet();
                            }
                            inside[k].decrementAndGet();
                        } finally {
                            lock.unlock();
                        }
                        try (SemaphorePermits permit = client.semaphore("vt-permits").acquirePermits(1)) {
                            done.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            a.countDownLatch("vt-start").countDown();
            for (Future<?> f : work) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            threads.shutdownNow();
        }
        if (report) {
            System.out.println("virtual-threads done=" + done.get() + " overlaps=" + overlaps.get() + " wrongOwner=" + wrongOwner.get());
        }
    }
}
