package dev.baton.interop;

import dev.baton.interop.NemesisSoakTest.Loss;
import dev.baton.interop.NemesisSoakTest.Section;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The nemesis soak's judgement on synthetic histories (times in ms): what must be flagged is, and
 * what a real data loss explains is excused. Each flagged case is one the old judgement excused
 * (it looked at single holds, accepted a hold that ended up to 300 ms before the kill, excused
 * any Redisson hold near a loss, and took any report of the same thread as the hold's).
 */
class NemesisJudgeTest {
    private static final long MS = 1_000_000;
    private static final long REPORT_WITHIN = 1_300 * MS;

    private static Section baton(String owner, long acquiredMs, long endMs, boolean lostAtUnlock) {
        return new Section("l-lock", true, acquiredMs * MS, acquiredMs * MS, endMs * MS, true, lostAtUnlock, 0, owner);
    }

    private static Section redisson(long acquiredMs, long endMs) {
        return new Section("l-lock", true, acquiredMs * MS, acquiredMs * MS, endMs * MS, false, false, 0, "redisson");
    }

    private static Loss loss(long fromMs, long toMs) {
        return new Loss(fromMs * MS, toMs * MS);
    }

    private static Map<String, List<Long>> reports(String owner, long... atMs) {
        return Map.of("l-lock|" + owner, java.util.Arrays.stream(atMs).map(t -> t * MS).boxed().toList());
    }

    private static List<Section[]> judged(List<Section> sections, List<Loss> losses, Map<String, List<Long>> reports) {
        List<Section[]> overlaps = NemesisSoakTest.overlaps(sections);
        assertFalse(overlaps.isEmpty(), "the history has an overlap to judge");
        return NemesisSoakTest.unexcused(overlaps, losses, reports, REPORT_WITHIN);
    }

    @Test
    void aLossThatBeganWhileTheFirstHeldExcusesASecondGrantedAfterItWithTheFirstHoldReported() {
        // a holds 1000-3000; the data is lost 1500-1800; b is granted at 2000; a's loss reported at 2200.
        List<Section> history = List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 2000, 2100, false));
        assertTrue(judged(history, List.of(loss(1500, 1800)), reports("c1:1", 2200)).isEmpty());
        // The same with Redisson as the first holder (it reports nothing).
        assertTrue(judged(List.of(redisson(1000, 3000), baton("c2:7", 2000, 2100, false)),
                List.of(loss(1500, 1800)), Map.of()).isEmpty());
    }

    @Test
    void aDoubleGrantBeforeTheKillIsFlaggedWhateverWasReportedAfter() {
        // b granted at 1300, 200 ms before the kill at 1500: no loss explains it, even though a
        // held across the loss and both leases were reported lost afterwards.
        List<Section> history = List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 1300, 1400, true));
        Map<String, List<Long>> both = Map.of("l-lock|c1:1", List.of(2200 * MS), "l-lock|c2:7", List.of(2300 * MS));
        assertEquals(1, judged(history, List.of(loss(1500, 1800)), both).size());
        // With Redisson on one side, either side.
        assertEquals(1, judged(List.of(redisson(1000, 3000), baton("c2:7", 1300, 1400, true)),
                List.of(loss(1500, 1800)), both).size());
        assertEquals(1, judged(List.of(baton("c1:1", 1000, 3000, true), redisson(1300, 1400)),
                List.of(loss(1500, 1800)), both).size());
    }

    @Test
    void aFirstHoldThatEndedBeforeTheLossIsNotExcused() {
        // a ended at 1300, 200 ms before the loss: the old judgement accepted up to 300 ms.
        List<Section> history = List.of(baton("c1:1", 1000, 1300, true), baton("c2:7", 1200, 1250, false));
        assertEquals(1, judged(history, List.of(loss(1500, 1800)), reports("c1:1", 1600)).size());
    }

    @Test
    void aReportOfAnEarlierHoldOfTheSameThreadDoesNotExcuseThisOne() {
        // The thread's earlier hold was reported lost at 900; this hold (1000-3000) never was, and
        // its LeaseLostException at unlock is what the victim of a double grant also gets.
        List<Section> history = List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 2000, 2100, false));
        assertEquals(1, judged(history, List.of(loss(1500, 1800)), reports("c1:1", 900)).size());
        // Nor does a report of the second holder, or one long after the hold ended.
        assertEquals(1, judged(history, List.of(loss(1500, 1800)), reports("c2:7", 2200)).size());
        assertEquals(1, judged(history, List.of(loss(1500, 1800)), reports("c1:1", 3000 + 1_301)).size());
    }

    @Test
    void withoutALossNothingIsExcused() {
        List<Section> history = List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 2000, 2100, false));
        assertEquals(1, judged(history, List.of(), reports("c1:1", 2200)).size());
        assertTrue(NemesisSoakTest.permitsWithin(3, 3, 0));
        assertTrue(NemesisSoakTest.permitsWithin(2, 3, 1), "one Redisson call of unknown outcome may keep a permit");
        assertFalse(NemesisSoakTest.permitsWithin(4, 3, 1), "a double release is never excused");
        assertFalse(NemesisSoakTest.permitsWithin(1, 3, 1));
    }
}
