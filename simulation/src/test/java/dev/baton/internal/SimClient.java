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

    /**
     * One client process's clock, as Baton's time seam: the world's clock, or one that drifts
     * from it (a rate and an offset the seed drew); each timer fires up to 50 µs late, as the seed
     * says. The process can pause (a GC pause, a stopped container): what would run in it
     * meanwhile (its timers, its replies and messages, its application's next steps) runs when
     * the pause ends, in the order it was due.
     */
    static final class Clock implements Scheduler {
        private final SimWorld world;
        /** Client nanoseconds per world nanosecond: 1, or a drift the seed drew. */
        private final double rate;
        private final long offset;
        /** When the current pause ends (world time); in the past when not paused. */
        private long pausedUntil = -1;
        /** What came due during the pause, in order; run when it ends. */
        private final java.util.ArrayDeque<Runnable> held = new java.util.ArrayDeque<>();
        /** Every pause so far, {from, to} in world time. */
        private final java.util.List<long[]> pauses = new java.util.ArrayList<>();

        Clock(SimWorld world) {
            this(world, 1.0, 0);
        }

        Clock(SimWorld world, double rate, long offset) {
            this.world = world;
            this.rate = rate;
            this.offset = offset;
        }

        @Override
        public long nanoTime() {
            return offset + (long) (world.now() * rate);
        }

        @Override
        public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
            boolean[] cancelled = {false};
            long worldDelay = (long) Math.ceil(unit.toNanos(delay) / rate);
            at(worldDelay + world.micros(0, 50), "timer", () -> {
                if (!cancelled[0]) {
                    task.run();
                }
            });
            return () -> cancelled[0] = true;
        }

        @Override
        public void offload(Runnable task) {
            at(world.micros(0, 50), "offloaded", task);
        }

        /** Runs {@code run} in this process {@code delayNanos} of world time from now, or when its pause ends. */
        void at(long delayNanos, String what, Runnable run) {
            world.at(delayNanos, what, () -> {
                if (world.now() < pausedUntil || !held.isEmpty()) {
                    held.add(run);
                } else {
                    run.run();
                }
            });
        }

        /** The process stops for {@code nanos} of world time from now. */
        void pause(long nanos, String who) {
            long until = world.now() + nanos;
            if (until <= pausedUntil) {
                return;
            }
            world.note(who + " process paused for " + nanos / 1000 + " µs");
            pauses.add(new long[] {Math.max(world.now(), pausedUntil), until});
            pausedUntil = until;
            world.at(nanos, "pause ends", () -> {
                if (world.now() < pausedUntil) {
                    return; // extended: the later end runs what was held
                }
                world.note(who + " process runs again; " + held.size() + " things were due");
                while (!held.isEmpty()) {
                    held.poll().run();
                }
            });
        }

        /** Whether this clock drifts from the world's. */
        boolean drifts() {
            return rate != 1.0;
        }

        /** How much of {@code [from, to]} (world time) this process spent paused. */
        long pausedBetween(long from, long to) {
            long total = 0;
            for (long[] p : pauses) {
                total += Math.max(0, Math.min(to, p[1]) - Math.max(from, p[0]));
            }
            return total;
        }
    }

    final String id;
    /** Its process's clock (for what is built outside the runtime: a multi-lock); shared by a RedLock's clients of one process. */
    final Clock clock;
    final ClientRuntime runtime;
    final SimWire.Commands commands;
    final SimWire.PubSub pubSub;

    SimClient(SimWorld world, String id, SimWire.Faults faults, Duration commandTimeout, Duration watchdog,
              dev.baton.LeaseLostListener listener, Clock clock) {
        this(world, world.server, id, id, faults, commandTimeout, watchdog, listener, clock);
    }

    /**
     * A client of {@code server}, with client id {@code id} (the first half of its owner ids) and
     * {@code wire} naming its connections in the trace.
     */
    SimClient(SimWorld world, SimWorld.Server server, String id, String wire, SimWire.Faults faults, Duration commandTimeout,
              Duration watchdog, dev.baton.LeaseLostListener listener, Clock clock) {
        this.id = id;
        this.clock = clock;
        this.commands = new SimWire.Commands(world, server, wire, faults, clock);
        this.pubSub = new SimWire.PubSub(world, server, wire + "/pubsub", faults, clock);
        LettuceConnections connections = new LettuceConnections(commands.connection, commands::async, pubSub.connection,
                false, scheduler -> PubSubService.classic(pubSub.connection, true), CommandExecutor.Topology.SINGLE, null, null, "sim");
        BatonOptions.Builder options = BatonOptions.builder().redisUri("redis://sim:6379").commandTimeout(commandTimeout)
                .watchdogTimeout(watchdog);
        if (listener != null) {
            options.leaseLostListener(listener);
        }
        this.runtime = new ClientRuntime(options.build(), connections, clock, id);
    }

    @Override
    public void close() {
        runtime.close();
    }
}
