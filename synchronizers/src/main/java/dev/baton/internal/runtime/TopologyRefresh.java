package dev.baton.internal.runtime;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.event.ClusterTopologyChangedEvent;
import io.lettuce.core.cluster.models.partitions.Partitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/*
 * Keeps a cluster client's view of the slots current when Redis stops answering where Lettuce
 * sends a command. A failed-over master never answers MOVED (it is dead), and Lettuce's own
 * adaptive refresh is rate-limited to once per 30 s by default and may have run before the
 * replica was promoted; an application's client may have no refresh at all. So every command that
 * fails on the connection asks for a refresh here, at most one at a time and one per
 * MIN_GAP_NANOS, which finds the promoted replica within about that gap of its promotion while
 * commands keep failing. After each refresh, and after each topology change Lettuce itself
 * reports, the listeners run (sharded subscriptions follow their slots) with the slot map to
 * follow: after a refresh, the client's; on a change event, the event's new view, because Lettuce
 * publishes that event before it loads the new view into the client (a listener reading the
 * client's map then would still see the dead master, and nothing would call it again once
 * commands succeed: a waiter would then only be woken by its re-check).
 */
final class TopologyRefresh implements Runnable, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TopologyRefresh.class);
    /** The least time between two refreshes Baton asks for. */
    static final long MIN_GAP_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final RedisClusterClient client;
    private final List<Consumer<Partitions>> listeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean();
    private final reactor.core.Disposable events;
    private volatile long last = System.nanoTime() - MIN_GAP_NANOS;
    private volatile boolean closed;

    TopologyRefresh(RedisClusterClient client) {
        this.client = client;
        this.events = client.getResources().eventBus().get()
                .filter(event -> event instanceof ClusterTopologyChangedEvent)
                .subscribe(event -> changed(view(((ClusterTopologyChangedEvent) event).after())), error -> log.debug("event bus failed", error));
    }

    /** Runs {@code listener} with the new slot map after every refresh and topology change. */
    void onChange(Consumer<Partitions> listener) {
        listeners.add(listener);
    }

    /** Asks for a refresh (unless one runs or ran within the last MIN_GAP_NANOS). */
    @Override
    public void run() {
        long now = System.nanoTime();
        if (closed || now - last < MIN_GAP_NANOS || !running.compareAndSet(false, true)) {
            return;
        }
        last = now;
        try {
            client.refreshPartitionsAsync().whenComplete((done, error) -> {
                running.set(false);
                if (error != null) {
                    log.debug("topology refresh failed", error);
                }
                changed(client.getPartitions());
            });
        } catch (RuntimeException e) {
            running.set(false);
            log.debug("topology refresh failed", e);
        }
    }

    private static Partitions view(List<io.lettuce.core.cluster.models.partitions.RedisClusterNode> nodes) {
        Partitions view = new Partitions();
        view.reload(nodes);
        return view;
    }

    private void changed(Partitions view) {
        if (closed) {
            return;
        }
        for (Consumer<Partitions> listener : listeners) {
            try {
                listener.accept(view);
            } catch (RuntimeException e) {
                log.warn("a topology listener failed", e);
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        events.dispose();
    }
}
