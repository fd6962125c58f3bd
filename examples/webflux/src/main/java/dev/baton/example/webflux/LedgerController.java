package dev.baton.example.webflux;

import dev.baton.reactor.ReactiveBaton;
import org.springframework.data.redis.core.ReactiveStringRedisTemplate;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

import java.time.Duration;

/**
 * Posts to an account's ledger: a read-modify-write of the account's balance that one request at
 * a time may do, across every instance. The lock is held by the request's own subscription, so
 * requests that share an event-loop thread still exclude each other, and the request's work may
 * hop threads.
 */
@RestController
public class LedgerController {
    private final ReactiveBaton baton;
    private final ReactiveStringRedisTemplate redis;

    public LedgerController(ReactiveBaton baton, ReactiveStringRedisTemplate redis) {
        this.baton = baton;
        this.redis = redis;
    }

    // snippet webflux-endpoint begins
    @PostMapping("/accounts/{id}/post")
    public Mono<String> post(@PathVariable("id") String id) {
        String balance = "example:balance:" + id;
        return baton.lock("ledger:" + id).withLock(scope -> redis.opsForValue().get(balance)
                .defaultIfEmpty("0")
                .delayElement(Duration.ofMillis(20))          // the read-modify-write window
                .flatMap(read -> {
                    scope.checkValid();                        // still known to hold the lock
                    long next = Long.parseLong(read) + 1;
                    return redis.opsForValue().set(balance, Long.toString(next)).thenReturn("balance " + next);
                }));
    }
    // snippet webflux-endpoint ends
}
