package dev.baton.internal;

import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Sharded pub/sub in a Redis 7+ cluster (what Redisson uses there, so both clients meet): a
 * channel lives on the master of its slot, so SSUBSCRIBE and SUNSUBSCRIBE go to that node's
 * connection, and Lettuce's node-message propagation hands the messages to the service's
 * listener. If the slot moves, the subscription is lost; waiters then fall back on their TTL
 * re-checks, and the next waiter subscribes on the new owner.
 */
final class ShardedSubscriber implements PubSubService.Subscriber {
    private final StatefulRedisClusterConnection<String, String> commands;
    private final StatefulRedisClusterPubSubConnection<String, String> pubSub;
    private final Map<String, String> nodeOfChannel = new ConcurrentHashMap<>();

    ShardedSubscriber(StatefulRedisClusterConnection<String, String> commands,
                      StatefulRedisClusterPubSubConnection<String, String> pubSub) {
        this.commands = commands;
        this.pubSub = pubSub;
        pubSub.setNodeMessagePropagation(true);
    }

    @Override
    public CompletableFuture<Void> subscribe(String channel) {
        RedisClusterNode owner = commands.getPartitions().getMasterBySlot(SlotHash.getSlot(channel));
        if (owner == null) {
            return CompletableFuture.failedFuture(new io.lettuce.core.RedisConnectionException(
                    "no master serves the slot of channel " + channel));
        }
        nodeOfChannel.put(channel, owner.getNodeId());
        return pubSub.getConnectionAsync(owner.getNodeId())
                .thenCompose(node -> node.async().ssubscribe(channel).toCompletableFuture());
    }

    @Override
    public CompletableFuture<Void> unsubscribe(String channel) {
        String nodeId = nodeOfChannel.remove(channel);
        if (nodeId == null) {
            return CompletableFuture.completedFuture(null);
        }
        return pubSub.getConnectionAsync(nodeId)
                .thenCompose(node -> node.async().sunsubscribe(channel).toCompletableFuture());
    }
}
