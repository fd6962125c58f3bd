package dev.baton.jmh;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A latch's fan-out: 1,000 threads on 4 clients (250 each) wait on one latch; one countDown to
 * zero; how long until the last of them has returned from {@code await()}. Each library in a
 * JVM of its own, on the same Redis, {@code ROUNDS} rounds (the first one unmeasured), e.g.
 * {@code java -cp jmh/target/benchmarks.jar dev.baton.jmh.LatchFanOut BATON} then
 * {@code ... REDISSON}. A round waits, before counting down, until every waiting thread is
 * parked and every client is subscribed to the latch's channel; a round in which a waiter has
 * not returned within 30 s is reported as such.
 */
public final class LatchFanOut {
    private static final int CLIENTS = 4;
    private static final int PER_CLIENT = 250;
    private static final int ROUNDS = 11;

    private LatchFanOut() {
    }

    public static void main(String[] args) throws Exception {
        Impl impl = Impl.valueOf(args.length > 0 ? args[0] : "BATON");
        RedisForBenchmarks.Target redis = RedisForBenchmarks.get();
        redis.command("FLUSHALL");
        List<Impl.Client> clients = new ArrayList<>();
        try {
            for (int c = 0; c < CLIENTS; c++) {
                clients.add(impl.connect(redis.uri()));
            }
            double[] millis = new double[ROUNDS - 1];
            for (int round = 0; round < ROUNDS; round++) {
                double took = round(redis, clients, "fan-out-" + round);
                if (round > 0) {
                    millis[round - 1] = took;
                }
                System.out.printf("%-9s round %2d: the last of %d awaiters returned %.1f ms after the countDown%s%n", impl,
                        round, CLIENTS * PER_CLIENT, took, round == 0 ? " (warm-up, not counted)" : "");
            }
            Arrays.sort(millis);
            double median = (millis[(millis.length - 1) / 2] + millis[millis.length / 2]) / 2;
            System.out.printf("%-9s latch fan-out, %d awaiters on %d clients: the last returned after %.1f ms (median of %d"
                            + " rounds; fastest %.1f, slowest %.1f)%n", impl, CLIENTS * PER_CLIENT, CLIENTS,
                    median, millis.length, millis[0], millis[millis.length - 1]);
        } finally {
            clients.forEach(Impl.Client::close);
        }
        System.exit(0);
    }

    /** One round: arm, park every awaiter, count down, and time until the last one returns (ms). */
    private static double round(RedisForBenchmarks.Target redis, List<Impl.Client> clients, String name) throws Exception {
        clients.get(0).latch(name).arm();
        CountDownLatch returned = new CountDownLatch(CLIENTS * PER_CLIENT);
        AtomicLong lastReturn = new AtomicLong();
        List<Thread> awaiters = new ArrayList<>();
        for (Impl.Client client : clients) {
            Impl.Latch latch = client.latch(name);
            for (int i = 0; i < PER_CLIENT; i++) {
                Thread t = new Thread(() -> {
                    try {
                        latch.await();
                        lastReturn.accumulateAndGet(System.nanoTime(), Math::max);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        returned.countDown();
                    }
                }, "fan-out-awaiter");
                t.setDaemon(true);
                awaiters.add(t);
                t.start();
            }
        }
        String channel = "redisson_countdownlatch__channel__{" + name + "}";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!(allParked(awaiters) && subscribers(redis, channel) >= CLIENTS)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the awaiters did not all park within 30 s");
            }
            Thread.onSpinWait();
        }
        long counted = System.nanoTime();
        clients.get(0).latch(name).countDown();
        if (!returned.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException((returned.getCount()) + " awaiters had not returned 30 s after the countDown");
        }
        return (lastReturn.get() - counted) / 1e6;
    }

    private static boolean allParked(List<Thread> threads) {
        for (Thread t : threads) {
            Thread.State s = t.getState();
            if (s != Thread.State.WAITING && s != Thread.State.TIMED_WAITING) {
                return false;
            }
        }
        return true;
    }

    private static long subscribers(RedisForBenchmarks.Target redis, String channel) {
        Object reply = redis.command("PUBSUB", "NUMSUB", channel);
        if (reply instanceof List<?> list && list.size() == 2) {
            return Long.parseLong(String.valueOf(list.get(1)));
        }
        return 0;
    }
}
