package dev.baton;

import dev.baton.testkit.RedisMasters;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 45, item 3: a RedLock's lease-scoped work that runs past its validity is stopped when
 * the validity passes (BatonRedLock.withLock), strictly before another application can take the
 * RedLock, whatever the application's own timeouts do. On f73c560 the stop was a task of the
 * JDK's shared delay thread (CompletableFuture.delayedExecutor), which runs every orTimeout's
 * callbacks and started a thread for each task (every cancelled node timeout of every RedLock
 * round included): a stop queued behind them came late, after the other application held the
 * RedLock (a storm saw it 50-174 ms late).
 */
class RedLockStopTest {
    private static final long LEASE_MS = 300;
    /** LeaseScope's margin: the scope ends 1 % + 25 ms before the lease can end in Redis. */
    private static final long MARGIN_MS = LEASE_MS / 100 + 25;

    private RedisMasters masters;
    private final Clients clients = new Clients();
    private final List<Baton> mine = new ArrayList<>();
    private final List<Baton> theirs = new ArrayList<>();

    @BeforeEach
    void start() {
        masters = RedisMasters.start(3);
        for (RedisServer server : masters.servers()) {
            mine.add(clients.open(BatonOptions.builder().redisUri(server.uri()).commandTimeout(Duration.ofMillis(500)).build()));
            theirs.add(clients.open(BatonOptions.builder().redisUri(server.uri()).commandTimeout(Duration.ofMillis(500)).build()));
        }
    }

    @AfterEach
    void stop() {
        clients.close();
        masters.close();
    }

    @Test
    void workPastItsValidityIsStoppedBeforeAnotherApplicationIsGrantedWhateverTheApplicationsTimeoutsDo() throws Exception {
        // The application's own timeouts: a callback of an orTimeout runs on the JDK's one
        // delay thread, and this one takes a while (a blocking call, a slow log appender), from
        // before the scope ends until well after.
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> busy = new CompletableFuture<Void>().orTimeout(LEASE_MS / 2, TimeUnit.MILLISECONDS)
                .handle((v, e) -> {
                    try {
                        release.await(3, TimeUnit.SECONDS);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                    }
                    return null;
                });
        try {
            AtomicLong scopeEnd = new AtomicLong();
            AtomicLong interruptSeen = new AtomicLong();
            AtomicLong otherGranted = new AtomicLong();
            CountDownLatch working = new CountDownLatch(1);
            // The other application tries as fast as it can, from the moment our work runs.
            Thread competitor = new Thread(() -> {
                BatonRedLock other = Baton.redLock("r45-redlock", theirs);
                try {
                    working.await();
                    long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                    while (System.nanoTime() < giveUpAt) {
                        if (other.tryLock(0, LEASE_MS, TimeUnit.MILLISECONDS)) {
                            otherGranted.set(System.nanoTime());
                            other.unlock();
                            return;
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "competitor");
            competitor.start();

            BatonRedLock redLock = Baton.redLock("r45-redlock", mine);
            LeaseLostException stopped = assertThrows(LeaseLostException.class, () -> redLock.withLock(LEASE_MS, TimeUnit.MILLISECONDS,
                    scope -> {
                        scopeEnd.set(System.nanoTime() + scope.remaining().toNanos());
                        working.countDown();
                        while (!Thread.currentThread().isInterrupted()) {
                            Thread.onSpinWait(); // work that runs past its validity, checking for the stop
                        }
                        interruptSeen.set(System.nanoTime());
                        return null;
                    }));
            competitor.join(TimeUnit.SECONDS.toMillis(10));
            long lateMs = TimeUnit.NANOSECONDS.toMillis(interruptSeen.get() - scopeEnd.get());
            long beforeOtherMs = TimeUnit.NANOSECONDS.toMillis(otherGranted.get() - interruptSeen.get());
            System.out.printf("[RedLockStopTest] the stop came %d ms after the scope's end; the other application "
                    + "was granted %d ms after the stop (%s)%n", lateMs, beforeOtherMs, stopped.getMessage());
            assertTrue(interruptSeen.get() - scopeEnd.get() <= TimeUnit.MILLISECONDS.toNanos(MARGIN_MS),
                    "the work was stopped " + lateMs + " ms after its scope's end, past the " + MARGIN_MS + " ms margin");
            assertTrue(otherGranted.get() != 0, "the other application got the RedLock once the lease ran out");
            assertTrue(otherGranted.get() - interruptSeen.get() > 0,
                    "the other application was granted " + -beforeOtherMs + " ms before the work was stopped");
        } finally {
            release.countDown();
            busy.get(5, TimeUnit.SECONDS);
        }
    }
}
