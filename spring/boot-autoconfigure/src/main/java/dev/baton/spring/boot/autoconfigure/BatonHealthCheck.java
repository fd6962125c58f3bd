package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import org.springframework.beans.factory.ObjectProvider;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The check behind both Boot lines' health indicators ({@link BatonHealthIndicator},
 * {@link Boot3BatonHealthIndicator}): reads the probe through Baton's own connections and returns
 * the details of an UP health; throws what the read threw otherwise.
 */
final class BatonHealthCheck {
    private BatonHealthCheck() {
    }

    static Map<String, Object> details(ObjectProvider<Baton> baton, BatonLeaseLosses losses) {
        Baton client = baton.getObject();
        client.lock(BatonHealthIndicator.PROBE).isLocked();
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("clientId", client.clientId());
        details.put("leasesHeld", client.leasesHeld());
        if (losses != null) {
            details.put("leasesLostRecently", losses.recent());
            String last = losses.last();
            if (last != null) {
                details.put("lastLeaseLost", last);
            }
        }
        return details;
    }
}
