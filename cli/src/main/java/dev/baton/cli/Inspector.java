package dev.baton.cli;

import dev.baton.lua.Layout;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tells what a key is (lock, fair lock, read-write lock, semaphore, latch, rate limiter, leader election) from the layout Baton
 * and Redisson share (names spelled by the library's own {@link Layout}), and who holds it; who
 * waits is the library's own count ({@code waiterCount()}). Read-only: plain reads, no scripts.
 */
final class Inspector {
    private Inspector() {
    }

    /** What {@code name} is, as an ordered map (rendered for people or as JSON). */
    static Map<String, Object> inspect(RedisOption.Connection connection, String name) {
        RedisClusterCommands<String, String> redis = connection.sync();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", name);
        String type = redis.type(name);
        long ttl = redis.pttl(name);
        if ("none".equals(type) && redis.exists(Layout.rateLimiter(name)) == 1L) {
            describeRateLimiter(connection, name, out);
            return out;
        }
        if ("none".equals(type) && redis.exists(Layout.leader(name), Layout.leaderQueue(name), Layout.leaderEpoch(name)) > 0) {
            describeElection(connection, name, out);
            return out;
        }
        switch (type) {
            case "none" -> out.put("kind", "absent");
            case "hash" -> describeHash(connection, name, out);
            case "string" -> describeCounter(connection, name, out);
            default -> out.put("kind", "not a Baton synchronizer (a " + type + ")");
        }
        if (!"none".equals(type)) {
            out.put("ttlMs", ttl);
        }
        return out;
    }

    /**
     * A rate limiter (its hash is {@code baton_rate:{name}}, data-layout.md): the limit in force,
     * the permits that could go now, how long until one more could, and how far reservations
     * reach, on Redis's clock (TIME), from plain reads.
     */
    private static void describeRateLimiter(RedisOption.Connection connection, String name, Map<String, Object> out) {
        RedisClusterCommands<String, String> redis = connection.sync();
        String key = Layout.rateLimiter(name);
        Map<String, String> fields = redis.hgetall(key);
        long ttl = redis.pttl(key);
        List<String> time = redis.time();
        long now = Long.parseLong(time.get(0)) * 1_000_000L + Long.parseLong(time.get(1));
        long p = Long.parseLong(fields.get("permits"));
        long d = Long.parseLong(fields.get("period"));
        long b = Long.parseLong(fields.get("burst"));
        long backlog = Math.max(0, (Long.parseLong(fields.get("tat")) - now) * p + Long.parseLong(fields.get("tatp")));
        long available = Math.max(0, Math.floorDiv(b * d - backlog, d));
        long nextMicros = backlog == 0 ? 0 : -Math.floorDiv(-(backlog - (b * d - (available + 1) * d)), p);
        long aheadMicros = Math.max(0, -Math.floorDiv(-(backlog + d - b * d), p));
        out.put("kind", "rate limiter");
        out.put("key", key);
        out.put("limit", p + " per " + d + " µs, burst " + b);
        out.put("availablePermits", available);
        out.put("nextPermitInMs", nextMicros / 1000.0);
        out.put("reservedAheadMs", aheadMicros / 1000.0);
        out.put("ttlMs", ttl);
    }

    /**
     * A leader election (data-layout.md): who leads (identity, owner id, epoch, since when, lease
     * left) and the live candidates in line, first first, from plain reads on Redis's clock.
     */
    private static void describeElection(RedisOption.Connection connection, String name, Map<String, Object> out) {
        RedisClusterCommands<String, String> redis = connection.sync();
        String key = Layout.leader(name);
        Map<String, String> fields = redis.hgetall(key);
        List<String> time = redis.time();
        long nowMs = Long.parseLong(time.get(0)) * 1000L + Long.parseLong(time.get(1)) / 1000L;
        out.put("kind", "leader election");
        out.put("key", key);
        String owner = fields.keySet().stream().filter(f -> !f.startsWith("baton:")).findFirst().orElse(null);
        if (owner == null) {
            out.put("leader", null);
        } else {
            Map<String, Object> leader = new LinkedHashMap<>();
            leader.put("identity", fields.getOrDefault("baton:identity", ""));
            leader.put("owner", owner);
            leader.put("epoch", Long.parseLong(fields.getOrDefault("baton:epoch", "0")));
            long since = Long.parseLong(fields.getOrDefault("baton:since", "0"));
            leader.put("leadingForMs", since == 0 ? null : nowMs - since);
            leader.put("leaseLeftMs", redis.pttl(key));
            out.put("leader", leader);
        }
        List<Object> line = new ArrayList<>();
        for (String waiting : redis.zrange(Layout.leaderQueue(name), 0, 99)) {
            String deadline = redis.hget(Layout.leaderWaiters(name), waiting);
            if (deadline != null && Long.parseLong(deadline) >= nowMs) {
                Map<String, Object> candidate = new LinkedHashMap<>();
                candidate.put("identity", redis.hget(Layout.leaderIdentities(name), waiting));
                candidate.put("owner", waiting);
                line.add(candidate);
            }
        }
        out.put("candidates", line);
        String epoch = redis.get(Layout.leaderEpoch(name));
        out.put("lastEpoch", epoch == null ? null : Long.parseLong(epoch));
    }

    private static void describeHash(RedisOption.Connection connection, String name, Map<String, Object> out) {
        RedisClusterCommands<String, String> redis = connection.sync();
        Map<String, String> fields = redis.hgetall(name);
        List<Object> holders = new ArrayList<>();
        fields.forEach((field, value) -> {
            if (!field.equals("mode")) {
                Map<String, Object> holder = new LinkedHashMap<>();
                holder.put("owner", field.endsWith(":write") ? field.substring(0, field.length() - 6) : field);
                holder.put("holds", Long.parseLong(value));
                if (fields.containsKey("mode")) {
                    holder.put("side", field.endsWith(":write") ? "write" : "read");
                }
                holders.add(holder);
            }
        });
        long queued = redis.zcard(Layout.fairQueue(name));
        if (fields.containsKey("mode")) {
            out.put("kind", "read-write lock");
            out.put("mode", fields.get("mode"));
            out.put("holders", holders);
            out.put("waitingClients", connection.baton().readWriteLock(name).readLock().waiterCount());
        } else if (queued > 0) {
            out.put("kind", "fair lock");
            out.put("holders", holders);
            out.put("queuedWaiters", queued);
        } else {
            out.put("kind", "lock");
            out.put("holders", holders);
            out.put("waitingClients", connection.baton().lock(name).waiterCount());
        }
    }

    private static void describeCounter(RedisOption.Connection connection, String name, Map<String, Object> out) {
        RedisClusterCommands<String, String> redis = connection.sync();
        long value = Long.parseLong(redis.get(name));
        String taken = Layout.expirablePermits(name);
        if (redis.exists(taken) > 0) {
            out.put("kind", "permit-expirable semaphore");
            out.put("availablePermits", value);
            out.put("takenPermits", redis.zcard(taken));
            out.put("waitingClients", connection.baton().permitExpirableSemaphore(name).waiterCount());
            return;
        }
        long latchWaiters = connection.baton().countDownLatch(name).waiterCount();
        long semaphoreWaiters = connection.baton().semaphore(name).waiterCount();
        if (latchWaiters > 0) {
            out.put("kind", "count-down latch");
            out.put("count", value);
            out.put("waitingClients", latchWaiters);
        } else if (semaphoreWaiters > 0) {
            out.put("kind", "semaphore");
            out.put("availablePermits", value);
            out.put("waitingClients", semaphoreWaiters);
        } else {
            out.put("kind", "semaphore or count-down latch (nobody waiting, so it cannot tell)");
            out.put("value", value);
        }
    }

    /** A few lines for people. */
    static String render(Map<String, Object> info) {
        StringBuilder out = new StringBuilder();
        info.forEach((key, value) -> {
            if (value instanceof List<?> list) {
                out.append(String.format("%-18s %d%n", key + ":", list.size()));
                for (Object item : list) {
                    out.append("  - ").append(item).append(System.lineSeparator());
                }
            } else {
                out.append(String.format("%-18s %s%n", key + ":", value));
            }
        });
        return out.toString();
    }
}
