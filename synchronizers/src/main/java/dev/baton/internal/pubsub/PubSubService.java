package dev.baton.internal.pubsub;

// Over 300 lines on purpose: the channel table and the waiter index it keeps per channel (one
// structure, guarded together) read best side by side.

import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.time.Scheduler;
import dev.baton.internal.pubsub.Waiter;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/*
 * The pub/sub service shares one subscription connection among every waiter of a client.
 * Channels are reference-counted: the first waiter on a channel sends SUBSCRIBE, the last one
 * to leave sends UNSUBSCRIBE. Both are sent while holding the map's lock (a ReentrantLock, so a
 * virtual thread that Lettuce's write path parks unmounts instead of pinning its carrier), which
 * never waits on I/O (Lettuce only queues the command), so SUBSCRIBE and UNSUBSCRIBE of one channel reach
 * Redis in the order the map decided them, and the server's state always ends up matching the
 * map.
 *
 * A message wakes waiters according to the channel's wake rule: a lock release wakes one, a
 * latch reaching zero wakes all. Waking means ringing a Waiter; the waiter then tries its
 * script again, so a message is only ever a hint and Redis stays the truth.
 *
 * Messages can be lost (the pub/sub connection dropped, a failover happened). Two things keep
 * that from hanging anyone: each parked waiter also has a timer at the holder's remaining TTL
 * and at its own deadline, and when Lettuce re-subscribes a channel after a reconnect every
 * waiter on it is woken to re-check, since whatever was published meanwhile is gone.
 */
public final class PubSubService implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PubSubService.class);

    /** How SUBSCRIBE and UNSUBSCRIBE are sent: classic, or sharded to the slot's node. */
    public interface Subscriber {
        CompletableFuture<Void> subscribe(String channel);

        CompletableFuture<Void> unsubscribe(String channel);

        /**
         * Sends a PING on the connection that carries {@code channel}: it completes once every
         * message Redis published on the channel before it ran the PING has been delivered to the
         * listener (Redis answers on that connection in order, and Lettuce hands messages to the
         * listener and completes the PING on its I/O thread, in the order read). Best effort: it
         * may fail, and then nothing is known about the order.
         */
        CompletableFuture<Void> barrier(String channel);
    }

    /**
     * Classic pub/sub on the one subscription connection of a standalone Redis (or a Sentinel's
     * master): its PING is a {@link Subscriber#barrier} when the connection speaks RESP3.
     */
    public static Subscriber classic(StatefulRedisPubSubConnection<String, String> connection) {
        return classic(connection, pushesInOrder(connection));
    }

    /**
     * Whether Lettuce hands this connection's messages to the listener in stream order with the
     * replies to its commands: on RESP3, where messages are push frames read inline. On RESP2 it
     * queues the messages it reads while a command awaits its reply and hands them over after
     * completing that command, so a PING's answer would come before messages Redis sent ahead of
     * it (a review of issue 45's fix found it). Unknown (another implementation, an old Lettuce):
     * not in order.
     */
    static boolean pushesInOrder(Object connection) {
        try {
            Object state = connection.getClass().getMethod("getConnectionState").invoke(connection);
            Object version = state.getClass().getMethod("getNegotiatedProtocolVersion").invoke(state);
            return version != null && "RESP3".equals(version.toString());
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return false;
        }
    }

    /**
     * Classic pub/sub on one connection; {@code barriers}: whether its PING is answered in order
     * with its messages as the listener sees them (false: {@link Subscriber#barrier} fails, and
     * what relies on it reads Redis instead). A cluster's classic pub/sub is never: its messages
     * come from the slot's master over the cluster bus, its PING from the node it is connected to.
     */
    public static Subscriber classic(StatefulRedisPubSubConnection<String, String> connection, boolean barriers) {
        return new Subscriber() {
            @Override
            public CompletableFuture<Void> subscribe(String channel) {
                return connection.async().subscribe(channel).toCompletableFuture();
            }

            @Override
            public CompletableFuture<Void> unsubscribe(String channel) {
                return connection.async().unsubscribe(channel).toCompletableFuture();
            }

            @Override
            public CompletableFuture<Void> barrier(String channel) {
                if (!barriers) {
                    return CompletableFuture.failedFuture(new UnsupportedOperationException(
                            "this connection's PING is not ordered with its messages"));
                }
                return connection.async().ping().toCompletableFuture().thenApply(pong -> null);
            }
        };
    }

    private final Subscriber subscriber;
    private final CommandExecutor executor;
    private final Map<String, Channel> channels = new HashMap<>();
    private final AtomicLong arrivals = new AtomicLong();
    /** Waiters that joined a channel quiet since their mark (for tests and the simulation's coverage). */
    private final AtomicLong quietJoins = new AtomicLong();
    private boolean closed;
    /**
     * Guards {@link #channels} and {@link #closed}. A j.u.c. lock, not a monitor: SUBSCRIBE and
     * UNSUBSCRIBE are handed to Lettuce while it is held, and a virtual thread that parks under a
     * monitor pins its carrier on JDK 21 to 23.
     */
    private final ReentrantLock lock = new ReentrantLock();

    public PubSubService(StatefulRedisPubSubConnection<String, String> connection, Subscriber subscriber, CommandExecutor executor) {
        this.subscriber = subscriber;
        this.executor = executor;
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                onMessage(channel, message);
            }

            @Override
            public void subscribed(String channel, long count) {
                onSubscribed(channel);
            }

            @Override
            public void smessage(String channel, String message) {
                onMessage(channel, message);
            }

            @Override
            public void ssubscribed(String channel, long count) {
                onSubscribed(channel);
            }
        });
    }

    /**
     * Registers a waiter on a channel, subscribing if it is the channel's first.
     *
     * @param wakeRule how many waiters a message on this channel wakes
     */
    public Subscription subscribe(String channelName, WakeRule wakeRule) {
        return subscribe(channelName, wakeRule, null);
    }

    /**
     * Registers a waiter with a tag on a channel; with {@link WakeRule#TAGGED} only messages that
     * name the tag (the tag itself, or the tag, '#' and a suffix) reach it.
     */
    public Subscription subscribe(String channelName, WakeRule wakeRule, String tag) {
        Waiter waiter = new Waiter(tag, arrivals.incrementAndGet());
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("Baton client is closed");
            }
            Channel channel = channels.get(channelName);
            if (channel == null) {
                channel = new Channel(channelName, wakeRule);
                channels.put(channelName, channel);
                channel.ready = sendSubscribe(channelName);
            } else if (channel.ready.isCompletedExceptionally()) {
                // The last SUBSCRIBE failed (Redis unreachable) while waiters stayed: ask again.
                channel.ready = sendSubscribe(channelName);
            }
            channel.add(waiter);
            return new Subscription(channel, waiter);
        } finally {
            lock.unlock();
        }
    }

    private CompletableFuture<Void> sendSubscribe(String channelName) {
        CompletableFuture<Void> sent;
        try {
            sent = subscriber.subscribe(channelName);
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        return executor.bounded(sent, "SUBSCRIBE " + channelName, channelName);
    }

    /** How many waiters joined a channel quiet since their mark, so far (for tests and the simulation). */
    public long quietJoins() {
        return quietJoins.get();
    }

    /** How many channels this client is subscribed to now (for tests and inspection). */
    public int channelCount() {
        lock.lock();
        try {
            return channels.size();
        } finally {
            lock.unlock();
        }
    }

    private void onMessage(String channelName, String message) {
        Channel channel;
        long heard = 0;
        lock.lock();
        try {
            channel = channels.get(channelName);
            if (channel != null) {
                heard = ++channel.heard; // under the lock, so a waiter joining after it counts it (see mark)
            }
        } finally {
            lock.unlock();
        }
        if (channel != null) {
            channel.deliver(message, heard);
        }
    }

    /**
     * Rings this client's waiters on a channel, oldest first, as many as {@code rule} rings for a
     * message without content: the client itself learned what the channel would announce (a lock
     * it held found gone), which Redis may never publish (a key deleted or expired). Nothing if
     * nobody waits on it here.
     */
    public void ring(String channelName, WakeRule rule) {
        Channel channel = channel(channelName);
        if (channel != null) {
            channel.wake(rule.wakes(null), null, 0);
        }
    }

    /** The channel of that name, or null if nobody waits on it here. */
    private Channel channel(String channelName) {
        lock.lock();
        try {
            return channels.get(channelName);
        } finally {
            lock.unlock();
        }
    }

    private void onSubscribed(String channelName) {
        Channel channel = channel(channelName);
        if (channel != null && channel.subscribedEvents.incrementAndGet() > 1) {
            long heard;
            lock.lock();
            try {
                heard = ++channel.heard;
            } finally {
                lock.unlock();
            }
            // A re-subscription after a reconnect (the first event confirms our own SUBSCRIBE):
            // messages sent meanwhile are lost, so every waiter re-checks, told where the gap is.
            log.debug("re-subscribed to {} after a reconnect; waking its waiters to re-check", channelName);
            channel.waiters.values().forEach(w -> w.lostBefore(heard));
            channel.wake(Integer.MAX_VALUE, null, 0);
        }
    }

    private CompletableFuture<Void> leave(Channel channel, Waiter waiter) {
        lock.lock();
        try {
            channel.remove(waiter);
            if (waiter.hasPendingSignal()) {
                // The leaver was woken but will not act on it: pass the wake-up on.
                channel.wake(1, null, 0);
            }
            if (!channel.isEmpty() || channels.get(channel.name) != channel) {
                return CompletableFuture.completedFuture(null);
            }
            channels.remove(channel.name);
            if (closed) {
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> sent = subscriber.unsubscribe(channel.name);
            return executor.bounded(sent, "UNSUBSCRIBE " + channel.name, channel.name)
                    .exceptionally(e -> {
                        log.debug("UNSUBSCRIBE {} failed; the channel stays subscribed until reconnect", channel.name, e);
                        return null;
                    });
        } finally {
            lock.unlock();
        }
    }

    /** Wakes every waiter (they re-check) and stops accepting new ones. */
    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            // A woken waiter re-checks on this thread and may leave its channel at once: wake a copy.
            List<Channel> all = List.copyOf(channels.values());
            channels.clear();
            for (Channel channel : all) {
                channel.wake(Integer.MAX_VALUE, null, 0);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * What a channel had heard at one instant, while it was subscribed: {@link #mark(String)}.
     *
     * @param channel the channel object (a channel left by its last waiter and subscribed again
     *                is another object, with messages missed in between)
     * @param heard   its count of messages and re-subscriptions then
     */
    public record Mark(Object channel, long heard) {
    }

    /**
     * The channel's state now, if it is subscribed and Redis has confirmed it (the SUBSCRIBE's
     * reply and its subscribed event): a waiter that joins it later
     * with the same count ({@link Subscription#quietSince}) has missed nothing published since
     * this instant. {@code null} if the channel is not subscribed or not confirmed.
     */
    public Mark mark(String channelName) {
        lock.lock();
        try {
            Channel channel = channels.get(channelName);
            CompletableFuture<Void> ready = channel == null ? null : channel.ready;
            // Confirmed by Redis's own event too: in a cluster, a sharded SUBSCRIBE answered MOVED
            // while the channel was already being moved to its new node completes `ready` before
            // the new node has confirmed anything (a review found a waiter parked through a
            // release then).
            if (ready == null || !ready.isDone() || ready.isCompletedExceptionally() || channel.subscribedEvents.get() == 0) {
                return null;
            }
            return new Mark(channel, channel.heard);
        } finally {
            lock.unlock();
        }
    }

    /** One waiter's registration on a channel; {@link #close()} leaves it. */
    public final class Subscription {
        private final Channel channel;
        private final Waiter waiter;
        private final AtomicBoolean left = new AtomicBoolean();
        /** What the channel had heard when this waiter joined (under the lock). */
        private final long heardAtJoin;

        private Subscription(Channel channel, Waiter waiter) {
            this.channel = channel;
            this.waiter = waiter;
            this.heardAtJoin = channel.heard;
        }

        /**
         * Whether this waiter joined the same subscribed channel as {@code mark} with nothing heard
         * in between: every message published after the mark's instant rings it (or rang it as a
         * waiter), as if it had joined then.
         */
        public boolean quietSince(Mark mark) {
            boolean quiet = mark != null && mark.channel() == channel && mark.heard() == heardAtJoin;
            if (quiet) {
                quietJoins.incrementAndGet();
            }
            return quiet;
        }

        /** Completes when the channel's SUBSCRIBE is confirmed by Redis. */
        public CompletableFuture<Void> ready() {
            return channel.ready;
        }

        /**
         * Places a mark in the channel's stream of messages, now: completes with how many
         * messages the channel had heard when every message Redis published before this call's
         * PING reached Redis had been delivered ({@link Subscriber#barrier}). A message this
         * waiter then sees with a larger count ({@link Waiter#heardOf}) was published after
         * this call was made. Best effort: it may fail, and it fails if no answer comes within
         * {@code boundNanos} (a half-open connection never answers).
         */
        public CompletableFuture<Long> barrier(long boundNanos) {
            if (boundNanos <= 0) {
                return CompletableFuture.failedFuture(new java.util.concurrent.TimeoutException("no time left for a PING"));
            }
            CompletableFuture<Void> pong;
            try {
                pong = subscriber.barrier(channel.name);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
            if (!pong.isDone()) {
                // Bounded: a pub/sub connection gone silently half-open answers never, and an
                // attempt waiting for the answer would wait with it.
                CompletableFuture<Void> answered = pong;
                Scheduler.Cancellable timer = executor.scheduler().schedule(() -> answered.completeExceptionally(
                        new java.util.concurrent.TimeoutException("no PONG within its bound")),
                        boundNanos, java.util.concurrent.TimeUnit.NANOSECONDS);
                pong.whenComplete((ok, e) -> timer.cancel());
            }
            // Read on the thread that completes the PING (the pub/sub connection's, after the
            // messages read before the PONG); if it completed already, a little later: then the
            // count may take in messages after the PONG, which only makes it cautious.
            return pong.thenApply(pongRead -> {
                lock.lock();
                try {
                    return channel.heard;
                } finally {
                    lock.unlock();
                }
            });
        }

        public Waiter waiter() {
            return waiter;
        }

        /** Leaves the channel; completes when any UNSUBSCRIBE it caused is confirmed. */
        public CompletableFuture<Void> close() {
            if (!left.compareAndSet(false, true)) {
                return CompletableFuture.completedFuture(null);
            }
            return leave(channel, waiter);
        }
    }

    /*
     * A channel's waiters are kept so that nothing a message does costs a scan of them all: a
     * skip list ordered by arrival (oldest first, O(log n) to join or leave) for the wake-one
     * and wake-all rules, and on a tagged channel an index by tag, so a fair lock's hand-off
     * message finds its one waiter at once however long the queue (a scan of 1,000 waiters per
     * message once took most of a client's CPU; see docs/benchmarks.md).
     */
    private static final class Channel {
        final String name;
        final WakeRule wakeRule;
        private final ConcurrentSkipListMap<Long, Waiter> waiters = new ConcurrentSkipListMap<>();
        private final ConcurrentHashMap<String, List<Waiter>> byTag = new ConcurrentHashMap<>();
        public volatile CompletableFuture<Void> ready;
        final AtomicInteger subscribedEvents = new AtomicInteger();
        /** Messages and re-subscriptions seen so far; read and written under the service's lock. */
        long heard;

        Channel(String name, WakeRule wakeRule) {
            this.name = name;
            this.wakeRule = wakeRule;
        }

        /** Joins a waiter; called under the service's lock. */
        void add(Waiter waiter) {
            waiters.put(waiter.arrival(), waiter);
            if (waiter.tag() != null) {
                byTag.computeIfAbsent(waiter.tag(), t -> new CopyOnWriteArrayList<>()).add(waiter);
            }
        }

        /** Removes a waiter; called under the service's lock. */
        void remove(Waiter waiter) {
            waiters.remove(waiter.arrival());
            if (waiter.tag() != null) {
                byTag.computeIfPresent(waiter.tag(), (t, list) -> {
                    list.remove(waiter);
                    return list.isEmpty() ? null : list;
                });
            }
        }

        boolean isEmpty() {
            return waiters.isEmpty();
        }

        /**
         * A message arrived. On a tagged channel it rings only the waiters it names: those whose
         * tag is the message, or the message up to its last '#' (an owner id and a hand-off
         * ticket). Otherwise it rings as many as the wake rule says, oldest first.
         */
        void deliver(String message, long heard) {
            if (wakeRule != WakeRule.TAGGED || message == null) {
                wake(wakeRule.wakes(message), message, heard);
                return;
            }
            ring(byTag.get(message), message, heard);
            int hash = message.lastIndexOf('#');
            if (hash >= 0) {
                ring(byTag.get(message.substring(0, hash)), message, heard);
            }
        }

        private static void ring(List<Waiter> tagged, String message, long heard) {
            if (tagged != null) {
                for (Waiter waiter : tagged) {
                    waiter.saw(message, heard);
                    waiter.signal();
                }
            }
        }

        /**
         * Rings up to {@code count} waiters that have no ring pending, oldest first. Every waiter
         * visited on the way sees the message (all of them, when all are woken); a {@code null}
         * message (a re-subscription, a close) carries nothing to see.
         */
        void wake(int count, String message, long heard) {
            int woken = 0;
            for (Iterator<Waiter> it = waiters.values().iterator(); it.hasNext() && woken < count; ) {
                Waiter waiter = it.next();
                if (message != null) {
                    waiter.saw(message, heard);
                }
                if (waiter.signal()) {
                    woken++;
                }
            }
        }
    }
}
