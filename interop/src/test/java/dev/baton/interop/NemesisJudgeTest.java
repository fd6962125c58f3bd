package dev.baton.interop;

import dev.baton.interop.NemesisSoakTest.Loss;
import dev.baton.interop.NemesisSoakTest.Section;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The nemesis soak's judgement on synthetic histories (times in ms): what must be flagged is, and
 * what a real data loss explains is excused. Each flagged case is one the old judgement excused
 * (it looked at single holds, accepted a hold that ended up to 300 ms before the kill, excused
 * any Redisson hold near a loss, and took any listener report of the same thread as the hold's).
 * Each rule of {@link NemesisSoakTest#unexcused} has a case that fails without it.
 */
class NemesisJudgeTest {
    private static final long MS = 1_000_000;

    /** A Baton hold; {@code lostAtUnlock}: its own unlock threw LeaseLostException. */
    private static Section baton(String owner, long acquiredMs, long endMs, boolean lostAtUnlock) {
        return new Section("l-lock", true, acquiredMs * MS, acquiredMs * MS, endMs * MS, true, lostAtUnlock, 0, owner);
    }

    private static Section redisson(long acquiredMs, long endMs) {
        return new Section("l-lock", true, acquiredMs * MS, acquiredMs * MS, endMs * MS, false, false, 0, "redisson");
    }

    private static Loss loss(long fromMs, long toMs) {
        return new Loss(fromMs * MS, toMs * MS);
    }

    private static List<Section[]> judged(List<Section> sections, List<Loss> losses) {
        List<Section[]> overlaps = NemesisSoakTest.overlaps(sections);
        assertFalse(overlaps.isEmpty(), "the history has an overlap to judge");
        return NemesisSoakTest.unexcused(overlaps, losses);
    }

    @Test
    void aLossThatBeganWhileTheFirstHeldExcusesASecondGrantedAfterItWithTheFirstHoldReported() {
        // a holds 1000-3000 and its unlock reports the loss; the data is lost 1500-1800; b is granted at 2000.
        assertTrue(judged(List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 2000, 2100, false)),
                List.of(loss(1500, 1800))).isEmpty());
        // Listed in the other order, the earlier grant is still the first.
        assertTrue(judged(List.of(baton("c2:7", 2000, 2100, false), baton("c1:1", 1000, 3000, true)),
                List.of(loss(1500, 1800))).isEmpty());
        // Redisson as the first holder reports nothing: the loss alone excuses.
        assertTrue(judged(List.of(redisson(1000, 3000), baton("c2:7", 2000, 2100, false)),
                List.of(loss(1500, 1800))).isEmpty());
        // One of several losses is enough.
        assertTrue(judged(List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 2000, 2100, false)),
                List.of(loss(200, 400), loss(1500, 1800))).isEmpty());
    }

    @Test
    void aDoubleGrantBeforeTheLossBeganIsFlaggedWhateverWasReported() {
        // b granted at 1300, 200 ms before the kill at 1500: no loss explains it, though a held
        // across the loss and both unlocks reported a lost lease (the victim of a double grant does).
        assertEquals(1, judged(List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 1300, 1400, true)),
                List.of(loss(1500, 1800))).size());
        // With Redisson on either side.
        assertEquals(1, judged(List.of(redisson(1000, 3000), baton("c2:7", 1300, 1400, true)),
                List.of(loss(1500, 1800))).size());
        assertEquals(1, judged(List.of(baton("c1:1", 1000, 3000, true), redisson(1300, 1400)),
                List.of(loss(1500, 1800))).size());
    }

    @Test
    void aBatonFirstHolderWhoseUnlockReportedNoLossIsNotExcused() {
        // The old judgement took a listener report of an earlier hold of the same thread; the
        // hold itself must report its loss at its unlock.
        assertEquals(1, judged(List.of(baton("c1:1", 1000, 3000, false), baton("c2:7", 2000, 2100, true)),
                List.of(loss(1500, 1800))).size());
    }

    @Test
    void twoGrantsAfterTheLossEndedAreFlagged() {
        // Both holds begin after the loss is over: it explains neither.
        assertEquals(1, judged(List.of(redisson(2000, 3000), baton("c2:7", 2500, 2600, false)),
                List.of(loss(1500, 1800))).size());
    }

    @Test
    void withoutALossNothingIsExcused() {
        assertEquals(1, judged(List.of(baton("c1:1", 1000, 3000, true), baton("c2:7", 2000, 2100, false)),
                List.of()).size());
        assertTrue(NemesisSoakTest.permitsWithin(3, 3, 0));
        assertTrue(NemesisSoakTest.permitsWithin(2, 3, 1), "one Redisson call of unknown outcome may keep a permit");
        assertFalse(NemesisSoakTest.permitsWithin(4, 3, 1), "a double release is never excused");
        assertFalse(NemesisSoakTest.permitsWithin(1, 3, 1));
    }

    @Test
    void readersShareAndOtherResourcesAreApart() {
        Section reader1 = new Section("l-rw", false, 1000 * MS, 1000 * MS, 3000 * MS, true, false, 0, "c1:1");
        Section reader2 = new Section("l-rw", false, 1500 * MS, 1500 * MS, 2500 * MS, false, false, 0, "redisson");
        Section writer = new Section("l-rw", true, 2000 * MS, 2000 * MS, 2100 * MS, true, false, 0, "c2:7");
        Section elsewhere = new Section("l-lock", true, 1200 * MS, 1200 * MS, 2900 * MS, true, false, 0, "c2:8");
        assertTrue(NemesisSoakTest.overlaps(List.of(reader1, reader2, elsewhere)).isEmpty(), "two readers share; another lock is apart");
        assertEquals(2, NemesisSoakTest.overlaps(List.of(reader1, reader2, writer, elsewhere)).size(), "a writer overlaps both readers");
    }
}
