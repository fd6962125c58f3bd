package dev.baton.testkit;

import java.util.ArrayList;
import java.util.List;

/** Several independent standalone servers, e.g. for RedLock and multi-lock tests. */
public final class RedisMasters implements AutoCloseable {
    private final List<RedisServer> servers;

    private RedisMasters(List<RedisServer> servers) {
        this.servers = servers;
    }

    /** Starts {@code n} independent servers. */
    public static RedisMasters start(int n) {
        List<RedisServer> servers = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                servers.add(RedisServer.start());
            }
            return new RedisMasters(List.copyOf(servers));
        } catch (RuntimeException e) {
            servers.forEach(RedisServer::close);
            throw e;
        }
    }

    /** The servers, in start order. */
    public List<RedisServer> servers() {
        return servers;
    }

    /** Kills every server and deletes their directories. */
    @Override
    public void close() {
        servers.forEach(RedisServer::close);
    }
}
