package dev.baton.internal.election;

import dev.baton.BatonLeaderElection;
import dev.baton.Candidacy;
import dev.baton.ElectionState;
import dev.baton.Leadership;
import dev.baton.LeadershipWork;
import dev.baton.internal.Services;
import dev.baton.internal.command.CommandExecutor;
import dev.baton.internal.engine.Blocking;
import dev.baton.internal.lock.FairRecipe;
import dev.baton.internal.lock.RedisLock;
import dev.baton.internal.support.Args;
import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * A leader election: each candidacy is a {@link Candidate} (a thread that waits on the election's
 * fair lock and runs the work as lease-scoped work); the state is one read script.
 */
public final class RedisLeaderElection implements BatonLeaderElection {
    static final int MAX_IDENTITY = 200;

    private final Services services;
    private final String name;
    private final String lockKey;
    private final long waiterLeaseMs;
    private final List<String> stateKeys;

    private final java.util.function.LongSupplier ownerIds;

    public RedisLeaderElection(Services services, String name, long waiterLeaseMs, java.util.function.LongSupplier ownerIds) {
        this.services = services;
        this.ownerIds = ownerIds;
        this.name = Args.name(name);
        this.lockKey = Layout.leader(name);
        this.waiterLeaseMs = waiterLeaseMs;
        this.stateKeys = List.of(lockKey, Layout.leaderQueue(name), Layout.leaderWaiters(name), Layout.leaderIdentities(name));
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public Candidacy join(String identity, LeadershipWork work) {
        Objects.requireNonNull(work, "work");
        return start(identity, new BlockingRunner(work, "baton-candidate-" + name));
    }

    @Override
    public Candidacy joinAsync(String identity, Function<? super Leadership, ? extends CompletionStage<?>> work) {
        Objects.requireNonNull(work, "work");
        return start(identity, new AsyncRunner(work, services.executor().scheduler()));
    }

    private Candidacy start(String identity, Candidate.Runner runner) {
        services.checkOpen();
        String id = identity(identity);
        RedisLock lock = new RedisLock(services, lockKey, key -> FairRecipe.election(services, name, key, waiterLeaseMs, id));
        Candidate candidate = new Candidate(services, name, lock, id, runner, ownerIds);
        candidate.start();
        return candidate;
    }

    static String identity(String identity) {
        Objects.requireNonNull(identity, "identity");
        if (identity.isBlank()) {
            throw new IllegalArgumentException("a candidate's identity must not be blank");
        }
        if (identity.length() > MAX_IDENTITY) {
            throw new IllegalArgumentException("a candidate's identity has at most " + MAX_IDENTITY
                    + " characters; this one has " + identity.length());
        }
        return identity;
    }

    @Override
    public ElectionState state() {
        return Blocking.join(stateAsync().toCompletableFuture());
    }

    @Override
    public CompletionStage<ElectionState> stateAsync() {
        services.checkOpen();
        CompletableFuture<List<Object>> reply = services.executor().eval(Script.ELECTION_STATE, CommandExecutor.Reply.ARRAY,
                stateKeys, List.of());
        return reply.thenApply(RedisLeaderElection::parse);
    }

    /** The reply of election_state.lua (see its header). */
    static ElectionState parse(List<Object> reply) {
        String owner = (String) reply.get(0);
        Optional<ElectionState.Leader> leader = owner.isEmpty() ? Optional.empty()
                : Optional.of(new ElectionState.Leader((String) reply.get(1), (Long) reply.get(2),
                Instant.ofEpochMilli((Long) reply.get(3)), Duration.ofMillis(Math.max(0, (Long) reply.get(4)))));
        long n = (Long) reply.get(6);
        List<String> candidates = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            candidates.add((String) reply.get(8 + 2 * i));
        }
        return new ElectionState(leader, candidates);
    }

    @Override
    public String toString() {
        return "leader election '" + name + "'";
    }
}
