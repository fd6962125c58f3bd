package dev.baton.example;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The example service, whose controller takes {@code Baton} in its constructor and gets its
 * semaphore there, started while Redis refuses every connection (a TCP proxy in front of a real
 * Redis, refusing): it starts, its health is DOWN and the export fails; once Redis accepts
 * connections, the same instance serves the export and its health is UP. Before the client
 * connected on first use, the start failed (UnsatisfiedDependencyException for 'exportController'
 * ← RedisUnavailableException: cannot connect to Redis).
 */
@ExtendWith(RedisExtension.class)
class StartWithoutRedisTest {
    private final RedisServer redis;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    StartWithoutRedisTest(RedisServer redis) {
        this.redis = redis;
    }

    private HttpResponse<String> call(String method, int port, String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(20)).method(method, HttpRequest.BodyPublishers.noBody()).build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theServiceStartsWhileRedisIsDownAndServesOnceItIsBack() throws Exception {
        redis.command("FLUSHALL");
        try (TcpProxy proxy = TcpProxy.start(redis.host(), redis.port())) {
            proxy.setRefuse(true);
            try (ConfigurableApplicationContext service = new SpringApplicationBuilder(ExampleApplication.class).run(
                    "--server.port=0", "--server.address=127.0.0.1",
                    "--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + proxy.port(),
                    "--baton.command-timeout=1s", "--example.report.cron=-")) {
                assertTrue(service.isRunning(), "started with Redis refusing connections");
                int port = service.getEnvironment().getRequiredProperty("local.server.port", Integer.class);

                HttpResponse<String> down = call("GET", port, "/actuator/health");
                assertEquals(503, down.statusCode(), down.body());
                assertEquals("DOWN", batonStatus(down.body()), down.body());
                HttpResponse<String> failed = call("POST", port, "/customers/c-1/export");
                assertEquals(500, failed.statusCode(), "the export cannot run without Redis: " + failed.body());

                proxy.setRefuse(false);
                HttpResponse<String> export = call("POST", port, "/customers/c-1/export");
                assertEquals(200, export.statusCode(), export.body());
                assertEquals("exported c-1", export.body());
                assertEquals(String.valueOf(ExportController.CONCURRENT_EXPORTS),
                        String.valueOf(redis.command("GET", "example:exports")), "the permits set on first use, all back");
                HttpResponse<String> up = call("GET", port, "/actuator/health");
                assertEquals(200, up.statusCode(), up.body());
                assertEquals("UP", batonStatus(up.body()), up.body());
            }
        }
    }

    /** The status of the health document's baton component. */
    private static String batonStatus(String health) {
        int component = health.indexOf("\"baton\":{");
        assertTrue(component >= 0, "no baton component: " + health);
        java.util.regex.Matcher status = java.util.regex.Pattern.compile("\"status\":\"([A-Z_]+)\"").matcher(health);
        assertTrue(status.find(component), health);
        return status.group(1);
    }
}
