package dev.baton.internal.command;

import dev.baton.BatonException;
import dev.baton.DoNotRetryException;
import dev.baton.RedisUnavailableException;
import dev.baton.ReplicaSyncException;
import dev.baton.WrongTypeException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;

import java.io.IOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * What a failure means, in one place: every Lettuce or I/O failure becomes one of Baton's
 * exceptions here ({@link #translate}), and the rest of the runtime asks only these questions of
 * a failure: is it about reaching Redis (worth another try while a budget lasts), did the command
 * certainly not run, how long to pause before the next try.
 */
public final class Failures {
    private Failures() {
    }

    /**
     * Error replies that mean "not now, and nothing ran": a cluster healing, a replica loading, a
     * busy script, or a server that is a replica now (READONLY: after a failover the connection
     * can be on the demoted master until Sentinel's reconfiguration drops it and the client
     * reconnects to the new one; a script stops at its first write there, and every write Baton
     * makes is a script, so nothing was changed). Redis 6.2 wraps the refusal of a script's write
     * in the script error ({@code ERR Error running script (call to f_...): @user_script:29:
     * ... -READONLY You can't write against a read only replica.}); 7.0 and Valkey send it as is.
     */
    private static final Pattern TEMPORARY = Pattern.compile(
            "(?s)^(CLUSTERDOWN|LOADING|MASTERDOWN|TRYAGAIN|BUSY|READONLY)\\b|^ERR Error running script.*-(READONLY|MASTERDOWN)\\b");

    /** The error-reply prefix with which a script refuses an argument. */
    static final String ARGUMENT_REFUSED = "BATON_ARG";

    /**
     * What Lettuce says when it refuses to write a command because the connection it would go on
     * is not up: a cluster client rejecting commands while disconnected (Baton's own cluster
     * client does, so a dead master's commands fail fast), and from Lettuce 7.7 also while the
     * first connection to a node is still being made. The command was never written.
     */
    private static final String NOT_SENT = "Currently not connected. Commands are rejected.";

    /**
     * Whether a failure says the command did not run: an error reply because the server cannot
     * serve it now, or a command Lettuce refused to write at all. Another copy is always safe.
     */
    static boolean isNotRun(Throwable error) {
        Throwable e = unwrap(error);
        return (e instanceof RedisCommandExecutionException && TEMPORARY.matcher(String.valueOf(e.getMessage())).find())
                || isNotSent(e);
    }

    /** Whether Lettuce refused to write the command because its connection is not up (yet). */
    static boolean isNotSent(Throwable error) {
        Throwable e = unwrap(error);
        return e != null && e.getClass() == RedisException.class && NOT_SENT.equals(e.getMessage());
    }

    /** The pause before the next copy after {@code failures} failed ones: 20 ms doubling, at most 250 ms. */
    public static long backoffNanos(int failures) {
        long ms = Math.min(250, 20L << Math.min(failures, 4));
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }

    /**
     * Whether a failure is about reaching Redis (connection reset or refused, reconnecting, no
     * answer in time, a cluster or replica not ready): worth another copy while time allows.
     * Too few replica acknowledgements is not: Redis answered, the change was made on the
     * master, and the caller decides (ReplicaSyncException).
     */
    public static boolean isConnectionFailure(Throwable e) {
        Throwable cause = unwrap(e);
        return cause instanceof RedisUnavailableException && !(cause instanceof ReplicaSyncException);
    }

    /**
     * A failure of a release after which calling it again would release twice, as the caller
     * must see it: a connection failure (Baton finishes the release in the background) or a
     * replica-sync shortfall (the release landed on the master) becomes
     * {@link DoNotRetryException} with the failure as its cause.
     */
    public static DoNotRetryException doNotRetry(Throwable cause) {
        String landed = cause instanceof ReplicaSyncException
                ? "it landed on the master, but " + cause.getMessage()
                : cause.getMessage();
        return new DoNotRetryException(landed + "; do not call it again: a second call would be a second release",
                cause);
    }

    private static final String ANOTHER_OBJECT = ": another Redisson object (a map, a bucket, another kind of "
            + "synchronizer) or other code may be using this name. Baton leaves it untouched; give the synchronizer "
            + "another name, or remove the key if nothing needs it";

    /** The same refusal, saying what the key holds ({@code TYPE}'s answer). */
    static WrongTypeException wrongType(WrongTypeException refused, String type) {
        return new WrongTypeException(refused.key(), "Redis key '" + refused.key() + "' holds a " + type
                + ", not what this synchronizer uses" + ANOTHER_OBJECT + " (" + refused.getCause().getMessage() + ")",
                refused.getCause());
    }

    public static Throwable unwrap(Throwable e) {
        while (e instanceof CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** Maps a Lettuce or I/O failure into Baton's exception tree; Baton's own pass through. */
    static RuntimeException translate(Throwable error, String what, String key) {
        Throwable e = unwrap(error);
        if (e instanceof BatonException be) {
            return be;
        }
        if (e instanceof RedisCommandExecutionException ree) {
            String message = String.valueOf(ree.getMessage());
            int refusal = message.indexOf(ARGUMENT_REFUSED);
            if (refusal >= 0) {
                // A script refused an argument it can only judge against Redis state (overflow).
                return new IllegalArgumentException(message.substring(refusal + ARGUMENT_REFUSED.length()).trim(), ree);
            }
            if (TEMPORARY.matcher(message).find()) {
                return new RedisUnavailableException("Redis cannot serve " + what + " right now: " + message, ree);
            }
            if (message.contains("WRONGTYPE")) {
                return new WrongTypeException(key, "Redis key '" + key + "' holds a value of another type than "
                        + "this synchronizer uses" + ANOTHER_OBJECT + " (" + what + ": " + message + ")", ree);
            }
            return new BatonException("Redis refused " + what + ": " + message, ree);
        }
        if (e instanceof RedisCommandTimeoutException || e instanceof RedisConnectionException
                || e instanceof IOException
                || (e instanceof RedisException && e.getCause() instanceof IOException)) {
            return new RedisUnavailableException("Redis is unreachable, " + what + " failed: " + e.getMessage(), e);
        }
        if (e instanceof RedisException re) {
            return new RedisUnavailableException("Redis connection failed during " + what + ": " + re.getMessage(), re);
        }
        if (e instanceof RuntimeException re) {
            return re;
        }
        return new BatonException(what + " failed: " + e, e);
    }
}
