package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.micrometer.BatonMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Baton's Micrometer meters, when {@code baton-micrometer} and Micrometer are on the class path:
 * a {@link BatonMetrics} bean, which Spring Boot binds to its meter registry (it is a
 * {@code MeterBinder}) and which observes the auto-configured client (it is a
 * {@code BatonObserver} bean); the leases-held gauge follows every {@link Baton} bean.
 * {@code baton.metrics.tag-names} lists the names that become tags; {@code
 * baton.metrics.enabled=false} turns the meters off.
 */
@AutoConfiguration(before = BatonAutoConfiguration.class)
@ConditionalOnClass({Baton.class, BatonMetrics.class, MeterRegistry.class})
@ConditionalOnProperty(prefix = "baton.metrics", name = "enabled", matchIfMissing = true)
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(BatonProperties.class)
public class BatonMetricsAutoConfiguration {

    /**
     * The meters, with the configured names as tags; with an {@link ObservationRegistry} bean
     * (Spring Boot's, with actuator), every acquisition is also an observation.
     */
    @Bean
    @ConditionalOnMissingBean
    public BatonMetrics batonMetrics(BatonProperties properties, ObjectProvider<ObservationRegistry> observations) {
        return BatonMetrics.builder()
                .tagNames(properties.getMetrics().getTagNames())
                .observationRegistry(observations.getIfUnique())
                .build();
    }

    /** Registers the leases-held gauge of each Baton bean as it is created. */
    @Bean
    public static BeanPostProcessor batonMetricsGauge(ObjectProvider<BatonMetrics> metrics) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof Baton baton) {
                    metrics.ifAvailable(m -> m.watch(baton));
                }
                return bean;
            }
        };
    }
}
