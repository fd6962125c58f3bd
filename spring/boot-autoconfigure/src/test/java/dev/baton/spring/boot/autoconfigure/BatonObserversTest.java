package dev.baton.spring.boot.autoconfigure;

import dev.baton.BatonObserver;
import dev.baton.LeaseLostListener;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The observer and lease-lost listener beans' composites: each observer gets its own start back,
 * and one that throws stops none.
 */
@Tag("no-redis")
class BatonObserversTest {

    @Test
    void eachObserverGetsItsOwnStartAndAThrowingOneStopsNoOther() {
        List<String> told = new CopyOnWriteArrayList<>();
        BatonObserver tracing = new BatonObserver() {
            @Override
            public Object acquisitionStarted(Kind kind, String name) {
                return "span-of-" + name;
            }

            @Override
            public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos, Object started) {
                told.add("tracing " + started + " " + outcome);
            }
        };
        BatonObserver broken = new BatonObserver() {
            @Override
            public Object acquisitionStarted(Kind kind, String name) {
                throw new IllegalStateException("broken start");
            }

            @Override
            public void released(Kind kind, String name, long heldNanos) {
                throw new IllegalStateException("broken release");
            }
        };
        BatonObserver counting = new BatonObserver() {
            @Override
            public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos) {
                told.add("counting " + name + " " + outcome);
            }

            @Override
            public void released(Kind kind, String name, long heldNanos) {
                told.add("counting released " + name);
            }
        };
        BatonObserver all = new BatonAutoConfiguration.BatonObservers(List.of(tracing, broken, counting));

        Object started = all.acquisitionStarted(BatonObserver.Kind.LOCK, "a");
        IllegalStateException atEnd = assertThrows(IllegalStateException.class,
                () -> all.acquisitionEnded(BatonObserver.Kind.LOCK, "a", BatonObserver.Outcome.ACQUIRED, 5, started));
        assertEquals("broken start", atEnd.getMessage(), "the start's failure is thrown at the end, for Baton to log");
        assertEquals(List.of("tracing span-of-a ACQUIRED", "counting a ACQUIRED"), told);

        told.clear();
        assertThrows(IllegalStateException.class, () -> all.released(BatonObserver.Kind.LOCK, "a", 5));
        assertEquals(List.of("counting released a"), told, "the observer after the broken one is still told");
    }

    @Test
    void aThrowingLeaseLostListenerStopsNoOther() {
        List<String> told = new CopyOnWriteArrayList<>();
        LeaseLostListener all = new BatonAutoConfiguration.LeaseLostListeners(List.of(
                (name, owner, reason) -> told.add("first " + name),
                (name, owner, reason) -> {
                    throw new IllegalStateException("broken listener");
                },
                (name, owner, reason) -> told.add("third " + name)));
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> all.leaseLost("a", "o", "gone"));
        assertEquals("broken listener", thrown.getMessage(), "thrown after every listener was told, for Baton to log");
        assertEquals(List.of("first a", "third a"), told);
    }
}
