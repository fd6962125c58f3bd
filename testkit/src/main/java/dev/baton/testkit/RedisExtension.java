package dev.baton.testkit;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension: one {@link RedisServer} per test class, injected into constructors,
 * lifecycle methods and test methods that declare a {@code RedisServer} parameter, and killed
 * after the class.
 */
public final class RedisExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(RedisExtension.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        server(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        RedisServer server = classStore(context).remove("server", RedisServer.class);
        if (server != null) {
            server.close();
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == RedisServer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return server(context);
    }

    private static RedisServer server(ExtensionContext context) {
        return classStore(context).getOrComputeIfAbsent("server", k -> RedisServer.start(), RedisServer.class);
    }

    private static ExtensionContext.Store classStore(ExtensionContext context) {
        ExtensionContext c = context;
        while (c.getTestClass().isPresent() && c.getParent().flatMap(ExtensionContext::getTestClass).isPresent()) {
            c = c.getParent().get();
        }
        return c.getStore(NS);
    }
}
