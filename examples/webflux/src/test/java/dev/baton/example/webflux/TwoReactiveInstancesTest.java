package dev.baton.example.webflux;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two instances of the WebFlux example on one real Redis: concurrent posts to one account, half
 * to each instance, never overlap their read-modify-write (every post counts: the balance equals
 * the number of posts), though each instance serves them on a few event-loop threads.
 */
@ExtendWith(RedisExtension.class)
class TwoReactiveInstancesTest {
    private static final int POSTS = 40;
    private final RedisServer redis;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    TwoReactiveInstancesTest(RedisServer redis) {
        this.redis = redis;
    }

    private ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(WebfluxExampleApplication.class).run(
                "--server.port=0", "--server.address=127.0.0.1",
                "--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port());
    }

    private static int port(ConfigurableApplicationContext context) {
        return context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    }

    @Test
    void concurrentPostsOnTwoInstancesNeverOverlap() throws Exception {
        redis.command("FLUSHALL");
        try (ConfigurableApplicationContext a = start(); ConfigurableApplicationContext b = start()) {
            List<CompletableFuture<HttpResponse<String>>> posts = new ArrayList<>();
            for (int i = 0; i < POSTS; i++) {
                int port = port(i % 2 == 0 ? a : b);
                HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/accounts/42/post"))
                        .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.noBody()).build();
                posts.add(http.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
            }
            List<String> bodies = new ArrayList<>();
            for (CompletableFuture<HttpResponse<String>> post : posts) {
                HttpResponse<String> response = post.get();
                assertEquals(200, response.statusCode(), response.body());
                bodies.add(response.body());
            }
            assertEquals(String.valueOf(POSTS), redis.command("GET", "example:balance:42"),
                    "every post counted once: no two read-modify-writes overlapped");
            for (int n = 1; n <= POSTS; n++) {
                assertTrue(bodies.contains("balance " + n), "each balance seen once: " + bodies);
            }
            assertEquals(0L, redis.command("EXISTS", "ledger:42"), "released after the last post");
        }
    }
}
