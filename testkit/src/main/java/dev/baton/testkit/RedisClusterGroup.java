package dev.baton.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A small Redis Cluster on loopback, formed without redis-cli: nodes meet, the 16,384 slots are
 * split evenly over the masters, replicas follow their masters, and {@link #start} returns once
 * every node reports {@code cluster_state:ok}.
 */
public final class RedisClusterGroup implements AutoCloseable {
    private static final int SLOTS = 16_384;

    private final List<RedisServer> masters;
    private final List<RedisServer> nodes;

    private RedisClusterGroup(List<RedisServer> masters, List<RedisServer> nodes) {
        this.masters = masters;
        this.nodes = nodes;
    }

    /** Starts {@code masterCount} masters with {@code replicasPerMaster} replicas each. */
    public static RedisClusterGroup start(int masterCount, int replicasPerMaster) {
        List<RedisServer> nodes = new ArrayList<>();
        try {
            int total = masterCount * (1 + replicasPerMaster);
            for (int i = 0; i < total; i++) {
                nodes.add(RedisServer.start("cluster-enabled yes", "cluster-config-file nodes.conf",
                        "cluster-node-timeout 2000"));
            }
            RedisServer first = nodes.get(0);
            for (RedisServer node : nodes.subList(1, nodes.size())) {
                node.command("CLUSTER", "MEET", first.host(), Integer.toString(first.port()));
            }
            List<RedisServer> masters = nodes.subList(0, masterCount);
            for (int m = 0; m < masterCount; m++) {
                int from = m * SLOTS / masterCount;
                int to = (m + 1) * SLOTS / masterCount - 1;
                addSlots(masters.get(m), from, to);
            }
            Await.until(Duration.ofSeconds(30), () -> "every node to know every other",
                    () -> nodes.stream().allMatch(n -> knownNodes(n) == nodes.size()));
            for (int r = 0; r < masterCount * replicasPerMaster; r++) {
                RedisServer replica = nodes.get(masterCount + r);
                String masterId = (String) masters.get(r % masterCount).command("CLUSTER", "MYID");
                Await.until(Duration.ofSeconds(20), () -> "replica " + replica.port() + " to follow its master", () -> {
                    replica.command("CLUSTER", "REPLICATE", masterId);
                    return true;
                });
            }
            Await.until(Duration.ofSeconds(30), () -> "cluster_state:ok on every node",
                    () -> nodes.stream().allMatch(n -> ((String) n.command("CLUSTER", "INFO")).contains("cluster_state:ok")));
            return new RedisClusterGroup(List.copyOf(masters), List.copyOf(nodes));
        } catch (RuntimeException | AssertionError e) {
            nodes.forEach(RedisServer::close);
            throw e;
        }
    }

    private static void addSlots(RedisServer master, int from, int to) {
        if (master.binary().majorVersion() >= 7) {
            master.command("CLUSTER", "ADDSLOTSRANGE", Integer.toString(from), Integer.toString(to));
            return;
        }
        for (int start = from; start <= to; start += 1_000) {
            int end = Math.min(to, start + 999);
            List<String> args = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
            for (int slot = start; slot <= end; slot++) {
                args.add(Integer.toString(slot));
            }
            master.command(args.toArray(String[]::new));
        }
    }

    private static int knownNodes(RedisServer node) {
        String info = (String) node.command("CLUSTER", "INFO");
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("cluster_known_nodes:")) {
                return Integer.parseInt(line.substring("cluster_known_nodes:".length()).trim());
            }
        }
        return 0;
    }

    /** Every node, masters first. */
    public List<RedisServer> nodes() {
        return nodes;
    }

    /** The masters as started (before any failover). */
    public List<RedisServer> masters() {
        return masters;
    }

    /** A seed URI: the first node. */
    public String uri() {
        return nodes.get(0).uri();
    }

    /** Every node's URI. */
    public List<String> uris() {
        List<String> uris = new ArrayList<>();
        nodes.forEach(n -> uris.add(n.uri()));
        return uris;
    }

    /** Kills every node. */
    @Override
    public void close() {
        nodes.forEach(RedisServer::close);
    }
}
