package dev.baton.internal;

import dev.baton.sim.SimRedis;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisAsyncCommandsImpl;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.VoidOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import io.lettuce.core.protocol.RedisStateMachine;
import io.lettuce.core.pubsub.RedisPubSubListener;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.pubsub.api.async.RedisPubSubAsyncCommands;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The simulated wire between one Baton client and the simulated Redis: a command connection and
 * a pub/sub connection that behave as Lettuce's do for a standalone client, on virtual time.
 *
 * <p>What is real: Baton's commands are Lettuce command objects, encoded by Lettuce (so a
 * re-sent command counts its writes as on a socket) and their replies decoded by Lettuce's own
 * RESP state machine into their outputs; reads go through Lettuce's {@code RedisAsyncCommandsImpl}.
 * What is simulated, each choice drawn from the world's seed: the delay of every command and reply
 * (FIFO per connection, as TCP keeps them), stalls longer than the command timeout, connection
 * resets (a command in flight may or may not have reached Redis; a reply in flight is lost; what
 * was not answered is written again after the reconnect, as Lettuce's auto-reconnect does, unless
 * it was cancelled), the reconnect delay, and pub/sub messages lost with a dropped connection
 * (re-subscribing then reports every channel again, as Lettuce does).
 */
final class SimWire {

    private SimWire() {
    }

    /** -Dbaton.sim.keys=true: the trace shows the keyspace after every command (for reading a replay). */
    static final boolean SHOW_KEYS = Boolean.getBoolean("baton.sim.keys");

    /** The shape of a run's faults, drawn once per seed. */
    record Faults(double stallChance, long stallMaxMicros, long resetEveryMicros, double messageLoss) {
        static final Faults NONE = new Faults(0, 0, 0, 0);
    }

    /** The command connection. */
    static final class Commands implements InvocationHandler {
        private final SimWorld world;
        /** The client process this connection delivers to: what it receives waits out the process's pauses. */
        private final SimClient.Clock process;
        /** The simulated Redis this connection talks to. */
        private final SimWorld.Server server;
        private final String name;
        private final Faults faults;
        final StatefulRedisConnection<String, String> connection;
        private final RedisAsyncCommandsImpl<String, String> async;
        /** Written, not answered yet, in the order written. */
        private final List<InFlight> inFlight = new ArrayList<>();
        /** To write once the connection is up again. */
        private final List<RedisCommand<String, String, ?>> queued = new ArrayList<>();
        private boolean up = true;
        private boolean closed;
        private int epoch;
        private long lastArrival;
        private long lastReply;

        private static final class InFlight {
            final RedisCommand<String, String, ?> command;
            final String[] args;
            final int epoch;
            /** When it was written: one that runs a command timeout later ran after its caller gave up. */
            final long sentAt;
            boolean arrived;
            boolean lost;

            InFlight(RedisCommand<String, String, ?> command, String[] args, int epoch, long sentAt) {
                this.command = command;
                this.args = args;
                this.epoch = epoch;
                this.sentAt = sentAt;
            }
        }

        @SuppressWarnings("unchecked")
        Commands(SimWorld world, String name, Faults faults) {
            this(world, world.server, name, faults, new SimClient.Clock(world));
        }

        Commands(SimWorld world, SimWorld.Server server, String name, Faults faults, SimClient.Clock process) {
            this.world = world;
            this.process = process;
            this.server = server;
            this.name = name;
            this.faults = faults;
            this.connection = (StatefulRedisConnection<String, String>) Proxy.newProxyInstance(
                    SimWire.class.getClassLoader(), new Class<?>[] {StatefulRedisConnection.class}, this);
            this.async = new RedisAsyncCommandsImpl<>(connection, StringCodec.UTF8);
            if (faults.resetEveryMicros() > 0) {
                resetsFrom(world, faults, () -> closed, this::reset);
            }
        }

        RedisAsyncCommandsImpl<String, String> async() {
            return async;
        }

        @Override
        @SuppressWarnings("unchecked")
        public Object invoke(Object proxy, Method method, Object[] args) {
            return switch (method.getName()) {
                case "dispatch" -> {
                    if (args[0] instanceof Collection<?> many) {
                        many.forEach(c -> dispatch((RedisCommand<String, String, ?>) c));
                        yield many;
                    }
                    dispatch((RedisCommand<String, String, ?>) args[0]);
                    yield args[0];
                }
                case "async" -> async;
                case "getOptions" -> ClientOptions.create();
                case "getTimeout" -> Duration.ofSeconds(60);
                case "isOpen" -> !closed;
                case "isMulti" -> false;
                case "close", "reset", "setTimeout", "setAutoFlushCommands", "flushCommands", "addListener", "removeListener" -> {
                    if (method.getName().equals("close")) {
                        closed = true;
                    }
                    yield null;
                }
                case "closeAsync" -> {
                    closed = true;
                    yield CompletableFuture.completedFuture(null);
                }
                case "toString" -> "sim connection " + name;
                case "hashCode" -> System.identityHashCode(proxy);
                case "equals" -> proxy == args[0];
                default -> throw new UnsupportedOperationException("the simulated connection has no " + method);
            };
        }

        private void dispatch(RedisCommand<String, String, ?> command) {
            if (closed) {
                command.completeExceptionally(new io.lettuce.core.RedisException("Connection is closed"));
                return;
            }
            if (!up) {
                queued.add(command); // Lettuce's default while reconnecting: accept and write later
                world.note(name + " queued while reconnecting: " + command.getType());
                return;
            }
            write(command);
        }

        private void write(RedisCommand<String, String, ?> command) {
            if (command.isDone()) {
                return; // cancelled or completed meanwhile: Lettuce does not write it
            }
            ByteBuf buf = Unpooled.buffer();
            command.encode(buf); // Lettuce's encoding; a re-sent CountingCommand counts its writes here
            String[] args = parse(buf);
            buf.release();
            InFlight f = new InFlight(command, args, epoch, world.now());
            inFlight.add(f);
            world.note(name + " -> " + describe(args));
            long delay = world.micros(20, 300);
            if (faults.stallChance() > 0 && !world.calm && world.chance(faults.stallChance())) {
                delay += world.micros(1000, faults.stallMaxMicros());
            }
            lastArrival = Math.max(lastArrival, world.now() + delay);
            world.at(lastArrival - world.now(), "arrive", () -> arrive(f));
        }

        private void arrive(InFlight f) {
            if (f.lost) {
                return; // never reached Redis: the connection dropped first
            }
            f.arrived = true;
            Object reply;
            try {
                reply = server.serve(f.args);
            } catch (SimRedis.SimError e) {
                reply = e;
            }
            Object answer = reply;
            world.note(name + " ran " + f.args[0] + (f.epoch != epoch ? " (its connection has dropped)" : "") + ": " + render(answer));
            if (f.epoch != epoch || world.now() - f.sentAt > Simulation.COMMAND_TIMEOUT.toNanos()) {
                // A copy in a dropped connection, or one that sat in a stalled server's input
                // past its caller's command timeout: either ran after its caller gave up.
                world.ranLate(f.args);
            }
            if (SHOW_KEYS) {
                server.keyspace().forEach((k, v) -> world.note("    key " + k + " = " + java.util.Arrays.deepToString(v)));
            }
            if (f.epoch != epoch) {
                return; // the reply goes nowhere
            }
            long delay = world.micros(20, 300);
            lastReply = Math.max(lastReply, world.now() + delay);
            process.at(lastReply - world.now(), "reply", () -> reply(f, answer));
        }

        private void reply(InFlight f, Object answer) {
            if (f.epoch != epoch) {
                return; // dropped with its connection
            }
            inFlight.remove(f);
            if (f.command.isDone()) {
                return;
            }
            ByteBuf buf = Unpooled.buffer();
            resp(buf, answer);
            new RedisStateMachine().decode(buf, f.command.getOutput());
            buf.release();
            f.command.complete();
        }

        /** The connection drops; Lettuce reconnects after a while and writes again what was not answered. */
        void reset() {
            if (!up) {
                return;
            }
            up = false;
            epoch++;
            List<RedisCommand<String, String, ?>> again = new ArrayList<>();
            for (InFlight f : inFlight) {
                if (!f.arrived && world.chance(0.5)) {
                    f.lost = true;
                }
                again.add(f.command);
            }
            world.note(name + " connection reset; " + inFlight.size() + " unanswered");
            inFlight.clear();
            queued.addAll(0, again);
            world.at(world.micros(1000, 1_000_000), "reconnect", () -> {
                if (closed) {
                    return;
                }
                up = true;
                lastArrival = lastReply = world.now();
                world.note(name + " reconnected; writing " + queued.size() + " again");
                List<RedisCommand<String, String, ?>> now = new ArrayList<>(queued);
                queued.clear();
                now.forEach(this::write);
            });
        }
    }

    /** The pub/sub connection. */
    static final class PubSub implements InvocationHandler {
        private final SimWorld world;
        /** The client process this connection delivers to: what it receives waits out the process's pauses. */
        private final SimClient.Clock process;
        /** The simulated Redis this connection talks to. */
        private final SimWorld.Server server;
        private final String name;
        private final Faults faults;
        final StatefulRedisPubSubConnection<String, String> connection;
        private final RedisPubSubAsyncCommands<String, String> async;
        private final List<RedisPubSubListener<String, String>> listeners = new ArrayList<>();
        /** The channels Lettuce would subscribe again after a reconnect. */
        private final Set<String> channels = new LinkedHashSet<>();
        private boolean up = true;
        private boolean closed;
        private int epoch;
        private long lastOut;
        private long lastIn;

        @SuppressWarnings("unchecked")
        PubSub(SimWorld world, String name, Faults faults) {
            this(world, world.server, name, faults, new SimClient.Clock(world));
        }

        PubSub(SimWorld world, SimWorld.Server server, String name, Faults faults, SimClient.Clock process) {
            this.world = world;
            this.process = process;
            this.server = server;
            this.name = name;
            this.faults = faults;
            this.connection = (StatefulRedisPubSubConnection<String, String>) Proxy.newProxyInstance(
                    SimWire.class.getClassLoader(), new Class<?>[] {StatefulRedisPubSubConnection.class}, this);
            this.async = (RedisPubSubAsyncCommands<String, String>) Proxy.newProxyInstance(SimWire.class.getClassLoader(),
                    new Class<?>[] {RedisPubSubAsyncCommands.class}, (p, m, a) -> switch (m.getName()) {
                        case "subscribe" -> send(true, (String[]) a[0]);
                        case "unsubscribe" -> send(false, (String[]) a[0]);
                        case "ping" -> ping();
                        case "toString" -> "sim pub/sub commands " + name;
                        case "hashCode" -> System.identityHashCode(p);
                        case "equals" -> p == a[0];
                        default -> throw new UnsupportedOperationException("the simulated pub/sub connection has no " + m);
                    });
            if (faults.resetEveryMicros() > 0) {
                resetsFrom(world, faults, () -> closed, this::reset);
            }
        }

        @Override
        @SuppressWarnings("unchecked")
        public Object invoke(Object proxy, Method method, Object[] args) {
            return switch (method.getName()) {
                case "addListener" -> {
                    if (args[0] instanceof RedisPubSubListener<?, ?> l) {
                        listeners.add((RedisPubSubListener<String, String>) l);
                    }
                    yield null;
                }
                case "removeListener" -> {
                    listeners.remove(args[0]);
                    yield null;
                }
                case "async" -> async;
                case "getOptions" -> ClientOptions.create();
                case "getTimeout" -> Duration.ofSeconds(60);
                case "isOpen" -> !closed;
                case "close" -> {
                    closed = true;
                    server.dropSubscriptions(this);
                    yield null;
                }
                case "closeAsync" -> {
                    closed = true;
                    server.dropSubscriptions(this);
                    yield CompletableFuture.completedFuture(null);
                }
                case "setTimeout", "setAutoFlushCommands", "flushCommands", "reset" -> null;
                case "toString" -> "sim pub/sub " + name;
                case "hashCode" -> System.identityHashCode(proxy);
                case "equals" -> proxy == args[0];
                default -> throw new UnsupportedOperationException("the simulated pub/sub connection has no " + method);
            };
        }

        private AsyncCommand<String, String, Void> send(boolean subscribe, String[] names) {
            AsyncCommand<String, String, Void> done = new AsyncCommand<>(new Command<>(
                    subscribe ? CommandType.SUBSCRIBE : CommandType.UNSUBSCRIBE, new VoidOutput<>(StringCodec.UTF8)));
            for (String channel : names) {
                if (subscribe) {
                    channels.add(channel);
                } else {
                    channels.remove(channel);
                }
            }
            if (closed) {
                done.completeExceptionally(new io.lettuce.core.RedisException("Connection is closed"));
                return done;
            }
            if (!up) {
                // Written after the reconnect, with the re-subscriptions, which complete it.
                world.note(name + " queued while reconnecting: " + (subscribe ? "SUBSCRIBE " : "UNSUBSCRIBE ") + String.join(" ", names));
                pendingUntilUp.add(done);
                return done;
            }
            int at = epoch;
            world.note(name + " -> " + (subscribe ? "SUBSCRIBE " : "UNSUBSCRIBE ") + String.join(" ", names));
            lastOut = Math.max(lastOut, world.now() + world.micros(20, 300));
            world.at(lastOut - world.now(), "arrive", () -> {
                if (at != epoch) {
                    return; // lost with the connection; the reconnect subscribes what Lettuce remembers
                }
                List<Long> counts = new ArrayList<>();
                for (String channel : names) {
                    counts.add(subscribe ? server.subscribe(this, channel) : server.unsubscribe(this, channel));
                }
                lastIn = Math.max(lastIn, world.now() + world.micros(20, 300));
                process.at(lastIn - world.now(), "confirm", () -> {
                    if (at != epoch) {
                        return;
                    }
                    for (int i = 0; i < names.length; i++) {
                        for (RedisPubSubListener<String, String> l : List.copyOf(listeners)) {
                            if (subscribe) {
                                l.subscribed(names[i], counts.get(i));
                            } else {
                                l.unsubscribed(names[i], counts.get(i));
                            }
                        }
                    }
                    done.complete();
                });
            });
            return done;
        }

        private final List<AsyncCommand<String, String, Void>> pendingUntilUp = new ArrayList<>();

        /**
         * PING on the subscribed connection: answered in order with the messages, as Redis does
         * (a PONG comes after every message published before the PING ran). Lost with the
         * connection (Lettuce fails it then; here it stays pending, which the caller tolerates).
         */
        private AsyncCommand<String, String, String> ping() {
            AsyncCommand<String, String, String> done = new AsyncCommand<>(new Command<>(CommandType.PING,
                    new io.lettuce.core.output.StatusOutput<>(StringCodec.UTF8)));
            if (closed || !up) {
                done.completeExceptionally(new io.lettuce.core.RedisException("Connection is not open"));
                return done;
            }
            int at = epoch;
            world.note(name + " -> PING");
            lastOut = Math.max(lastOut, world.now() + world.micros(20, 300));
            world.at(lastOut - world.now(), "arrive", () -> {
                if (at != epoch) {
                    return;
                }
                lastIn = Math.max(lastIn, world.now() + world.micros(20, 300));
                process.at(lastIn - world.now(), "pong", () -> {
                    if (at != epoch) {
                        return;
                    }
                    world.note(name + " <- PONG");
                    done.complete("PONG");
                });
            });
            return done;
        }

        /** A message the server sends this connection: delivered in order, unless the connection drops first. */
        void deliver(String channel, String message) {
            if (!up || closed) {
                return;
            }
            int at = epoch;
            lastIn = Math.max(lastIn, world.now() + world.micros(20, 300));
            boolean lost = faults.messageLoss() > 0 && !world.calm && world.chance(faults.messageLoss());
            process.at(lastIn - world.now(), "message", () -> {
                if (at != epoch || lost) {
                    world.note(name + " lost message " + channel + " " + message);
                    return;
                }
                world.note(name + " <- message " + channel + " " + message);
                for (RedisPubSubListener<String, String> l : List.copyOf(listeners)) {
                    l.message(channel, message);
                }
            });
        }

        /** The connection drops: the server forgets its subscriptions; Lettuce reconnects and subscribes them all again. */
        void reset() {
            if (!up) {
                return;
            }
            up = false;
            epoch++;
            server.dropSubscriptions(this);
            world.note(name + " pub/sub connection reset");
            world.at(world.micros(1000, 1_000_000), "reconnect", () -> {
                if (closed) {
                    return;
                }
                up = true;
                lastOut = lastIn = world.now();
                List<AsyncCommand<String, String, Void>> waiting = new ArrayList<>(pendingUntilUp);
                pendingUntilUp.clear();
                world.note(name + " pub/sub reconnected; subscribing " + channels.size() + " channels again");
                if (channels.isEmpty()) {
                    waiting.forEach(AsyncCommand::complete);
                    return;
                }
                AsyncCommand<String, String, Void> again = send(true, channels.toArray(String[]::new));
                again.whenComplete((v, e) -> waiting.forEach(AsyncCommand::complete));
            });
        }
    }

    /** Resets a connection now and then, as the faults say, until it closes or the world is calm. */
    static void resetsFrom(SimWorld world, Faults faults, java.util.function.BooleanSupplier closed, Runnable reset) {
        world.at(world.micros(faults.resetEveryMicros() / 4, faults.resetEveryMicros()), "reset", () -> {
            if (closed.getAsBoolean() || world.calm) {
                return;
            }
            reset.run();
            resetsFrom(world, faults, closed, reset);
        });
    }

    // ---- RESP ------------------------------------------------------------------------------

    /** The arguments of an encoded command (an array of bulk strings), each byte one char. */
    static String[] parse(ByteBuf buf) {
        String text = buf.toString(StandardCharsets.ISO_8859_1);
        int[] at = {0};
        if (text.charAt(0) != '*') {
            throw new IllegalStateException("not a RESP array: " + text);
        }
        int n = Integer.parseInt(line(text, at).substring(1));
        String[] args = new String[n];
        for (int i = 0; i < n; i++) {
            int len = Integer.parseInt(line(text, at).substring(1));
            args[i] = text.substring(at[0], at[0] + len);
            at[0] += len + 2;
        }
        return args;
    }

    private static String line(String text, int[] at) {
        int end = text.indexOf("\r\n", at[0]);
        String line = text.substring(at[0], end);
        at[0] = end + 2;
        return line;
    }

    /** Writes a simulated reply as a RESP2 server would. */
    static void resp(ByteBuf buf, Object reply) {
        if (reply instanceof SimRedis.SimError e) {
            write(buf, "-" + e.getMessage() + "\r\n");
        } else if (reply instanceof SimRedis.Status s) {
            write(buf, "+" + s.text() + "\r\n");
        } else if (reply instanceof Long l) {
            write(buf, ":" + l + "\r\n");
        } else if (reply instanceof String s) {
            write(buf, "$" + s.length() + "\r\n" + s + "\r\n");
        } else if (reply == null) {
            write(buf, "$-1\r\n");
        } else if (reply instanceof List<?> list) {
            write(buf, "*" + list.size() + "\r\n");
            for (Object o : list) {
                resp(buf, o);
            }
        } else {
            throw new IllegalStateException("no RESP for " + reply.getClass());
        }
    }

    private static void write(ByteBuf buf, String text) {
        buf.writeBytes(text.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** A command for the trace: its name, and for a script the script's name instead of its text or sha. */
    static String describe(String[] args) {
        StringBuilder out = new StringBuilder(args[0]);
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (i == 1 && (args[0].equalsIgnoreCase("EVAL") || args[0].equalsIgnoreCase("EVALSHA"))) {
                a = scriptName(a);
            }
            out.append(' ').append(a.length() > 60 ? a.substring(0, 60) + "..." : a);
        }
        return out.toString();
    }

    private static String scriptName(String textOrSha) {
        if (textOrSha.length() == 40 && textOrSha.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            return "sha:" + textOrSha.substring(0, 8);
        }
        int start = textOrSha.indexOf("-- ");
        int colon = start < 0 ? -1 : textOrSha.indexOf(':', start);
        return start == 0 && colon > 0 ? "script:" + textOrSha.substring(3, colon) : "script";
    }

    static String render(Object reply) {
        if (reply instanceof SimRedis.SimError e) {
            return "ERR(" + e.getMessage() + ")";
        }
        if (reply instanceof SimRedis.Status s) {
            return s.text();
        }
        return String.valueOf(reply);
    }
}
