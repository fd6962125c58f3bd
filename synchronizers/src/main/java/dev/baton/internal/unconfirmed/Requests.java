package dev.baton.internal.unconfirmed;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.baton.DoNotRetryException;
import dev.baton.RedisUnavailableException;
import dev.baton.ReplicaSyncException;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.command.Failures;
import dev.baton.internal.support.Durations;
import dev.baton.internal.time.Scheduler;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/*
 * Exactly-once requests, for the operations whose Redis layout (Redisson's) has no owner to
 * check a repeated command against: the plain semaphore's acquire, release and addPermits, the
 * latch's countDown, and both trySet calls, and the permit-expirable semaphore's acquire (its
 * request key is named after the attempt's first permit id; expirable_cancel undoes it). Locks
 * need none of this (their scripts compare hold counts).
 *
 * A request carries a random id. Its script remembers it in a key of its own beside the
 * synchronizer, "baton_request:{name}:<id>" (same hash tag, same cluster slot), written in the
 * same atomic script as the change itself with a PX expiry, and does nothing for a request
 * whose key exists. So every copy of one request counts once: copies Lettuce re-sends after a
 * reconnect, copies Baton re-sends after a failure, and copies that were on the wire when the
 * caller gave up and ran when Redis came back. An acquire that got no reply is undone by its id
 * (semaphore_cancel), which marks the key cancelled, so a copy that arrives after the undo
 * takes nothing.
 *
 * How long a key lives bounds how far apart two copies may run: the background horizon below
 * plus four command timeouts. To keep few keys alive on a busy semaphore, a client hands the
 * script, on its next call on the same name, the keys of its earlier requests that were
 * answered and written exactly once; those can have no further copy, so the script deletes
 * them at once. A request written more than once keeps its key for the whole memory. About one key
 * per request in flight stays, not one per request in the memory. (A sorted set of ids was
 * tried first: its pruning by the server's clock made every script call about 7 us slower.)
 *
 * Releases are never silently lost: a release (or countDown) that is not confirmed within the
 * command timeout is reported to the caller (as DoNotRetryException, the retry rule: see
 * notToBeRepeated), and Baton keeps sending the same request in the background until Redis
 * answers it or the horizon, the larger of 60 s and ten command timeouts, has passed; only then
 * is it logged at ERROR as possibly lost. How this differs from a lock's unconfirmed release and
 * an expirable permit's: this package's package-info.
 */
public final class Requests {
    private static final Logger log = LoggerFactory.getLogger(Requests.class);

    /** How many answered requests' keys one call asks its script to delete, at most. */
    private static final int FORGET_PER_CALL = 16;
    /**
     * Answered keys are handed to a script only once this many have gathered, so one DEL in
     * eight calls does the forgetting instead of one in every call.
     */
    private static final int FORGET_BATCH = 8;
    /** How many answered ids a client remembers per name, waiting to be forgotten. */
    private static final int ANSWERED_PER_NAME = 256;

    /** One request sent: the caller's view (bounded by the command timeout) and when it landed. */
    public record Delivery<T>(CompletableFuture<T> foreground, CompletableFuture<T> landed) {
    }

    private final CommandExecutor executor;
    private final Scheduler scheduler;
    private final long timeoutNanos;
    private final long horizonNanos;
    private final long memoryMs;
    private final Cache<String, Queue<String>> answered;
    private final Cache<String, Boolean> unconfirmed;

    public Requests(CommandExecutor executor, Scheduler scheduler, Duration commandTimeout) {
        this.executor = executor;
        this.scheduler = scheduler;
        this.timeoutNanos = commandTimeout.toNanos();
        this.horizonNanos = Math.max(TimeUnit.SECONDS.toNanos(60), 10 * timeoutNanos);
        this.memoryMs = TimeUnit.NANOSECONDS.toMillis(horizonNanos + 4 * timeoutNanos);
        this.answered = Caffeine.newBuilder().expireAfterAccess(Duration.ofMillis(memoryMs)).maximumSize(10_000).build();
        this.unconfirmed = Caffeine.newBuilder().expireAfterWrite(Duration.ofMillis(memoryMs)).maximumSize(10_000).build();
    }

    /**
     * Remembers that a release the caller may repeat (a permit id's) got no answer: when the
     * repeat finds nothing to release, the first one had landed.
     */
    public void markUnconfirmed(String release) {
        unconfirmed.put(release, Boolean.TRUE);
    }

    /** Whether {@code release} was left unconfirmed before; forgets it. */
    public boolean takeUnconfirmed(String release) {
        return unconfirmed.asMap().remove(release) != null;
    }

    /**
     * The caller's view of a release that a second call would repeat (a semaphore's
     * {@code release(n)} and {@code addPermits(n)}, a latch's {@code countDown()}): its failures
     * that leave the release landed, or to be finished by Baton, become {@link DoNotRetryException}
     * (the retry rule, guarantees.md); every other failure passes unchanged.
     */
    public static <T> CompletableFuture<T> notToBeRepeated(CompletableFuture<T> foreground) {
        return foreground.exceptionallyCompose(error -> {
            Throwable cause = Failures.unwrap(error);
            if (cause instanceof ReplicaSyncException || Failures.isConnectionFailure(cause)) {
                return CompletableFuture.failedFuture(Failures.doNotRetry(cause));
            }
            return CompletableFuture.failedFuture(cause);
        });
    }

    /** A new request id: 64 random bits as 16 hex characters. */
    public static String newId() {
        String hex = Long.toHexString(ThreadLocalRandom.current().nextLong());
        return "0".repeat(16 - hex.length()) + hex;
    }

    /** The key that remembers request {@code id} on synchronizer {@code name}. */
    public static String key(String name, String id) {
        return Layout.request(name, id);
    }

    /** How long a request key lives, in ms, as the script argument. */
    public String memoryArg() {
        return Long.toString(memoryMs);
    }

    /** How long Baton keeps sending an unconfirmed release in the background. */
    Duration horizon() {
        return Duration.ofNanos(horizonNanos);
    }

    /**
     * {@code keys} followed by the keys of this client's answered requests on {@code name}, for
     * the script to delete (at most a few per call).
     */
    public List<String> withForgotten(String name, List<String> keys) {
        Queue<String> queue = answered.getIfPresent(name);
        if (queue == null || queue.size() < FORGET_BATCH) {
            return keys;
        }
        String key = queue.poll();
        if (key == null) {
            return keys;
        }
        List<String> all = new ArrayList<>(keys.size() + FORGET_PER_CALL);
        all.addAll(keys);
        for (int i = 0; i < FORGET_PER_CALL && key != null; i++) {
            all.add(key);
            key = i + 1 < FORGET_PER_CALL ? queue.poll() : null;
        }
        return all;
    }

    /**
     * The request's reply arrived and it was written exactly once: no copy of it can come any
     * more, so its key may be deleted early. A request written more than once (Lettuce wrote it
     * again after a reconnect, or Baton sent another copy) is never handed here: a copy written
     * on a connection that was dropped may still sit in the server's input or in the network
     * and run later, so its key lives out its PX, and a copy that arrives within that memory
     * still counts once.
     */
    public void answered(String name, String key) {
        Queue<String> queue = answered.get(name, k -> new ConcurrentLinkedQueue<>());
        if (queue.size() < ANSWERED_PER_NAME) {
            queue.add(key);
        }
    }

    /**
     * Sends a request that must land exactly once (a release, a countDown, an undo). The
     * foreground re-sends it on connection failures within the command timeout; if it is still
     * not answered, the caller hears so and the same request is sent on in the background until
     * answered or the horizon passes. {@code name} and {@code key} name the request's key, to be
     * deleted on the client's next call once answered; both are null for a request whose script
     * is idempotent by other means (a release by permit id).
     */
    public <T> Delivery<T> deliver(Script script, CommandExecutor.Reply reply, List<String> keys, List<String> args,
                                   String name, String key, String what) {
        long started = scheduler.nanoTime();
        CompletableFuture<T> landed = new CompletableFuture<>();
        CompletableFuture<T> foreground = new CompletableFuture<>();
        executor.<T>evalUntilAnswered(script, reply, keys, args, timeoutNanos).whenComplete((delivered, error) -> {
            if (error == null) {
                if (name != null && !delivered.resent()) {
                    answered(name, key);
                }
                foreground.complete(delivered.value());
                landed.complete(delivered.value());
                return;
            }
            Throwable cause = Failures.unwrap(error);
            if (!Failures.isConnectionFailure(cause)) {
                foreground.completeExceptionally(cause);
                landed.completeExceptionally(cause);
                return;
            }
            long left = horizonNanos - (scheduler.nanoTime() - started);
            foreground.completeExceptionally(new RedisUnavailableException(what + " was not confirmed within "
                    + Durations.readableNanos(scheduler.nanoTime() - started) + ": " + cause.getMessage()
                    + "; Baton keeps sending it in the background for up to " + Durations.readableNanos(left)
                    + " and it counts once", cause));
            log.warn("{} not confirmed within the command timeout; Baton keeps sending it (it counts once) for up to {}",
                    what, Durations.readableNanos(left));
            executor.<T>evalUntilAnswered(script, reply, keys, args, left).whenComplete((late, lateError) -> {
                if (lateError == null) {
                    // Not forgotten early: an earlier copy may still be on its way (see answered).
                    log.info("{} confirmed after {}", what, Durations.readableNanos(scheduler.nanoTime() - started));
                    landed.complete(late.value());
                } else {
                    Throwable last = Failures.unwrap(lateError);
                    if (last instanceof IllegalStateException) {
                        log.error("{} was not confirmed before this client was closed; if Redis never ran it, it is lost",
                                what);
                    } else {
                        log.error("{} could not be confirmed within {}; if Redis never ran it, it is lost: {}", what,
                                Durations.readableNanos(horizonNanos), last.getMessage());
                    }
                    landed.completeExceptionally(last);
                }
            });
        });
        return new Delivery<>(foreground, landed);
    }
}
