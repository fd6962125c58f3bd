package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.spring.integration.BatonLockRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Lazy;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * A {@link BatonLockRegistry} bean, when {@code baton-spring-integration} is on the class path and
 * the application has no {@link LockRegistry} of its own; configured by {@code baton.integration.*}.
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass({BatonLockRegistry.class, LockRegistry.class})
@ConditionalOnBean(Baton.class)
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(BatonProperties.class)
public class BatonIntegrationAutoConfiguration {

    /** The registry; it does not create the client before its first lock is used. */
    @Bean
    @ConditionalOnMissingBean(LockRegistry.class)
    public BatonLockRegistry batonLockRegistry(@Lazy Baton baton, BatonProperties properties) {
        BatonProperties.Integration integration = properties.getIntegration();
        return BatonLockRegistry.builder(baton, integration.getRegistryKey())
                .fair(integration.isFair())
                .leaseTime(integration.getLeaseTime())
                .build();
    }
}
