package dev.baton.interop.fuzz;

import dev.baton.interop.fuzz.History.Mode;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The storm's judge on synthetic histories: each violation it must report, and what it must not. */
@Tag("no-redis")
class HistoryTest {
    private static final Set<String> AB = Set.of("a", "b");

    private static History.Hold hold(History h, String client, Mode mode, int weight, long from, long to, long token) {
        History.Hold hold = h.granted(client, "test", mode, weight, from, from, token);
        h.released(hold, to, null);
        return hold;
    }

    @Test
    void sequentialExclusiveHoldsAreClean() {
        History h = new History();
        hold(h, "a", Mode.EXCLUSIVE, 1, 0, 10, 0);
        hold(h, "b", Mode.EXCLUSIVE, 1, 11, 20, 0);
        hold(h, "a", Mode.EXCLUSIVE, 1, 21, 30, 0);
        assertEquals(List.of(), h.judge(1, 3, 3, AB));
    }

    @Test
    void twoExclusiveHoldersAreReportedEvenWhenTheyOnlyTouch() {
        History h = new History();
        hold(h, "a", Mode.EXCLUSIVE, 1, 0, 10, 0);
        hold(h, "b", Mode.EXCLUSIVE, 1, 10, 20, 0);
        List<String> found = h.judge(1, -1, 0, AB);
        assertEquals(1, found.size(), found.toString());
        assertTrue(found.get(0).startsWith("two holders at once"), found.toString());
    }

    @Test
    void aHoldThatNeverEndedOverlapsEverythingAfterIt() {
        History h = new History();
        h.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 0, 0); // never released
        hold(h, "b", Mode.EXCLUSIVE, 1, 1_000_000, 1_000_010, 0);
        assertEquals(1, h.judge(1, -1, 0, AB).size());
    }

    @Test
    void readersShareButNeverWithAWriter() {
        History h = new History();
        hold(h, "a", Mode.SHARED, 1, 0, 10, 0);
        hold(h, "b", Mode.SHARED, 1, 5, 15, 0);
        assertEquals(List.of(), h.judge(1, -1, 0, AB));
        hold(h, "a", Mode.EXCLUSIVE, 1, 12, 20, 0);
        assertEquals(1, h.judge(1, -1, 0, AB).size(), "a writer inside a reader's hold");
        History w = new History();
        hold(w, "a", Mode.EXCLUSIVE, 1, 0, 10, 0);
        hold(w, "b", Mode.SHARED, 1, 5, 15, 0);
        assertEquals(1, w.judge(1, -1, 0, AB).size(), "a reader inside a writer's hold");
    }

    @Test
    void morePermitsThanTheSemaphoreHasAreReportedByWeight() {
        History h = new History();
        hold(h, "a", Mode.PERMITS, 2, 0, 10, 0);
        hold(h, "b", Mode.PERMITS, 1, 5, 15, 0);
        assertEquals(List.of(), h.judge(3, -1, 0, AB));
        hold(h, "b", Mode.PERMITS, 1, 6, 8, 0);
        List<String> found = h.judge(3, -1, 0, AB);
        assertEquals(1, found.size(), found.toString());
        assertTrue(found.get(0).startsWith("4 permits held at once of 3"), found.toString());
    }

    @Test
    void aReleaseThatThrowsIsReportedUnlessAForceExplainsIt() {
        History h = new History();
        History.Hold a = h.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 0, 0);
        h.released(a, 10, new IllegalMonitorStateException("not held"));
        hold(h, "b", Mode.EXCLUSIVE, 1, 20, 30, 0);
        List<String> found = h.judge(1, -1, 0, AB);
        assertEquals(1, found.size(), found.toString());
        assertTrue(found.get(0).startsWith("the release of a reported hold threw"), found.toString());
        h.force(4, 6);
        assertEquals(List.of(), h.judge(1, -1, 0, AB), "a forceUnlock during the hold explains the loss");
    }

    @Test
    void anOverlapIsExcusedOnlyByAForceBetweenTheGrantsAndOnlyIfTheFirstHolderWasTold() {
        History told = new History();
        History.Hold a = told.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 0, 0);
        hold(told, "b", Mode.EXCLUSIVE, 1, 8, 12, 0);
        told.released(a, 20, new IllegalMonitorStateException("lease lost"));
        told.force(5, 6);
        assertEquals(List.of(), told.judge(1, 2, 1, AB), "forced: one overlap and one lost update excused");
        assertEquals(1, told.judge(1, 3, 1, AB).size(), "two lost updates where one overlap was excused");

        History untold = new History();
        hold(untold, "a", Mode.EXCLUSIVE, 1, 0, 20, 0);
        hold(untold, "b", Mode.EXCLUSIVE, 1, 8, 12, 0);
        untold.force(5, 6);
        assertEquals(1, untold.judge(1, -1, 0, AB).size(), "the first holder's unlock did not report the loss");

        History after = new History();
        History.Hold first = after.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 0, 0);
        hold(after, "b", Mode.EXCLUSIVE, 1, 8, 12, 0);
        after.released(first, 20, new IllegalMonitorStateException("lease lost"));
        after.force(10, 11);
        assertEquals(1, after.judge(1, -1, 0, AB).size(), "a force after the second grant explains nothing");
    }

    @Test
    void aForceThatRanWhileTheReleaseWasOnItsWayExplainsTheReleaseThrowing() {
        History h = new History();
        History.Hold a = h.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 1, 0);
        h.released(a, 10, 14, new IllegalMonitorStateException("lease lost"));
        h.force(12, 13);
        hold(h, "b", Mode.EXCLUSIVE, 1, 20, 30, 0);
        assertEquals(List.of(), h.judge(1, -1, 0, AB));
        History late = new History();
        History.Hold b = late.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 1, 0);
        late.released(b, 10, 14, new IllegalMonitorStateException("lease lost"));
        late.force(15, 16);
        hold(late, "b", Mode.EXCLUSIVE, 1, 20, 30, 0);
        assertEquals(1, late.judge(1, -1, 0, AB).size(), "a force after the release returned explains nothing");
    }

    @Test
    void theVictimOfAForceMayBeTheHoldWhoseReplyCameLater() {
        // b was granted by Redis at 1, forced out at 2, a granted at 3; b's reply arrived at 5.
        History h = new History();
        hold(h, "a", Mode.EXCLUSIVE, 1, 4, 20, 0);
        History.Hold b = h.granted("b", "test", Mode.EXCLUSIVE, 1, 0, 5, 0);
        h.released(b, 10, new IllegalMonitorStateException("lease lost"));
        h.force(2, 3);
        assertEquals(List.of(), h.judge(1, -1, 0, AB));
        History late = new History();
        hold(late, "a", Mode.EXCLUSIVE, 1, 4, 20, 0);
        History.Hold asked = late.granted("b", "test", Mode.EXCLUSIVE, 1, 4, 5, 0);
        late.released(asked, 10, new IllegalMonitorStateException("lease lost"));
        late.force(2, 3);
        assertEquals(2, late.judge(1, -1, 0, AB).size(), "b was asked for after the force: the force explains neither the overlap nor its release");
    }

    @Test
    void lostUpdatesCallsPastTheirBoundFailuresAndStarvedClientsAreReported() {
        History h = new History();
        hold(h, "a", Mode.EXCLUSIVE, 1, 0, 10, 0);
        h.call("tryLock(5 ms)", 0, 3_000_000_000L, 2_500_000_000L);
        h.call("tryLock(5 ms)", 0, 2_000_000_000L, 2_500_000_000L);
        h.failed("lock()", new IllegalStateException("boom"));
        List<String> found = h.judge(1, 2, 1, AB);
        assertEquals(4, found.size(), found.toString());
        assertTrue(found.stream().anyMatch(s -> s.startsWith("tryLock(5 ms) took 3000 ms")), found.toString());
        assertTrue(found.stream().anyMatch(s -> s.startsWith("threw java.lang.IllegalStateException: boom, in lock()")), found.toString());
        assertTrue(found.stream().anyMatch(s -> s.startsWith("lost updates")), found.toString());
        assertTrue(found.stream().anyMatch(s -> s.startsWith("client b was never granted")), found.toString());
    }

    @Test
    void fencingTokensMustRiseInGrantOrder() {
        History h = new History();
        hold(h, "a", Mode.EXCLUSIVE, 1, 0, 10, 5);
        hold(h, "b", Mode.EXCLUSIVE, 1, 11, 20, 7);
        assertEquals(List.of(), h.judge(1, -1, 0, AB));
        hold(h, "a", Mode.EXCLUSIVE, 1, 21, 30, 7);
        assertEquals(1, h.judge(1, -1, 0, AB).size());
    }

    /** Issue 46: a release that failed for another reason than a loss (Redis did not answer) explains no overlap. */
    @Test
    void anOverlapIsNotExcusedByAReleaseThatFailedForAnotherReason() {
        History h = new History();
        History.Hold a = h.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 0, 0);
        hold(h, "b", Mode.EXCLUSIVE, 1, 8, 12, 0);
        h.released(a, 20, new dev.baton.RedisUnavailableException("Redis did not answer the release", null));
        h.force(5, 6);
        List<String> found = h.judge(1, 2, 1, AB);
        assertTrue(found.stream().anyMatch(f -> f.startsWith("two holders at once")), found.toString());
        assertTrue(found.stream().anyMatch(f -> f.startsWith("lost updates")), found.toString());
        History lost = new History();
        History.Hold told = lost.granted("a", "test", Mode.EXCLUSIVE, 1, 0, 0, 0);
        hold(lost, "b", Mode.EXCLUSIVE, 1, 8, 12, 0);
        lost.released(told, 20, new dev.baton.LeaseLostException("x", "lease lost"));
        lost.force(5, 6);
        assertEquals(List.of(), lost.judge(1, 2, 1, AB), "the same history with a loss report is excused");
    }

    /**
     * Issue 46: a force during the victim's long wait, seconds before Redis could have granted it
     * (an attempt not answered within the command timeout fails), explains neither the double
     * grant nor the lost update.
     */
    @Test
    void aForceDuringTheVictimsLongWaitExplainsNothing() {
        long ms = 1_000_000L;
        History h = new History(java.time.Duration.ofSeconds(2));
        History.Hold a = h.granted("a", "lock()", Mode.EXCLUSIVE, 1, 0, 5_000 * ms, 0); // waited 5 s
        hold(h, "b", Mode.EXCLUSIVE, 1, 5_100 * ms, 5_200 * ms, 0);
        h.released(a, 5_300 * ms, new dev.baton.LeaseLostException("x", "lease lost"));
        h.force(50 * ms, 51 * ms);
        List<String> found = h.judge(1, 2, 1, AB);
        assertTrue(found.stream().anyMatch(f -> f.startsWith("two holders at once")), found.toString());
        assertTrue(found.stream().anyMatch(f -> f.startsWith("lost updates")), found.toString());
        History near = new History(java.time.Duration.ofSeconds(2));
        History.Hold v = near.granted("a", "lock()", Mode.EXCLUSIVE, 1, 0, 5_000 * ms, 0);
        hold(near, "b", Mode.EXCLUSIVE, 1, 5_100 * ms, 5_200 * ms, 0);
        near.released(v, 5_300 * ms, new dev.baton.LeaseLostException("x", "lease lost"));
        near.force(5_050 * ms, 5_051 * ms);
        assertEquals(List.of(), near.judge(1, 2, 1, AB), "a force while it was held explains it");
    }
}
