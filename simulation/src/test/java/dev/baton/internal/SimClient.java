package dev.baton.internal;

import dev.baton.BatonOptions;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.pubsub.PubSubService;
import dev.baton.internal.runtime.ClientRuntime;
import dev.baton.internal.runtime.LettuceConnections;
import dev.baton.internal.time.Scheduler;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One Baton client in a simulated world: Baton's real runtime (command executor, pub/sub service,
 * acquire engine, leases, renewal registry, every synchronizer) on the world's wire and clock.
 */
final class SimClient implements AutoCloseable {

    /** The world's clock as Baton's time seam; each timer fires up to 50 µs late, as the seed says. */
    static final class Clock implements Scheduler {
        private final SimWorld world;

        Clock(SimWorld world) {
            this.world = world;
        }

        @Override
        public long nanoTime() {
            return world.now();
        }

        @Override
        public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
            boolean[] cancelled = {false};
            world.at(unit.toNanos(delay) + world.micros(0, 50), "timer", () -> {
                if (!cancelled[0]) {
                    task.run();
                }
            });
            return () -> cancelled[0] = true;
        }

        @Override
        public void offload(Runnable task) {
            world.at(world.micros(0, 50), "offloaded", task);
        }
    }

    final String id;
    /** The world's clock as this client reads it (for what is built outside the runtime: a multi-lock). */
    final Clock clock;
    final ClientRuntime runtime;
    final SimWire.Commands commands;
    final SimWire.PubSub pubSub;

    SimClient(SimWorld world, String id, SimWire.Faults faults, Duration commandTimeout, Duration watchdog,
              dev.baton.LeaseLostListener listener) {
        this(world, world.server, id, id, faults, commandTimeout, watchdog, listener);
    }

    /**
     * A client of {@code server}, with client id {@code id} (the first half of its owner ids) and
     * {@code wire} naming its connections in the trace.
     */
    SimClient(SimWorld world, SimWorld.Server server, String id, String wire, SimWire.Faults faults, Duration commandTimeout,
              Duration watchdog, dev.baton.LeaseLostListener listener) {
        this.id = id;
        this.commands = new SimWire.Commands(world, server, wire, faults);
        this.pubSub = new SimWire.PubSub(world, server, wire + "/pubsub", faults);
        LettuceConnections connections = new LettuceConnections(commands.connection, commands::async, pubSub.connection,
                false, scheduler -> PubSubService.classic(pubSub.connection, true), CommandExecutor.Topology.SINGLE, null, null, "sim");
        BatonOptions.Builder options = BatonOptions.builder().redisUri("redis://sim:6379").commandTimeout(commandTimeout)
                .watchdogTimeout(watchdog);
        if (listener != null) {
            options.leaseLostListener(listener);
        }
        this.clock = new Clock(world);
        this.runtime = new ClientRuntime(options.build(), connections, clock, id);
    }

    @Override
    public void close() {
        runtime.close();
    }
}
