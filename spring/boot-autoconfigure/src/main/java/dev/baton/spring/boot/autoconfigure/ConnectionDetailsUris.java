package dev.baton.spring.boot.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * The Redis URIs of Baton's own client, made from Spring Data Redis's connection details when the
 * application has no Lettuce connection factory to share (Redisson's starter, Jedis). Each Spring
 * Boot line names those details its own way ({@link Boot4RedisDetails}, {@link Boot3RedisDetails});
 * both become one {@link Details}.
 *
 * <p>Carried: a standalone host, port and database; Sentinel nodes, master name and database;
 * Cluster nodes; the username and password; {@code spring.data.redis.ssl.enabled} or a
 * {@code rediss://} URL (TLS with the JVM's trust); the client name. Not carried, and refused by
 * name at the client's first use: a static master/replica setup, an SSL bundle (named by
 * {@code spring.data.redis.ssl.bundle}, or a service connection's own), and a Sentinel password
 * of its own ({@code spring.data.redis.sentinel.password}). For those, give the application a
 * Lettuce connection factory or a {@code Baton} bean of its own.
 *
 * @param uris    the URIs, one per cluster node, else one
 * @param cluster whether they are nodes of a Redis Cluster
 */
record ConnectionDetailsUris(List<String> uris, boolean cluster) {

    /**
     * Spring Data Redis's connection details, whichever Boot line gave them: at most one of
     * {@code cluster}, {@code sentinel} and {@code standalone} is used, in that order.
     *
     * @param username      the username, or null
     * @param password      the password, or null
     * @param standalone    the standalone server
     * @param sentinel      the Sentinel setup, or null
     * @param cluster       the cluster nodes, or null without a cluster
     * @param masterReplica whether a static master/replica setup is configured (Boot 4 only)
     * @param ssl           what the SSL settings ask for
     * @param clientName    the client name, or null
     */
    record Details(String username, String password, Standalone standalone, Sentinel sentinel, List<Node> cluster,
                   boolean masterReplica, Ssl ssl, String clientName) {
    }

    /**
     * What the SSL settings ask for.
     *
     * @param tls               TLS with the JVM's trust
     * @param unsupportedBundle where an SSL bundle Baton would have to use comes from, or null
     */
    record Ssl(boolean tls, String unsupportedBundle) {
        static final Ssl NONE = new Ssl(false, null);

        /**
         * What Spring Boot's Lettuce configuration makes of the SSL properties and the details'
         * own bundle, both lines alike: {@code spring.data.redis.ssl.enabled} (or a
         * {@code rediss://} {@code spring.data.redis.url}) without a bundle name is TLS with the
         * JVM's trust (the details then carry Boot's system-default bundle); a bundle name while
         * SSL is enabled, or a bundle that the details carry while the properties ask for no SSL
         * (a service connection's own), is a bundle Baton's URIs cannot carry. The details are
         * asked for their bundle only in that last case (Boot looks a named bundle up when asked).
         */
        static Ssl of(boolean enabled, String bundleName, String url, BooleanSupplier detailsHaveBundle) {
            boolean rediss = url != null && url.startsWith("rediss:");
            if (enabled && bundleName != null && !bundleName.isEmpty()) {
                return new Ssl(true, "spring.data.redis.ssl.bundle");
            }
            if (!enabled && !rediss && detailsHaveBundle.getAsBoolean()) {
                return new Ssl(true, "the connection details' own SSL bundle, as a service connection gives it");
            }
            return new Ssl(enabled || rediss, null);
        }
    }

    /** A host and port. */
    record Node(String host, int port) {
    }

    /** A standalone server and its database. */
    record Standalone(String host, int port, int database) {
    }

    /** Sentinel nodes, the master's name, the database, and the Sentinels' own password (or null). */
    record Sentinel(List<Node> nodes, String master, int database, String password) {
    }

    static ConnectionDetailsUris of(Details details) {
        boolean ssl = details.ssl().tls();
        String clientName = details.clientName();
        if (details.masterReplica()) {
            throw new IllegalStateException("Baton cannot open its own client on a static master/replica setup "
                    + "(spring.data.redis.masterreplica.nodes): use Spring Data Redis on Lettuce with a standalone, "
                    + "Sentinel or Cluster setup, or define a Baton bean of your own");
        }
        if (details.ssl().unsupportedBundle() != null) {
            throw new IllegalStateException("Baton cannot open its own client with an SSL bundle "
                    + "(" + details.ssl().unsupportedBundle() + "): without a Lettuce connection factory to share, define a Baton "
                    + "bean of your own with Baton.create(redisClient, options) on a Lettuce client with those SSL options");
        }
        if (details.cluster() == null && details.sentinel() == null && details.standalone() == null) {
            throw new IllegalStateException("Baton cannot open its own client: the Redis connection details name no "
                    + "standalone server, Sentinel or Cluster");
        }
        String credentials = credentials(details.username(), details.password());
        String query = clientName == null || clientName.isBlank() ? "" : "?clientName=" + encode(clientName);
        if (details.cluster() != null) {
            List<String> uris = new ArrayList<>();
            for (Node node : details.cluster()) {
                uris.add((ssl ? "rediss://" : "redis://") + credentials + hostAndPort(node) + query);
            }
            return new ConnectionDetailsUris(uris, true);
        }
        Sentinel sentinel = details.sentinel();
        if (sentinel != null) {
            if (sentinel.password() != null) {
                throw new IllegalStateException("Baton cannot open its own client with a Sentinel password of its own "
                        + "(spring.data.redis.sentinel.password): without a Lettuce connection factory to share, define "
                        + "a Baton bean of your own with a redis-sentinel:// URI or a Lettuce client");
            }
            List<String> nodes = new ArrayList<>();
            for (Node node : sentinel.nodes()) {
                nodes.add(hostAndPort(node));
            }
            String uri = (ssl ? "rediss-sentinel://" : "redis-sentinel://") + credentials + String.join(",", nodes)
                    + "/" + sentinel.database() + query + "#" + sentinel.master();
            return new ConnectionDetailsUris(List.of(uri), false);
        }
        Standalone standalone = details.standalone();
        String uri = (ssl ? "rediss://" : "redis://") + credentials + standalone.host() + ":" + standalone.port()
                + "/" + standalone.database() + query;
        return new ConnectionDetailsUris(List.of(uri), false);
    }

    private static String hostAndPort(Node node) {
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
