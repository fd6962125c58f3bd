package dev.baton;

import java.time.Duration;

/**
 * A candidate in a JVM of its own, for {@link LeaderElectionTest}'s crash: joins election
 * {@code args[1]} on Redis {@code args[0]} with a 2 s watchdog timeout and identity
 * {@code args[2]}, prints {@code LEADING <epoch>} once it leads, and leads until killed.
 */
public final class ElectionCandidateProcess {
    private ElectionCandidateProcess() {
    }

    public static void main(String[] args) throws Exception {
        Baton baton = Baton.create(BatonOptions.builder().redisUri(args[0]).commandTimeout(Duration.ofSeconds(2))
                .watchdogTimeout(Duration.ofSeconds(2)).build());
        baton.leaderElection(args[1]).join(args[2], leadership -> {
            System.out.println("LEADING " + leadership.epoch());
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        });
        Thread.sleep(Long.MAX_VALUE);
    }
}
