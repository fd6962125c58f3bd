package dev.baton.spring.boot.autoconfigure;

import org.junit.jupiter.api.Assumptions;
import org.springframework.context.ApplicationContext;

import java.lang.reflect.InvocationTargetException;
import java.util.Map;

/**
 * What differs between the Spring Boot lines these tests run on: Boot 4 in every server lane, Boot
 * 3.5 in CI's {@code spring-boot-3.5} lane ({@code -Pspring-boot-3.5}). Each lane's class path holds
 * one line only, so the tests name the other line's types through here, by name.
 */
final class BootLine {
    /** Whether this run is on Spring Boot 3.5 (its Redis auto-configuration's name). */
    static final boolean BOOT3 = present("org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration");

    private BootLine() {
    }

    /** The line's Redis auto-configuration. */
    static Class<?> redisAutoConfiguration() {
        return load(BOOT3 ? "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration"
                : "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration");
    }

    /** The line's meter registry auto-configurations: the registry and its simple export. */
    static Class<?>[] metricsAutoConfigurations() {
        String prefix = BOOT3 ? "org.springframework.boot.actuate.autoconfigure.metrics."
                : "org.springframework.boot.micrometer.metrics.autoconfigure.";
        return new Class<?>[] {load(prefix + "MetricsAutoConfiguration"),
                load(prefix + "export.simple.SimpleMetricsExportAutoConfiguration")};
    }

    /** The type of Baton's health indicator on this line. */
    static Class<?> healthIndicatorType() {
        return BOOT3 ? Boot3BatonHealthIndicator.class : BatonHealthIndicator.class;
    }

    /** A health as either line reports it: its status code and details. */
    record Health(String status, Map<String, Object> details, String text) {
        @Override
        public String toString() {
            return text;
        }
    }

    /** The {@code batonHealthIndicator} bean's health now. */
    static Health health(ApplicationContext context) {
        return health(context.getBean("batonHealthIndicator"));
    }

    /** {@code indicator}'s health now (a Boot 3.5 or Boot 4 health indicator). */
    @SuppressWarnings("unchecked")
    static Health health(Object indicator) {
        Object health = call(indicator, "health");
        Object status = call(health, "getStatus");
        return new Health(String.valueOf(call(status, "getCode")), (Map<String, Object>) call(health, "getDetails"),
                String.valueOf(health));
    }

    /**
     * Ends the calling test as not run, saying so in the output, unless this run is on Boot 4:
     * for what Boot 3.5's lane cannot have.
     */
    static void requireBoot4(String why) {
        if (BOOT3) {
            System.out.println("[spring-boot-3.5 lane] NOT RUN on Boot 3.5: " + why);
            Assumptions.abort("not on Boot 3.5: " + why);
        }
    }

    private static Object call(Object target, String method) {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(method + " threw", e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean present(String name) {
        try {
            Class.forName(name, false, BootLine.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, BootLine.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(name + " is not on this run's class path", e);
        }
    }
}
