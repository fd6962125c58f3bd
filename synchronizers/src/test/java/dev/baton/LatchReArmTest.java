package dev.baton;

import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import dev.baton.testkit.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 45, item 2: a latch re-armed right after it reached zero, and an await that begins after
 * the re-arm, on a client whose pub/sub connection delivers the previous round's "0" late (after
 * the await read the new count). The "0" was published before the read, so it says nothing about
 * the new round: the await must go on waiting until the new round's count reaches zero. On
 * f73c560 it returned true at once while the count was still 5. The late delivery is made by a
 * proxy that holds back what Redis sends the awaiting client's subscriber connection.
 */
class LatchReArmTest {
    private static final String CHANNEL = "redisson_countdownlatch__channel__{rearm}";

    private RedisServer redis;
    private TcpProxy proxy;
    private final Clients clients = new Clients();
    private Baton coordinator;
    private Baton worker;

    @BeforeEach
    void start() {
        redis = RedisServer.start();
        proxy = TcpProxy.start(redis.host(), redis.port());
        coordinator = clients.open(redis);
        worker = clients.open(BatonOptions.builder().redisUri(proxy.uri()).commandTimeout(java.time.Duration.ofSeconds(2)).build());
    }

    @AfterEach
    void stop() {
        proxy.setHoldSubscriberReplies(false);
        clients.close();
        proxy.close();
        redis.close();
    }

    @Test
    void anAwaitBegunAfterARearmIsNotOpenedByThePreviousRoundsLateZero() throws Exception {
        BatonCountDownLatch latch = coordinator.countDownLatch("rearm");
        assertTrue(latch.trySetCount(1));
        // A waiter of round 1 keeps the worker client's channel subscribed.
        CompletableFuture<Void> roundOne = worker.countDownLatch("rearm").awaitAsync().toCompletableFuture();
        redis.awaitSubscribers(CHANNEL, 1);

        proxy.setHoldSubscriberReplies(true); // from here the worker hears the channel late
        latch.countDown();                     // round 1 reaches zero: "0" published, held back
        assertTrue(latch.trySetCount(5));      // round 2 armed at once: "1" published, held back
        CompletableFuture<Boolean> roundTwo = worker.countDownLatch("rearm")
                .awaitAsync(30, TimeUnit.SECONDS).toCompletableFuture();
        // The await reads the count (5) on its command connection, which is not held back.
        assertEquals(5L, worker.countDownLatch("rearm").getCount());
        proxy.setHoldSubscriberReplies(false); // the late "0", then "1", reach the worker

        roundOne.get(Bounds.WAKE.toMillis(), TimeUnit.MILLISECONDS); // round 1's waiter is right to open
        TimeoutException stillWaiting = assertThrows(TimeoutException.class,
                () -> roundTwo.get(Bounds.WAKE.toMillis(), TimeUnit.MILLISECONDS),
                "an await of round 2 opened on round 1's zero");
        assertFalse(roundTwo.isDone(), stillWaiting.toString());
        assertEquals(5L, latch.getCount());

        for (int i = 0; i < 5; i++) {
            latch.countDown();
        }
        assertTrue(roundTwo.get(Bounds.WAKE.toMillis(), TimeUnit.MILLISECONDS), "round 2's zero opens it");
    }

    /**
     * The other half of the rule: an await under way when its round reaches zero opens, even if
     * the latch is re-armed before the await could read the count again (it opens on the "0",
     * which it knows came after its read found the count positive).
     */
    @Test
    void anAwaitUnderWayWhenTheCountReachesZeroOpensEvenIfTheLatchIsRearmedAtOnce() throws Exception {
        BatonCountDownLatch latch = coordinator.countDownLatch("rearm");
        assertTrue(latch.trySetCount(1));
        long pingsBefore = redis.calls("ping");
        CompletableFuture<Boolean> waiting = worker.countDownLatch("rearm").awaitAsync(30, TimeUnit.SECONDS).toCompletableFuture();
        // The await read the count (1) while subscribed, then marked the channel's stream (a PING
        // on its pub/sub connection, which Redis answers before anything it publishes later).
        dev.baton.testkit.Await.until(Bounds.WAKE, () -> "the await to mark its channel after reading the count",
                () -> redis.calls("ping") > pingsBefore);
        latch.countDown();
        assertTrue(latch.trySetCount(3)); // re-armed before the waiter can read the count again
        assertTrue(waiting.get(Bounds.WAKE.toMillis(), TimeUnit.MILLISECONDS),
                "the await's round reached zero: it opens, whatever the count is now");
        assertEquals(3L, latch.getCount());
    }
}
