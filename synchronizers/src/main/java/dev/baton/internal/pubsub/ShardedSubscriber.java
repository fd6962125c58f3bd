package dev.baton.internal.pubsub;

import dev.baton.internal.command.Failures;
import dev.baton.internal.time.Scheduler;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.RedisClusterPubSubAdapter;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/*
 * Sharded pub/sub in a Redis 7+ cluster (what Redisson uses there, so both clients meet): a
 * channel lives on the master of its slot, so SSUBSCRIBE and SUNSUBSCRIBE go to that node's
 * connection, and Lettuce's node-message propagation hands the messages to the service's
 * listener.
 *
 * A channel follows its slot. When a slot moves to another master (a live migration, a
 * failover), the old owner's subscription is gone: after a migration the server says so with an
 * unsolicited SUNSUBSCRIBE, after a failover the node is simply dead. Either way the channel is
 * subscribed again on the slot's owner: on the server's SUNSUBSCRIBE by asking the old node again
 * (it answers MOVED with the new owner's address), on a topology change by the owner Lettuce's
 * refreshed partitions name. The new subscription's confirmation wakes every waiter on the channel
 * to re-check (PubSubService), since what was published in between is lost.
 *
 * The map records where each channel is (to be) subscribed, by address: SUNSUBSCRIBE of a channel
 * goes to the connection its SSUBSCRIBE went to.
 */
public final class ShardedSubscriber implements PubSubService.Subscriber {
    private static final Logger log = LoggerFactory.getLogger(ShardedSubscriber.class);
    private static final Pattern MOVED = Pattern.compile("(?:MOVED|ASK) \\d+ (\\S+):(\\d+)");
    /** A MOVED reply followed this many times in a row is given up (the topology is changing under us). */
    private static final int MAX_HOPS = 3;

    /** A node's address. */
    record Node(String host, int port) {
        static Node of(RedisClusterNode node) {
            RedisURI uri = node.getUri();
            return new Node(uri.getHost(), uri.getPort());
        }

        @Override
        public String toString() {
            return host + ":" + port;
        }
    }

    private final StatefulRedisClusterConnection<String, String> commands;
    private final StatefulRedisClusterPubSubConnection<String, String> pubSub;
    private final Runnable refreshTopology;
    private final Scheduler scheduler;
    private final Map<String, Node> nodeOfChannel = new ConcurrentHashMap<>();

    public ShardedSubscriber(StatefulRedisClusterConnection<String, String> commands,
                             StatefulRedisClusterPubSubConnection<String, String> pubSub, Runnable refreshTopology,
                             Scheduler scheduler) {
        this.commands = commands;
        this.pubSub = pubSub;
        this.refreshTopology = refreshTopology;
        this.scheduler = scheduler;
        pubSub.setNodeMessagePropagation(true);
        pubSub.addListener(new RedisClusterPubSubAdapter<>() {
            @Override
            public void sunsubscribed(RedisClusterNode node, String channel, long count) {
                onUnsubscribed(node, channel);
            }
        });
    }

    @Override
    public CompletableFuture<Void> subscribe(String channel) {
        RedisClusterNode owner = commands.getPartitions().getMasterBySlot(SlotHash.getSlot(channel));
        if (owner == null) {
            return CompletableFuture.failedFuture(new io.lettuce.core.RedisConnectionException(
                    "no master serves the slot of channel " + channel));
        }
        Node node = Node.of(owner);
        nodeOfChannel.put(channel, node);
        return subscribeAt(channel, node, 0);
    }

    @Override
    public CompletableFuture<Void> unsubscribe(String channel) {
        Node node = nodeOfChannel.remove(channel);
        if (node == null) {
            return CompletableFuture.completedFuture(null);
        }
        return connection(node).thenCompose(c -> c.async().sunsubscribe(channel).toCompletableFuture());
    }

    @Override
    public CompletableFuture<Void> barrier(String channel) {
        Node node = nodeOfChannel.get(channel);
        if (node == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("channel " + channel + " is not subscribed"));
        }
        return connection(node).thenCompose(c -> PubSubService.pushesInOrder(c) ? c.async().ping().toCompletableFuture()
                : CompletableFuture.failedFuture(new UnsupportedOperationException("the node's connection speaks RESP2")))
                .thenApply(pong -> null);
    }

    /**
     * Subscribes again every channel whose slot {@code slots} gives to another master than the one
     * it is subscribed on. Called after each topology refresh and change, with the new slot map.
     */
    public void follow(Partitions slots) {
        for (Map.Entry<String, Node> entry : nodeOfChannel.entrySet()) {
            String channel = entry.getKey();
            RedisClusterNode owner = slots.getMasterBySlot(SlotHash.getSlot(channel));
            if (owner == null) {
                continue;
            }
            Node now = Node.of(owner);
            if (!now.equals(entry.getValue()) && nodeOfChannel.replace(channel, entry.getValue(), now)) {
                log.debug("channel {} moved from {} to {} with its slot; subscribing there", channel, entry.getValue(), now);
                resubscribe(channel, now);
            }
        }
    }

    /** How many channels are subscribed on {@code node} now (for tests). */
    long channelsOn(String host, int port) {
        Node node = new Node(host, port);
        return nodeOfChannel.values().stream().filter(node::equals).count();
    }

    private void onUnsubscribed(RedisClusterNode from, String channel) {
        Node node = Node.of(from);
        if (node.equals(nodeOfChannel.get(channel))) {
            // Not our own SUNSUBSCRIBE (that removes the channel from the map first): the server
            // dropped the channel because its slot moved away. Ask the node again: MOVED says where to.
            log.debug("{} dropped channel {} (its slot moved); following it", node, channel);
            resubscribe(channel, node);
            refreshTopology.run();
        }
    }

    private void resubscribe(String channel, Node node) {
        resubscribe(channel, node, 0);
    }

    /**
     * Subscribes a channel that lost its subscription on {@code node}. A failure (a promoted
     * replica not serving yet, a connection still being made) is followed by another try, on the
     * owner the slot map names by then, 50 ms later doubling to 1 s, for as long as the channel
     * has waiters (at most {@value #MAX_TRIES} tries, about a minute): without its subscription
     * a waiter would only learn of a release at its TTL re-check.
     */
    private void resubscribe(String channel, Node node, int tries) {
        subscribeAt(channel, node, 0).whenComplete((ok, e) -> {
            if (e == null || !nodeOfChannel.containsKey(channel)) {
                return;
            }
            if (tries >= MAX_TRIES) {
                log.warn("channel {} could not be subscribed again on {} ({} tries); its waiters re-check by their timers",
                        channel, node, tries + 1, e);
                return;
            }
            log.debug("re-subscribing {} on {} failed; trying again", channel, node, e);
            refreshTopology.run();
            long delayMs = Math.min(1_000, 50L << Math.min(tries, 5));
            scheduler.schedule(() -> {
                Node current = nodeOfChannel.get(channel);
                if (current == null) {
                    return; // its waiters left
                }
                RedisClusterNode owner = commands.getPartitions().getMasterBySlot(SlotHash.getSlot(channel));
                Node target = owner == null ? current : Node.of(owner);
                if (!target.equals(current) && !nodeOfChannel.replace(channel, current, target)) {
                    return; // followed elsewhere meanwhile
                }
                resubscribe(channel, target, tries + 1);
            }, delayMs, TimeUnit.MILLISECONDS);
        });
    }

    /** How often a lost subscription is tried again before waiters are left to their timers. */
    private static final int MAX_TRIES = 60;

    /** SSUBSCRIBE on {@code node}, following a MOVED or ASK reply to the node it names. */
    private CompletableFuture<Void> subscribeAt(String channel, Node node, int hops) {
        return connection(node)
                .thenCompose(c -> c.async().ssubscribe(channel).toCompletableFuture())
                .exceptionallyCompose(e -> {
                    Matcher moved = MOVED.matcher(String.valueOf(Failures.unwrap(e).getMessage()));
                    if (!moved.find() || hops >= MAX_HOPS) {
                        return CompletableFuture.failedFuture(e);
                    }
                    Node target = new Node(moved.group(1), Integer.parseInt(moved.group(2)));
                    if (!nodeOfChannel.replace(channel, node, target)) {
                        return CompletableFuture.completedFuture(null); // left, or already followed elsewhere
                    }
                    refreshTopology.run();
                    return subscribeAt(channel, target, hops + 1);
                });
    }

    private CompletableFuture<StatefulRedisPubSubConnection<String, String>> connection(Node node) {
        return pubSub.getConnectionAsync(node.host(), node.port());
    }
}
