package dev.baton.internal;

import dev.baton.Candidacy;
import dev.baton.Leadership;
import dev.baton.LeadershipListener;
import dev.baton.lua.Layout;
import dev.baton.testkit.UserPattern;

import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One seeded run of a leader election: three candidate actors on each of two clients (whose
 * clocks drift and whose processes pause as the seed says), each joining with async work that
 * leads for 0-3 ms (one term in four up to 400 ms, past a short watchdog's lease) and returns,
 * relinquishing while it leads, closing its candidacy while it leads or waits and joining again.
 *
 * <p>Judged: at every election, no other candidate's leadership still claims validity (on its
 * own client's clock; unless Redis lost its data since that leader was elected), and the epoch is
 * higher than every epoch elected before while valid; a relinquish ends within a command's
 * bound, a close within two (the wait's attempt in flight, then its leaving the line); no candidate waits while the election is free in Redis for longer than the
 * waits' bound (a lost wake-up); every elected leadership is told revoked exactly once; and at
 * the end, after every candidacy closed and a calm drain, nothing of the election is left in
 * Redis but its epoch counter.
 */
final class ElectionSimulation extends Simulation {
    static final String NAME = "sim-election";
    static final String KEY = Layout.leader(NAME);
    /** The fair-lock waiter timeout (BatonOptions' default): a waiting candidate calls again every third of it. */
    static final long WAITER_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    final List<Candidate> candidates;
    final long freeBound;
    long highestEpoch;
    final Map<LeadershipListener.Revocation, Integer> revocations = new EnumMap<>(LeadershipListener.Revocation.class);

    ElectionSimulation(long seed, boolean trace, Duration run) {
        super("leaderElection", seed, trace, run);
        // A candidate learns that the election is free at its next call: at the holder's lease's
        // end or a third of the waiter timeout, whichever is first; after a failed call, 1 s later.
        freeBound = unawareBound(Math.max(watchdog.toNanos(), WAITER_TIMEOUT_NANOS / 3) + TimeUnit.SECONDS.toNanos(1));
        candidates = threeEach(clients, Candidate::new);
        world.watch = () -> {
            boolean free = !world.keyspace().containsKey(KEY);
            candidates.forEach(c -> c.clock.watch(() -> free));
        };
    }

    @Override
    List<Candidate> actors() {
        return candidates;
    }

    @Override
    java.util.Set<UserPattern> covered() {
        return java.util.EnumSet.of(UserPattern.LONG_WAIT, UserPattern.SCOPED_WORK, UserPattern.SCOPED_WORK_LONG,
                UserPattern.RELINQUISH, UserPattern.WORK_RETURNS, UserPattern.CLOSE_AND_REJOIN);
    }

    @Override
    Duration settle() {
        // A late copy of a candidate's acquire queues a waiter nobody is: handed the election, it
        // keeps it for the claim timeout (the waiter timeout) after its deadline (one more).
        return LONGEST_STALL.plusSeconds(25);
    }

    @Override
    void endChecks() {
        world.note("end: " + grants + " elections, revocations " + revocations + ", highest epoch " + highestEpoch);
        for (Candidate c : candidates) {
            if (c.electedTerms != c.revokedTerms) {
                violation(c + " was elected " + c.electedTerms + " times and told revoked " + c.revokedTerms + " times");
            }
        }
        for (String key : List.of(KEY, Layout.leaderQueue(NAME), Layout.leaderWaiters(NAME), Layout.leaderIdentities(NAME))) {
            if (world.keyspace().containsKey(key)) {
                violation("after every candidacy closed and a calm drain, " + key + " is still in Redis: "
                        + java.util.Arrays.deepToString(world.keyspace().get(key)));
            }
        }
    }

    /** One candidate actor: joins, leads, relinquishes, closes and joins again. */
    final class Candidate extends BaseActor {
        final SimClient client;
        final int index;
        final WaitClock clock;
        Candidacy candidacy;
        Leadership leading;
        long electedAt = -1;
        int electedTerms;
        int revokedTerms;
        int joins;

        Candidate(SimClient client, int index) {
            this.client = client;
            this.index = index;
            this.clock = new WaitClock(this, "the election was free in Redis", freeBound);
        }

        @Override
        SimClient.Clock process() {
            return client.clock;
        }

        @Override
        public String toString() {
            return "candidate " + client.id + "/" + index;
        }

        @Override
        public void next() {
            if (stopping) {
                if (candidacy != null) {
                    Candidacy c = candidacy;
                    candidacy = null;
                    clock.end();
                    world.note(this + " closes its candidacy (the run stops)");
                    c.closeAsync();
                }
                idle = true;
                doing = "nothing";
                return;
            }
            operations++;
            if (candidacy == null) {
                join();
                return;
            }
            int op = world.rnd.nextInt(60);
            if (leading != null && op < 4) {
                ran(UserPattern.RELINQUISH);
                relinquish();
            } else if ((leading != null && op < 6) || (leading == null && op < 1)) {
                ran(UserPattern.CLOSE_AND_REJOIN);
                close();
            } else {
                doing = leading != null ? "leading" : "waiting in line";
                pause();
            }
        }

        void join() {
            joins++;
            String identity = "c" + client.id + index + "#" + joins;
            world.note(this + " joins as " + identity);
            ran(UserPattern.LONG_WAIT);
            clock.start(!world.keyspace().containsKey(KEY));
            Candidacy c = client.runtime.leaderElection(NAME).joinAsync(identity, this::lead);
            candidacy = c;
            c.addListener(new LeadershipListener() {
                @Override
                public void revoked(Leadership leadership, Revocation why) {
                    revokedTerms++;
                    revocations.merge(why, 1, Integer::sum);
                    world.note(Candidate.this + " revoked (epoch " + leadership.epoch() + "): " + why);
                    if (leading == leadership) {
                        leading = null;
                        electedAt = -1;
                    }
                    if (candidacy == c) {
                        clock.start(!world.keyspace().containsKey(KEY)); // waits in line again
                    }
                }
            });
            pause();
        }

        CompletionStage<Void> lead(Leadership leadership) {
            clock.end();
            grants++;
            electedTerms++;
            world.note(this + " ELECTED, epoch " + leadership.epoch() + ", valid for " + leadership.remaining().toNanos() / 1000 + " µs");
            if (leadership.isValid()) {
                if (leadership.epoch() <= highestEpoch) {
                    violation(this + " was elected with epoch " + leadership.epoch() + ", not above " + highestEpoch
                            + ", elected before");
                }
                highestEpoch = Math.max(highestEpoch, leadership.epoch());
            }
            for (Candidate other : candidates) {
                if (other != this && other.leading != null && other.leading.isValid() && !restartedSince(other.electedAt)) {
                    violation(this + " was elected (epoch " + leadership.epoch() + ") while " + other + "'s leadership (epoch "
                            + other.leading.epoch() + ") still had " + other.leading.remaining().toNanos() / 1000
                            + " µs of validity");
                }
            }
            leading = leadership;
            electedAt = world.now();
            CompletableFuture<Void> work = new CompletableFuture<>();
            long holdNanos = world.rnd.nextInt(4) == 0 ? world.micros(0, 400_000) : world.micros(0, 3_000);
            ran(holdNanos > watchdog.toNanos() / 3 ? UserPattern.SCOPED_WORK_LONG : UserPattern.SCOPED_WORK);
            later(holdNanos, "leader's work returns", () -> {
                if (!work.isDone()) {
                    ran(UserPattern.WORK_RETURNS);
                    work.complete(null);
                }
            });
            return work;
        }

        void relinquish() {
            doing = "relinquishing";
            world.note(this + " relinquishes");
            long asked = world.now();
            candidacy.relinquishAsync().whenComplete((was, error) -> {
                if (ended("relinquishAsync", asked, boundOf(0), error) == null) {
                    world.note(this + " relinquished: " + was);
                    pause();
                }
            });
        }

        void close() {
            doing = "closing";
            Candidacy c = candidacy;
            candidacy = null;
            clock.end();
            world.note(this + " closes its candidacy" + (leading != null ? " while leading" : " while waiting"));
            long asked = world.now();
            // A close waits for the wait's attempt in flight and then for its leaving the line to
            // be answered: two commands' bounds when Redis does not answer.
            c.closeAsync().whenComplete((ok, error) -> {
                if (ended("closeAsync", asked, 2 * COMMAND_TIMEOUT.toNanos() + SLACK_NANOS, error) == null) {
                    pause();
                }
            });
        }
    }
}
