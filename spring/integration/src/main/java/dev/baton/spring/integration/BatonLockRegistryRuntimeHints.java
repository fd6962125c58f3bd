package dev.baton.spring.integration;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.util.ClassUtils;

/**
 * Tells Spring's ahead-of-time processing (a GraalVM native image) that {@link BatonLockRegistry}
 * makes JDK proxies of Spring Integration 7's {@code DistributedLock}; registered in
 * {@code META-INF/spring/aot.factories}. Nothing on Spring Integration 6.5, which has no such type.
 */
public class BatonLockRegistryRuntimeHints implements RuntimeHintsRegistrar {
    static final String DISTRIBUTED_LOCK = "org.springframework.integration.support.locks.DistributedLock";

    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        if (ClassUtils.isPresent(DISTRIBUTED_LOCK, classLoader)) {
            hints.proxies().registerJdkProxy(TypeReference.of(DISTRIBUTED_LOCK));
        }
    }
}
