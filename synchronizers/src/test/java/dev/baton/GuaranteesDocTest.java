package dev.baton;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every test that README.md and docs/*.md name for a promise exists: the class in some module's
 * tests and, where a method is named (or its beginning, ending in "…"), that method.
 */
// Needs no Redis: tagged so `mvn test -Dgroups=no-redis` runs it (and its like) in seconds.
@Tag("no-redis")
class GuaranteesDocTest {
    private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    private static final Pattern NAMED = Pattern.compile("`([A-Z]\\w*Test)(?:\\[\\w+])?(?:\\.(\\w+)(…)?)?`");

    @Test
    void everyTestTheDocsNameExists() throws IOException {
        Map<String, String> sources = new TreeMap<>();
        try (Stream<Path> files = Files.walk(ROOT)) {
            for (Path file : files.filter(p -> p.toString().contains("/src/test/java/") && p.toString().endsWith("Test.java")).toList()) {
                sources.put(file.getFileName().toString().replace(".java", ""), Files.readString(file));
            }
        }
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> files = Files.walk(ROOT.resolve("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).forEach(docs::add);
        }
        List<String> missing = new ArrayList<>();
        int checked = 0;
        for (Path doc : docs) {
            Matcher m = NAMED.matcher(Files.readString(doc));
            while (m.find()) {
                checked++;
                String source = sources.get(m.group(1));
                String where = ROOT.relativize(doc) + ": " + m.group();
                if (source == null) {
                    missing.add(where + " (no such test class)");
                } else if (m.group(2) != null) {
                    String method = m.group(2) + (m.group(3) == null ? "(" : "");
                    if (!source.contains(" " + method)) {
                        missing.add(where + " (no such method)");
                    }
                }
            }
        }
        assertTrue(checked > 50, "the docs name their tests: " + checked);
        assertEquals(List.of(), missing);
    }
}
