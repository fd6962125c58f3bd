/**
 * Baton: distributed synchronizers on Redis, over Lettuce. Only {@code dev.baton} is exported;
 * {@link dev.baton.Baton} is the door to everything else.
 */
module dev.baton {
    exports dev.baton;

    requires transitive lettuce.core;
    requires dev.baton.lua;
    requires org.slf4j;
    requires com.github.benmanes.caffeine;
    requires io.netty.common;
    requires io.netty.buffer;
    requires reactor.core;
}
