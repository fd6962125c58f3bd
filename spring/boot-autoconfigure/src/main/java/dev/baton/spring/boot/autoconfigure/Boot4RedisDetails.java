package dev.baton.spring.boot.autoconfigure;

import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;

import java.util.List;

/** Spring Boot 4's Redis connection details and properties as {@link ConnectionDetailsUris.Details}. */
final class Boot4RedisDetails {
    private Boot4RedisDetails() {
    }

    static ConnectionDetailsUris.Details of(DataRedisConnectionDetails details, DataRedisProperties redis) {
        DataRedisConnectionDetails.Cluster cluster = details.getCluster();
        DataRedisConnectionDetails.Sentinel sentinel = details.getSentinel();
        DataRedisConnectionDetails.Standalone standalone = details.getStandalone();
        return new ConnectionDetailsUris.Details(details.getUsername(), details.getPassword(),
                standalone == null ? null : new ConnectionDetailsUris.Standalone(standalone.getHost(), standalone.getPort(),
                        standalone.getDatabase()),
                sentinel == null ? null : new ConnectionDetailsUris.Sentinel(nodes(sentinel.getNodes()), sentinel.getMaster(),
                        sentinel.getDatabase(), sentinel.getPassword()),
                cluster == null ? null : nodes(cluster.getNodes()),
                details.getMasterReplica() != null, ConnectionDetailsUris.Ssl.of(redis.getSsl().isEnabled(),
                        redis.getSsl().getBundle(), redis.getUrl(), () -> details.getSslBundle() != null),
                redis.getClientName());
    }

    private static List<ConnectionDetailsUris.Node> nodes(List<DataRedisConnectionDetails.Node> nodes) {
        return nodes.stream().map(n -> new ConnectionDetailsUris.Node(n.host(), n.port())).toList();
    }
}
