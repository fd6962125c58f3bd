package dev.baton.internal.command;

import dev.baton.BatonException;
import dev.baton.RedisUnavailableException;
import dev.baton.WrongTypeException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisReadOnlyException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What each error reply means to Baton. */
@Tag("no-redis")
class FailuresTest {

    @Test
    void aReplicaRefusingAWriteIsNotNowAndNothingRan() {
        // Found by the 30-minute nemesis soak: after a failover a connection can sit on a server
        // that is a replica now; that is Redis being unavailable for writes, not a refusal.
        RedisReadOnlyException readOnly = new RedisReadOnlyException(
                "READONLY You can't write against a read only replica. script: 5e67, on @user_script:28.");
        assertTrue(Failures.isNotRun(new CompletionException(readOnly)));
        RuntimeException translated = Failures.translate(readOnly, "semaphore_try_set.lua on 'l-sem'", "l-sem");
        assertInstanceOf(RedisUnavailableException.class, translated);
        assertTrue(Failures.isConnectionFailure(translated), "retried inside a wait's budget");
    }

    @Test
    void otherRepliesKeepTheirMeaning() {
        assertFalse(Failures.isNotRun(new RedisCommandExecutionException("ERR unknown command")));
        assertEquals(BatonException.class,
                Failures.translate(new RedisCommandExecutionException("ERR unknown command"), "x", "k").getClass());
        assertInstanceOf(WrongTypeException.class, Failures.translate(new RedisCommandExecutionException(
                "WRONGTYPE Operation against a key holding the wrong kind of value"), "x", "k"));
        assertInstanceOf(IllegalArgumentException.class, Failures.translate(new RedisCommandExecutionException(
                "ERR user_script:3: " + Failures.ARGUMENT_REFUSED + " permits would overflow"), "x", "k"));
        assertTrue(Failures.isNotRun(new RedisCommandExecutionException("LOADING Redis is loading the dataset in memory")));
    }

    @Test
    void aCommandLettuceRefusedToWriteIsNotRun() {
        // Lettuce 7.7 refuses a cluster command while the first connection to its node is still
        // being made (REJECT_COMMANDS); the Valkey lane on Lettuce 7.7 failed on it before this.
        RedisException refused = new RedisException("Currently not connected. Commands are rejected.");
        assertTrue(Failures.isNotRun(new CompletionException(refused)), "sent again within the command timeout");
        assertTrue(Failures.isNotSent(refused));
        assertFalse(Failures.isNotRun(new RedisException("Connection closed")), "a command that may have been written");
        assertFalse(Failures.isNotSent(new RedisConnectionException("Currently not connected. Commands are rejected.")));
        assertInstanceOf(RedisUnavailableException.class, Failures.translate(refused, "x", "k"),
                "when the command timeout runs out first, it is Redis being unavailable");
    }
}
