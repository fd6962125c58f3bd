package dev.baton;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

@Tag("no-redis")
class BatonOptionsTest {

    /**
     * toBuilder() starts from these options, every one of them: each option set away from its
     * default comes back the same from {@code toBuilder().build()}. Read by reflection, so an
     * option added later and forgotten in toBuilder fails here (clockDriftAllowance was, found by
     * the blind reentrant-lock storm's author).
     */
    @Test
    void toBuilderKeepsEveryOption() throws IllegalAccessException {
        LeaseLostListener listener = (name, owner, reason) -> { };
        BatonObserver observer = new BatonObserver() { };
        BatonOptions set = BatonOptions.builder()
                .redisUri("redis://127.0.0.1:1").redisUri("redis://127.0.0.1:2").cluster(true)
                .commandTimeout(Duration.ofMillis(1234)).watchdogTimeout(Duration.ofSeconds(7)).renewalBatchSize(17)
                .fairLockWaiterTimeout(Duration.ofSeconds(9)).clockDriftAllowance(0.3)
                .replicaSync(2, Duration.ofMillis(345), BatonOptions.ReplicaSyncFailure.ACCEPT)
                .leaseLostListener(listener).observer(observer).build();
        BatonOptions defaults = BatonOptions.builder().redisUri("redis://127.0.0.1:1").build();
        BatonOptions copied = set.toBuilder().build();
        List<String> lost = new ArrayList<>();
        for (Field f : BatonOptions.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            f.setAccessible(true);
            assertNotEquals(f.get(defaults), f.get(set), f.getName() + " is set away from its default in this test");
            if (!f.get(set).equals(f.get(copied))) {
                lost.add(f.getName() + ": " + f.get(set) + " became " + f.get(copied));
            }
        }
        assertEquals(List.of(), lost, "options toBuilder() did not keep");
    }
}
