package dev.baton.reactor;

import dev.baton.Baton;
import dev.baton.BatonOptions;
import dev.baton.testkit.Await;
import dev.baton.testkit.Bounds;
import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A bounded storm of the Reactor entry points on one lock: two clients, 12 pipelines each on a
 * scheduler of two threads (so unrelated subscriptions share threads), each running scoped
 * holds, scoped holds cut short by {@code timeout} while waiting or inside, and
 * {@code lock()/unlock()} and {@code tryLock} for an owner in the Context, hopping threads
 * between lock and unlock. Checked throughout: never two holders at once (both clients' holders
 * count into one counter); no call fails on a healthy Redis. Checked at the end: nothing held,
 * queued or subscribed. Each storm stops by itself (6 s, 200 operations per pipeline; one that
 * has not ended 30 s in fails); the seed is printed and {@code -Dbaton.storm.seed} replays its
 * choices.
 */
@ExtendWith(RedisExtension.class)
class ReactiveStormTest {
    private final RedisServer redis;

    ReactiveStormTest(RedisServer redis) {
        this.redis = redis;
    }

    @Test
    void pipelinesOfTwoClientsNeverHoldTogetherAndLeaveNothingBehind() {
        redis.command("FLUSHALL");
        long seed = Long.getLong("baton.storm.seed", new Random().nextLong());
        System.out.println("[reactive storm] seed " + seed);
        List<Baton> clients = new ArrayList<>();
        List<Scheduler> loops = new ArrayList<>();
        AtomicInteger holders = new AtomicInteger();
        AtomicLong grants = new AtomicLong();
        ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(6).toNanos();
        try {
            for (int c = 0; c < 2; c++) {
                clients.add(Baton.create(BatonOptions.builder().redisUri(redis.uri()).watchdogTimeout(Duration.ofSeconds(3))
                        .commandTimeout(Duration.ofSeconds(1)).build()));
                loops.add(Schedulers.newParallel("loop-" + c, 2));
            }
            Scheduler hops = Schedulers.newParallel("hop", 2);
            List<Mono<Void>> pipelines = new ArrayList<>();
            for (int n = 0; n < 24; n++) {
                int worker = n;
                int c = n % 2;
                ReactiveLock lock = ReactiveBaton.of(clients.get(c)).lock("storm");
                Random rnd = new Random(seed + n);
                // Leaves the count before its completion goes on (to a release), or as it is cancelled.
                Mono<Void> inside = Mono.defer(() -> {
                    int now = holders.incrementAndGet();
                    grants.incrementAndGet();
                    if (now != 1) {
                        violations.add("worker " + worker + ": " + now + " holders at once");
                    }
                    AtomicBoolean left = new AtomicBoolean();
                    Runnable leave = () -> {
                        if (left.compareAndSet(false, true)) {
                            holders.decrementAndGet();
                        }
                    };
                    return Mono.delay(Duration.ofMillis(rnd.nextInt(3))).then(Mono.fromRunnable(leave)).doOnCancel(leave).then();
                });
                Mono<Void> step = Mono.defer(() -> switch (rnd.nextInt(5)) {
                    case 0 -> lock.withLock(scope -> inside);
                    case 1 -> lock.withLock(scope -> inside).timeout(Duration.ofMillis(rnd.nextInt(6) + 1))
                            .onErrorResume(TimeoutException.class, e -> Mono.empty());
                    case 2 -> lock.lock().publishOn(hops).then(inside).publishOn(loops.get(c)).then(lock.unlock())
                            .contextWrite(ReactiveBaton.newOwner());
                    case 3 -> lock.tryLock(Duration.ofMillis(rnd.nextInt(20))).flatMap(got -> got
                                    ? inside.publishOn(hops).then(lock.unlock()) : Mono.<Void>empty())
                            .contextWrite(ReactiveBaton.newOwner());
                    default -> lock.withLock(scope -> Mono.delay(Duration.ofMillis(5)).then(inside))
                            .timeout(Duration.ofMillis(rnd.nextInt(4) + 1))
                            .onErrorResume(TimeoutException.class, e -> Mono.empty());
                }).onErrorResume(e -> {
                    violations.add("worker " + worker + ": " + e);
                    return Mono.empty();
                });
                pipelines.add(Flux.range(0, 200).takeWhile(i -> System.nanoTime() < deadline)
                        .concatMap(i -> step).then().subscribeOn(loops.get(c)));
            }
            try {
                Mono.when(pipelines).block(Duration.ofSeconds(30));
            } catch (IllegalStateException timedOut) {
                violations.add("the storm did not end within 30 s (a wait never ended: a hold never released?)");
            } finally {
                hops.dispose();
            }
            assertEquals(List.of(), List.copyOf(violations), "seed " + seed);
            assertTrue(grants.get() > 50, "the storm made holds: " + grants.get());
            System.out.println("[reactive storm] seed " + seed + ": " + grants.get() + " holds, no violation");
            Await.until(Bounds.CLEAN_UP, () -> "nothing held, queued or subscribed", () -> clients.stream().allMatch(b -> b.leasesHeld() == 0)
                    && (Long) redis.command("EXISTS", "storm") == 0L && redis.subscribers("redisson_lock__channel:{storm}") == 0L);
        } finally {
            clients.forEach(Baton::close);
            loops.forEach(Scheduler::dispose);
        }
    }
}
