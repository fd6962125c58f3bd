package dev.baton.spring.boot.autoconfigure;

import dev.baton.BatonOptions;

/**
 * A bean that changes the auto-configured client's options after the {@code baton.*} properties
 * were applied, before the client is created. Customizers run in their {@code @Order}.
 */
@FunctionalInterface
public interface BatonOptionsCustomizer {
    /** Changes {@code builder}; the properties have already been applied to it. */
    void customize(BatonOptions.Builder builder);
}
