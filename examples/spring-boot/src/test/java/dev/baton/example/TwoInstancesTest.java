package dev.baton.example;

import dev.baton.testkit.Await;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two instances of the example service on one real Redis: the ShedLock job runs once per slot, the
 * endpoint works on both, and actuator shows Baton's health and acquisitions.
 */
@ExtendWith(RedisExtension.class)
class TwoInstancesTest {
    /** The baton component of the health document, UP (details before or after the status). */
    private static final Pattern BATON_UP = Pattern.compile("\"baton\":\\{(\"details\":\\{[^}]*},)?\"status\":\"UP\"");
    /** The COUNT statistic of an actuator metric document. */
    private static final Pattern COUNT = Pattern.compile("\\{\"statistic\":\"COUNT\",\"value\":([0-9.]+)}");
    private final RedisServer redis;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    TwoInstancesTest(RedisServer redis) {
        this.redis = redis;
    }

    private ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(ExampleApplication.class).run(
                "--server.port=0", "--server.address=127.0.0.1",
                "--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port(),
                "--example.report.cron=* * * * * *", "--example.report.lock-at-least-for=PT0.9S");
    }

    private static int port(ConfigurableApplicationContext context) {
        return context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    }

    private HttpResponse<String> call(String method, int port, String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).method(method, HttpRequest.BodyPublishers.noBody()).build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void twoInstancesRunTheJobOncePerSlotAndShowTheirLocksInActuator() throws Exception {
        redis.command("FLUSHALL");
        long steadyFrom;
        try (ConfigurableApplicationContext one = start(); ConfigurableApplicationContext two = start()) {
            // Slots are judged once both instances are up and connected: an instance still starting
            // (its Baton connects on first use) can fire a slot's job later than lockAtLeastFor
            // (0.9 s here) after the other ran it, and ShedLock then lets it run again. That is
            // ShedLock's rule (lockAtLeastFor must cover the nodes' trigger delay), not a second
            // holder; the lock's exclusivity is the grants-equal-runs check below.
            for (ConfigurableApplicationContext instance : List.of(one, two)) {
                assertEquals(200, call("GET", port(instance), "/actuator/health").statusCode());
            }
            steadyFrom = java.time.Instant.now().getEpochSecond() + 1;
            Await.until(Duration.ofSeconds(20), () -> "five slots of the job run once both are up",
                    () -> runs().keySet().stream().filter(slot -> Long.parseLong(slot) >= steadyFrom).count() >= 5);

            for (ConfigurableApplicationContext instance : List.of(one, two)) {
                HttpResponse<String> export = call("POST", port(instance), "/customers/c-7/export");
                assertEquals(200, export.statusCode(), export.body());
                assertEquals("exported c-7", export.body());

                HttpResponse<String> health = call("GET", port(instance), "/actuator/health");
                assertEquals(200, health.statusCode(), health.body());
                assertTrue(BATON_UP.matcher(health.body()).find(), health.body());

                HttpResponse<String> exports = call("GET", port(instance),
                        "/actuator/metrics/baton.acquisitions?tag=name:example:exports&tag=outcome:acquired");
                assertEquals(200, exports.statusCode(), exports.body());
                assertTrue(exports.body().contains("{\"statistic\":\"COUNT\",\"value\":1.0}"), exports.body());
            }
            // Every run took the job's lock on one of the two, and every grant ran the job once: the
            // instances' acquired counts add up to exactly the runs. Read as a consistent snapshot
            // (the runs unchanged across the reading, no run between its grant and its record).
            String seen = "";
            boolean equal = false;
            for (int attempt = 0; attempt < 20 && !equal; attempt++) {
                long runsBefore = totalRuns();
                double jobGrants = 0;
                for (ConfigurableApplicationContext instance : List.of(one, two)) {
                    jobGrants += jobGrants(port(instance));
                }
                long runsAfter = totalRuns();
                equal = runsBefore == runsAfter && jobGrants == runsBefore;
                seen = "grants " + jobGrants + ", runs " + runsBefore + " then " + runsAfter;
                if (!equal) {
                    Thread.sleep(97); // another moment between two of the job's one-second slots
                }
            }
            assertTrue(equal, "the job's lock was acquired once for each run and for nothing else: " + seen);
        }
        Map<String, Long> runs = runs();
        Map<String, Long> steady = new TreeMap<>(runs);
        steady.keySet().removeIf(slot -> Long.parseLong(slot) < steadyFrom);
        assertTrue(steady.size() >= 5, "slots once both were up (from " + steadyFrom + "): " + runs);
        steady.forEach((slot, count) -> assertEquals(1L, count, "runs in slot " + slot + " (both up from " + steadyFrom
                + "): " + runs));
    }

    /** The job's acquired count on one instance (0 if it never got the lock). */
    private double jobGrants(int port) throws IOException, InterruptedException {
        HttpResponse<String> jobLocks = call("GET", port,
                "/actuator/metrics/baton.acquisitions?tag=name:shedlock:report&tag=outcome:acquired");
        if (jobLocks.statusCode() == 404) {
            return 0; // this instance never got the job's lock
        }
        assertEquals(200, jobLocks.statusCode(), jobLocks.body());
        Matcher count = COUNT.matcher(jobLocks.body());
        assertTrue(count.find(), jobLocks.body());
        return Double.parseDouble(count.group(1));
    }

    private long totalRuns() {
        return runs().values().stream().mapToLong(Long::longValue).sum();
    }

    private Map<String, Long> runs() {
        List<?> flat = (List<?>) redis.command("HGETALL", ReportJob.RUNS);
        Map<String, Long> runs = new TreeMap<>();
        for (int i = 0; i < flat.size(); i += 2) {
            runs.put(String.valueOf(flat.get(i)), Long.parseLong(String.valueOf(flat.get(i + 1))));
        }
        return runs;
    }
}
