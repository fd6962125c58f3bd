package dev.baton.example.webflux;

import dev.baton.Baton;
import dev.baton.reactor.ReactiveBaton;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * A reactive service that several instances run against one Redis. The starter gives it a
 * {@code Baton} bean on the application's own Lettuce client; {@code baton-reactor} makes its
 * synchronizers publishers.
 */
@SpringBootApplication
public class WebfluxExampleApplication {

    /** The reactive view of the auto-configured client (which connects on first use). */
    @Bean
    ReactiveBaton reactiveBaton(Baton baton) {
        return ReactiveBaton.of(baton);
    }

    public static void main(String[] args) {
        SpringApplication.run(WebfluxExampleApplication.class, args);
    }
}
