package dev.baton.spring.integration;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostException;
import dev.baton.RedisUnavailableException;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

import java.lang.reflect.InvocationTargetException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BatonLockRegistry} on a real Redis, with two clients standing for two processes, on
 * Spring Integration 7 (every server lane) and 6.5 (CI's {@code spring-boot-3.5} lane); 7's
 * {@code DistributedLock} is named here by name, as the 6.5 lane has none.
 */
@ExtendWith(RedisExtension.class)
class BatonLockRegistryTest {
    private final RedisServer redis;
    private Baton a;
    private Baton b;
    private final ExecutorService pool = Executors.newCachedThreadPool();

    BatonLockRegistryTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void open() {
        redis.command("FLUSHALL");
        BatonOptions options = BatonOptions.builder().redisUri(redis.uri())
                .watchdogTimeout(Duration.ofMillis(900)).commandTimeout(Duration.ofSeconds(1)).build();
        a = Baton.create(options);
        b = Baton.create(options);
    }

    @AfterEach
    void close() throws Exception {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS), "test threads ended");
        a.close();
        b.close();
    }

    @Test
    void oneCachedLockPerKeyNamedUnderTheRegistryKey() {
        // snippet integration-registry begins
        BatonLockRegistry registry = BatonLockRegistry.builder(baton(), "orders").build();
        Lock lock = registry.obtain("order-42");
        lock.lock();
        try {
            // ... only one instance of the service is here at a time
        } finally {
            lock.unlock();
        }
        // snippet integration-registry ends
        assertSame(lock, registry.obtain("order-42"));
        assertNotSame(lock, registry.obtain("order-43"));
        lock.lock();
        try {
            assertEquals(1L, redis.command("EXISTS", "orders:order-42"), "the lock's key in Redis");
            assertTrue(a.lock("orders:order-42").isHeldByCurrentThread(), "the same lock as Baton's");
        } finally {
            lock.unlock();
        }
        assertEquals(0L, redis.command("EXISTS", "orders:order-42"));
    }

    private Baton baton() {
        return a;
    }

    /** Spring Integration 7's {@code DistributedLock}, or null on 6.5. */
    private static final Class<?> DISTRIBUTED_LOCK = distributedLockType();

    private static Class<?> distributedLockType() {
        try {
            return Class.forName("org.springframework.integration.support.locks.DistributedLock");
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /** Calls {@code DistributedLock.<method>} on {@code lock}; ends the test as not run on Spring Integration 6.5. */
    private static Object distributed(Lock lock, String method, Class<?>[] types, Object... args) throws Exception {
        if (DISTRIBUTED_LOCK == null) {
            System.out.println("[spring-boot-3.5 lane] NOT RUN on Spring Integration 6.5: DistributedLock." + method
                    + " came in 7.0");
            Assumptions.abort("Spring Integration 6.5 has no DistributedLock");
        }
        try {
            return DISTRIBUTED_LOCK.getMethod(method, types).invoke(lock, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    @Test
    void onSpringIntegration7EveryLockIsADistributedLockAndOn65APlainLock() throws Exception {
        BatonLockRegistry registry = BatonLockRegistry.builder(a, "typed").build();
        Lock lock = registry.obtain("k");
        assertSame(lock, registry.obtain("k"), "one instance per key, as a DistributedLock too");
        assertEquals(lock, registry.obtain("k"));
        assertEquals(lock.hashCode(), registry.obtain("k").hashCode());
        assertNotEquals(lock, registry.obtain("other"));
        assertTrue(lock.toString().contains("typed:k"), lock.toString());
        if (DISTRIBUTED_LOCK == null) {
            System.out.println("[spring-boot-3.5 lane] Spring Integration 6.5: the registry's locks are plain Locks "
                    + "(no DistributedLock there)");
            RuntimeHints hints = new RuntimeHints();
            new BatonLockRegistryRuntimeHints().registerHints(hints, getClass().getClassLoader());
            assertEquals(0L, hints.proxies().jdkProxyHints().count(), "no proxy hint for a type 6.5 lacks");
            assertTrue(lock.tryLock());
            lock.unlock();
            return;
        }
        assertTrue(DISTRIBUTED_LOCK.isInstance(lock), "a DistributedLock on Spring Integration 7: " + lock.getClass());
        RuntimeHints hints = new RuntimeHints();
        new BatonLockRegistryRuntimeHints().registerHints(hints, getClass().getClassLoader());
        assertTrue(RuntimeHintsPredicates.proxies().forInterfaces(DISTRIBUTED_LOCK).test(hints),
                "a native image is told about the proxy");
        NullPointerException noWait = assertThrows(NullPointerException.class, () -> distributed(lock, "tryLock",
                new Class<?>[] {Duration.class, Duration.class}, null, Duration.ofSeconds(5)));
        assertTrue(String.valueOf(noWait.getMessage()).contains("waitTime"), String.valueOf(noWait.getMessage()));
        assertEquals(true, distributed(lock, "tryLock", new Class<?>[] {Duration.class, Duration.class},
                Duration.ZERO, Duration.ofSeconds(5)));
        try {
            long ttl = a.lock("typed:k").remainTimeToLive();
            assertTrue(ttl > 4000 && ttl <= 5000, "the hold's own lease: " + ttl);
            assertFalse(pool.submit(() -> lock.tryLock()).get(5, TimeUnit.SECONDS), "another thread of the process waits");
            assertThrows(UnsupportedOperationException.class, lock::newCondition);
        } finally {
            lock.unlock();
        }
        assertEquals(0L, redis.command("EXISTS", "typed:k"));
    }

    @Test
    void badKeysAndOptionsAreRefusedByName() {
        BatonLockRegistry registry = BatonLockRegistry.builder(a, "r").build();
        IllegalArgumentException notString = assertThrows(IllegalArgumentException.class, () -> registry.obtain(42));
        assertTrue(notString.getMessage().contains("java.lang.Integer"), notString.getMessage());
        assertThrows(IllegalArgumentException.class, () -> registry.obtain(""));
        assertThrows(IllegalArgumentException.class, () -> registry.obtain(null));
        assertThrows(IllegalArgumentException.class, () -> BatonLockRegistry.builder(a, ""));
        assertThrows(IllegalArgumentException.class, () -> BatonLockRegistry.builder(a, "r").leaseTime(Duration.ZERO));
        assertThrows(NullPointerException.class, () -> BatonLockRegistry.builder(null, "r"));
    }

    @Test
    void aWaiterInAnotherProcessIsWokenByTheReleaseWithoutPolling() throws Exception {
        // The holder's lease is fixed, so no watchdog renewal is counted below: only the waiter's.
        Lock held = BatonLockRegistry.builder(a, "jobs").leaseTime(Duration.ofSeconds(30)).build().obtain("nightly");
        Lock wanted = BatonLockRegistry.builder(b, "jobs").build().obtain("nightly");
        held.lock();
        CountDownLatch waiting = new CountDownLatch(1);
        Future<Long> waiter = pool.submit(() -> {
            waiting.countDown();
            assertTrue(wanted.tryLock(10, TimeUnit.SECONDS), "woken by the release and acquired");
            long at = System.nanoTime();
            wanted.unlock();
            return at;
        });
        assertTrue(waiting.await(5, TimeUnit.SECONDS));
        redis.awaitSubscribers("redisson_lock__channel:{jobs:nightly}", 1);
        long scriptsBefore = redis.calls("evalsha") + redis.calls("eval");
        Thread.sleep(1000); // the waiter waits a second: a polling registry would ask Redis many times
        long asked = redis.calls("evalsha") + redis.calls("eval") - scriptsBefore;
        assertTrue(asked <= 2, "scripts sent while one waiter waited a second: " + asked);
        long released = System.nanoTime();
        held.unlock();
        long wokenAfter = waiter.get(5, TimeUnit.SECONDS) - released;
        assertTrue(wokenAfter <= Bounds.within(Bounds.WAKE).toNanos(), "woken " + wokenAfter / 1_000_000
                + " ms after the release, bound " + Bounds.within(Bounds.WAKE).toMillis() + " ms");
    }

    @Test
    void aWaitEndsWhenInterruptedOrWithRedisUnavailableWithinTheCommandTimeout() throws Exception {
        Lock held = BatonLockRegistry.builder(a, "w").build().obtain("k");
        Lock wanted = BatonLockRegistry.builder(b, "w").build().obtain("k");
        held.lock();
        AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                wanted.lockInterruptibly();
                wanted.unlock();
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        waiter.start();
        redis.awaitSubscribers("redisson_lock__channel:{w:k}", 1);
        waiter.interrupt();
        waiter.join(Bounds.within(Duration.ZERO).toMillis());
        assertFalse(waiter.isAlive(), "the interrupt ended the wait");
        assertInstanceOf(InterruptedException.class, ended.get());
        held.unlock();

        redis.pause();
        try {
            Bounds.assertThrowsWithin(RedisUnavailableException.class, Bounds.failure(Duration.ofSeconds(1)), wanted::lock,
                    "lock() on a paused Redis: the 1 s command timeout + 150 ms, with its margin");
        } finally {
            redis.resume();
        }
    }

    @Test
    void aWatchdogLeaseLostWhileHeldIsReportedAndThrownOnUnlock() throws Exception {
        List<String> reported = new CopyOnWriteArrayList<>();
        try (Baton reporting = Baton.create(BatonOptions.builder().redisUri(redis.uri())
                .watchdogTimeout(Duration.ofMillis(900)).commandTimeout(Duration.ofSeconds(1))
                .leaseLostListener((name, owner, reason) -> reported.add(name)).build())) {
            Lock lock = BatonLockRegistry.builder(reporting, "lost").build().obtain("k");
            lock.lock();
            redis.command("DEL", "lost:k");
            // The watchdog renews every 300 ms (a third of its 900 ms lease): the next renewal finds it gone.
            Await.until(Bounds.within(Duration.ofMillis(300)), () -> "the loss reported: " + reported,
                    () -> reported.equals(List.of("lost:k")));
            assertThrows(LeaseLostException.class, lock::unlock);
        }
    }

    @Test
    void aFixedLeaseIsRenewedByRenewLockAndItsLossIsThrownOnUnlock() throws Exception {
        BatonLockRegistry registry = BatonLockRegistry.builder(a, "leases").leaseTime(Duration.ofMillis(700)).build();
        Lock lock = registry.obtain("k");
        lock.lock();
        long ttl = a.lock("leases:k").remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= 700, "fixed lease: " + ttl);
        registry.renewLock("k", Duration.ofSeconds(30));
        assertTrue(a.lock("leases:k").remainTimeToLive() > 20_000, "renewed to 30 s");
        registry.renewLock("k");
        long renewed = a.lock("leases:k").remainTimeToLive();
        assertTrue(renewed > 0 && renewed <= 700, "renewed to the registry's lease: " + renewed);
        Future<?> other = pool.submit(() -> registry.renewLock("k"));
        Exception notOwner = assertThrows(Exception.class, () -> other.get(5, TimeUnit.SECONDS));
        assertTrue(notOwner.getCause() instanceof IllegalMonitorStateException, String.valueOf(notOwner.getCause()));
        Await.until(Duration.ofSeconds(3), () -> "the lease ran out",
                () -> (Long) redis.command("EXISTS", "leases:k") == 0L);
        assertThrows(LeaseLostException.class, lock::unlock);
        // Spring Integration's scheduled renewal: refused with a fixed lease, not silently ignored.
        UnsupportedOperationException scheduler = assertThrows(UnsupportedOperationException.class,
                () -> registry.setRenewalTaskScheduler(new org.springframework.scheduling.concurrent.SimpleAsyncTaskScheduler()));
        assertTrue(scheduler.getMessage().contains("renewLock"), scheduler.getMessage());
        BatonLockRegistry.builder(a, "leases").build()
                .setRenewalTaskScheduler(new org.springframework.scheduling.concurrent.SimpleAsyncTaskScheduler());
    }

    @Test
    void aWatchdogHoldIsKeptAliveAndCannotBeTurnedIntoAFixedLease() throws Exception {
        BatonLockRegistry registry = BatonLockRegistry.builder(a, "wd").build();
        Lock lock = registry.obtain("k");
        lock.lock();
        try {
            registry.renewLock("k");
            assertThrows(IllegalStateException.class, () -> registry.renewLock("k", Duration.ofSeconds(5)));
            Thread.sleep(1500); // past the 900 ms watchdog timeout: only renewal keeps it
            assertEquals(1L, redis.command("EXISTS", "wd:k"), "kept alive by the watchdog");
        } finally {
            lock.unlock();
        }
        assertThrows(IllegalMonitorStateException.class, () -> registry.renewLock("k"));
        assertThrows(IllegalMonitorStateException.class, () -> registry.renewLock("never-obtained"));
    }

    @Test
    void aFairRegistryWithAFixedLease() throws Exception {
        BatonLockRegistry fair = BatonLockRegistry.builder(a, "fair").fair(true).leaseTime(Duration.ofMillis(5000)).build();
        Lock lock = fair.obtain("k");
        assertTrue(lock.tryLock(0, TimeUnit.MILLISECONDS));
        try {
            long ttl = a.fairLock("fair:k").remainTimeToLive();
            assertTrue(ttl > 4000 && ttl <= 5000, "the registry's lease: " + ttl);
            Lock other = BatonLockRegistry.builder(b, "fair").fair(true).build().obtain("k");
            assertFalse(pool.submit(() -> other.tryLock(100, TimeUnit.MILLISECONDS))
                    .get(5, TimeUnit.SECONDS), "held by the first registry's client");
        } finally {
            lock.unlock();
        }
        // The other registry's waiter leaves the queue over its own client's connection; a release
        // that reaches Redis before that hands the lock to it, and its leave passes the lock on.
        Await.until(Duration.ofSeconds(2), () -> "the fair lock was released and nobody holds it",
                () -> (Long) redis.command("EXISTS", "fair:k") == 0L);
    }

    @Test
    void renewLockRenewsAHoldsOwnTimeToLive() throws Exception {
        BatonLockRegistry registry = BatonLockRegistry.builder(a, "ttl").build();
        Lock lock = registry.obtain("k");
        distributed(lock, "lock", new Class<?>[] {Duration.class}, Duration.ofMillis(3000));
        Await.until(Duration.ofSeconds(3), () -> "a second of the lease passed",
                () -> a.lock("ttl:k").remainTimeToLive() < 2000);
        registry.renewLock("k");
        long renewed = a.lock("ttl:k").remainTimeToLive();
        assertTrue(renewed > 2500 && renewed <= 3000, "the hold's own 3 s again, not a silent no-op: " + renewed);
        lock.unlock();
    }

    @Test
    void tryLockIgnoresTheInterruptStatus() {
        Lock fixed = BatonLockRegistry.builder(a, "ttl").leaseTime(Duration.ofSeconds(5)).build().obtain("i");
        Thread.currentThread().interrupt();
        try {
            assertTrue(fixed.tryLock(), "Lock.tryLock() takes a free lock whatever the interrupt status");
            assertTrue(Thread.currentThread().isInterrupted(), "and leaves the status as it was");
        } finally {
            Thread.interrupted();
        }
        fixed.unlock();
    }

    @Test
    void unusedLocksExpireFromTheCacheButHeldOnesStay() throws Exception {
        BatonLockRegistry registry = BatonLockRegistry.builder(a, "cache").build();
        Lock held = registry.obtain("held");
        Lock idle = registry.obtain("idle");
        held.lock();
        try {
            Thread.sleep(50);
            registry.expireUnusedOlderThan(10);
            assertEquals(1, registry.size());
            assertSame(held, registry.obtain("held"));
            assertNotSame(idle, registry.obtain("idle"));
        } finally {
            held.unlock();
        }
        Thread.sleep(50);
        registry.expireUnusedOlderThan(10);
        assertEquals(0, registry.size());

        // A lock a thread of the registry waits for stays too, so the waiter and later callers
        // share one instance.
        Lock elsewhere = BatonLockRegistry.builder(b, "cache").build().obtain("wanted");
        elsewhere.lock();
        Lock wanted = registry.obtain("wanted");
        Future<Boolean> waiter = pool.submit(() -> {
            boolean got = wanted.tryLock(10, TimeUnit.SECONDS);
            if (got) {
                wanted.unlock();
            }
            return got;
        });
        try {
            redis.awaitSubscribers("redisson_lock__channel:{cache:wanted}", 1);
            Thread.sleep(50); // older than the age below
            registry.expireUnusedOlderThan(10);
            assertSame(wanted, registry.obtain("wanted"), "kept while a thread waits for it");
        } finally {
            elsewhere.unlock();
        }
        assertTrue(waiter.get(5, TimeUnit.SECONDS), "the waiter got it when the other client released it");
    }

    @Test
    void springIntegrationsLeaderInitiatorElectsOneLeaderAndFailsOver() throws Exception {
        Set<String> leaders = ConcurrentHashMap.newKeySet();
        // Checked at every grant, not in a snapshot: while no leader is being stopped, a grant
        // that finds another leader is two at a time.
        java.util.concurrent.atomic.AtomicBoolean handingOver = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.List<String> twoAtATime = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch firstGranted = new CountDownLatch(1);
        CountDownLatch secondGranted = new CountDownLatch(1);
        CountDownLatch oneRevoked = new CountDownLatch(1);
        CountDownLatch twoRevoked = new CountDownLatch(1);
        LockRegistryLeaderInitiator one = initiator(a, "one", leaders, firstGranted, secondGranted, oneRevoked,
                handingOver, twoAtATime);
        LockRegistryLeaderInitiator two = initiator(b, "two", leaders, firstGranted, secondGranted, twoRevoked,
                handingOver, twoAtATime);
        one.start();
        two.start();
        try {
            assertTrue(firstGranted.await(10, TimeUnit.SECONDS), "a leader was elected");
            Thread.sleep(1000); // several heartbeats (200 ms): the other keeps trying and must not become leader too
            assertEquals(1, leaders.size(), "one leader at a time: " + leaders);
            assertEquals(List.of(), twoAtATime, "no grant while another led");
            String first = leaders.iterator().next();
            String second = first.equals("one") ? "two" : "one";
            handingOver.set(true);
            (first.equals("one") ? one : two).stop();
            assertTrue(secondGranted.await(10, TimeUnit.SECONDS), "the other took over");
            // Spring Integration's selector unlocks first and tells its candidate afterwards, so
            // the new leader may hear of its grant before the old one hears of its revocation.
            assertTrue((first.equals("one") ? oneRevoked : twoRevoked).await(10, TimeUnit.SECONDS),
                    "the stopped leader was revoked");
            assertEquals(Set.of(second), leaders, "one leader at a time");
        } finally {
            one.stop();
            two.stop();
        }
    }

    /**
     * The leader's lock is taken from it (deleted in Redis, as an operator's forceUnlock or a data
     * loss does): the other candidate takes the lock, and the old leader, whose next heartbeat
     * cannot re-acquire it, is revoked (spring-integration#2098's fix, kept with Baton's locks);
     * then one leader stays.
     */
    @Test
    void springIntegrationsLeaderInitiatorRevokesALeaderWhoseLockWasTakenAway() throws Exception {
        Set<String> leaders = ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicBoolean handingOver = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.List<String> twoAtATime = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch firstGranted = new CountDownLatch(1);
        CountDownLatch secondGranted = new CountDownLatch(1);
        CountDownLatch oneRevoked = new CountDownLatch(1);
        CountDownLatch twoRevoked = new CountDownLatch(1);
        LockRegistryLeaderInitiator one = initiator(a, "one", leaders, firstGranted, secondGranted, oneRevoked,
                handingOver, twoAtATime);
        one.start();
        LockRegistryLeaderInitiator two = null;
        try {
            assertTrue(firstGranted.await(10, TimeUnit.SECONDS), "one leads");
            two = initiator(b, "two", leaders, firstGranted, secondGranted, twoRevoked, handingOver, twoAtATime);
            two.start();
            // two's selector asks every 200 ms; a grant while one led would be in twoAtATime.
            Await.until(Duration.ofSeconds(5), () -> "two waiting on the lock", () -> b.lock("leader:batch").hasWaiters());
            assertEquals(List.of(), twoAtATime, "no grant while one led");
            handingOver.set(true);
            assertTrue(b.lock("leader:batch").forceUnlock(), "the leader's lock was there to take away");
            assertTrue(secondGranted.await(10, TimeUnit.SECONDS), "two took the lock over");
            assertTrue(oneRevoked.await(10, TimeUnit.SECONDS), "one, whose lock was taken, was revoked");
            handingOver.set(false);
            assertEquals(Set.of("two"), leaders, "one leader");
        } finally {
            one.stop();
            if (two != null) {
                two.stop();
            }
        }
    }

    private static LockRegistryLeaderInitiator initiator(Baton baton, String id, Set<String> leaders,
                                                         CountDownLatch first, CountDownLatch second,
                                                         CountDownLatch revoked,
                                                         java.util.concurrent.atomic.AtomicBoolean handingOver,
                                                         java.util.List<String> twoAtATime) {
        BatonLockRegistry registry = BatonLockRegistry.builder(baton, "leader").build();
        LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(registry, new DefaultCandidate(id, "batch") {
            @Override
            public void onGranted(Context ctx) {
                leaders.add(id);
                if (leaders.size() > 1 && !handingOver.get()) {
                    twoAtATime.add(id + " granted while " + leaders + " led");
                }
                if (first.getCount() > 0) {
                    first.countDown();
                } else {
                    second.countDown();
                }
            }

            @Override
            public void onRevoked(Context ctx) {
                leaders.remove(id);
                revoked.countDown();
            }
        });
        initiator.setHeartBeatMillis(200);
        initiator.setBusyWaitMillis(200);
        return initiator;
    }
}
