package dev.baton.jmh;

import dev.baton.testkit.RedisServer;

/**
 * The redis-server every benchmark of one JVM fork uses (same binary and server for both
 * implementations), started on a free loopback port by the test fixture and stopped at exit.
 */
final class RedisForBenchmarks {
    private static RedisServer server;

    private RedisForBenchmarks() {
    }

    static synchronized RedisServer get() {
        if (server == null) {
            server = RedisServer.start();
            Runtime.getRuntime().addShutdownHook(new Thread(server::close));
        }
        return server;
    }
}
