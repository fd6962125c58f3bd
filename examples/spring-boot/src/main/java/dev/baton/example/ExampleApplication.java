package dev.baton.example;

import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A service that several instances run against one Redis. With {@code baton-spring-boot-starter},
 * {@code baton-shedlock} and {@code baton-micrometer} on the class path it gets a {@code Baton}
 * bean, a ShedLock {@code LockProvider}, a {@code baton} health indicator and {@code baton.*}
 * meters without any configuration of its own.
 */
@SpringBootApplication
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT10M")
public class ExampleApplication {
    public static void main(String[] args) {
        SpringApplication.run(ExampleApplication.class, args);
    }
}
