package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code baton} health indicator, when Spring Boot's health support is present
 * ({@code management.health.baton.enabled=false} turns it off).
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass({Baton.class, HealthIndicator.class})
@ConditionalOnBean(Baton.class)
@ConditionalOnEnabledHealthIndicator("baton")
public class BatonHealthAutoConfiguration {

    /** Counts the auto-configured client's lost leases for the health details. */
    @Bean
    @ConditionalOnMissingBean
    public BatonLeaseLosses batonLeaseLosses() {
        return new BatonLeaseLosses();
    }

    /** The health indicator; it does not create the client before the first check. */
    @Bean
    @ConditionalOnMissingBean(name = "batonHealthIndicator")
    public BatonHealthIndicator batonHealthIndicator(ObjectProvider<Baton> baton, BatonLeaseLosses losses) {
        return new BatonHealthIndicator(baton, losses);
    }
}
