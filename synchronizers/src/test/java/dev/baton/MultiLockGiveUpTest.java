package dev.baton;

import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 45, item 1: a multi-lock call the caller gives up on, while it holds one member and
 * waits for the next, and the same owner's next multi-lock call over a shared member, started
 * from the give-up's own callback (which runs before Baton's callbacks on the same stage). The
 * javadoc promises that next call is ordered after the give-backs of the call given up, so what
 * it is granted is what Redis holds for it. On f73c560 the next call re-entered the member's
 * hold that the give-back then took away: granted, while Redis held the member for nobody.
 */
class MultiLockGiveUpTest {
    private static final long OWNER = 4_500_000_001L;

    private RedisServer redis;
    private final Clients clients = new Clients();
    private Baton baton;
    private Baton other;

    @BeforeEach
    void start() {
        redis = RedisServer.start();
        baton = clients.open(redis);
        other = clients.open(redis);
    }

    @AfterEach
    void stop() {
        clients.close();
        redis.close();
    }

    /** Every way a caller can end a stage it was given, as a user's code does. */
    enum GiveUp {
        OR_TIMEOUT, CANCEL, COMPLETE_BY_HAND, COMPLETE_EXCEPTIONALLY, TRY_LOCK_COMPLETE_ON_TIMEOUT
    }

    @ParameterizedTest
    @EnumSource(GiveUp.class)
    void theOwnersNextCallFromTheGiveUpsCallbackIsGrantedOnlyWhatRedisHolds(GiveUp how) throws Exception {
        // Another client holds b: the first call takes a, then waits for b.
        assertTrue(other.lock("r45-b").tryLock());
        BatonMultiLock first = Baton.multiLock(baton.lock("r45-a"), baton.lock("r45-b"));
        BatonMultiLock next = Baton.multiLock(baton.lock("r45-a"), baton.lock("r45-c"));
        CompletableFuture<?> call = how == GiveUp.TRY_LOCK_COMPLETE_ON_TIMEOUT
                ? first.tryLockAsync(30, -1, TimeUnit.SECONDS, OWNER).toCompletableFuture()
                : first.lockAsync(OWNER).toCompletableFuture();
        Await.until(Bounds.WAKE, () -> "the first call to hold r45-a and wait for r45-b",
                () -> redis.command("HEXISTS", "r45-a", ownerField()).equals(1L) && redis.subscribers(lockChannel("r45-b")) > 0);

        AtomicReference<CompletableFuture<Void>> second = new AtomicReference<>();
        CompletableFuture<Void> startedInCallback = new CompletableFuture<>();
        call.whenComplete((v, e) -> {
            second.set(next.lockAsync(OWNER).toCompletableFuture());
            startedInCallback.complete(null);
        });
        switch (how) {
            case OR_TIMEOUT -> call.orTimeout(1, TimeUnit.MILLISECONDS);
            case CANCEL -> call.cancel(true);
            case COMPLETE_BY_HAND -> ((CompletableFuture<Object>) call).complete(null);
            case COMPLETE_EXCEPTIONALLY -> call.completeExceptionally(new TimeoutException("the caller's own"));
            case TRY_LOCK_COMPLETE_ON_TIMEOUT -> ((CompletableFuture<Object>) call).completeOnTimeout(false, 0, TimeUnit.MILLISECONDS);
        }
        startedInCallback.get(5, TimeUnit.SECONDS);
        CompletableFuture<Void> granted = second.get();
        assertNotNull(granted);
        granted.get(Bounds.failure(Duration.ofSeconds(2)).toMillis() * 2, TimeUnit.MILLISECONDS);

        // What the owner was granted, Redis holds for it: one hold of each member, nobody else.
        for (String name : List.of("r45-a", "r45-c")) {
            Object fields = redis.command("HGETALL", name);
            assertEquals(List.of(ownerField(), "1"), fields, name + " after the next call was granted (" + how + ")");
        }
        next.unlockAsync(OWNER).toCompletableFuture().get(5, TimeUnit.SECONDS); // no LeaseLostException
        assertEquals(0L, redis.command("EXISTS", "r45-a", "r45-c"), "released by the owner's unlock");
        assertEquals(0, baton.leasesHeld(), "no hold left in the client");
        other.lock("r45-b").unlock();
    }

    private String ownerField() {
        return baton.clientId() + ":" + OWNER;
    }

    private static String lockChannel(String name) {
        return "redisson_lock__channel:{" + name + "}";
    }
}
