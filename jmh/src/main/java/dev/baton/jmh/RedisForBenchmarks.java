package dev.baton.jmh;

import dev.baton.testkit.RedisServer;
import dev.baton.testkit.RespClient;

import java.net.URI;

/**
 * The redis-server a benchmark fork talks to. The report ({@code report.BenchmarkReport}) starts
 * one server for the whole run and hands its address to every fork in the system property
 * {@value #PROPERTY}, so Baton, Redisson and the round-trip floor are all measured against the
 * same process. A fork
 * started without it (a single benchmark run straight from the JMH command line) starts a server
 * of its own on a free loopback port, stopped when the fork exits.
 */
public final class RedisForBenchmarks {
    /** System property naming the shared server, e.g. {@code redis://127.0.0.1:41234}. */
    public static final String PROPERTY = "baton.bench.redis";

    private static Target target;

    private RedisForBenchmarks() {
    }

    /** The server for this fork. */
    public static synchronized Target get() {
        if (target == null) {
            String given = System.getProperty(PROPERTY);
            if (given != null && !given.isBlank()) {
                URI uri = URI.create(given.trim());
                if (!"127.0.0.1".equals(uri.getHost()) && !"localhost".equals(uri.getHost())) {
                    throw new IllegalArgumentException(PROPERTY + " must name a loopback server, got " + given);
                }
                target = new Target(uri.getHost(), uri.getPort());
            } else {
                RedisServer server = RedisServer.start();
                Runtime.getRuntime().addShutdownHook(new Thread(server::close));
                target = new Target(server.host(), server.port());
            }
        }
        return target;
    }

    /** Where the server listens, and a side channel for looking at it (not timed). */
    public record Target(String host, int port) {
        public String uri() {
            return "redis://" + host + ":" + port;
        }

        /** One command on a fresh plain connection, outside the clients being measured. */
        public Object command(String... args) {
            try (RespClient client = new RespClient(host, port)) {
                return client.call(args);
            }
        }
    }
}
