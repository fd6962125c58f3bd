package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * The {@code baton} actuator endpoint (the leases this instance holds), when actuator is present
 * and the endpoint is available ({@code management.endpoints.web.exposure.include=baton}).
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass({Baton.class, Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(Baton.class)
@ConditionalOnAvailableEndpoint(BatonEndpoint.class)
@ConditionalOnProperty(prefix = "baton", name = "enabled", matchIfMissing = true)
public class BatonEndpointAutoConfiguration {

    /**
     * The endpoint. It never creates the auto-configured client (which is lazy); an application's
     * own {@code Baton} bean is read as it is.
     */
    @Bean
    @ConditionalOnMissingBean
    public BatonEndpoint batonEndpoint(ObjectProvider<BatonLifecycle> lifecycle, ObjectProvider<Baton> baton) {
        BatonLifecycle auto = lifecycle.getIfAvailable();
        return new BatonEndpoint(auto != null ? auto::created : baton::getIfAvailable);
    }
}
