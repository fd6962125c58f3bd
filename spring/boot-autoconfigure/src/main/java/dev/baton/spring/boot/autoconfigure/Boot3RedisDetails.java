package dev.baton.spring.boot.autoconfigure;

import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.data.redis.RedisProperties;

import java.util.List;

/**
 * Spring Boot 3.5's Redis connection details and properties as {@link ConnectionDetailsUris.Details}
 * (Boot 3.5 has no static master/replica setup; a service connection's SSL bundle is on each of
 * its standalone, Sentinel and Cluster parts).
 */
final class Boot3RedisDetails {
    private Boot3RedisDetails() {
    }

    static ConnectionDetailsUris.Details of(RedisConnectionDetails details, RedisProperties redis) {
        RedisConnectionDetails.Cluster cluster = details.getCluster();
        RedisConnectionDetails.Sentinel sentinel = details.getSentinel();
        RedisConnectionDetails.Standalone standalone = details.getStandalone();
        return new ConnectionDetailsUris.Details(details.getUsername(), details.getPassword(),
                standalone == null ? null : new ConnectionDetailsUris.Standalone(standalone.getHost(), standalone.getPort(),
                        standalone.getDatabase()),
                sentinel == null ? null : new ConnectionDetailsUris.Sentinel(nodes(sentinel.getNodes()), sentinel.getMaster(),
                        sentinel.getDatabase(), sentinel.getPassword()),
                cluster == null ? null : nodes(cluster.getNodes()),
                false, ConnectionDetailsUris.Ssl.of(redis.getSsl().isEnabled(), redis.getSsl().getBundle(), redis.getUrl(),
                        () -> (standalone != null && standalone.getSslBundle() != null)
                                || (sentinel != null && sentinel.getSslBundle() != null)
                                || (cluster != null && cluster.getSslBundle() != null)),
                redis.getClientName());
    }

    private static List<ConnectionDetailsUris.Node> nodes(List<RedisConnectionDetails.Node> nodes) {
        return nodes.stream().map(n -> new ConnectionDetailsUris.Node(n.host(), n.port())).toList();
    }
}
