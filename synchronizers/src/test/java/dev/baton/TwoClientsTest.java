package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The fixture most synchronizer tests share: one real Redis (from {@link RedisExtension}),
 * emptied before each test; two Baton clients on it, {@code a} and {@code b}, as two processes
 * would have; and a thread pool. Clients and threads are closed after each test.
 */
@ExtendWith(RedisExtension.class)
abstract class TwoClientsTest {
    protected final RedisServer redis;
    protected final Clients clients = new Clients();
    protected final ExecutorService threads = Executors.newCachedThreadPool();
    protected Baton a;
    protected Baton b;

    TwoClientsTest(RedisServer redis) {
        this.redis = redis;
    }

    /** The options both clients are opened with; a test class may change them. */
    BatonOptions options() {
        return Clients.defaults(redis).build();
    }

    @BeforeEach
    final void openTwoClients() {
        redis.command("FLUSHALL");
        a = clients.open(options());
        b = clients.open(options());
    }

    @AfterEach
    final void closeTwoClients() {
        threads.shutdownNow();
        clients.close();
    }
}
