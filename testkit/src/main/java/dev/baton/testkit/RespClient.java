package dev.baton.testkit;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal blocking RESP2 client for tests: one command, one reply. It lets tests look at and
 * poke Redis (INFO, PUBSUB NUMSUB, CLIENT KILL, FLUSHALL, ...) without going through the
 * client under test. Not thread-safe.
 */
public final class RespClient implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    /** Connects with a 5 s connect and read timeout. */
    public RespClient(String host, int port) {
        this(host, port, 5_000);
    }

    /** Connects with the given connect and read timeout in milliseconds. */
    public RespClient(String host, int port, int timeoutMs) {
        try {
            socket = new Socket();
            socket.connect(new InetSocketAddress(host, port), timeoutMs);
            socket.setSoTimeout(timeoutMs);
            socket.setTcpNoDelay(true);
            in = new BufferedInputStream(socket.getInputStream());
            out = socket.getOutputStream();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot connect to Redis at " + host + ":" + port, e);
        }
    }

    /**
     * Sends one command and reads its reply: {@link String} for simple and bulk strings
     * ({@code null} for nil), {@link Long} for integers, {@code List<Object>} for arrays.
     *
     * @throws RedisErrorReply      for an error reply
     * @throws UncheckedIOException when the connection fails or times out
     */
    public Object call(String... args) {
        try {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            encode(buf, args);
            out.write(buf.toByteArray());
            out.flush();
            Object reply = read();
            if (reply instanceof RedisErrorReply error) {
                throw error;
            }
            return reply;
        } catch (IOException e) {
            throw new UncheckedIOException("Redis command " + args[0] + " failed", e);
        }
    }

    /**
     * Sends the commands in one write and reads their replies, in order (a pipeline: one round
     * trip); an error reply is returned as its {@link RedisErrorReply} in the list, not thrown.
     *
     * @throws UncheckedIOException when the connection fails or times out
     */
    public java.util.List<Object> pipeline(java.util.List<String[]> commands) {
        try {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            for (String[] args : commands) {
                encode(buf, args);
            }
            out.write(buf.toByteArray());
            out.flush();
            java.util.List<Object> replies = new java.util.ArrayList<>(commands.size());
            for (int i = 0; i < commands.size(); i++) {
                replies.add(read());
            }
            return replies;
        } catch (IOException e) {
            throw new UncheckedIOException("Redis pipeline of " + commands.size() + " commands failed", e);
        }
    }

    private static void encode(ByteArrayOutputStream buf, String[] args) throws IOException {
        buf.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        for (String arg : args) {
            byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
            buf.write(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            buf.write(bytes);
            buf.write("\r\n".getBytes(StandardCharsets.UTF_8));
        }
    }

    /**
     * Reads the next reply without sending anything: after {@code SUBSCRIBE}, each call returns
     * the next pushed message ({@code [message, channel, payload]}), or throws when none arrives
     * within the read timeout.
     */
    public Object readReply() {
        try {
            Object reply = read();
            if (reply instanceof RedisErrorReply error) {
                throw error;
            }
            return reply;
        } catch (IOException e) {
            throw new UncheckedIOException("reading a reply failed", e);
        }
    }

    private Object read() throws IOException {
        int type = in.read();
        if (type < 0) {
            throw new IOException("connection closed by Redis");
        }
        String line = readLine();
        switch (type) {
            case '+':
                return line;
            case '-':
                return new RedisErrorReply(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int length = Integer.parseInt(line);
                if (length < 0) {
                    return null;
                }
                byte[] bytes = in.readNBytes(length);
                readLine();
                return new String(bytes, StandardCharsets.UTF_8);
            }
            case '*': {
                int count = Integer.parseInt(line);
                if (count < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    items.add(read());
                }
                return items;
            }
            default:
                throw new IOException("unexpected RESP type byte " + type);
        }
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new IOException("connection closed by Redis");
            }
            line.write(c);
        }
        in.read(); // '\n'
        return line.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing a test connection: nothing to do
        }
    }
}
