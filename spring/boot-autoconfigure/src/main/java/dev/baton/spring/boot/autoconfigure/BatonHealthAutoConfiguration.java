package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code baton} health indicator, when Spring Boot's health support is present
 * ({@code management.health.baton.enabled=false} turns it off): a {@link BatonHealthIndicator}
 * on Boot 4, a {@link Boot3BatonHealthIndicator} on Boot 3.5, each named only in a configuration
 * that its own line's classes enable.
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass(Baton.class)
@ConditionalOnBean(Baton.class)
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
public class BatonHealthAutoConfiguration {

    /** Spring Boot 4's health contract (module spring-boot-health). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    @org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator("baton")
    static class Boot4Health {

        /** The lost-lease counter for the details (see {@link #losses()}). */
        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean(BatonLifecycle.class)
        public BatonLeaseLosses batonLeaseLosses() {
            return losses();
        }

        /** The health indicator; it does not create the client before the first check. */
        @Bean
        @ConditionalOnMissingBean(name = "batonHealthIndicator")
        public BatonHealthIndicator batonHealthIndicator(ObjectProvider<Baton> baton, ObjectProvider<BatonLeaseLosses> losses) {
            return new BatonHealthIndicator(baton, losses.getIfAvailable());
        }
    }

    /** Spring Boot 3.5's health contract (in spring-boot-actuator). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
    @org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator("baton")
    static class Boot3Health {

        /** The lost-lease counter for the details (see {@link #losses()}). */
        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean(BatonLifecycle.class)
        public BatonLeaseLosses batonLeaseLosses() {
            return losses();
        }

        /** The health indicator; it does not create the client before the first check. */
        @Bean
        @ConditionalOnMissingBean(name = "batonHealthIndicator")
        public Boot3BatonHealthIndicator batonHealthIndicator(ObjectProvider<Baton> baton,
                                                              ObjectProvider<BatonLeaseLosses> losses) {
            return new Boot3BatonHealthIndicator(baton, losses.getIfAvailable());
        }
    }

    /**
     * Counts the auto-configured client's lost leases for the health details. Only for the
     * auto-configured client, which registers every observer bean: an application's own client
     * would never tell it, and the health would report no loss for ever. (Such an application
     * can define a {@code BatonLeaseLosses} bean itself and set it as its client's observer.)
     */
    static BatonLeaseLosses losses() {
        return new BatonLeaseLosses();
    }
}
