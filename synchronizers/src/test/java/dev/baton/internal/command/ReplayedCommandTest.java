package dev.baton.internal.command;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.protocol.RedisStateMachine;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A script command that Lettuce writes again after a reconnect decodes its new reply into a fresh
 * output. Lettuce's own decoder is fed a reply cut off by the connection's loss, reset as on a
 * reconnect, then fed the reply to the second write. Without a fresh output the part decoded first
 * stays in it: a cut after the array header turned {@code {0, 5, 1}} into {@code {{0}, 5, 1}} (the
 * nemesis soak once saw {@code ClassCastException: ArrayList cannot be cast to Long} from a
 * permit-expirable acquire), and a cut after the first element turned a grant {@code {1, 0}} into
 * {@code {0, {1}, 0}}, read as a refusal: permits taken and never given back.
 */
@Tag("no-redis")
class ReplayedCommandTest {

    @Test
    void aReplyCutAfterItsArrayHeaderIsNotNestedIntoTheNextOne() {
        assertEquals(List.of(0L, 5L, 1L), replay("*3\r\n", "*3\r\n:0\r\n:5\r\n:1\r\n"));
    }

    @Test
    void aReplyCutAfterItsFirstElementDoesNotChangeTheNextOne() {
        assertEquals(List.of(1L, 0L), replay("*3\r\n:0\r\n", "*2\r\n:1\r\n:0\r\n"));
    }

    private static List<Object> replay(String cutOff, String secondReply) {
        CommandExecutor.CountingCommand<List<Object>> command = new CommandExecutor.CountingCommand<>(CommandType.EVALSHA,
                CommandExecutor.Reply.ARRAY, new CommandArgs<>(StringCodec.UTF8).add("sha").add(0));
        RedisStateMachine decoder = new RedisStateMachine(ByteBufAllocator.DEFAULT);
        decoder.setProtocolVersion(ProtocolVersion.RESP2);
        ByteBuf written = Unpooled.buffer();
        ByteBuf first = Unpooled.copiedBuffer(cutOff, StandardCharsets.UTF_8);
        ByteBuf second = Unpooled.copiedBuffer(secondReply, StandardCharsets.UTF_8);
        try {
            command.encode(written);
            assertFalse(decoder.decode(first, command.getOutput()), "the first reply is incomplete");
            decoder.reset(); // the connection is lost; Lettuce resets its decoder and writes the command again
            command.encode(written);
            assertTrue(decoder.decode(second, command.getOutput()), "the second reply is whole");
            command.complete();
            assertEquals(2, command.writes());
            return command.get();
        } finally {
            written.release();
            first.release();
            second.release();
            decoder.close();
        }
    }
}
