package dev.baton.internal;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a fair-lock waiter takes as a hand-off. Regression for a double holder the nemesis soak
 * found (Redis keeping its data): a waiter's attempt got no reply, its undo passed on the lock
 * that had just been handed to it, and the hand-off message, read before the next attempt, was
 * still taken as a grant.
 */
@Tag("no-redis")
class FairWaitingTest {
    private final Services services = new Services(null, null, null, null, null, "client",
            Duration.ofSeconds(1), Duration.ofSeconds(30), "", new Services.Lifecycle());
    private final FairRecipe recipe = new FairRecipe(services, "orders", 10_000);

    @Test
    void aHandOffMessageForTheWaitersTicketIsAGrant() {
        LockRecipe.Waiting waiting = recipe.waiting("client:1");
        waiting.refused(new LockRecipe.Grant(false, 0, 100, 0, 42));
        waiting.messageSeen("client:2#42");
        waiting.messageSeen("client:1#41");
        assertFalse(waiting.handedOver(), "another owner's, or an earlier ticket's, hand-off is not ours");
        waiting.messageSeen("client:1#42");
        assertTrue(waiting.handedOver());
    }

    @Test
    void aHandOffSeenAfterAnUndoIsNotAGrant() {
        LockRecipe.Waiting waiting = recipe.waiting("client:1");
        waiting.refused(new LockRecipe.Grant(false, 0, 100, 0, 42));
        waiting.abandoned(); // the undo of an attempt without a reply passes on a lock handed to us
        waiting.messageSeen("client:1#42");
        assertFalse(waiting.handedOver(), "the hand-off the undo passed on must not be taken as a grant");
        waiting.refused(new LockRecipe.Grant(false, 0, 100, 0, 57)); // queued again, with a new ticket
        waiting.messageSeen("client:1#42");
        assertFalse(waiting.handedOver(), "a late message for the old ticket is stale");
        waiting.messageSeen("client:1#57");
        assertTrue(waiting.handedOver());
    }
}
