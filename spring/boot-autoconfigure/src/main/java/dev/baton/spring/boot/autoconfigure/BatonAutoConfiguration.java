package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.BatonObserver;
import dev.baton.BatonOptions;
import dev.baton.LeaseLostListener;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.data.redis.RedisProperties;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import java.util.List;
import java.util.function.ObjIntConsumer;
import java.util.function.Supplier;

/**
 * A {@link Baton} client for the application's Redis, in one of two ways:
 * <ul>
 *   <li>on the application's {@link LettuceConnectionFactory} (Spring Data Redis on Lettuce): the
 *       same Lettuce client, so its resources, URIs, Sentinel or Cluster settings, credentials and
 *       TLS, with Baton's own connections opened from it;</li>
 *   <li>without one, when another connection factory serves the application (Redisson's starter
 *       registers its own, an application on Jedis has Jedis's): on a Lettuce client of Baton's
 *       own, made from the application's Redis connection details ({@code spring.data.redis.*}:
 *       host and port, Sentinel or Cluster nodes, database, username and password, client name,
 *       {@code ssl.enabled}; see {@link ConnectionDetailsUris} for what it cannot carry).</li>
 * </ul>
 *
 * <p>The client connects when something first uses it, not when it is injected: a singleton may
 * take {@code Baton} in its constructor and obtain its synchronizers there, and the application
 * still starts while Redis is down (the first call then throws
 * {@link dev.baton.RedisUnavailableException} within the command timeout, and a later call
 * connects once Redis is back). It is closed with the context, before the connection factory. It
 * backs off when the application defines its own {@code Baton} bean, and does nothing without
 * Spring Data Redis's connection details or with {@code baton.enabled=false}. Every
 * {@link LeaseLostListener} and {@link BatonObserver} bean is registered with it, and every
 * {@link BatonOptionsCustomizer} bean may change its options.
 *
 * <p>The same class serves Spring Boot 3.5 and 4.x: what differs between them (the Redis
 * auto-configuration's and connection details' names) is named only in nested configurations
 * that a class condition keeps from loading on the other line.
 */
@AutoConfiguration(afterName = {"org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
        "org.redisson.spring.starter.RedissonAutoConfigurationV4",
        "org.redisson.spring.starter.RedissonAutoConfigurationV2"})
@ConditionalOnClass({Baton.class, LettuceConnectionFactory.class})
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(BatonProperties.class)
public class BatonAutoConfiguration {

    /** On the application's Lettuce connection factory, whose client Baton shares. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnBean(LettuceConnectionFactory.class)
    static class OnTheApplicationsLettuceClient {

        /** Closes the client before the connection factory stops; it depends on the factory for that. */
        @Bean
        @ConditionalOnMissingBean(Baton.class)
        BatonLifecycle batonLifecycle(LettuceConnectionFactory connectionFactory) {
            return new BatonLifecycle();
        }

        /**
         * The client, which connects on first use (see the class comment).
         *
         * <p>Its first use throws {@link IllegalStateException} if the connection factory's
         * client is neither a {@link RedisClient} nor a {@link RedisClusterClient}.
         */
        @Bean(destroyMethod = "close")
        @Lazy
        @ConditionalOnMissingBean(Baton.class)
        public Baton baton(LettuceConnectionFactory connectionFactory, BatonLifecycle lifecycle, BatonProperties properties,
                           ObjectProvider<BatonOptionsCustomizer> customizers,
                           ObjectProvider<LeaseLostListener> leaseLostListeners,
                           ObjectProvider<BatonObserver> observers) {
            BatonOptions options = options(properties.apply(BatonOptions.builder()), customizers, leaseLostListeners, observers);
            return new LazyBaton(options, () -> lifecycle.created(open(connectionFactory, options)));
        }

        private static Baton open(LettuceConnectionFactory connectionFactory, BatonOptions options) {
            AbstractRedisClient client = connectionFactory.getRequiredNativeClient();
            if (client instanceof RedisClusterClient cluster) {
                return Baton.create(cluster, options);
            }
            if (client instanceof RedisClient standalone) {
                return Baton.create(standalone, options);
            }
            throw new IllegalStateException("Baton needs a Lettuce RedisClient or RedisClusterClient, but the connection "
                    + "factory's client is a " + client.getClass().getName());
        }
    }

    /**
     * Without a Lettuce connection factory (Redisson's starter, Jedis), on Spring Boot 4: a Lettuce
     * client of Baton's own from the application's Redis connection details, shut down with Baton.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails")
    @ConditionalOnMissingBean(LettuceConnectionFactory.class)
    @ConditionalOnBean(type = "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails")
    static class OnItsOwnLettuceClient {

        @Bean
        @ConditionalOnMissingBean(Baton.class)
        BatonLifecycle batonLifecycle() {
            return new BatonLifecycle();
        }

        /**
         * The client, which connects on first use (see the class comment); its first use throws
         * {@link IllegalStateException} for connection details it cannot carry.
         */
        @Bean(destroyMethod = "close")
        @Lazy
        @ConditionalOnMissingBean(Baton.class)
        public Baton baton(DataRedisConnectionDetails details, ObjectProvider<DataRedisProperties> redisProperties,
                           BatonLifecycle lifecycle, BatonProperties properties,
                           ObjectProvider<BatonOptionsCustomizer> customizers,
                           ObjectProvider<LeaseLostListener> leaseLostListeners,
                           ObjectProvider<BatonObserver> observers) {
            DataRedisProperties redis = redisProperties.getIfAvailable(DataRedisProperties::new);
            return ownClient(() -> Boot4RedisDetails.of(details, redis), lifecycle,
                    options(properties.apply(BatonOptions.builder()), customizers, leaseLostListeners, observers));
        }
    }

    /** The same as {@link OnItsOwnLettuceClient}, on Spring Boot 3.5's connection details. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails")
    @ConditionalOnMissingBean(LettuceConnectionFactory.class)
    @ConditionalOnBean(type = "org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails")
    static class OnItsOwnLettuceClientBoot3 {

        @Bean
        @ConditionalOnMissingBean(Baton.class)
        BatonLifecycle batonLifecycle() {
            return new BatonLifecycle();
        }

        /** The client, as {@link OnItsOwnLettuceClient#baton} makes it. */
        @Bean(destroyMethod = "close")
        @Lazy
        @ConditionalOnMissingBean(Baton.class)
        public Baton baton(RedisConnectionDetails details, ObjectProvider<RedisProperties> redisProperties,
                           BatonLifecycle lifecycle, BatonProperties properties,
                           ObjectProvider<BatonOptionsCustomizer> customizers,
                           ObjectProvider<LeaseLostListener> leaseLostListeners,
                           ObjectProvider<BatonObserver> observers) {
            RedisProperties redis = redisProperties.getIfAvailable(RedisProperties::new);
            return ownClient(() -> Boot3RedisDetails.of(details, redis), lifecycle,
                    options(properties.apply(BatonOptions.builder()), customizers, leaseLostListeners, observers));
        }
    }

    /** A client, created on first use, on a Lettuce client of its own for the given details. */
    private static Baton ownClient(Supplier<ConnectionDetailsUris.Details> details, BatonLifecycle lifecycle,
                                   BatonOptions options) {
        return new LazyBaton(options, () -> {
            ConnectionDetailsUris uris = ConnectionDetailsUris.of(details.get());
            return lifecycle.created(Baton.create(options.toBuilder().redisUris(uris.uris()).cluster(uris.cluster()).build()));
        });
    }

    /** The options from the properties, every listener, observer and customizer bean. */
    private static BatonOptions options(BatonOptions.Builder builder, ObjectProvider<BatonOptionsCustomizer> customizers,
                                        ObjectProvider<LeaseLostListener> leaseLostListeners,
                                        ObjectProvider<BatonObserver> observers) {
        // Built when the bean is created, so that a wrong property fails the start, not the first use.
        List<LeaseLostListener> listeners = leaseLostListeners.orderedStream().toList();
        if (!listeners.isEmpty()) {
            builder.leaseLostListener(listeners.size() == 1 ? listeners.get(0) : new LeaseLostListeners(listeners));
        }
        List<BatonObserver> observerList = observers.orderedStream().toList();
        if (!observerList.isEmpty()) {
            builder.observer(observerList.size() == 1 ? observerList.get(0) : new BatonObservers(observerList));
        }
        customizers.orderedStream().forEach(c -> c.customize(builder));
        return builder.build();
    }

    /**
     * Calls {@code call} for each of {@code targets} in order (with its index), whatever the
     * others throw; returns {@code first} with every failure added to it (the first failure becomes
     * it if there was none), or null if nothing failed.
     */
    private static <T> RuntimeException tellEach(List<T> targets, RuntimeException first, ObjIntConsumer<T> call) {
        for (int i = 0; i < targets.size(); i++) {
            try {
                call.accept(targets.get(i), i);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        return first;
    }

    private static void throwIfAny(RuntimeException failure) {
        if (failure != null) {
            throw failure;
        }
    }

    /** Every lease-lost listener bean, each told in order; one that throws does not stop the rest. */
    static final class LeaseLostListeners implements LeaseLostListener {
        private final List<LeaseLostListener> listeners;

        LeaseLostListeners(List<LeaseLostListener> listeners) {
            this.listeners = List.copyOf(listeners);
        }

        @Override
        public void leaseLost(String lockName, String ownerId, String reason) {
            throwIfAny(tellEach(listeners, null, (listener, i) -> listener.leaseLost(lockName, ownerId, reason)));
        }
    }

    /** Every observer bean, each told in order; one that throws does not stop the rest. */
    static final class BatonObservers implements BatonObserver {
        private final List<BatonObserver> observers;

        BatonObservers(List<BatonObserver> observers) {
            this.observers = List.copyOf(observers);
        }

        /** What each observer's start returned, and the first failure of a start. */
        private record Started(Object[] each, RuntimeException failure) {
        }

        /**
         * Each observer's own start, in order; their ends get them back. A start that throws does
         * not keep the others from starting (or ending): its exception is thrown at the end, where
         * Baton logs it.
         */
        @Override
        public Object acquisitionStarted(Kind kind, String name) {
            Object[] started = new Object[observers.size()];
            RuntimeException failure = tellEach(observers, null, (o, i) -> started[i] = o.acquisitionStarted(kind, name));
            return new Started(started, failure);
        }

        @Override
        public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos, Object started) {
            Started s = started instanceof Started known ? known : new Started(new Object[observers.size()], null);
            throwIfAny(tellEach(observers, s.failure(),
                    (o, i) -> o.acquisitionEnded(kind, name, outcome, waitedNanos, s.each()[i])));
        }

        @Override
        public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos) {
            acquisitionEnded(kind, name, outcome, waitedNanos, null);
        }

        @Override
        public void released(Kind kind, String name, long heldNanos) {
            throwIfAny(tellEach(observers, null, (o, i) -> o.released(kind, name, heldNanos)));
        }

        @Override
        public void leaseLost(String name, LossCause cause) {
            throwIfAny(tellEach(observers, null, (o, i) -> o.leaseLost(name, cause)));
        }

        @Override
        public void renewal(int leases, boolean succeeded, long tookNanos) {
            throwIfAny(tellEach(observers, null, (o, i) -> o.renewal(leases, succeeded, tookNanos)));
        }
    }
}
