package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostListener;
import dev.baton.micrometer.BatonMetrics;
import dev.baton.shedlock.BatonLockProvider;
import dev.baton.spring.integration.BatonLockRegistry;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import net.javacrumbs.shedlock.core.LockProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The auto-configuration in application contexts on a real Redis. */
@ExtendWith(RedisExtension.class)
class BatonAutoConfigurationTest {
    private final RedisServer redis;
    private ApplicationContextRunner runner;

    BatonAutoConfigurationTest(RedisServer redis) {
        this.redis = redis;
    }

    @BeforeEach
    void runner() {
        redis.command("FLUSHALL");
        runner = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(BootLine.redisAutoConfiguration(), BatonAutoConfiguration.class,
                        BatonMetricsAutoConfiguration.class, BatonHealthAutoConfiguration.class,
                        BatonIntegrationAutoConfiguration.class, BatonShedLockAutoConfiguration.class,
                        BatonEndpointAutoConfiguration.class, BatonLeaderAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port());
    }

    /**
     * With baton.leader.election set, the application is a candidate: a Granted event when it is
     * elected (its epoch on it), a Revoked event with the reason when leadership ends, relinquish()
     * hands on (alone, it is granted again), and closing the context leaves the election.
     */
    @Test
    void aLeaderBeanJoinsTheElectionAndPublishesGrantedAndRevokedEvents() {
        runner.withPropertyValues("baton.leader.election=nightly", "spring.application.name=billing")
                .withBean(LeaderEvents.class).run(context -> {
                    BatonLeader leader = context.getBean(BatonLeader.class);
                    LeaderEvents events = context.getBean(LeaderEvents.class);
                    assertTrue(leader.getIdentity().startsWith("billing@"), leader.getIdentity());
                    dev.baton.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> "granted", () -> events.granted.size() == 1);
                    assertTrue(leader.isLeader());
                    assertEquals(leader.getLeadership().orElseThrow().epoch(), events.granted.get(0).getLeadership().epoch());
                    assertTrue(leader.relinquish());
                    dev.baton.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> "revoked and granted again",
                            () -> events.revoked.size() == 1 && events.granted.size() == 2);
                    assertEquals(dev.baton.LeadershipListener.Revocation.RELINQUISHED, events.revoked.get(0).getWhy());
                    Baton baton = context.getBean(Baton.class);
                    assertEquals(leader.getIdentity(), baton.leaderElection("nightly").state().leader().orElseThrow().identity());
                    context.stop();
                    assertEquals(dev.baton.LeadershipListener.Revocation.CLOSED, events.revoked.get(1).getWhy());
                    try (Baton another = Baton.create(dev.baton.BatonOptions.create(redis.uri()))) {
                        assertTrue(another.leaderElection("nightly").state().leader().isEmpty(), "the stopped application left");
                    }
                });
        runner.run(context -> assertTrue(context.getBeansOfType(BatonLeader.class).isEmpty(), "no election named: no candidacy"));
    }

    /** Collects the leader events, as an application's @EventListener methods would. */
    static final class LeaderEvents {
        final List<BatonLeader.Granted> granted = new CopyOnWriteArrayList<>();
        final List<BatonLeader.Revoked> revoked = new CopyOnWriteArrayList<>();

        @org.springframework.context.event.EventListener
        void on(BatonLeader.Granted event) {
            granted.add(event);
        }

        @org.springframework.context.event.EventListener
        void on(BatonLeader.Revoked event) {
            revoked.add(event);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void theActuatorEndpointListsTheLeasesOfThisInstanceWithoutCreatingTheClient() {
        runner.run(context -> assertTrue(context.getBeansOfType(BatonEndpoint.class).isEmpty(), "not exposed: no endpoint"));
        runner.withPropertyValues("management.endpoints.web.exposure.include=baton").run(context -> {
            BatonEndpoint endpoint = context.getBean(BatonEndpoint.class);
            assertEquals(false, endpoint.leases().get("created"));
            assertFalse(context.getBeanFactory().containsSingleton("baton"), "reading the endpoint does not create the client");
            Baton baton = context.getBean(Baton.class);
            BatonLock lock = baton.lock("settlement");
            lock.lock();
            try {
                Map<String, Object> body = endpoint.leases();
                assertEquals(baton.clientId(), body.get("clientId"));
                List<Map<String, Object>> leases = (List<Map<String, Object>>) body.get("leases");
                assertEquals(1, leases.size(), String.valueOf(body));
                assertEquals("settlement", leases.get(0).get("name"));
                assertEquals(baton.clientId() + ":" + Thread.currentThread().getId(), leases.get(0).get("owner"));
                assertEquals(true, leases.get(0).get("watchdog"));
                assertEquals(1, leases.get(0).get("holds"));
            } finally {
                lock.unlock();
            }
            assertEquals(List.of(), endpoint.leases().get("leases"));
        });
    }

    private long connectionsNamed(String name) {
        String list = String.valueOf(redis.command("CLIENT", "LIST"));
        return list.lines().filter(line -> line.contains(" name=" + name + " ")).count();
    }

    @Test
    void aLazyBatonBeanOnTheApplicationsLettuceClientClosedWithTheContext() {
        runner.withPropertyValues("spring.data.redis.client-name=orders-service").run(context -> {
            assertFalse(context.getBeanFactory().containsSingleton("baton"), "not created before it is used");
            long before = connectionsNamed("orders-service");
            Baton baton = context.getBean(Baton.class);
            BatonLock lock = baton.lock("invoice-7");
            lock.lock();
            try {
                assertEquals(1L, redis.command("EXISTS", "invoice-7"));
            } finally {
                lock.unlock();
            }
            assertTrue(connectionsNamed("orders-service") > before,
                    "Baton's connections come from the application's client (they carry its client name)");
        });
        Await.until(Duration.ofSeconds(5), () -> "Baton's connections closed with the context",
                () -> connectionsNamed("orders-service") == 0);
    }

    @Test
    void aStoppedContextClosesTheClientForGood() {
        runner.run(context -> {
            BatonLock lock = context.getBean(Baton.class).lock("k");
            lock.lock();
            lock.unlock();
            context.getSourceApplicationContext(ConfigurableApplicationContext.class).stop();
            context.getSourceApplicationContext(ConfigurableApplicationContext.class).start();
            assertThrows(IllegalStateException.class, () -> context.getBean(Baton.class).lock("k").lock(),
                    "closed when the context stopped, not reopened by a start");
        });
        runner.run(context -> {
            context.getSourceApplicationContext(ConfigurableApplicationContext.class).stop();
            // First used after the context stopped: the stopped connection factory refuses it.
            Exception refused = assertThrows(Exception.class, () -> context.getBean(Baton.class).lock("k").lock());
            Throwable cause = refused;
            while (!(cause instanceof IllegalStateException) && cause.getCause() != null) {
                cause = cause.getCause();
            }
            assertInstanceOf(IllegalStateException.class, cause, String.valueOf(refused));
        });
    }

    /** Ordinary application code: Baton taken in a constructor, and its synchronizers got there. */
    static final class ExportService {
        final BatonLock lock;
        final dev.baton.BatonSemaphore permits;
        final dev.baton.BatonReadWriteLock table;
        final dev.baton.BatonLock tableWrites;
        final dev.baton.BatonRateLimiter rate;

        ExportService(Baton baton) {
            this.lock = baton.lock("exports");
            this.permits = baton.semaphore("export-permits");
            this.table = baton.readWriteLock("export-table");
            this.tableWrites = table.writeLock();
            this.rate = baton.rateLimiter("export-rate", dev.baton.RateLimit.perSecond(10));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ExportServiceConfig {
        @Bean
        ExportService exportService(Baton baton) {
            return new ExportService(baton);
        }
    }

    /**
     * A singleton that takes Baton in its constructor and gets its synchronizers there starts
     * while Redis refuses connections; its first call fails within the bound of opening a client
     * (the command timeout, at least 3 s for a JVM's first client, + 150 ms), and once Redis accepts connections the same objects work, on one
     * client. Before the client connected on first use, this context failed to start
     * (UnsatisfiedDependencyException ← RedisUnavailableException: cannot connect).
     */
    @Test
    void aSingletonThatTakesBatonInItsConstructorStartsWhileRedisIsDown() {
        try (dev.baton.testkit.TcpProxy proxy = dev.baton.testkit.TcpProxy.start(redis.host(), redis.port())) {
            proxy.setRefuse(true);
            runner.withUserConfiguration(ExportServiceConfig.class)
                    .withPropertyValues("spring.data.redis.port=" + proxy.port(), "baton.command-timeout=1s")
                    .run(context -> {
                        assertTrue(context.isRunning(), "started with Redis refusing connections: " + context.getStartupFailure());
                        ExportService service = context.getBean(ExportService.class);
                        assertEquals("exports", service.lock.getName(), "a name needs no connection");
                        // Opening's bound: the command timeout, at least 3 s for a JVM's first client.
                        Bounds.assertThrowsWithin(dev.baton.RedisUnavailableException.class, Bounds.failure(Duration.ofSeconds(3)),
                                () -> service.lock.tryLock(), "the first call while Redis refuses");
                        assertEquals(0, context.getBean(Baton.class).leasesHeld(), "nothing held, nothing opened");

                        proxy.setRefuse(false);
                        assertTrue(service.lock.tryLock(), "the same lock, once Redis accepts connections");
                        assertEquals(1L, redis.command("EXISTS", "exports"));
                        service.lock.unlock();
                        assertTrue(service.permits.trySetPermits(2));
                        assertTrue(service.permits.tryAcquire());
                        service.permits.release();
                        service.tableWrites.lock();
                        assertTrue(service.table.writeLock().isHeldByCurrentThread());
                        service.tableWrites.unlock();
                        assertTrue(service.rate.tryAcquire(), "the rate limiter got in the constructor");
                        assertEquals(dev.baton.RateLimit.perSecond(10), service.rate.state().limit());
                        Baton baton = context.getBean(Baton.class);
                        assertEquals(baton.clientId(), baton.clientId(), "one client behind every view");
                        assertEquals(0L, redis.command("EXISTS", "exports", "export-table"));
                    });
        }
    }

    @Test
    void aStaticMasterReplicaFactoryIsRefusedByName() {
        BootLine.requireBoot4("Boot 3.5 has no static master/replica setup (spring.data.redis.masterreplica.*)");
        runner.withPropertyValues("spring.data.redis.masterreplica.nodes=" + redis.host() + ":" + redis.port())
                .run(context -> {
                    assertTrue(context.isRunning(), "the application starts: the client is lazy");
                    // Refused on first use, when the client connects.
                    Exception refused = assertThrows(Exception.class, () -> context.getBean(Baton.class).lock("k").tryLock());
                    Throwable cause = refused;
                    while (!(cause instanceof IllegalArgumentException) && cause.getCause() != null) {
                        cause = cause.getCause();
                    }
                    assertInstanceOf(IllegalArgumentException.class, cause, String.valueOf(refused));
                    assertTrue(cause.getMessage().contains("URI"), cause.getMessage());
                });
    }

    @Test
    void theHealthIndicatorIsTheLinesOwnAndTurnsOffByProperty() {
        runner.run(context -> {
            assertInstanceOf(BootLine.healthIndicatorType(), context.getBean("batonHealthIndicator"),
                    "this Boot line's health contract");
            assertEquals(1, context.getBeansOfType(BatonLeaseLosses.class).size());
        });
        runner.withPropertyValues("management.health.baton.enabled=false").run(context -> {
            assertFalse(context.containsBean("batonHealthIndicator"), "management.health.baton.enabled=false");
            assertTrue(context.getBeansOfType(BatonLeaseLosses.class).isEmpty());
        });
        runner.withPropertyValues("management.health.defaults.enabled=false")
                .run(context -> assertFalse(context.containsBean("batonHealthIndicator"), "management.health.defaults.enabled=false"));
    }

    /** A runner with only the Redis and Baton auto-configuration, on whatever {@code properties} name. */
    private static ApplicationContextRunner onlyRedisAndBaton(String... properties) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(BootLine.redisAutoConfiguration(), BatonAutoConfiguration.class))
                .withPropertyValues(properties);
    }

    /** Takes and releases {@code name} through the context's Baton, checking the key in Redis while held. */
    private static void lockThrough(org.springframework.context.ApplicationContext context, String name,
                                    java.util.function.Supplier<Object> exists) {
        BatonLock lock = context.getBean(Baton.class).lock(name);
        lock.lock();
        try {
            assertEquals(1L, exists.get(), "the lock's key is where the application's Redis settings point");
        } finally {
            lock.unlock();
        }
    }

    @Test
    void theFactorysPasswordSentinelAndClusterSettingsAreBatonsToo() {
        // Credentials: a user that may only touch its own keys, and Baton's commands.
        redis.command("ACL", "SETUSER", "orders", "on", ">s3cret", "~*orders:*", "&*", "+@all");
        try {
            onlyRedisAndBaton("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(),
                    "spring.data.redis.username=orders", "spring.data.redis.password=s3cret")
                    .run(context -> {
                        lockThrough(context, "orders:7", () -> redis.command("EXISTS", "orders:7"));
                        // Redis's default user could take any key: this one is refused, so Baton
                        // talks to Redis as the application's user.
                        dev.baton.BatonException refused = assertThrows(dev.baton.BatonException.class,
                                () -> context.getBean(Baton.class).lock("payments:7").tryLock());
                        assertTrue(refused.getMessage().contains("NOPERM")
                                || refused.getMessage().contains("no permissions"), refused.getMessage());
                    });
        } finally {
            redis.command("ACL", "DELUSER", "orders");
        }
        try (dev.baton.testkit.RedisSentinelGroup group = dev.baton.testkit.RedisSentinelGroup.start(0, 1)) {
            RedisServer sentinel = group.sentinels().get(0);
            onlyRedisAndBaton("spring.data.redis.sentinel.master=" + group.masterName(),
                    "spring.data.redis.sentinel.nodes=" + sentinel.host() + ":" + sentinel.port())
                    .run(context -> lockThrough(context, "through-sentinel",
                            () -> group.master().command("EXISTS", "through-sentinel")));
        }
        try (dev.baton.testkit.RedisClusterGroup cluster = dev.baton.testkit.RedisClusterGroup.start(3, 0)) {
            String nodes = String.join(",", cluster.nodes().stream().map(n -> n.host() + ":" + n.port()).toList());
            onlyRedisAndBaton("spring.data.redis.cluster.nodes=" + nodes).run(context -> {
                long slot = (Long) cluster.nodes().get(0).command("CLUSTER", "KEYSLOT", "in-cluster");
                lockThrough(context, "in-cluster", () -> cluster.ownerOf((int) slot).command("EXISTS", "in-cluster"));
            });
        }
    }

    /** Something that stops in a phase, as a web server's graceful shutdown or a leader initiator does. */
    static final class Worker implements org.springframework.context.SmartLifecycle {
        private final Baton baton;
        private BatonLock held;
        volatile String stopped;
        private volatile boolean running;

        Worker(Baton baton) {
            this.baton = baton;
        }

        @Override
        public void start() {
            held = baton.lock("worker-job");
            held.lock();
            running = true;
        }

        @Override
        public void stop() {
            try {
                held.unlock();
                stopped = "released";
            } catch (RuntimeException e) {
                stopped = e.toString();
            }
            running = false;
        }

        @Override
        public boolean isRunning() {
            return running;
        }

        /** The phase of a web server's graceful shutdown in Spring Boot. */
        @Override
        public int getPhase() {
            return Integer.MAX_VALUE - 1024;
        }
    }

    @Configuration
    static class WorkerConfig {
        static Worker last;

        @Bean
        Worker worker(Baton baton) {
            last = new Worker(baton);
            return last;
        }
    }

    @Test
    void theClientClosesAfterThePhasedShutdownOfWhatUsesIt() {
        runner.withUserConfiguration(WorkerConfig.class).run(context -> {
            assertTrue(WorkerConfig.last.isRunning());
            assertEquals(1L, redis.command("EXISTS", "worker-job"), "held while the context runs");
        });
        assertEquals("released", WorkerConfig.last.stopped, "the worker stopped (in the graceful-shutdown phase) with the client still open");
        assertEquals(0L, redis.command("EXISTS", "worker-job"), "so its lock was released, not left to expire");
    }

    @Test
    void everyOptionIsAPropertyAndCustomizersRunAfterThem() {
        runner.withPropertyValues("baton.command-timeout=1500ms", "baton.watchdog-timeout=12s",
                        "baton.renewal-batch-size=40", "baton.fair-lock-waiter-timeout=4s",
                        "baton.clock-drift-allowance=0.05", "baton.replica-sync.replicas=1", "baton.replica-sync.timeout=250ms",
                        "baton.replica-sync.failure=accept")
                .withBean(BatonOptionsCustomizer.class, () -> b -> b.renewalBatchSize(7))
                .run(context -> {
                    BatonOptions options = context.getBean(Baton.class).options();
                    assertEquals(Duration.ofMillis(1500), options.commandTimeout());
                    assertEquals(Duration.ofSeconds(12), options.watchdogTimeout());
                    assertEquals(7, options.renewalBatchSize(), "the customizer runs after the properties");
                    assertEquals(Duration.ofSeconds(4), options.fairLockWaiterTimeout());
                    assertEquals(0.05, options.clockDriftAllowance());
                    assertEquals(1, options.replicaSyncReplicas());
                    assertEquals(Duration.ofMillis(250), options.replicaSyncTimeout());
                    assertEquals(BatonOptions.ReplicaSyncFailure.ACCEPT, options.replicaSyncFailure());
                });
        runner.run(context -> {
            BatonOptions options = context.getBean(Baton.class).options();
            assertEquals(BatonOptions.DEFAULT_COMMAND_TIMEOUT, options.commandTimeout(), "unset: Baton's default");
            assertEquals(BatonOptions.DEFAULT_WATCHDOG_TIMEOUT, options.watchdogTimeout());
        });
        runner.withPropertyValues("baton.fair-lock-waiter-timeout=100ms").run(context -> {
            Throwable failure = assertThrows(Exception.class, () -> context.getBean(Baton.class));
            while (failure.getCause() != null) {
                failure = failure.getCause();
            }
            assertTrue(failure.getMessage().contains("fairLockWaiterTimeout"), failure.getMessage());
        });
    }

    @Test
    void theConfigurationMetadataListsEveryOption() throws IOException {
        String metadata;
        try (InputStream in = BatonProperties.class.getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertNotNull(in, "metadata generated by the configuration processor");
            metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        for (String name : List.of("baton.enabled", "baton.command-timeout", "baton.watchdog-timeout",
                "baton.renewal-batch-size", "baton.fair-lock-waiter-timeout", "baton.clock-drift-allowance", "baton.replica-sync.replicas",
                "baton.replica-sync.timeout", "baton.replica-sync.failure", "baton.metrics.enabled",
                "baton.metrics.tag-names", "baton.integration.registry-key", "baton.integration.fair",
                "baton.integration.lease-time", "baton.shedlock.key-prefix", "baton.leader.election", "baton.leader.identity")) {
            assertTrue(metadata.contains("\"name\": \"" + name + "\""), name + " in " + metadata);
        }
        // The IDE shows each default: Baton's own for the options the properties leave unset.
        Map<String, String> defaults = Map.of(
                "baton.command-timeout", "\"" + BatonOptions.DEFAULT_COMMAND_TIMEOUT.toSeconds() + "s\"",
                "baton.watchdog-timeout", "\"" + BatonOptions.DEFAULT_WATCHDOG_TIMEOUT.toSeconds() + "s\"",
                "baton.renewal-batch-size", Integer.toString(BatonOptions.DEFAULT_RENEWAL_BATCH_SIZE),
                "baton.fair-lock-waiter-timeout", "\"" + BatonOptions.DEFAULT_FAIR_LOCK_WAITER_TIMEOUT.toSeconds() + "s\"",
                "baton.replica-sync.timeout", "\"1s\"", "baton.integration.registry-key", "\"lock-registry\"",
                "baton.shedlock.key-prefix", "\"shedlock:\"", "baton.enabled", "true");
        for (Map.Entry<String, String> expected : defaults.entrySet()) {
            java.util.regex.Matcher entry = java.util.regex.Pattern.compile("\\{[^{}]*\"name\": \""
                    + java.util.regex.Pattern.quote(expected.getKey()) + "\"[^{}]*}").matcher(metadata);
            assertTrue(entry.find(), expected.getKey() + " in " + metadata);
            assertTrue(entry.group().contains("\"defaultValue\": " + expected.getValue()),
                    expected.getKey() + " shows its default " + expected.getValue() + ": " + entry.group());
        }
    }

    @Configuration
    static class OwnBaton {
        static Baton created;

        @Bean(destroyMethod = "close")
        Baton myBaton() {
            created = Baton.create(BatonOptions.builder().redisUri(redis().uri()).build());
            return created;
        }

        static RedisServer server;

        static RedisServer redis() {
            return server;
        }
    }

    @Test
    void backsOffWhenTheApplicationHasItsOwnBatonOrNoLettuce() {
        OwnBaton.server = redis;
        runner.withUserConfiguration(OwnBaton.class).run(context -> {
            assertSame(OwnBaton.created, context.getBean(Baton.class));
            assertInstanceOf(BatonLockRegistry.class, context.getBean(LockRegistry.class), "integrations use it");
            BootLine.Health health = BootLine.health(context);
            assertEquals("UP", health.status(), String.valueOf(health));
            assertFalse(health.details().containsKey("leasesLostRecently"),
                    "no loss count that the application's own client never feeds: " + health);
        });
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(BatonAutoConfiguration.class, BatonHealthAutoConfiguration.class,
                        BatonIntegrationAutoConfiguration.class, BatonShedLockAutoConfiguration.class))
                .run(context -> {
                    assertFalse(context.containsBean("baton"), "no Redis connection factory: no Baton");
                    assertTrue(context.getBeansOfType(LockRegistry.class).isEmpty());
                    assertTrue(context.getBeansOfType(LockProvider.class).isEmpty());
                });
        runner.withPropertyValues("baton.enabled=false")
                .run(context -> assertTrue(context.getBeansOfType(Baton.class).isEmpty(), "baton.enabled=false"));

        // The application's own Baton and no Lettuce factory (an application on Jedis), without
        // baton-micrometer's configuration: the integrations still get their properties.
        ApplicationContextRunner ownOnly = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(BatonAutoConfiguration.class, BatonHealthAutoConfiguration.class,
                        BatonIntegrationAutoConfiguration.class, BatonShedLockAutoConfiguration.class,
                        BatonMetricsAutoConfiguration.class))
                .withUserConfiguration(OwnBaton.class);
        ownOnly.withClassLoader(new org.springframework.boot.test.context.FilteredClassLoader(BatonMetrics.class))
                .withPropertyValues("baton.shedlock.key-prefix=jobs:")
                .run(context -> {
                    assertFalse(context.getStartupFailure() != null, () -> "starts: " + context.getStartupFailure());
                    assertSame(OwnBaton.created, context.getBean(Baton.class));
                    assertInstanceOf(BatonLockRegistry.class, context.getBean(LockRegistry.class));
                    assertInstanceOf(BatonLockProvider.class, context.getBean(LockProvider.class));
                    assertTrue(context.getBeansOfType(BatonMetrics.class).isEmpty(), "no baton-micrometer");
                });
        // baton.enabled=false: nothing of Baton's, beside the application's own client.
        ownOnly.withPropertyValues("baton.enabled=false").run(context -> {
            assertSame(OwnBaton.created, context.getBean(Baton.class));
            assertTrue(context.getBeansOfType(LockRegistry.class).isEmpty(), "no registry");
            assertTrue(context.getBeansOfType(LockProvider.class).isEmpty(), "no ShedLock provider");
            assertTrue(context.getBeansOfType(BootLine.healthIndicatorType()).isEmpty(), "no health indicator");
            assertTrue(context.getBeansOfType(BatonMetrics.class).isEmpty(), "no meters");
        });
    }

    @Test
    void leaseLostListenerBeansAreToldAndTheLossShowsInHealthAndMetrics() {
        List<String> first = new CopyOnWriteArrayList<>();
        List<String> second = new CopyOnWriteArrayList<>();
        List<String> observed = new CopyOnWriteArrayList<>();
        runner.withConfiguration(AutoConfigurations.of(BootLine.metricsAutoConfigurations()))
                .withPropertyValues("baton.watchdog-timeout=600ms", "baton.metrics.tag-names=payroll")
                .withBean("first", LeaseLostListener.class, () -> (name, owner, reason) -> first.add(name))
                .withBean("second", LeaseLostListener.class, () -> (name, owner, reason) -> second.add(name))
                .withBean(ObservationRegistry.class, () -> {
                    ObservationRegistry observations = ObservationRegistry.create();
                    observations.observationConfig().observationHandler(new ObservationHandler<>() {
                        @Override
                        public boolean supportsContext(Observation.Context context) {
                            return true;
                        }

                        @Override
                        public void onStop(Observation.Context context) {
                            observed.add(context.getName() + " " + context.getContextualName());
                        }
                    });
                    return observations;
                })
                .run(context -> {
                    Baton baton = context.getBean(Baton.class);
                    BatonLock lock = baton.lock("payroll");
                    lock.lock();
                    redis.command("DEL", "payroll");
                    Await.until(Duration.ofSeconds(3), () -> "both listeners told", () -> first.size() == 1 && second.size() == 1);
                    assertEquals(List.of("payroll"), first);
                    assertThrows(IllegalMonitorStateException.class, lock::unlock);

                    BootLine.Health health = BootLine.health(context);
                    assertEquals("UP", health.status(), String.valueOf(health));
                    assertEquals(1, health.details().get("leasesLostRecently"), String.valueOf(health));
                    assertTrue(String.valueOf(health.details().get("lastLeaseLost")).contains("'payroll' (GONE)"));

                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertEquals(1.0, registry.get("baton.leases.lost").tag("name", "payroll").counter().count());
                    assertEquals(1L, registry.get("baton.acquisitions").tag("name", "payroll")
                            .tag("outcome", "acquired").timer().count());
                    assertEquals(0.0, registry.get("baton.leases.held").gauge().value(), "the gauge follows the bean");
                    assertNotNull(context.getBean(BatonMetrics.class));
                    assertEquals(List.of("baton.acquire baton acquire lock"), observed, "the acquisition observed");
                });
    }

    @Test
    void healthIsUpWithDetailsAndDownWithinTheCommandTimeoutWhenRedisIsUnreachable() throws Exception {
        runner.run(context -> {
            BootLine.Health health = BootLine.health(context);
            assertEquals("UP", health.status(), String.valueOf(health));
            assertEquals(0, health.details().get("leasesHeld"));
            assertEquals(0, health.details().get("leasesLostRecently"));
        });
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        Duration bound = Bounds.within(Duration.ofSeconds(1));
        runner.withPropertyValues("spring.data.redis.port=" + closedPort, "baton.command-timeout=1s").run(context -> {
            assertTrue(context.isRunning(), "the application starts while Redis is down: the client is lazy");
            assertDownWithin(context.getBean("batonHealthIndicator"), bound, "nothing listening");
        });
        try (RedisServer paused = RedisServer.start()) {
            paused.pause();
            try {
                runner.withPropertyValues("spring.data.redis.port=" + paused.port(), "baton.command-timeout=1s")
                        .run(context -> assertDownWithin(context.getBean("batonHealthIndicator"), bound,
                                "a paused Redis, before the client was created"));
            } finally {
                paused.resume();
            }
            runner.withPropertyValues("spring.data.redis.port=" + paused.port(), "baton.command-timeout=1s").run(context -> {
                Object indicator = context.getBean("batonHealthIndicator");
                assertEquals("UP", BootLine.health(indicator).status());
                paused.pause();
                try {
                    assertDownWithin(indicator, bound, "a paused Redis, after the client was created");
                } finally {
                    paused.resume();
                }
            });
        }
    }

    private static void assertDownWithin(Object indicator, Duration bound, String what) {
        long start = System.nanoTime();
        BootLine.Health health = BootLine.health(indicator);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertEquals("DOWN", health.status(), what + ": " + health);
        assertTrue(tookMs <= bound.toMillis(), what + ": DOWN within the command timeout + margin ("
                + bound.toMillis() + " ms), took " + tookMs + " ms");
    }

    @Test
    void theLockRegistryAndTheShedLockProviderAreBeansUnlessTheApplicationHasItsOwn() {
        runner.withPropertyValues("baton.integration.registry-key=orders", "baton.shedlock.key-prefix=jobs:")
                .run(context -> {
                    assertFalse(context.getBeanFactory().containsSingleton("baton"), "the beans do not create the client");
                    // The registry as BatonLockRegistry: Spring Integration 7's LockRegistry is generic, 6.5's is not.
                    BatonLockRegistry registry = context.getBean(BatonLockRegistry.class);
                    assertSame(registry, context.getBean(LockRegistry.class));
                    java.util.concurrent.locks.Lock lock = registry.obtain("o-1");
                    lock.lock();
                    try {
                        assertEquals(1L, redis.command("EXISTS", "orders:o-1"));
                    } finally {
                        lock.unlock();
                    }
                    LockProvider provider = context.getBean(LockProvider.class);
                    assertInstanceOf(BatonLockProvider.class, provider);
                    Optional<net.javacrumbs.shedlock.core.SimpleLock> job = provider.lock(
                            new net.javacrumbs.shedlock.core.LockConfiguration(java.time.Instant.now(), "nightly",
                                    Duration.ofSeconds(10), Duration.ZERO));
                    assertTrue(job.isPresent());
                    assertEquals(1L, redis.command("EXISTS", "jobs:nightly"));
                    job.get().unlock();
                });
        LockProvider own = configuration -> Optional.empty();
        runner.withBean(LockProvider.class, () -> own)
                .run(context -> assertSame(own, context.getBean(LockProvider.class)));
    }
}
