package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.HeldLease;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The {@code baton} actuator endpoint: the leases this instance holds now, read from the client's
 * own table (no round trip to Redis). Expose it with
 * {@code management.endpoints.web.exposure.include=baton}; it lists lock names, so expose it only
 * where those are not sensitive.
 */
@Endpoint(id = "baton")
public class BatonEndpoint {
    private final Supplier<Baton> created;

    /** An endpoint for the client {@code created} gives once it exists (null before). */
    public BatonEndpoint(Supplier<Baton> created) {
        this.created = created;
    }

    /**
     * The client's id and its held leases: name, owner, holds, whether the watchdog renews it,
     * and the lease in milliseconds. Does not create the client: before its first use this says
     * so and lists nothing.
     */
    @ReadOperation
    public Map<String, Object> leases() {
        Map<String, Object> body = new LinkedHashMap<>();
        Baton client = created.get();
        if (client == null) {
            body.put("created", false);
            body.put("leases", List.of());
            return body;
        }
        List<HeldLease> held = client.heldLeases();
        body.put("created", true);
        body.put("clientId", client.clientId());
        body.put("leases", held.stream().map(BatonEndpoint::describe).toList());
        return body;
    }

    private static Map<String, Object> describe(HeldLease lease) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("name", lease.name());
        entry.put("owner", lease.ownerId());
        entry.put("holds", lease.holds());
        entry.put("watchdog", lease.watchdog());
        entry.put("leaseMillis", lease.leaseMillis());
        return entry;
    }
}
