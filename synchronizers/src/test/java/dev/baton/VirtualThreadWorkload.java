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
        System.out.println("virtual-threads done=" + done.get() + " overlaps=" + overlaps.get() + " wrongOwner=" + wrongOwner.get());
    }
}
