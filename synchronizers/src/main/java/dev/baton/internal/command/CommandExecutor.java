package dev.baton.internal.command;

// Over 300 lines on purpose: every path a command takes to Redis (EVALSHA then EVAL, its own
// timeout, re-sent copies, counted writes, bounded reads) is here and nowhere else; what a
// failure means (Failures) and replica sync (ReplicaSyncer) live apart.

import dev.baton.RedisUnavailableException;
import dev.baton.WrongTypeException;
import dev.baton.internal.support.Durations;
import dev.baton.internal.time.Scheduler;
import dev.baton.lua.Script;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.netty.buffer.ByteBuf;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;

import static dev.baton.internal.command.Failures.backoffNanos;
import static dev.baton.internal.command.Failures.isConnectionFailure;
import static dev.baton.internal.command.Failures.isNotRun;
import static dev.baton.internal.command.Failures.translate;
import static dev.baton.internal.command.Failures.unwrap;

/*
 * The command executor is the only class that sends commands to Redis. Everything a recipe
 * does to Redis is either one Lua script from the lua-scripts catalog (every state change) or
 * one plain read (EXISTS, HGET, PTTL, ...), and both pass through here so that three things
 * are done once:
 *
 *  - Scripts go out as EVALSHA. A NOSCRIPT reply (after SCRIPT FLUSH, a restart or a
 *    failover to a replica that never saw the script) means the script did not run, so it is
 *    sent once more as EVAL, which also caches it on that server. Lettuce routes both by the
 *    first key, so in a cluster the retry lands on the same slot owner.
 *
 *  - Every command is bounded by the configured timeout, whatever the Lettuce client's own
 *    settings are (the application may own that client). A timed-out command may still run
 *    later: callers that change state treat a timeout as "outcome unknown" and follow up with
 *    an idempotent undo, never with a blind retry.
 *
 *  - Errors are translated into Baton's exception tree in one place (Failures.translate):
 *    WRONGTYPE names the key,
 *    a script's "BATON_ARG ..." error (an argument only Redis state can judge, e.g. a counter
 *    that would overflow) becomes IllegalArgumentException,
 *    timeouts and connection failures become RedisUnavailableException, anything else
 *    Redis refuses becomes BatonException with Redis's own words.
 *
 * Every script gets one more argument than its caller passes: the publish command (PUBLISH, or
 * SPUBLISH for sharded pub/sub in a Redis 7+ cluster), so the scripts stay static text.
 *
 * Scripts are dispatched as our own Command subclass that counts how often Lettuce wrote it to
 * a socket. With auto-reconnect Lettuce re-sends commands whose replies were lost when a
 * connection dropped ("at least once"), so a script can run twice while the caller sees one
 * reply. Every Baton script is written to be harmless when run twice, and the count tells the
 * lock's release whether a "nothing held" reply may be the echo of its own first run.
 */
public final class CommandExecutor {

    /** The reply shape a script returns. */
    public enum Reply {
        /** An integer reply, as {@link Long}. */
        INTEGER,
        /** An array reply, as {@code List<Object>} of {@link Long}, {@link String} or lists. */
        ARRAY
    }

    /** A script's reply together with whether the command may have run more than once. */
    public record Delivered<T>(T value, boolean resent) {
    }

    /** One script call, the value every path below passes on: the script, its keys and arguments, its reply's shape. */
    record ScriptCall(Script script, Reply reply, List<String> keys, List<String> args) {
        /** The first key: where the script runs, and the key an error names. */
        String key() {
            return keys.get(0);
        }

        /** How messages name the call: {@code lock_acquire.lua on 'name'}. */
        String what() {
            return script.fileName() + " on '" + key() + "'";
        }
    }

    /**
     * What the executor needs of the topology, fixed when the connections open.
     *
     * @param shardedPublish  whether scripts publish with SPUBLISH (a Redis 7+ cluster, as Redisson
     *                        does there) instead of PUBLISH; the command travels as each script's
     *                        last argument
     * @param onUnreachable   run whenever a command fails because Redis could not be reached or did
     *                        not answer in time (a cluster refreshes its slot map then); must not
     *                        block
     * @param subscriberCount how a channel's subscribers are counted where Baton and Redisson
     *                        subscribe (in a cluster: the slot owner, or every node), or null for
     *                        PUBSUB NUMSUB on the command connection
     * @param waitRoute       the commands WAIT runs on after a change of a key (a cluster's slot
     *                        owner), or null for the command connection
     */
    public record Topology(boolean shardedPublish, Runnable onUnreachable,
                           Function<String, CompletableFuture<Long>> subscriberCount,
                           Function<String, CompletableFuture<RedisClusterAsyncCommands<String, String>>> waitRoute) {
        /** One Redis (standalone or behind Sentinel): nothing to route. */
        public static final Topology SINGLE = new Topology(false, () -> { }, null, null);
    }

    private final StatefulConnection<String, String> connection;
    private final Supplier<RedisClusterAsyncCommands<String, String>> commands;
    private final Scheduler scheduler;
    private final long timeoutNanos;
    private final Duration timeout;
    private final ReplicaSyncer replicas;
    private final String publishCommand;
    private final Runnable onUnreachable;
    private final Function<String, CompletableFuture<Long>> subscriberCount;
    private volatile boolean closed;

    public CommandExecutor(StatefulConnection<String, String> connection,
                           Supplier<RedisClusterAsyncCommands<String, String>> commands,
                           Scheduler scheduler, Duration timeout, ReplicaSyncer.Config replicaSync, Topology topology) {
        this.connection = connection;
        this.commands = commands;
        this.scheduler = scheduler;
        this.timeout = timeout;
        this.timeoutNanos = timeout.toNanos();
        this.publishCommand = topology.shardedPublish() ? "spublish" : "publish";
        this.onUnreachable = topology.onUnreachable();
        this.subscriberCount = topology.subscriberCount();
        this.replicas = new ReplicaSyncer(replicaSync, scheduler, this.timeoutNanos, this::bounded,
                topology.waitRoute() != null ? topology.waitRoute()
                        : key -> CompletableFuture.completedFuture(commands.get()));
    }

    /** Runs a script once and returns its reply. */
    public <T> CompletableFuture<T> eval(Script script, Reply reply, List<String> keys, List<String> args) {
        return new Send<T>(new ScriptCall(script, reply, keys, args), timeoutNanos, false, replicas.failWhenShort()).start()
                .thenApply(Delivered::value);
    }

    /** Runs a script once and returns its reply and whether the command may have run twice. */
    public <T> CompletableFuture<Delivered<T>> evalTracked(Script script, Reply reply, List<String> keys, List<String> args) {
        return new Send<T>(new ScriptCall(script, reply, keys, args), timeoutNanos, false, replicas.failWhenShort()).start();
    }

    /**
     * Runs a watchdog renewal once. With replica sync on it still waits for the replicas, so a
     * renewed lease is on them before a failover, but too few acknowledgements do not fail it:
     * the lease was extended on the master, which is what keeps the lock held.
     */
    public <T> CompletableFuture<T> evalRenewal(Script script, Reply reply, List<String> keys, List<String> args) {
        return new Send<T>(new ScriptCall(script, reply, keys, args), timeoutNanos, false, false).start()
                .thenApply(Delivered::value);
    }

    /**
     * Sends a clean-up script once (an undo, leaving a queue) whose place in the connection's
     * order matters more than its reply: the reply is awaited for the command timeout, but a
     * copy that got none is not cancelled, so Lettuce still delivers it when the connection
     * recovers, ahead of every command sent after it. It is never re-sent by Baton: a late copy
     * could land after the caller's next operation and undo that instead.
     *
     * <p>For the same reason it goes as EVAL, never EVALSHA: an EVALSHA refused with NOSCRIPT (a
     * restarted server's empty script cache) would be followed by an EVAL sent only when that
     * reply came back, behind the caller's next command, so a fair waiter's leave or an undo
     * could pass on or delete the lock its owner had just been granted (the nemesis soak found
     * two holders of a fair lock that way).
     */
    public <T> CompletableFuture<Delivered<T>> evalCleanup(Script script, Reply reply, List<String> keys, List<String> args) {
        return new Send<T>(new ScriptCall(script, reply, keys, args), timeoutNanos, true, replicas.failWhenShort()).start();
    }

    /**
     * One script call on its way to Redis, and all the state it keeps while there: the copy in
     * flight (EVALSHA; EVAL after a NOSCRIPT; another copy after a refusal that says nothing ran),
     * whether the caller's bound has passed, and whether any copy was written more than once.
     *
     * <p>An owner's call ({@code cleanup} false) goes as EVALSHA, is sent again while Redis says
     * it did not run (TRYAGAIN while a slot is half-migrated, CLUSTERDOWN, LOADING, MASTERDOWN,
     * BUSY, READONLY, or Lettuce refusing to write it while the node's connection is not up),
     * which is always safe, and a copy that gets no answer within the bound is cancelled in
     * Lettuce, so Lettuce never writes it later (one already on the wire may still run, which
     * every script tolerates). A clean-up goes once, as EVAL, and is not cancelled (see
     * {@link #evalCleanup}): its place in the order is the point.
     */
    private final class Send<T> implements Supplier<CompletableFuture<Delivered<T>>> {
        private final ScriptCall call;
        private final long boundNanos;
        private final boolean cleanup;
        private final boolean failWhenShort;
        /** The copy in flight, cancelled when the bound passes (an owner's call only). */
        private volatile AsyncCommand<String, String, T> current;
        /** Set when the bound passed: no copy is sent after it. */
        private volatile boolean givenUp;
        /**
         * Set when any copy sent for this call was written more than once (Lettuce re-sends what
         * a dropped connection left unanswered): the copy that was refused (NOSCRIPT on a restarted
         * server, LOADING) may be the second write of a command whose first write ran, so the
         * reply of the copy that follows is marked as possibly re-sent. A copy sent again after
         * Lettuce refused to write the previous one marks it too: a release that then finds
         * nothing held counts as its own, whatever became of the refused copy.
         */
        private volatile boolean rewritten;

        Send(ScriptCall call, long boundNanos, boolean cleanup, boolean failWhenShort) {
            this.call = call;
            this.boundNanos = boundNanos;
            this.cleanup = cleanup;
            this.failWhenShort = failWhenShort;
        }

        CompletableFuture<Delivered<T>> start() {
            String what = call.what();
            if (closed) {
                return CompletableFuture.failedFuture(new IllegalStateException("this Baton client is closed; " + what + " was not sent"));
            }
            CompletableFuture<Delivered<T>> sent = cleanup ? dispatch(false)
                    : whileNotRun(this, () -> givenUp, scheduler.nanoTime() + boundNanos, 0, () -> rewritten = true);
            CompletableFuture<Delivered<T>> done = bounded(
                    sent.thenApply(d -> rewritten && !d.resent() ? new Delivered<>(d.value(), true) : d),
                    what, call.key(), boundNanos, this::giveUp);
            return replicas.on() ? done.thenCompose(delivered -> replicas.await(delivered, what, call.key(), failWhenShort)) : done;
        }

        private void giveUp() {
            givenUp = true;
            AsyncCommand<String, String, T> command = current;
            if (command != null && !cleanup) {
                command.cancel(false);
            }
        }

        /** One copy of an owner's call: as EVALSHA, and as EVAL after a NOSCRIPT. */
        @Override
        public CompletableFuture<Delivered<T>> get() {
            return dispatch(true).exceptionallyCompose(e -> unwrap(e) instanceof RedisNoScriptException
                    ? dispatch(false) : CompletableFuture.failedFuture(e));
        }

        private CompletableFuture<Delivered<T>> dispatch(boolean bySha) {
            CommandArgs<String, String> commandArgs = new CommandArgs<>(StringCodec.UTF8)
                    .add(bySha ? call.script().sha1() : call.script().text())
                    .add(call.keys().size());
            for (String key : call.keys()) {
                commandArgs.addKey(key);
            }
            for (String arg : call.args()) {
                commandArgs.addValue(arg);
            }
            commandArgs.addValue(publishCommand); // every script's last ARGV: how it publishes
            CountingCommand<T> command = new CountingCommand<>(bySha ? CommandType.EVALSHA : CommandType.EVAL,
                    call.reply(), commandArgs);
            AsyncCommand<String, String, T> async = new AsyncCommand<>(command);
            current = async;
            try {
                connection.dispatch(async);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
            return async.whenComplete((value, error) -> {
                if (command.writes() > 1) {
                    rewritten = true;
                }
            }).thenApply(value -> new Delivered<>(value, command.writes() > 1));
        }
    }

    /**
     * Sends {@code copy} again, after a short, capped pause, while a copy failed in a way that
     * says nothing ran ({@link Failures#isNotRun}) and {@code retryUntil} (a nano time) allows;
     * a copy Lettuce refused to write because its node's connection is not up also asks for a
     * fresh slot map and runs {@code onNotSent}. The one re-send loop for scripts and reads.
     */
    private <T> CompletableFuture<T> whileNotRun(Supplier<CompletableFuture<T>> copy, BooleanSupplier givenUp,
                                                 long retryUntil, int refusals, Runnable onNotSent) {
        return copy.get().exceptionallyCompose(e -> {
            long pause = backoffNanos(refusals);
            if (!isNotRun(e) || givenUp.getAsBoolean() || closed || scheduler.nanoTime() + pause >= retryUntil) {
                return CompletableFuture.failedFuture(e);
            }
            if (Failures.isNotSent(e)) {
                onUnreachable.run(); // the node's connection is not up: a cluster asks for a fresh slot map
                onNotSent.run();
            }
            CompletableFuture<T> again = new CompletableFuture<>();
            scheduler.schedule(() -> {
                if (givenUp.getAsBoolean()) {
                    again.completeExceptionally(e);
                    return;
                }
                whileNotRun(copy, givenUp, retryUntil, refusals + 1, onNotSent).whenComplete((value, error) -> {
                    if (error == null) {
                        again.complete(value);
                    } else {
                        again.completeExceptionally(error);
                    }
                });
            }, pause, TimeUnit.NANOSECONDS);
            return again;
        });
    }

    /**
     * Sends a lock release: an owner's own release until answered within the command timeout,
     * a clean-up release once, in order (see {@link #evalCleanup}).
     */
    public CompletableFuture<Delivered<Long>> release(boolean cleanup, Script script, Reply reply, List<String> keys,
                                                      List<String> args) {
        return cleanup ? evalCleanup(script, reply, keys, args) : evalUntilAnswered(script, reply, keys, args, timeoutNanos);
    }

    /**
     * Sends a script that is safe to run more than once (idempotent by hold count or request
     * id) until Redis answers it: a copy that fails on the connection (reset, reconnecting, no
     * answer in time) is followed by another after a short, capped pause, while
     * {@code budgetNanos} lasts. Each copy is bounded by the command timeout or by what is left
     * of the budget, whichever is less, so the whole call ends within the budget (plus the timer's
     * granularity). The reply says {@code resent} when more than one copy may have run.
     */
    public <T> CompletableFuture<Delivered<T>> evalUntilAnswered(Script script, Reply reply, List<String> keys,
                                                         List<String> args, long budgetNanos) {
        CompletableFuture<Delivered<T>> result = new CompletableFuture<>();
        sendCopy(new ScriptCall(script, reply, keys, args), scheduler.nanoTime() + budgetNanos, 0, result);
        return result;
    }

    private <T> void sendCopy(ScriptCall call, long deadline, int failures, CompletableFuture<Delivered<T>> result) {
        long left = deadline - scheduler.nanoTime();
        new Send<T>(call, Math.max(1, Math.min(timeoutNanos, left)), false, replicas.failWhenShort()).start()
                .whenComplete((delivered, error) -> {
                    if (error == null) {
                        result.complete(failures == 0 ? delivered : new Delivered<>(delivered.value(), true));
                        return;
                    }
                    Throwable cause = unwrap(error);
                    if (failures > 0 && cause instanceof ReplicaShortfall shortfall) {
                        // The copy that answered ran on the master; an earlier one may have too.
                        cause = shortfall.resent();
                    }
                    long pause = backoffNanos(failures);
                    if (!isConnectionFailure(cause) || scheduler.nanoTime() + pause >= deadline) {
                        result.completeExceptionally(cause);
                        return;
                    }
                    scheduler.schedule(() -> sendCopy(call, deadline, failures + 1, result), pause, TimeUnit.NANOSECONDS);
                });
    }

    /**
     * How many connections are subscribed to {@code channel} where Baton and Redisson subscribe:
     * PUBSUB NUMSUB outside a cluster, otherwise as the cluster's wiring counts; bounded by the
     * command timeout.
     */
    public CompletableFuture<Long> subscribers(String channel) {
        Function<String, CompletableFuture<Long>> count = subscriberCount;
        if (count == null) {
            return read("PUBSUB NUMSUB", channel, c -> c.pubsubNumsub(channel)).thenApply(n -> n.getOrDefault(channel, 0L));
        }
        CompletableFuture<Long> sent;
        try {
            sent = count.apply(channel);
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        return bounded(sent, "counting the subscribers of " + channel, channel);
    }

    /**
     * Runs one plain read command, e.g. {@code read("EXISTS", key, c -> c.exists(key))}.
     * Reads are idempotent, so Lettuce's re-sending them is harmless; like scripts, a read that
     * certainly did not run is sent again within the command timeout.
     */
    public <T> CompletableFuture<T> read(String command, String key,
                                         Function<RedisClusterAsyncCommands<String, String>, RedisFuture<T>> call) {
        AtomicReference<CompletableFuture<T>> current = new AtomicReference<>();
        AtomicBoolean givenUp = new AtomicBoolean();
        Supplier<CompletableFuture<T>> copy = () -> {
            CompletableFuture<T> sent;
            try {
                sent = call.apply(commands.get()).toCompletableFuture();
            } catch (RuntimeException e) {
                sent = CompletableFuture.failedFuture(e);
            }
            current.set(sent);
            return sent;
        };
        return bounded(whileNotRun(copy, givenUp::get, scheduler.nanoTime() + timeoutNanos, 0, () -> { }), command + " on '" + key + "'",
                key, timeoutNanos, () -> {
                    givenUp.set(true);
                    CompletableFuture<T> pending = current.get();
                    if (pending != null) {
                        pending.cancel(false);
                    }
                });
    }

    /** Bounds a Redis future that must not be cancelled (pub/sub ones) by the command timeout, translating errors. */
    public <T> CompletableFuture<T> bounded(CompletableFuture<T> sent, String what, String key) {
        return bounded(sent, what, key, timeoutNanos, () -> { });
    }

    /**
     * Bounds any Redis future by {@code boundNanos}, translating errors; {@code onTimeout} runs
     * when the bound passes first (to cancel the command in Lettuce).
     */
    private <T> CompletableFuture<T> bounded(CompletableFuture<T> sent, String what, String key, long boundNanos,
                                             Runnable onTimeout) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Scheduler.Cancellable timer = scheduler.schedule(() -> {
            if (result.completeExceptionally(new RedisUnavailableException("Redis did not answer " + what + " within "
                    + Durations.readableNanos(boundNanos) + (boundNanos == timeoutNanos ? " (BatonOptions.commandTimeout)" : ""),
                    null))) {
                onTimeout.run();
                onUnreachable.run();
            }
        }, boundNanos, TimeUnit.NANOSECONDS);
        sent.whenComplete((value, error) -> {
            timer.cancel();
            if (error == null) {
                result.complete(value);
            } else if (closed) {
                // Closing the client closes its connections under commands still in flight: the
                // caller should learn the real reason, not read it as a Redis outage.
                result.completeExceptionally(new IllegalStateException(
                        "this Baton client is closed; " + what + " did not complete", unwrap(error)));
            } else {
                RuntimeException translated = translate(error, what, key);
                if (isConnectionFailure(translated)) {
                    onUnreachable.run();
                }
                if (translated instanceof WrongTypeException wrong && key != null && !what.startsWith("TYPE")) {
                    // Say what the name holds: one read, bounded like any; without it if that fails.
                    read("TYPE", key, c -> c.type(key)).whenComplete((type, typeError) -> result.completeExceptionally(
                            type == null ? wrong : Failures.wrongType(wrong, type)));
                    return;
                }
                result.completeExceptionally(translated);
            }
        });
        return result;
    }

    /**
     * Marks the client closed, before its connections close: failures of commands still in
     * flight are then reported as the closed client they are.
     */
    public void close() {
        closed = true;
    }

    /** The scheduler every timer of this client runs on. */
    public Scheduler scheduler() {
        return scheduler;
    }

    /** The configured command timeout. */
    public Duration timeout() {
        return timeout;
    }

    @SuppressWarnings("unchecked")
    private static <T> CommandOutput<String, String, T> output(Reply reply) {
        return switch (reply) {
            case INTEGER -> (CommandOutput<String, String, T>) new IntegerOutput<>(StringCodec.UTF8);
            case ARRAY -> (CommandOutput<String, String, T>) new NestedMultiOutput<>(StringCodec.UTF8);
        };
    }

    /**
     * A Lettuce command that counts how many times it was written to a connection, and starts
     * each write after the first with a fresh output. Lettuce writes a command again after a
     * reconnect; if the connection broke in the middle of its reply, the old output still holds
     * the part it had decoded of an array reply, and the new reply decoded into it comes out
     * mangled: a grant {@code {1, 0}} after a cut refusal read as {@code {0, {1}, 0}}, a refusal
     * whose permits were in fact taken ({@code ReplayedCommandTest}).
     */
    static final class CountingCommand<T> extends Command<String, String, T> {
        private final AtomicInteger writes = new AtomicInteger();
        private final Reply reply;

        CountingCommand(CommandType type, Reply reply, CommandArgs<String, String> args) {
            super(type, output(reply), args);
            this.reply = reply;
        }

        @Override
        public void encode(ByteBuf buf) {
            if (writes.incrementAndGet() > 1 && !isDone()) {
                setOutput(output(reply));
            }
            super.encode(buf);
        }

        int writes() {
            return writes.get();
        }
    }
}
