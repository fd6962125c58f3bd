package dev.baton.spring.boot.autoconfigure;

import dev.baton.Baton;
import dev.baton.BatonCountDownLatch;
import dev.baton.BatonFencedLock;
import dev.baton.BatonLeaderElection;
import dev.baton.BatonLock;
import dev.baton.BatonOptions;
import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.BatonReadWriteLock;
import dev.baton.BatonRateLimiter;
import dev.baton.BatonSemaphore;
import dev.baton.RateLimit;
import dev.baton.HeldLease;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The auto-configured {@link Baton} bean: a client that connects on first use, so that a
 * singleton taking {@code Baton} in its constructor, and even obtaining its synchronizers there
 * ({@code this.exports = baton.semaphore("exports")}), does not need Redis for the application to
 * start.
 *
 * <p>Until the real client exists, each synchronizer it gives out is a view that opens the client
 * on its first call (a name is checked at once; on a Redis Cluster the slot rule is checked at the
 * first call). The first call of any view, or of {@link #clientId()}, opens the client: if Redis is down it throws the {@link dev.baton.RedisUnavailableException}
 * of {@link Baton#create} within the command timeout, and the next call tries again. Callers
 * that meet an opening already under way wait for that one instead of opening their own.
 * {@link #leasesHeld()} and {@link #heldLeases()} answer for a client not yet opened without
 * opening it (nothing is held then). The first call waits for the opening (at most the command
 * timeout; 3 s at least for a JVM's first client) without answering an interrupt; an asynchronous
 * method whose opening fails returns a failed stage.
 */
final class LazyBaton implements Baton {
    private final BatonOptions options;
    private final Supplier<Baton> opener;
    private final Object guard = new Object();
    private volatile Baton client;
    /** The opening under way, if any; guarded by {@link #guard}. */
    private CompletableFuture<Baton> opening;
    /** Guarded by {@link #guard}. */
    private boolean closed;

    LazyBaton(BatonOptions options, Supplier<Baton> opener) {
        this.options = Objects.requireNonNull(options, "options");
        this.opener = Objects.requireNonNull(opener, "opener");
    }

    /** The real client, opened now if it was not yet. */
    Baton client() {
        Baton open = client;
        if (open != null) {
            return open;
        }
        CompletableFuture<Baton> pending;
        boolean mine = false;
        synchronized (guard) {
            if (closed) {
                throw new IllegalStateException("the Baton client is closed");
            }
            if (client != null) {
                return client;
            }
            if (opening == null) {
                opening = new CompletableFuture<>();
                mine = true;
            }
            pending = opening;
        }
        if (mine) {
            try {
                Baton created = opener.get();
                boolean closedMeanwhile;
                synchronized (guard) {
                    closedMeanwhile = closed;
                    if (!closedMeanwhile) {
                        client = created;
                    }
                    opening = null;
                }
                if (closedMeanwhile) {
                    created.close();
                    IllegalStateException e = new IllegalStateException("the Baton client was closed while it opened");
                    pending.completeExceptionally(e);
                    throw e;
                }
                pending.complete(created);
                return created;
            } catch (RuntimeException | Error e) {
                synchronized (guard) {
                    opening = null;
                }
                pending.completeExceptionally(e);
                throw e;
            }
        }
        try {
            return pending.join();
        } catch (CompletionException e) {
            throw ownCopy(e.getCause());
        }
    }

    /**
     * The opening's failure as a caller that waited for it sees it: an exception of its own (the
     * same type and message, the opener's as its cause), since callers add to what they catch.
     */
    private static RuntimeException ownCopy(Throwable failure) {
        if (failure instanceof dev.baton.RedisUnavailableException) {
            return new dev.baton.RedisUnavailableException(failure.getMessage(), failure);
        }
        if (failure instanceof IllegalArgumentException) {
            return new IllegalArgumentException(failure.getMessage(), failure);
        }
        if (failure instanceof IllegalStateException) {
            return new IllegalStateException(failure.getMessage(), failure);
        }
        return failure instanceof RuntimeException re ? re : new IllegalStateException(failure);
    }

    /** The real client if it has been opened, else null; never opens it. */
    Baton openedOrNull() {
        return client;
    }

    @Override
    public BatonLock lock(String name) {
        return view(BatonLock.class, name, b -> b.lock(name));
    }

    @Override
    public BatonLock fairLock(String name) {
        return view(BatonLock.class, name, b -> b.fairLock(name));
    }

    @Override
    public BatonReadWriteLock readWriteLock(String name) {
        return view(BatonReadWriteLock.class, name, b -> b.readWriteLock(name));
    }

    @Override
    public BatonFencedLock fencedLock(String name) {
        return view(BatonFencedLock.class, name, b -> b.fencedLock(name));
    }

    @Override
    public BatonSemaphore semaphore(String name) {
        return view(BatonSemaphore.class, name, b -> b.semaphore(name));
    }

    @Override
    public BatonPermitExpirableSemaphore permitExpirableSemaphore(String name) {
        return view(BatonPermitExpirableSemaphore.class, name, b -> b.permitExpirableSemaphore(name));
    }

    @Override
    public BatonRateLimiter rateLimiter(String name, RateLimit limit) {
        Objects.requireNonNull(limit, "limit");
        return view(BatonRateLimiter.class, name, b -> b.rateLimiter(name, limit));
    }

    @Override
    public BatonLeaderElection leaderElection(String name) {
        return view(BatonLeaderElection.class, name, b -> b.leaderElection(name));
    }

    @Override
    public BatonCountDownLatch countDownLatch(String name) {
        return view(BatonCountDownLatch.class, name, b -> b.countDownLatch(name));
    }

    @Override
    public int leasesHeld() {
        Baton open = client;
        return open == null ? 0 : open.leasesHeld();
    }

    @Override
    public List<HeldLease> heldLeases() {
        Baton open = client;
        return open == null ? List.of() : open.heldLeases();
    }

    @Override
    public String clientId() {
        return client().clientId();
    }

    /** The options the client opens with; known before it opens. */
    @Override
    public BatonOptions options() {
        return options;
    }

    @Override
    public void close() {
        Baton open;
        synchronized (guard) {
            closed = true;
            open = client;
        }
        if (open != null) {
            open.close();
        }
    }

    @Override
    public String toString() {
        Baton open = client;
        return open != null ? open.toString() : "Baton{not connected yet: connects on first use}";
    }

    /** The real synchronizer if the client is open, else a view that opens it on first use. */
    private <T> T view(Class<T> type, String name, Function<Baton, T> resolve) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("name must not be blank");
        }
        Baton open = client;
        if (open != null) {
            return resolve.apply(open);
        }
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[]{type},
                new View<>(type, name, resolve)));
    }

    /** A synchronizer of a client not opened yet: resolved at its first call, then forwarded to. */
    private final class View<T> implements InvocationHandler {
        private final Class<T> type;
        private final String name;
        private final Function<Baton, T> resolve;
        private volatile T target;

        View(Class<T> type, String name, Function<Baton, T> resolve) {
            this.type = type;
            this.name = name;
            this.resolve = resolve;
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            String method0 = method.getName();
            int arity = args == null ? 0 : args.length;
            if (method.getDeclaringClass() == Object.class) {
                switch (method0) {
                    case "equals":
                        return proxy == args[0];
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    default:
                        T known = target;
                        return known != null ? known.toString()
                                : type.getSimpleName() + "{" + name + ", client not connected yet}";
                }
            }
            if (method0.equals("getName") && arity == 0) {
                return name;
            }
            if (type == BatonReadWriteLock.class && target == null && arity == 0
                    && (method0.equals("readLock") || method0.equals("writeLock"))) {
                boolean read = method0.equals("readLock");
                return view(BatonLock.class, name, b -> {
                    BatonReadWriteLock both = (BatonReadWriteLock) resolve.apply(b);
                    return read ? both.readLock() : both.writeLock();
                });
            }
            T resolved = target;
            if (resolved == null) {
                try {
                    resolved = resolve.apply(client());
                } catch (RuntimeException e) {
                    // An asynchronous method reports through its stage, as the client's own do.
                    if (CompletionStage.class.isAssignableFrom(method.getReturnType())) {
                        return CompletableFuture.failedFuture(e);
                    }
                    throw e;
                }
                target = resolved;
            }
            try {
                return method.invoke(resolved, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }
}
