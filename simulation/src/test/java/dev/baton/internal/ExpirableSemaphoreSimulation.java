package dev.baton.internal;

import dev.baton.BatonPermitExpirableSemaphore;
import dev.baton.RedisUnavailableException;
import dev.baton.lua.Layout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of the permit-expirable semaphore: {@value #PERMITS} permits, two clients, three
 * actors each taking one or two permits (short and long timed waits, a future cancelled or ended
 * by its caller's own timeout), each call with no lease or a lease of 20 to 300 ms; an actor
 * holds its permits a moment (now and then past their lease), sometimes gives them a new lease,
 * and releases them by id.
 *
 * <p>Checked against the simulated keyspace: at every grant, each granted id is a live permit in
 * Redis ({@code {name}:timeout}, its expiry not passed on the server's clock) and the permits
 * Redis counts as available plus the ids it keeps as taken are exactly {@value #PERMITS} (no
 * permit given twice, none lost); a release that returns normally, or says the permit is not
 * held only once its lease could have run out (never for a permit with no lease); a lease update
 * of a permit with no lease finds it held; every timed call ends within its bound on virtual
 * time; after the run and a calm drain longer than any lease, every call has ended and no permit
 * is taken any more, so all {@value #PERMITS} come back.
 */
final class ExpirableSemaphoreSimulation extends Simulation {

    static final String NAME = "sim-xsem";
    static final String TAKEN = Layout.expirablePermits(NAME);
    static final int PERMITS = 3;
    static final int LONGEST_LEASE_MS = 300;

    final List<Taker> takers;

    ExpirableSemaphoreSimulation(long seed, boolean trace, Duration run) {
        super("expirableSemaphore", seed, trace, run);
        takers = threeEach(clients, Taker::new);
    }

    @Override
    List<Taker> actors() {
        return takers;
    }

    @Override
    java.util.Set<dev.baton.testkit.UserPattern> covered() {
        return java.util.EnumSet.of(dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT, dev.baton.testkit.UserPattern.LONG_WAIT, dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL, dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT, dev.baton.testkit.UserPattern.MULTI_PERMIT, dev.baton.testkit.UserPattern.FIXED_LEASE, dev.baton.testkit.UserPattern.LEASE_UPDATED);
    }

    @Override
    void setUp() {
        setKey(NAME, PERMITS);
    }

    /** The drain outlasts every lease, so a permit a late acquire copy took for nobody has expired too. */
    @Override
    Duration settle() {
        return LONGEST_STALL.plusMillis(LONGEST_LEASE_MS).plusSeconds(5);
    }

    @Override
    void endChecks() {
        long nowMs = nowMs();
        List<String> live = new ArrayList<>();
        List<?> taken = takenInRedis();
        for (int i = 0; i < taken.size(); i += 2) {
            if (score(taken.get(i + 1)) > nowMs) {
                live.add(hex((String) taken.get(i)) + " until " + taken.get(i + 1));
            }
        }
        if (restartedAt >= 0) {
            // After Redis lost its data the permits are what survived (a replica behind the master
            // brings back permits taken and released since, a no-lease one for good): not judged.
            world.note("after a data loss Redis keeps " + live + " taken and counts " + availableInRedis() + " available");
            return;
        }
        if (!live.isEmpty()) {
            violation("after the drain Redis still keeps permits taken: " + live + " (a permit nobody holds, lost)");
        }
        long returned = availableInRedis() + taken.size() / 2;
        if (returned != PERMITS) {
            violation("after the drain Redis counts " + availableInRedis() + " available and " + taken.size() / 2
                    + " expired, not " + PERMITS + " in all (a permit lost or counted twice)");
        }
    }

    long nowMs() {
        return SimWorld.EPOCH_MS + world.now() / 1_000_000;
    }

    long availableInRedis() {
        Object[] value = world.keyspace().get(NAME);
        return value == null ? 0 : Long.parseLong((String) value[1]);
    }

    /** The taken permits in Redis: member, score, member, score... (members as Redis keeps them, 16 raw bytes). */
    List<?> takenInRedis() {
        Object[] value = world.keyspace().get(TAKEN);
        return value == null ? List.of() : (List<?>) value[1];
    }

    /** A permit's expiry in Redis (epoch ms; 0 if it is not taken). */
    long expiryInRedis(String permitId) {
        List<?> taken = takenInRedis();
        String member = new String(HexFormat.of().parseHex(permitId), StandardCharsets.ISO_8859_1);
        for (int i = 0; i < taken.size(); i += 2) {
            if (member.equals(taken.get(i))) {
                return score(taken.get(i + 1));
            }
        }
        return 0;
    }

    private static long score(Object s) {
        return (long) Double.parseDouble((String) s);
    }

    private static String hex(String member) {
        return HexFormat.of().formatHex(member.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** One actor: takes 1 or 2 permits, holds them, releases each by id; one operation at a time. */
    final class Taker extends BaseActor {
        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        final SimClient client;
        final int index;
        final BatonPermitExpirableSemaphore semaphore;
        /** The ids this actor holds now. */
        List<String> held = List.of();
        /** The earliest virtual time their lease may run out ({@code Long.MAX_VALUE}: no lease). */
        long mayRunOutAt;
        /** Whether the release of what it holds has been called. */
        boolean releasing;

        Taker(SimClient client, int index) {
            this.client = client;
            this.index = index;
            this.semaphore = client.runtime.permitExpirableSemaphore(NAME);
        }

        @Override
        public String toString() {
            return "taker " + client.id + "/" + index;
        }

        @Override
        public void next() {
            if (stopIfStopping()) {
                return;
            }
            operations++;
            int k = 1 + world.rnd.nextInt(2);
            long lease = world.rnd.nextInt(3) == 0 ? -1 : 20 + world.rnd.nextInt(LONGEST_LEASE_MS - 20);
            int op = world.rnd.nextInt(6);
            ran(op == 0 ? dev.baton.testkit.UserPattern.SHORT_TIMED_WAIT : op <= 3 ? dev.baton.testkit.UserPattern.LONG_WAIT : op == 4 ? dev.baton.testkit.UserPattern.GIVEN_UP_BY_CANCEL
                    : dev.baton.testkit.UserPattern.GIVEN_UP_BY_OR_TIMEOUT);
            if (k > 1) {
                ran(dev.baton.testkit.UserPattern.MULTI_PERMIT);
            }
            if (lease > 0) {
                ran(dev.baton.testkit.UserPattern.FIXED_LEASE);
            }
            switch (op) {
                case 0 -> {
                    long wait = world.rnd.nextInt(6);
                    acquire(k, wait, lease, call(k, wait, lease), "");
                }
                case 1, 2 -> {
                    long wait = 10 + world.rnd.nextInt(190);
                    acquire(k, wait, lease, call(k, wait, lease), "");
                }
                case 3 -> acquire(k, 1_000, lease, call(k, 1_000, lease), "");
                default -> {
                    // The future Baton returned (not a stage derived from it), ended by its
                    // caller: cancel(), or its own timeout.
                    boolean single = k == 1 && world.rnd.nextBoolean();
                    CompletableFuture<?> f = (single ? semaphore.tryAcquireAsync(1_000, lease, TimeUnit.MILLISECONDS)
                            : semaphore.tryAcquireAsync(k, 1_000, lease, TimeUnit.MILLISECONDS)).toCompletableFuture();
                    endedByCaller(f, op == 4);
                    acquire(k, 1_000, lease, f.thenApply(Taker::ids), op == 4 ? " cancelled" : " timed out by its caller");
                }
            }
        }

        /** The single-permit form for one permit, now and then; the list form otherwise. */
        CompletionStage<List<String>> call(int k, long wait, long lease) {
            if (k == 1 && world.rnd.nextBoolean()) {
                return semaphore.tryAcquireAsync(wait, lease, TimeUnit.MILLISECONDS).thenApply(Taker::ids);
            }
            return semaphore.tryAcquireAsync(k, wait, lease, TimeUnit.MILLISECONDS);
        }

        /** What either form granted, as a list of ids. */
        @SuppressWarnings("unchecked")
        static List<String> ids(Object granted) {
            return granted instanceof java.util.Optional<?> one ? one.map(id -> List.of((String) id)).orElse(List.of())
                    : (List<String>) granted;
        }

        void acquire(int k, long waitMs, long lease, CompletionStage<List<String>> call, String end) {
            String how = "tryAcquireAsync(" + k + ", " + waitMs + " ms, lease " + lease + " ms)" + end;
            doing = how;
            world.note(this + " calls " + how);
            long asked = world.now();
            call.whenComplete((ids, error) -> {
                if (ended(how, asked, boundOf(waitMs), error) != null) {
                    return;
                }
                if (ids.isEmpty()) {
                    world.note(this + " " + how + " not granted");
                    pause();
                    return;
                }
                grants++;
                if (ids.size() != k) {
                    violation(this + " asked for " + k + " permits by " + how + " and got " + ids.size() + ": " + ids);
                    return;
                }
                held = ids;
                releasing = false;
                // The lease counts from the script's run, which is after the call.
                mayRunOutAt = lease < 0 ? Long.MAX_VALUE : asked + TimeUnit.MILLISECONDS.toNanos(lease);
                long nowMs = nowMs();
                long available = availableInRedis();
                long taken = takenInRedis().size() / 2;
                world.note(this + " GRANTED " + ids + " by " + how + " (Redis: " + available + " available, " + taken + " taken)");
                for (String id : ids) {
                    if (expiryInRedis(id) <= nowMs && !restartedSince(asked)) {
                        violation(this + " was granted permit " + id + " by " + how + " but Redis does not keep it taken"
                                + " (expiry " + expiryInRedis(id) + ", now " + nowMs + ")");
                        return;
                    }
                }
                if (available + taken != PERMITS && restartedAt < 0) {
                    violation(this + " was granted " + ids + " by " + how + ": Redis counts " + available + " available and "
                            + taken + " taken, not " + PERMITS + " in all");
                    return;
                }
                doing = "holding " + ids;
                long hold = world.rnd.nextInt(8) == 0 ? world.micros(0, LONGEST_LEASE_MS * 1_000L) : world.micros(0, 3_000);
                if (world.rnd.nextInt(4) == 0) {
                    later(hold / 2, "renew", this::updateLease);
                    later(hold, "hold", () -> release(0));
                } else {
                    later(hold, "hold", () -> release(0));
                }
            });
        }

        /** Gives the first held permit a new lease (50 ms, or none): it must still be held if it had none. */
        void updateLease() {
            ran(dev.baton.testkit.UserPattern.LEASE_UPDATED);
            if (held.isEmpty()) {
                return;
            }
            String id = held.get(0);
            long lease = world.rnd.nextBoolean() ? -1 : 50;
            boolean hadNoLease = mayRunOutAt == Long.MAX_VALUE;
            world.note(this + " calls updateLeaseTimeAsync(" + id + ", " + lease + " ms)");
            long asked = world.now();
            semaphore.updateLeaseTimeAsync(id, lease, TimeUnit.MILLISECONDS).whenComplete((updated, error) -> {
                checkBound("updateLeaseTimeAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e != null) {
                    world.note(this + " updateLeaseTimeAsync ended: " + e);
                    if (!(e instanceof RedisUnavailableException)) {
                        violation(this + ": updateLeaseTimeAsync threw " + e);
                    }
                    return;
                }
                world.note(this + " updateLeaseTimeAsync(" + id + "): " + updated);
                if (!updated && hadNoLease && !releasing && restartedAt < 0) {
                    violation(this + ": permit " + id + ", taken with no lease and not released, was not held at its lease update");
                }
            });
            if (lease > 0) {
                // From now on the permit may run out 50 ms after the update runs: its release may find it gone.
                mayRunOutAt = Math.min(mayRunOutAt, asked + TimeUnit.MILLISECONDS.toNanos(lease));
            }
        }

        /** Releases held permit {@code i} (and then the next), calling again with the same id if Redis did not confirm. */
        void release(int i) {
            if (i >= held.size()) {
                held = List.of();
                pause();
                return;
            }
            String id = held.get(i);
            releasing = true;
            doing = "releasing " + id;
            world.note(this + " calls releaseAsync(" + id + ")");
            long asked = world.now();
            semaphore.releaseAsync(id).whenComplete((v, error) -> {
                checkBound("releaseAsync", asked, boundOf(0));
                Throwable e = unwrap(error);
                if (e instanceof RedisUnavailableException) {
                    world.note(this + " release unconfirmed, calling it again with the same id: " + e.getMessage());
                    later(world.micros(0, 2_000), "release again", () -> release(i));
                    return;
                }
                if (e instanceof IllegalArgumentException) {
                    world.note(this + " release: " + e.getMessage());
                    if (world.now() < mayRunOutAt && restartedAt < 0) {
                        violation(this + ": release of permit " + id + " said it is not held before its lease could run out ("
                                + (mayRunOutAt == Long.MAX_VALUE ? "no lease" : "at " + mayRunOutAt / 1000 + " µs") + "): "
                                + e.getMessage());
                        return;
                    }
                } else if (e != null) {
                    violation(this + ": releaseAsync(" + id + ") threw " + e);
                    return;
                }
                release(i + 1);
            });
        }
    }
}
