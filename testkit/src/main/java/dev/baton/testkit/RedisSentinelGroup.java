package dev.baton.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A master, its replicas and Sentinels watching it as {@code mymaster}, tuned to fail over
 * within seconds: down-after 1 s (unless given), failover timeout 3 s.
 */
public final class RedisSentinelGroup implements AutoCloseable {
    private static final String MASTER_NAME = "mymaster";

    /** A host and port. */
    public record HostAndPort(String host, int port) {
    }

    private final RedisServer master;
    private final List<RedisServer> replicas;
    private final List<RedisServer> sentinels;
    private final List<TcpProxy> replicaLinks;

    private RedisSentinelGroup(RedisServer master, List<RedisServer> replicas, List<RedisServer> sentinels,
                               List<TcpProxy> replicaLinks) {
        this.master = master;
        this.replicas = replicas;
        this.sentinels = sentinels;
        this.replicaLinks = replicaLinks;
    }

    /** Starts the group and waits until replicas are in sync and every Sentinel sees them. */
    public static RedisSentinelGroup start(int replicaCount, int sentinelCount) {
        return start(replicaCount, sentinelCount, Duration.ZERO);
    }

    /**
     * Starts the group with a slow replication link: everybody reaches the master through a
     * {@link TcpProxy} (so Sentinels, clients and replicas agree on its address), which delays
     * only the replication connections by {@code replicaLinkLatency} each way. A write the master
     * acknowledged is then missing on a replica for that long, unless WAIT waited for it.
     */
    public static RedisSentinelGroup start(int replicaCount, int sentinelCount, Duration replicaLinkLatency) {
        return start(replicaCount, sentinelCount, replicaLinkLatency, false, Duration.ofSeconds(1));
    }

    /**
     * Starts the group with the original master behind a {@link TcpProxy} that carries all its
     * traffic (clients, Sentinels, replicas), for faults injected there ({@link #masterProxy()});
     * the master runs with {@code masterConfig} (e.g. AOF settings). After a failover the
     * Sentinels name the promoted replica's own address, which no proxy fronts.
     */
    public static RedisSentinelGroup startBehindProxy(int replicaCount, int sentinelCount, Duration downAfter,
                                                      String... masterConfig) {
        return start(replicaCount, sentinelCount, Duration.ZERO, true, downAfter, masterConfig);
    }

    private static RedisSentinelGroup start(int replicaCount, int sentinelCount, Duration replicaLinkLatency,
                                            boolean proxyAll, Duration downAfter, String... masterConfig) {
        List<RedisServer> all = new ArrayList<>();
        List<TcpProxy> links = new ArrayList<>();
        try {
            List<String> config = new ArrayList<>(List.of(masterConfig));
            config.add("repl-diskless-sync-delay 0");
            RedisServer master = RedisServer.start(config.toArray(String[]::new));
            all.add(master);
            String masterHost = master.host();
            int masterPort = master.port();
            if (!replicaLinkLatency.isZero() || proxyAll) {
                TcpProxy link = TcpProxy.start(master.host(), master.port());
                link.setLatency(replicaLinkLatency);
                link.setLatencyForReplicationOnly(!proxyAll);
                links.add(link);
                masterPort = link.port();
            }
            List<RedisServer> replicas = new ArrayList<>();
            for (int i = 0; i < replicaCount; i++) {
                RedisServer replica = RedisServer.start("replicaof " + masterHost + " " + masterPort);
                all.add(replica);
                replicas.add(replica);
            }
            for (RedisServer replica : replicas) {
                Await.until(Duration.ofSeconds(20), () -> "replica " + replica.port() + " in sync",
                        () -> ((String) replica.command("INFO", "replication")).contains("master_link_status:up"));
            }
            int quorum = sentinelCount / 2 + 1;
            List<RedisServer> sentinels = new ArrayList<>();
            for (int i = 0; i < sentinelCount; i++) {
                RedisServer sentinel = RedisServer.startSentinel(List.of(
                        "sentinel monitor " + MASTER_NAME + " " + masterHost + " " + masterPort + " " + quorum,
                        "sentinel down-after-milliseconds " + MASTER_NAME + " " + downAfter.toMillis(),
                        "sentinel failover-timeout " + MASTER_NAME + " 3000",
                        "sentinel parallel-syncs " + MASTER_NAME + " 1"));
                all.add(sentinel);
                sentinels.add(sentinel);
            }
            for (RedisServer sentinel : sentinels) {
                Await.until(Duration.ofSeconds(30), () -> "sentinel " + sentinel.port() + " to see the group",
                        () -> {
                            List<?> master0 = (List<?>) sentinel.command("SENTINEL", "MASTER", MASTER_NAME);
                            return field(master0, "num-slaves") >= replicaCount
                                    && field(master0, "num-other-sentinels") >= sentinelCount - 1;
                        });
            }
            return new RedisSentinelGroup(master, List.copyOf(replicas), List.copyOf(sentinels), List.copyOf(links));
        } catch (RuntimeException | AssertionError e) {
            all.forEach(RedisServer::close);
            links.forEach(TcpProxy::close);
            throw e;
        }
    }

    private static long field(List<?> flat, String name) {
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            if (name.equals(flat.get(i))) {
                return Long.parseLong((String) flat.get(i + 1));
            }
        }
        return -1;
    }

    /** The master name the Sentinels monitor. */
    public String masterName() {
        return MASTER_NAME;
    }

    /** The original master. */
    public RedisServer master() {
        return master;
    }

    /** The replicas. */
    public List<RedisServer> replicas() {
        return replicas;
    }

    /** The Sentinels. */
    public List<RedisServer> sentinels() {
        return sentinels;
    }

    /** Lettuce's Sentinel URI: {@code redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,...#mymaster}. */
    public String sentinelUri() {
        StringBuilder uri = new StringBuilder("redis-sentinel://");
        for (int i = 0; i < sentinels.size(); i++) {
            uri.append(i == 0 ? "" : ",").append(sentinels.get(i).host()).append(':').append(sentinels.get(i).port());
        }
        return uri.append('#').append(MASTER_NAME).toString();
    }

    /** The master the Sentinels currently report. */
    public HostAndPort currentMaster() {
        RuntimeException last = null;
        for (RedisServer sentinel : sentinels) {
            if (!sentinel.isRunning()) {
                continue;
            }
            try {
                List<?> addr = (List<?>) sentinel.command("SENTINEL", "get-master-addr-by-name", MASTER_NAME);
                return new HostAndPort((String) addr.get(0), Integer.parseInt((String) addr.get(1)));
            } catch (RuntimeException e) {
                last = e;
            }
        }
        throw new IllegalStateException("no sentinel answered", last);
    }

    /** The proxy in front of the original master (see {@link #startBehindProxy}). */
    public TcpProxy masterProxy() {
        if (replicaLinks.isEmpty()) {
            throw new IllegalStateException("this group's master is not behind a proxy");
        }
        return replicaLinks.get(0);
    }

    /** The port the Sentinels gave for the original master (its proxy's, with a slow link). */
    private int originalMasterPort() {
        return replicaLinks.isEmpty() ? master.port() : replicaLinks.get(0).port();
    }

    /** Waits until the Sentinels report a master other than the original one. */
    public void awaitFailover(Duration timeout) {
        Await.until(timeout, () -> "a failover away from port " + originalMasterPort(),
                () -> currentMaster().port() != originalMasterPort());
    }

    /**
     * Waits until the Sentinels report a master other than the original one and it answers as a
     * master (its promotion done); returns that server.
     */
    public RedisServer awaitPromotion(Duration timeout) {
        RedisServer[] promoted = new RedisServer[1];
        Await.until(timeout, () -> "a replica promoted in place of port " + originalMasterPort(), () -> {
            int port = currentMaster().port();
            for (RedisServer replica : replicas) {
                if (replica.port() == port && ((String) replica.command("INFO", "replication")).contains("role:master")) {
                    promoted[0] = replica;
                    return true;
                }
            }
            return false;
        });
        return promoted[0];
    }

    /**
     * The master's host vanishes: its replication links are cut first, so whatever they were still
     * delaying never reaches a replica (as with a machine that crashed with its network), then
     * the master is SIGKILLed.
     */
    public void crashMaster() {
        replicaLinks.forEach(TcpProxy::cutAll);
        master.kill();
    }

    /** Kills every process of the group. */
    @Override
    public void close() {
        sentinels.forEach(RedisServer::close);
        replicas.forEach(RedisServer::close);
        replicaLinks.forEach(TcpProxy::close);
        master.close();
    }
}
