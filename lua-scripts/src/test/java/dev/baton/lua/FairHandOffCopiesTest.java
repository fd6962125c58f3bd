package dev.baton.lua;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Scripts stay static text, so the fair lock's hand-off to the live head of its queue is written
 * in more than one script: a release and a force-unlock both pass the lock on, and the acquire
 * script finds the live head by the same rule. These checks fail when one copy changes and
 * another does not.
 */
@Tag("no-redis")
class FairHandOffCopiesTest {
    private static final Pattern HAND_OFF = Pattern.compile(
            "-- hand-off: begin[^\\n]*\\n(.*?)-- hand-off: end\\n", Pattern.DOTALL);
    /** The server's clock in milliseconds, as every fair script reads it. */
    private static final String NOW =
            "local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)";
    /** A queued waiter is alive while its liveness deadline has not passed. */
    private static final String ALIVE = "if deadline and deadline >= now then";

    @Test
    void theReleaseAndTheForceUnlockHandTheLockOnWithTheSameText() {
        String release = handOff(Script.FAIR_RELEASE);
        String forceUnlock = handOff(Script.FAIR_FORCE_UNLOCK);
        assertEquals(release, forceUnlock, "the hand-off of fair_release.lua and fair_force_unlock.lua differ");
        assertTrue(release.contains(NOW) && release.contains(ALIVE), release);
    }

    @Test
    void theAcquireFindsTheLiveHeadByTheSameRule() {
        String acquire = Script.FAIR_ACQUIRE.text();
        assertTrue(acquire.contains(NOW), "fair_acquire.lua reads the clock differently from the hand-off");
        assertTrue(acquire.contains(ALIVE), "fair_acquire.lua judges a queued waiter alive differently from the hand-off");
    }

    private static String handOff(Script script) {
        Matcher m = HAND_OFF.matcher(script.text());
        assertTrue(m.find(), script.fileName() + " has no marked hand-off");
        String block = m.group(1);
        assertTrue(!m.find(), script.fileName() + " has two marked hand-offs");
        return block;
    }
}
