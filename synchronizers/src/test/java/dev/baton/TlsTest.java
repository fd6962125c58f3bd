package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton over TLS (rediss://) with a certificate the test makes: locks, semaphores and a latch
 * whose wake-up travels over the TLS pub/sub connection. Needs openssl and a redis-server built
 * with TLS; skipped with the reason printed where either is missing.
 */
class TlsTest {

    @Test
    void synchronizersWorkOverTls() throws Exception {
        Path dir = Files.createTempDirectory("baton-tls");
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        boolean certificate = run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(),
                "-out", cert.toString(), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1");
        skipUnless(certificate, "openssl could not make a test certificate");
        int tlsPort = freePort();
        RedisServer redis;
        try {
            redis = RedisServer.start("tls-port " + tlsPort, "tls-cert-file " + cert, "tls-key-file " + key,
                    "tls-ca-cert-file " + cert, "tls-auth-clients no");
        } catch (RuntimeException e) {
            // Only a server built without TLS is a reason to skip: it refuses the tls-* directives.
            // Any other start-up failure is a failure.
            String why = String.valueOf(e.getMessage());
            boolean noTls = why.contains("Bad directive") || why.contains("wrong number of arguments")
                    || why.toLowerCase(java.util.Locale.ROOT).contains("not supported")
                    || why.toLowerCase(java.util.Locale.ROOT).contains("tls support");
            if (!noTls) {
                throw e;
            }
            skipUnless(false, "this redis-server has no TLS support (" + why.lines().filter(l -> l.contains("tls")
                    || l.contains("directive")).findFirst().orElse(why.lines().findFirst().orElse("")) + ")");
            return;
        }
        ExecutorService threads = Executors.newCachedThreadPool();
        RedisClient client = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(tlsPort).withSsl(true).build());
        client.setOptions(ClientOptions.builder().sslOptions(SslOptions.builder().trustManager(cert.toFile()).build()).build());
        // This test is about TLS, not the command timeout: a first TLS handshake in a JVM deep in
        // the suite took more than the default 3 s once on a loaded CI machine (lettuce-7.5 lane,
        // 2026-11-26; 0.6-1.6 s on the same code here), so it gets Lettuce's own connect timeout.
        long opening = System.nanoTime();
        try (redis; Baton baton = Baton.create(client, BatonOptions.builder().commandTimeout(Duration.ofSeconds(10)).build())) {
            System.out.println("[tls] connected over TLS in " + (System.nanoTime() - opening) / 1_000_000 + " ms");
            BatonLock lock = baton.lock("secure");
            lock.lock();
            lock.unlock();
            baton.semaphore("secure-permits").trySetPermits(1);
            assertTrue(baton.semaphore("secure-permits").tryAcquire());
            baton.countDownLatch("secure-latch").trySetCount(1);
            Future<Long> waiter = threads.submit(() -> {
                assertTrue(baton.countDownLatch("secure-latch").await(15, TimeUnit.SECONDS));
                return System.nanoTime();
            });
            redis.awaitSubscribers("redisson_countdownlatch__channel__{secure-latch}", 1);
            long counted = System.nanoTime();
            baton.countDownLatch("secure-latch").countDown();
            assertTrue(waiter.get(15, TimeUnit.SECONDS) - counted <= Bounds.within(Bounds.WAKE).toNanos(),
                    "woken over the TLS pub/sub connection, not by the 5 s re-check");
        } finally {
            threads.shutdownNow();
            client.shutdown();
        }
    }

    private static void skipUnless(boolean condition, String reason) {
        if (!condition) {
            System.out.println("[tls] skipped: " + reason);
        }
        Assumptions.assumeTrue(condition, reason);
    }

    private static boolean run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return socket.getLocalPort();
        }
    }
}
