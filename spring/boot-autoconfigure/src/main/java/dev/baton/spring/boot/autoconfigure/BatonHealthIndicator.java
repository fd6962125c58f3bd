package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Baton's health on Spring Boot 4 ({@link Boot3BatonHealthIndicator} is the same on Boot 3.5): UP when Redis answers a read through Baton's own connections within the
 * command timeout, DOWN (with the exception) otherwise, including when the client cannot be
 * created. Details: {@code leasesHeld} by this instance, {@code leasesLostRecently} (the last 15
 * minutes) and {@code lastLeaseLost}; the last two only when a {@link BatonLeaseLosses} hears the
 * client (always for the auto-configured client; an application that defines its own client
 * registers one as its observer). A lost lease does not make the instance DOWN: the holder
 * has already been told, and the service can still take locks.
 *
 * <p>The read is an {@code EXISTS} of the lock key {@value #PROBE}, which Baton never writes.
 */
public class BatonHealthIndicator extends AbstractHealthIndicator {
    /** The lock whose existence the check reads. */
    public static final String PROBE = "baton:health-probe";

    private final ObjectProvider<Baton> baton;
    private final BatonLeaseLosses losses;

    /** A health indicator for the client {@code baton} gives, with {@code losses} (may be null). */
    public BatonHealthIndicator(ObjectProvider<Baton> baton, BatonLeaseLosses losses) {
        super("Baton health check failed");
        this.baton = baton;
        this.losses = losses;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        builder.up().withDetails(BatonHealthCheck.details(baton, losses));
    }
}
