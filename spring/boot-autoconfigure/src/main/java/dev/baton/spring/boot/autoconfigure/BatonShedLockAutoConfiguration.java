package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.shedlock.BatonLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Lazy;

/**
 * A ShedLock {@link BatonLockProvider} bean, when {@code baton-shedlock} is on the class path and
 * the application has no {@link LockProvider} of its own; {@code baton.shedlock.key-prefix} sets
 * the prefix of the lock names. The application still enables ShedLock itself
 * ({@code @EnableSchedulerLock}).
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass({BatonLockProvider.class, LockProvider.class})
@ConditionalOnBean(Baton.class)
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(BatonProperties.class)
public class BatonShedLockAutoConfiguration {

    /** The provider; it does not create the client before the first scheduled run. */
    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    public BatonLockProvider batonLockProvider(@Lazy Baton baton, BatonProperties properties) {
        return new BatonLockProvider(baton, properties.getShedlock().getKeyPrefix());
    }
}
