package dev.baton.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A small TCP proxy on a free loopback port, for fault injection between a client and Redis:
 * added latency, cut connections, a blackhole, refused connections, and a lost reply (the
 * command reaches Redis and runs, its reply is dropped and the connection cut). Daemon threads
 * only; {@link #close()} stops everything.
 */
public final class TcpProxy implements AutoCloseable {
    private final String targetHost;
    private final int targetPort;
    private final ServerSocket listener;
    private final Set<Pipe> pipes = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicBoolean dropNextReply = new AtomicBoolean();
    private volatile long latencyNanos;
    private volatile boolean latencyForReplicationOnly;
    private volatile boolean blackhole;
    private volatile boolean dropReplies;
    private volatile boolean refuse;
    private volatile boolean holdSubscriberReplies;
    private final Object held = new Object();
    private volatile boolean closed;

    private TcpProxy(String targetHost, int targetPort) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        try {
            this.listener = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the proxy's port", e);
        }
        Thread acceptor = new Thread(this::acceptLoop, "tcp-proxy-accept-" + listener.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Starts a proxy to {@code targetHost:targetPort} (a loopback address). */
    public static TcpProxy start(String targetHost, int targetPort) {
        return new TcpProxy(targetHost, targetPort);
    }

    /** The proxy's port on 127.0.0.1. */
    public int port() {
        return listener.getLocalPort();
    }

    /** {@code redis://127.0.0.1:<port>}. */
    public String uri() {
        return "redis://127.0.0.1:" + port();
    }

    /** How many client connections the proxy accepted so far. */
    public long connectionsAccepted() {
        return accepted.get();
    }

    /**
     * Delays every chunk of bytes by this much, in both directions. Chunks keep their order and
     * are not held up by each other: a link with latency, not a slow one.
     */
    public void setLatency(Duration oneWayDelay) {
        latencyNanos = oneWayDelay.toNanos();
    }

    /**
     * While on, the latency applies only to replication links (a connection on which the client
     * has sent REPLCONF or PSYNC, as a replica does), so a master's clients and Sentinels reach it
     * at once through the same address while its replicas lag behind.
     */
    public void setLatencyForReplicationOnly(boolean on) {
        latencyForReplicationOnly = on;
    }

    /** Closes every current connection; new ones are still accepted. */
    public void cutAll() {
        for (Pipe pipe : pipes) {
            pipe.close();
        }
    }

    /**
     * Resets every current connection (RST, as a killed peer or a crashed middlebox does: the
     * client sees "Connection reset" rather than an orderly close); new ones are still accepted.
     */
    public void resetAll() {
        for (Pipe pipe : pipes) {
            pipe.reset();
        }
    }

    /**
     * While on, bytes in both directions are discarded and connections stay open; a connection
     * that lost bytes is closed when its next bytes arrive after this is turned off (a real
     * network delays bytes or ends the connection; it never leaves a gap in the stream).
     */
    public void setBlackhole(boolean on) {
        blackhole = on;
    }

    /**
     * While on, bytes from the server are discarded and connections stay open, while commands
     * still reach the server: every command runs, no reply arrives. A connection that lost
     * replies is closed when its next bytes arrive after this is turned off.
     */
    public void setDropReplies(boolean on) {
        dropReplies = on;
    }

    /**
     * While on, bytes from the server to a subscriber connection (one on which the client has
     * sent SUBSCRIBE or SSUBSCRIBE) are held back, in order, and delivered when this is turned
     * off: published messages reach the subscriber late, as a slow pub/sub connection delivers
     * them, while every other connection goes on.
     */
    public void setHoldSubscriberReplies(boolean on) {
        synchronized (held) {
            holdSubscriberReplies = on;
            held.notifyAll();
        }
    }

    /** While on, new connections are closed as soon as they are accepted. */
    public void setRefuse(boolean on) {
        refuse = on;
    }

    /**
     * The next chunk of bytes from the server to a client is discarded and then every
     * connection is cut: the client's command ran in Redis but its reply never arrives.
     */
    public void dropNextReplyAndCut() {
        dropNextReply.set(true);
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return;
            }
            accepted.incrementAndGet();
            if (refuse) {
                quietClose(client);
                continue;
            }
            try {
                Socket server = new Socket();
                server.connect(new InetSocketAddress(targetHost, targetPort), 5_000);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                Pipe pipe = new Pipe(client, server);
                pipes.add(pipe);
                pipe.start();
            } catch (IOException e) {
                quietClose(client);
            }
        }
    }

    private final class Pipe {
        private final Socket client;
        private final Socket server;
        private final AtomicBoolean open = new AtomicBoolean(true);
        private volatile boolean replication;
        private volatile boolean subscriber;

        Pipe(Socket client, Socket server) {
            this.client = client;
            this.server = server;
        }

        void start() {
            thread("up", client, server, false).start();
            thread("down", server, client, true).start();
        }

        private Thread thread(String name, Socket from, Socket to, boolean fromServer) {
            Thread t = new Thread(() -> pump(from, to, fromServer), "tcp-proxy-" + name + "-" + from.getPort());
            t.setDaemon(true);
            return t;
        }

        /** A chunk read, to be written at {@code due} (System.nanoTime()). */
        private record Chunk(byte[] bytes, long due) {
        }

        private long delayFor() {
            return latencyForReplicationOnly && !replication ? 0 : latencyNanos;
        }

        /** Whether bytes of this connection were discarded (see {@link #pump}). */
        private volatile boolean lostBytes;

        private void pump(Socket from, Socket to, boolean fromServer) {
            // Reads here; a writer thread writes each chunk when it is due, in order, so latency
            // delays every chunk by the same amount without holding the next one back.
            java.util.concurrent.BlockingQueue<Chunk> due = new java.util.concurrent.LinkedBlockingQueue<>();
            Thread writer = new Thread(() -> write(to, due, fromServer), Thread.currentThread().getName() + "-writer");
            writer.setDaemon(true);
            writer.start();
            byte[] buffer = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    if (fromServer && dropNextReply.compareAndSet(true, false)) {
                        cutAll();
                        return;
                    }
                    if (!fromServer && (!replication || !subscriber)) {
                        String text = new String(buffer, 0, n, java.nio.charset.StandardCharsets.ISO_8859_1).toUpperCase(java.util.Locale.ROOT);
                        replication |= text.contains("REPLCONF") || text.contains("PSYNC");
                        subscriber |= text.contains("SUBSCRIBE");
                    }
                    if (blackhole || (fromServer && dropReplies)) {
                        lostBytes = true;
                        continue;
                    }
                    if (lostBytes) {
                        // TCP never loses bytes inside a connection: one that lost some (a
                        // blackhole, dropped replies) ends here instead of carrying a stream with a
                        // gap, whose next reply would be read as the answer to another command.
                        close();
                        return;
                    }
                    due.add(new Chunk(java.util.Arrays.copyOf(buffer, n), System.nanoTime() + delayFor()));
                }
                // An orderly close travels behind the data, like a FIN.
                due.add(new Chunk(null, System.nanoTime() + delayFor()));
            } catch (IOException e) {
                // reset, or cut by the test
                writer.interrupt();
                close();
            }
        }

        private void write(Socket to, java.util.concurrent.BlockingQueue<Chunk> due, boolean fromServer) {
            try {
                OutputStream out = to.getOutputStream();
                while (open.get()) {
                    Chunk chunk = due.take();
                    long wait = chunk.due() - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                    if (fromServer && subscriber) {
                        synchronized (held) {
                            while (holdSubscriberReplies && open.get()) {
                                held.wait(100);
                            }
                        }
                    }
                    if (!open.get() || chunk.bytes() == null) {
                        return; // cut while the chunk was on its way (it is lost), or the closing FIN
                    }
                    out.write(chunk.bytes());
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // the connection ended
            } finally {
                close();
            }
        }

        void reset() {
            try {
                client.setSoLinger(true, 0);
                server.setSoLinger(true, 0);
            } catch (IOException ignored) {
                // closed already
            }
            close();
        }

        void close() {
            if (open.compareAndSet(true, false)) {
                quietClose(client);
                quietClose(server);
                pipes.remove(this);
            }
        }
    }

    private static void quietClose(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    /** Stops accepting and closes every connection. */
    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing
        }
        cutAll();
    }
}
