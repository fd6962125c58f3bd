package dev.baton.internal.pubsub;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.Runtimes;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How the shared pub/sub service hands a message to its waiters, on a real Redis: PUBLISH from
 * the fixture, delivery on the client's one subscription connection. Messages on one connection
 * are handled in order, so once a later message has rung its waiter, the earlier one has been
 * handled in full and what it did not ring stays unrung.
 */
class PubSubServiceTest {
    private RedisServer redis;
    private Baton baton;
    private PubSubService pubSub;

    @BeforeEach
    void start() {
        redis = RedisServer.start();
        baton = Baton.create(BatonOptions.builder().redisUri(redis.uri()).build());
        pubSub = Runtimes.of(baton).pubSub();
    }

    @AfterEach
    void stop() {
        baton.close();
        redis.close();
    }

    @Test
    void aTaggedMessageRingsOnlyTheWaiterItNamesAmongAThousand() throws Exception {
        List<PubSubService.Subscription> subs = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            subs.add(pubSub.subscribe("queue", WakeRule.TAGGED, "owner-" + i));
        }
        subs.get(0).ready().get(10, TimeUnit.SECONDS);
        List<CompletableFuture<Void>> bells = subs.stream().map(s -> s.waiter().park()).toList();

        redis.command("PUBLISH", "queue", "owner-500#7"); // not for owner-5 or owner-50
        redis.command("PUBLISH", "queue", "owner-999");   // a tag alone names its waiter too
        bells.get(999).get(10, TimeUnit.SECONDS);
        bells.get(500).get(10, TimeUnit.SECONDS);

        assertEquals("owner-500#7", subs.get(500).waiter().takeMessage());
        assertEquals("owner-999", subs.get(999).waiter().takeMessage());
        for (int i = 0; i < 999; i++) {
            if (i != 500) {
                assertFalse(bells.get(i).isDone(), "owner-" + i + " was rung");
                assertNull(subs.get(i).waiter().takeMessage(), "owner-" + i + " saw a message");
            }
        }
    }

    @Test
    void aWakeOneMessageRingsTheOldestWaiterWithoutARingPendingAndALeaverPassesItsRingOn() throws Exception {
        List<PubSubService.Subscription> subs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            subs.add(pubSub.subscribe("plain", WakeRule.ONE));
        }
        subs.get(0).ready().get(10, TimeUnit.SECONDS);
        List<CompletableFuture<Void>> bells = subs.stream().map(s -> s.waiter().park()).toList();

        redis.command("PUBLISH", "plain", "0");
        bells.get(0).get(10, TimeUnit.SECONDS);
        redis.command("PUBLISH", "plain", "0"); // the oldest still has its ring: the next one gets this
        bells.get(1).get(10, TimeUnit.SECONDS);
        assertFalse(bells.get(2).isDone(), "two messages rang three waiters");

        subs.get(1).close().get(10, TimeUnit.SECONDS); // leaves without acting on its ring
        bells.get(2).get(10, TimeUnit.SECONDS);
        assertFalse(bells.get(3).isDone(), "a passed-on ring reached two waiters");
    }

    /**
     * A semaphore's refused first attempt parks at once only if the channel it then joins is the
     * one that was subscribed and confirmed before the attempt was sent, with nothing heard since
     * (AcquireEngine's quiet-channel path): a message handled in between, a channel left and
     * subscribed again, or one not yet confirmed all send it to attempt again instead.
     */
    @Test
    void aWaiterJoiningASubscribedChannelIsQuietOnlyIfNothingWasHeardSinceTheMark() throws Exception {
        assertNull(pubSub.mark("quiet"), "not subscribed: no mark");
        PubSubService.Subscription first = pubSub.subscribe("quiet", WakeRule.BY_COUNT);
        first.ready().get(10, TimeUnit.SECONDS);
        // A mark needs Redis's subscribed event too, which Lettuce 7.5 delivers after the
        // SUBSCRIBE's own reply completes `ready` (the first CI run of this test met that order).
        dev.baton.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> "the subscribed event",
                () -> pubSub.mark("quiet") != null);

        PubSubService.Mark calm = pubSub.mark("quiet");
        PubSubService.Subscription joinedQuietly = pubSub.subscribe("quiet", WakeRule.BY_COUNT);
        assertTrue(joinedQuietly.quietSince(calm), "nothing heard between the mark and the join");

        PubSubService.Mark beforeMessage = pubSub.mark("quiet");
        CompletableFuture<Void> rung = first.waiter().park();
        redis.command("PUBLISH", "quiet", "1");
        rung.get(10, TimeUnit.SECONDS); // handled: the channel counted it before ringing anyone
        PubSubService.Subscription joinedAfterMessage = pubSub.subscribe("quiet", WakeRule.BY_COUNT);
        assertFalse(joinedAfterMessage.quietSince(beforeMessage), "a message came between the mark and the join");
        assertFalse(joinedAfterMessage.quietSince(null), "no mark, nothing promised");

        PubSubService.Mark beforeLeaving = pubSub.mark("quiet");
        for (PubSubService.Subscription s : List.of(first, joinedQuietly, joinedAfterMessage)) {
            s.close().get(10, TimeUnit.SECONDS);
        }
        assertNull(pubSub.mark("quiet"), "left by every waiter: not subscribed");
        PubSubService.Subscription again = pubSub.subscribe("quiet", WakeRule.BY_COUNT);
        again.ready().get(10, TimeUnit.SECONDS);
        assertFalse(again.quietSince(beforeLeaving), "subscribed again: messages in between were never heard");
        again.close().get(10, TimeUnit.SECONDS);
    }
}
