package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link BatonObserver}: what it is told, for every kind and outcome, and that it cannot break an operation. */
class ObserverTest extends TwoClientsTest {
    private final List<String> events = new CopyOnWriteArrayList<>();

    ObserverTest(RedisServer redis) {
        super(redis);
    }

    @Override
    BatonOptions options() {
        return Clients.defaults(redis).watchdogTimeout(Duration.ofMillis(600)).observer(new BatonObserver() {
            @Override
            public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos) {
                events.add("acquisition " + kind + " " + name + " " + outcome);
            }

            @Override
            public void released(Kind kind, String name, long heldNanos) {
                events.add("released " + kind + " " + name);
            }

            @Override
            public void leaseLost(String name, LossCause cause) {
                events.add("lost " + name + " " + cause);
            }

            @Override
            public void renewal(int leases, boolean succeeded, long tookNanos) {
                events.add("renewal " + leases + " " + succeeded);
            }
        }).build();
    }

    @Test
    void everyOutcomeOfEveryKindIsTold() throws Exception {
        BatonLock lock = a.lock("l");
        lock.lock();
        assertFalse(b.lock("l").tryLock(50, TimeUnit.MILLISECONDS));
        CompletableFuture<Void> cancelled = b.lock("l").lockAsync(7).toCompletableFuture();
        Await.until(Duration.ofSeconds(2), () -> "a subscribed waiter", () -> lock.waiterCount() == 1);
        cancelled.cancel(true);
        lock.unlock();
        b.fairLock("f").lock();
        b.fairLock("f").unlock();
        a.readWriteLock("rw").readLock().lock();
        assertThrows(IllegalMonitorStateException.class, () -> a.readWriteLock("rw").writeLock().lock());
        a.readWriteLock("rw").readLock().unlock();
        a.semaphore("s").trySetPermits(1);
        assertTrue(a.semaphore("s").tryAcquire());
        a.semaphore("s").release();
        a.permitExpirableSemaphore("x").trySetPermits(1);
        a.permitExpirableSemaphore("x").release(a.permitExpirableSemaphore("x").acquire());
        assertTrue(a.countDownLatch("c").await(1, TimeUnit.SECONDS));
        a.fencedLock("fe").lockAndGetToken();
        a.fencedLock("fe").unlock();

        Await.until(Duration.ofSeconds(2), () -> "the cancelled wait told: " + events,
                () -> events.contains("acquisition LOCK l INTERRUPTED"));
        for (String expected : List.of("acquisition LOCK l ACQUIRED", "acquisition LOCK l TIMED_OUT",
                "released LOCK l", "acquisition FAIR_LOCK f ACQUIRED", "released FAIR_LOCK f",
                "acquisition READ_LOCK rw ACQUIRED", "acquisition WRITE_LOCK rw FAILED", "released READ_LOCK rw",
                "acquisition SEMAPHORE s ACQUIRED", "acquisition PERMIT_EXPIRABLE_SEMAPHORE x ACQUIRED",
                "acquisition COUNT_DOWN_LATCH c ACQUIRED", "acquisition FENCED_LOCK fe ACQUIRED", "released FENCED_LOCK fe")) {
            assertTrue(events.contains(expected), expected + " in " + events);
        }
        assertEquals(0, a.leasesHeld());
    }

    @Test
    void leasesHeldRenewalsAndLossesAreTold() {
        BatonLock watched = a.lock("w");
        watched.lock();
        a.lock("fixed").lock(30, TimeUnit.SECONDS);
        assertEquals(2, a.leasesHeld());
        String owner = a.clientId() + ":" + Thread.currentThread().getId();
        assertEquals(List.of(new HeldLease("fixed", owner, 1, false, 30_000), new HeldLease("w", owner, 1, true, 600)),
                a.heldLeases(), "listed by name, with owner, holds and lease");
        Await.until(Duration.ofSeconds(2), () -> "a renewal told: " + events, () -> events.contains("renewal 1 true"));
        redis.command("DEL", "w");
        Await.until(Duration.ofSeconds(2), () -> "the loss told: " + events, () -> events.contains("lost w GONE"));
        assertEquals(1, a.leasesHeld());
        redis.command("DEL", "fixed");
        assertThrows(LeaseLostException.class, () -> a.lock("fixed").unlock());
        assertTrue(events.contains("lost fixed GONE"), events.toString());
        assertEquals(0, a.leasesHeld());
    }

    @Test
    void anObserverThatThrowsChangesNothing() throws Exception {
        try (Baton throwing = clients.open(Clients.defaults(redis).observer(new BatonObserver() {
            @Override
            public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos) {
                throw new IllegalStateException("observer bug");
            }

            @Override
            public void released(Kind kind, String name, long heldNanos) {
                throw new IllegalStateException("observer bug");
            }
        }).build())) {
            BatonLock lock = throwing.lock("t");
            assertTrue(lock.tryLock(1, TimeUnit.SECONDS));
            lock.unlock();
            assertFalse(lock.isLocked());
        }
    }

    @Test
    void eachStartIsToldOnTheCallersThreadAndItsTokenReachesItsEnd() throws Exception {
        List<String> started = new CopyOnWriteArrayList<>();
        List<Object> ended = new CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicInteger tokens = new java.util.concurrent.atomic.AtomicInteger();
        try (Baton observed = clients.open(Clients.defaults(redis).observer(new BatonObserver() {
            @Override
            public Object acquisitionStarted(Kind kind, String name) {
                started.add(kind + " " + name + " on " + Thread.currentThread().getName());
                return kind + "#" + tokens.incrementAndGet();
            }

            @Override
            public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos, Object token) {
                ended.add(token + " " + outcome);
            }
        }).build())) {
            String caller = Thread.currentThread().getName();
            BatonLock lock = observed.lock("s");
            lock.lock();
            assertFalse(CompletableFuture.supplyAsync(() -> {
                try {
                    return observed.lock("s").tryLock(50, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }).get(5, TimeUnit.SECONDS));
            lock.unlock();
            observed.semaphore("p").trySetPermits(1);
            assertTrue(observed.semaphore("p").tryAcquire(1, TimeUnit.SECONDS));
            Await.until(Duration.ofSeconds(2), () -> "three ends: " + ended, () -> ended.size() == 3);
            assertEquals(List.of("LOCK s on " + caller, "SEMAPHORE p on " + caller), List.of(started.get(0), started.get(2)));
            assertTrue(started.get(1).startsWith("LOCK s on ") && !started.get(1).endsWith(" " + caller), started.get(1));
            assertEquals(List.of("LOCK#1 ACQUIRED", "LOCK#2 TIMED_OUT", "SEMAPHORE#3 ACQUIRED"), ended);
        }
        try (Baton throwing = clients.open(Clients.defaults(redis).observer(new BatonObserver() {
            @Override
            public Object acquisitionStarted(Kind kind, String name) {
                throw new IllegalStateException("observer bug");
            }
        }).build())) {
            BatonLock lock = throwing.lock("t2");
            assertTrue(lock.tryLock(1, TimeUnit.SECONDS), "a start that throws changes nothing");
            lock.unlock();
        }
    }
}
