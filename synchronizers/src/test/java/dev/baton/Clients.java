package dev.baton;

import dev.baton.testkit.RedisServer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Opens Baton clients for a test and closes them all at the end. */
final class Clients implements AutoCloseable {
    private final List<Baton> open = new ArrayList<>();

    Baton open(RedisServer redis) {
        return open(defaults(redis).build());
    }

    /** The options tests open clients with unless they need others: a 2 s command timeout. */
    static BatonOptions.Builder defaults(RedisServer redis) {
        return BatonOptions.builder().redisUri(redis.uri()).commandTimeout(Duration.ofSeconds(2));
    }

    Baton open(BatonOptions options) {
        Baton baton = Baton.create(options);
        open.add(baton);
        return baton;
    }

    @Override
    public void close() {
        for (Baton baton : open) {
            baton.close();
        }
        open.clear();
    }
}
