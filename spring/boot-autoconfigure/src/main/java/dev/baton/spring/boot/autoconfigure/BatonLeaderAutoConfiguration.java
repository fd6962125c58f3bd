package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * A {@link BatonLeader} bean, this application's candidacy in the leader election named by
 * {@code baton.leader.election}, when that property is set; its identity is
 * {@code baton.leader.identity}, or {@code <spring.application.name>@<host name>}.
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnBean(Baton.class)
@ConditionalOnProperty(prefix = "baton.leader", name = "election")
@EnableConfigurationProperties(BatonProperties.class)
public class BatonLeaderAutoConfiguration {

    /** The candidacy; it joins when the context starts and leaves when it stops. */
    @Bean
    @ConditionalOnMissingBean(BatonLeader.class)
    public BatonLeader batonLeader(Baton baton, BatonProperties properties,
                                   @Value("${spring.application.name:application}") String applicationName,
                                   ApplicationEventPublisher events) {
        BatonProperties.Leader leader = properties.getLeader();
        String identity = leader.getIdentity();
        if (identity == null || identity.isBlank()) {
            identity = applicationName + "@" + hostName();
        }
        return new BatonLeader(baton, leader.getElection(), identity, events);
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "unknown-host";
        }
    }
}
