package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * Baton's health on Spring Boot 3.5: the same check, statuses and details as
 * {@link BatonHealthIndicator} on Boot 4 (an {@code EXISTS} of the lock key
 * {@value BatonHealthIndicator#PROBE}, which Baton never writes).
 */
public class Boot3BatonHealthIndicator extends AbstractHealthIndicator {
    private final ObjectProvider<Baton> baton;
    private final BatonLeaseLosses losses;

    /** A health indicator for the client {@code baton} gives, with {@code losses} (may be null). */
    public Boot3BatonHealthIndicator(ObjectProvider<Baton> baton, BatonLeaseLosses losses) {
        super("Baton health check failed");
        this.baton = baton;
        this.losses = losses;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        builder.up().withDetails(BatonHealthCheck.details(baton, losses));
    }
}
