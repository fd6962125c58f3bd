package dev.baton.internal.runtime;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Tag("no-redis")
class LettuceVersionTest {

    @Test
    void theLettuceOnThisClassPathIsSupported() {
        assertDoesNotThrow(() -> LettuceVersion.check());
    }

    @Test
    void supportedLinesPass() {
        for (String v : new String[] {"6.4.2.RELEASE", "6.6.0.RELEASE", "6.8.2.RELEASE/34f8700", "7.5.2.RELEASE", "7.7.0.RELEASE", null, "unknown"}) {
            assertDoesNotThrow(() -> LettuceVersion.check(v), v);
        }
    }

    @Test
    void otherLinesAreRefusedByVersion() {
        for (String v : new String[] {"6.3.2.RELEASE", "5.3.7.RELEASE", "8.0.0.RELEASE"}) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> LettuceVersion.check(v));
            assertTrue(e.getMessage().contains("lettuce-core " + v) && e.getMessage().contains("6.4"), e.getMessage());
        }
    }
}
