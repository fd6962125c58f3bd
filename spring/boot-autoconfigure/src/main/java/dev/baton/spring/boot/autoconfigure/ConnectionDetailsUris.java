package dev.baton.spring.boot.autoconfigure;

import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The Redis URIs of Baton's own client, made from Spring Data Redis's connection details when the
 * application has no Lettuce connection factory to share (Redisson's starter, Jedis).
 *
 * <p>Carried: a standalone host, port and database; Sentinel nodes, master name and database;
 * Cluster nodes; the username and password; {@code spring.data.redis.ssl.enabled} (TLS with the
 * JVM's trust); the client name. Not carried, and refused by name at the client's first use: a
 * static master/replica setup, an SSL bundle ({@code spring.data.redis.ssl.bundle}), and a
 * Sentinel password of its own ({@code spring.data.redis.sentinel.password}). For those, give the
 * application a Lettuce connection factory or a {@code Baton} bean of its own.
 *
 * @param uris    the URIs, one per cluster node, else one
 * @param cluster whether they are nodes of a Redis Cluster
 */
record ConnectionDetailsUris(List<String> uris, boolean cluster) {

    static ConnectionDetailsUris of(DataRedisConnectionDetails details, boolean ssl, String clientName) {
        if (details.getMasterReplica() != null) {
            throw new IllegalStateException("Baton cannot open its own client on a static master/replica setup "
                    + "(spring.data.redis.masterreplica.nodes): use Spring Data Redis on Lettuce with a standalone, "
                    + "Sentinel or Cluster setup, or define a Baton bean of your own");
        }
        if (details.getSslBundle() != null) {
            throw new IllegalStateException("Baton cannot open its own client with an SSL bundle "
                    + "(spring.data.redis.ssl.bundle): without a Lettuce connection factory to share, define a Baton "
                    + "bean of your own with Baton.create(redisClient, options) on a Lettuce client with those SSL options");
        }
        String credentials = credentials(details.getUsername(), details.getPassword());
        String query = clientName == null || clientName.isBlank() ? "" : "?clientName=" + encode(clientName);
        DataRedisConnectionDetails.Cluster cluster = details.getCluster();
        if (cluster != null) {
            List<String> uris = new ArrayList<>();
            for (DataRedisConnectionDetails.Node node : cluster.getNodes()) {
                uris.add((ssl ? "rediss://" : "redis://") + credentials + hostAndPort(node) + query);
            }
            return new ConnectionDetailsUris(uris, true);
        }
        DataRedisConnectionDetails.Sentinel sentinel = details.getSentinel();
        if (sentinel != null) {
            if (sentinel.getPassword() != null) {
                throw new IllegalStateException("Baton cannot open its own client with a Sentinel password of its own "
                        + "(spring.data.redis.sentinel.password): without a Lettuce connection factory to share, define "
                        + "a Baton bean of your own with a redis-sentinel:// URI or a Lettuce client");
            }
            List<String> nodes = new ArrayList<>();
            for (DataRedisConnectionDetails.Node node : sentinel.getNodes()) {
                nodes.add(hostAndPort(node));
            }
            String uri = (ssl ? "rediss-sentinel://" : "redis-sentinel://") + credentials + String.join(",", nodes)
                    + "/" + sentinel.getDatabase() + query + "#" + sentinel.getMaster();
            return new ConnectionDetailsUris(List.of(uri), false);
        }
        DataRedisConnectionDetails.Standalone standalone = details.getStandalone();
        String uri = (ssl ? "rediss://" : "redis://") + credentials + standalone.getHost() + ":" + standalone.getPort()
                + "/" + standalone.getDatabase() + query;
        return new ConnectionDetailsUris(List.of(uri), false);
    }

    private static String hostAndPort(DataRedisConnectionDetails.Node node) {
        String host = node.host();
        return (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + node.port();
    }

    /**
     * The URI's user-info part, encoded: {@code user:password@}, or {@code :password@} (Lettuce
     * splits the decoded user info at its first colon, so a password alone keeps an empty user
     * before it and may contain colons), or nothing.
     */
    private static String credentials(String username, String password) {
        if (password == null || password.isEmpty()) {
            return "";
        }
        if (username != null && username.indexOf(':') >= 0) {
            throw new IllegalStateException("Baton cannot open its own client for a Redis username with a colon "
                    + "(spring.data.redis.username): define a Baton bean of your own on a Lettuce client");
        }
        return (username == null || username.isEmpty() ? "" : encode(username)) + ":" + encode(password) + "@";
    }

    /** Percent-encodes everything but RFC 3986's unreserved characters. */
    static String encode(String value) {
        StringBuilder out = new StringBuilder();
        for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return out.toString();
    }
}
