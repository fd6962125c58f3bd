package dev.baton;

import dev.baton.testkit.RedisExtension;
import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's quickstart, compiled and run; and a check that the README still shows it. */
@ExtendWith(RedisExtension.class)
class QuickstartTest {

    @Test
    void quickstartRuns(RedisServer redis) throws Exception {
        String redisUri = redis.uri();
        // --- README quickstart begins
        try (Baton baton = Baton.create(BatonOptions.create(redisUri))) {
            BatonLock lock = baton.lock("nightly-report");
            try (LockHold held = lock.acquire()) {
                // only one process in the fleet runs this at a time
            }
            if (lock.tryLock(2, TimeUnit.SECONDS)) {
                try {
                    // waited at most 2 s for the lock
                } finally {
                    lock.unlock();
                }
            }
        }
        // --- README quickstart ends
        assertEquals(0L, redis.command("EXISTS", "nightly-report"));
    }

    @Test
    void readmeShowsTheSnippetThisTestRuns() throws IOException {
        Path module = Path.of("").toAbsolutePath();
        String readme = Files.readString(module.resolveSibling("README.md"));
        String test = Files.readString(module.resolve("src/test/java/dev/baton/QuickstartTest.java"));
        Matcher block = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(readme);
        assertTrue(block.find(), "README has a java block");
        String snippet = normalize(block.group(1));
        String tested = normalize(test.substring(test.indexOf("// --- README quickstart begins"),
                test.indexOf("// --- README quickstart ends")).replace("// --- README quickstart begins", ""));
        assertEquals(snippet, tested);
    }

    private static String normalize(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).reduce("", (a, b) -> a + b + "\n");
    }
}
