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
                // No 5 s pause before a replica's first sync (Redis's default diskless delay): a
                // replica that never synced refuses to fail over. No limit on how long a replica
                // may have been cut off from its master and still fail over (validity factor 0):
                // with the default (10 x the node timeout + the ping period, 30 s here), a replica
                // whose first elections went unanswered on a loaded machine stopped trying, and
                // failOver waited its whole minute for nothing (seen once in CI, Valkey lane).
                nodes.add(RedisServer.start("cluster-enabled yes", "cluster-config-file nodes.conf",
                        "cluster-node-timeout 2000", "repl-diskless-sync-delay 0", "cluster-replica-validity-factor 0"));
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
            for (RedisServer replica : nodes.subList(masterCount, nodes.size())) {
                Await.until(Duration.ofSeconds(30), () -> "replica " + replica.port() + " to finish its first sync",
                        () -> ((String) replica.command("INFO", "replication")).contains("master_link_status:up"));
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

    /** The node id of a node ({@code CLUSTER MYID}). */
    public static String idOf(RedisServer node) {
        return (String) node.command("CLUSTER", "MYID");
    }

    /** The running master that owns {@code slot} now, as the live nodes see it. */
    public RedisServer ownerOf(int slot) {
        for (RedisServer node : nodes) {
            if (!node.isRunning()) {
                continue;
            }
            for (Object range : (List<?>) node.command("CLUSTER", "SLOTS")) {
                List<?> r = (List<?>) range;
                if ((Long) r.get(0) <= slot && slot <= (Long) r.get(1)) {
                    long port = (Long) ((List<?>) r.get(2)).get(1);
                    for (RedisServer candidate : nodes) {
                        if (candidate.port() == port) {
                            return candidate;
                        }
                    }
                }
            }
        }
        throw new IllegalStateException("no running master owns slot " + slot);
    }

    /**
     * Moves {@code slot} from its owner to {@code target} live, as redis-cli --cluster reshard
     * does: IMPORTING on the target, MIGRATING on the source, MIGRATE of its keys in batches
     * ({@code between} runs after each batch, for tests that act mid-migration), then the slot
     * assigned to the target on every master.
     */
    public void migrateSlot(int slot, RedisServer target, Runnable between) {
        migrateSlot(slot, target, between, List.of());
    }

    /**
     * As {@link #migrateSlot(int, RedisServer, Runnable)}, moving the keys {@code last} only
     * after every other key of the slot: until then a command that touches one of them and a key
     * that does not exist yet gets TRYAGAIN from the source.
     */
    public void migrateSlot(int slot, RedisServer target, Runnable between, List<String> last) {
        RedisServer source = ownerOf(slot);
        if (source == target) {
            throw new IllegalArgumentException("slot " + slot + " is on " + target + " already");
        }
        String sourceId = idOf(source);
        String targetId = idOf(target);
        target.command("CLUSTER", "SETSLOT", Integer.toString(slot), "IMPORTING", sourceId);
        source.command("CLUSTER", "SETSLOT", Integer.toString(slot), "MIGRATING", targetId);
        while (true) {
            List<String> all = ((List<?>) source.command("CLUSTER", "GETKEYSINSLOT", Integer.toString(slot), "1000"))
                    .stream().map(String.class::cast).toList();
            List<String> keys = all.stream().filter(k -> !last.contains(k)).limit(10).toList();
            if (keys.isEmpty()) {
                keys = all;
            }
            if (keys.isEmpty()) {
                break;
            }
            List<String> migrate = new ArrayList<>(List.of("MIGRATE", target.host(), Integer.toString(target.port()), "",
                    "0", "5000", "KEYS"));
            migrate.addAll(keys);
            source.command(migrate.toArray(String[]::new));
            between.run();
        }
        for (RedisServer master : runningMasters()) {
            master.command("CLUSTER", "SETSLOT", Integer.toString(slot), "NODE", targetId);
        }
    }

    /** The running replicas of {@code master}, as each replica sees itself. */
    public List<RedisServer> replicasOf(RedisServer master) {
        String masterId = idOf(master);
        List<RedisServer> replicas = new ArrayList<>();
        for (RedisServer node : nodes) {
            if (node != master && node.isRunning() && ((String) node.command("CLUSTER", "NODES")).lines()
                    .anyMatch(l -> l.contains("myself") && l.contains("slave " + masterId))) {
                replicas.add(node);
            }
        }
        return replicas;
    }

    private static String logTail(RedisServer node) {
        try {
            List<String> lines = java.nio.file.Files.readAllLines(node.logFile()).stream()
                    .filter(l -> !l.contains("MASTER") && !l.contains("SYNC")).toList();
            return node + ":\n  " + String.join("\n  ", lines.subList(Math.max(0, lines.size() - 15), lines.size())) + "\n";
        } catch (java.io.IOException e) {
            return node + ": no log (" + e + ")\n";
        }
    }

    /** The nodes that are masters now and running. */
    public List<RedisServer> runningMasters() {
        List<RedisServer> running = new ArrayList<>();
        for (RedisServer node : nodes) {
            if (node.isRunning() && ((List<?>) node.command("ROLE")).get(0).equals("master")) {
                running.add(node);
            }
        }
        return running;
    }

    /**
     * How long {@link #failOver} leaves the cluster's own election before it forces the promotion.
     * Well inside the shortest lease a failover test expects to survive (ClusterFaultTest's 10 s
     * watchdog): an election that failed under load (a Lettuce lane on 2026-11-28: "failover
     * attempt expired", promoted by the fallback 15 s after the kill) would otherwise let that
     * lease run out before any master could renew it.
     */
    static final Duration ELECTION_GRACE = Duration.ofSeconds(6);

    /**
     * SIGKILLs {@code master} and waits until one of its replicas has been promoted and every
     * running node reports {@code cluster_state:ok}; returns the promoted replica. The cluster's
     * own election gets {@link #ELECTION_GRACE}; on a loaded machine it can go on failing to
     * gather a majority of votes ("Waiting for votes, but majority still not reached", once for
     * a whole minute), so then the first replica is promoted with {@code CLUSTER FAILOVER
     * TAKEOVER} (it takes the slots without a vote), said on standard output: what a test checks
     * is how clients follow a promotion, not how Redis elects.
     */
    public RedisServer failOver(RedisServer master, Duration timeout) {
        List<RedisServer> replicas = replicasOf(master);
        if (replicas.isEmpty()) {
            throw new IllegalStateException(master + " has no replica to fail over to");
        }
        master.kill();
        RedisServer[] promoted = new RedisServer[1];
        java.util.function.BooleanSupplier isPromoted = () -> {
            for (RedisServer replica : replicas) {
                if (((List<?>) replica.command("ROLE")).get(0).equals("master")) {
                    promoted[0] = replica;
                    return true;
                }
            }
            return false;
        };
        if (!Await.holdsWithin(timeout.compareTo(ELECTION_GRACE) < 0 ? timeout : ELECTION_GRACE, isPromoted)) {
            System.out.println("[cluster] the election for " + master + " did not finish within " + ELECTION_GRACE.toSeconds()
                    + " s; promoting " + replicas.get(0) + " with CLUSTER FAILOVER TAKEOVER; its log ends with:\n"
                    + logTail(replicas.get(0)));
            replicas.get(0).command("CLUSTER", "FAILOVER", "TAKEOVER");
        }
        Await.until(timeout, () -> "a replica of " + master + " promoted; the replicas' logs end with:\n"
                + replicas.stream().map(RedisClusterGroup::logTail).reduce("", String::concat), isPromoted);
        Await.until(timeout, () -> "cluster_state:ok on every running node", () -> nodes.stream().filter(RedisServer::isRunning)
                .allMatch(n -> ((String) n.command("CLUSTER", "INFO")).contains("cluster_state:ok")));
        return promoted[0];
    }

    /** Kills every node. */
    @Override
    public void close() {
        nodes.forEach(RedisServer::close);
    }
}
