package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
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
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
public class BatonHealthAutoConfiguration {

    /**
     * Counts the auto-configured client's lost leases for the health details. Only for the
     * auto-configured client, which registers every observer bean: an application's own client
     * would never tell it, and the health would report no loss for ever. (Such an application
     * can define a {@code BatonLeaseLosses} bean itself and set it as its client's observer.)
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(BatonLifecycle.class)
    public BatonLeaseLosses batonLeaseLosses() {
        return new BatonLeaseLosses();
    }

    /** The health indicator; it does not create the client before the first check. */
    @Bean
    @ConditionalOnMissingBean(name = "batonHealthIndicator")
    public BatonHealthIndicator batonHealthIndicator(ObjectProvider<Baton> baton, ObjectProvider<BatonLeaseLosses> losses) {
        return new BatonHealthIndicator(baton, losses.getIfAvailable());
    }
}
