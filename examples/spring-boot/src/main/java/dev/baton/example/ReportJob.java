package dev.baton.example;

import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

import java.time.Instant;

/**
 * A scheduled job every instance schedules and only one runs per slot: ShedLock takes the
 * {@code shedlock:report} lock through Baton. Each run is recorded in the hash
 * {@value #RUNS} under its slot (the epoch second it fired for), so runs can be counted.
 */
@Component
public class ReportJob {
    /** The hash of runs per slot. */
    public static final String RUNS = "example:report-runs";

    private final StringRedisTemplate redis;

    public ReportJob(StringRedisTemplate redis) {
        this.redis = redis;
    }

    // snippet spring-boot-job begins
    @Scheduled(cron = "${example.report.cron:0 */5 * * * *}")
    @SchedulerLock(name = "report", lockAtLeastFor = "${example.report.lock-at-least-for:PT1M}")
    public void report() {
        // ... runs on one instance per slot
        redis.opsForHash().increment(RUNS, Long.toString(Instant.now().getEpochSecond()), 1);
    }
    // snippet spring-boot-job ends
}
