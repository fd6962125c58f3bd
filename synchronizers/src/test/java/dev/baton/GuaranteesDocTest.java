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
            for (Path file : files.filter(p -> (p.toString().contains("/src/test/java/") && p.toString().endsWith("Test.java"))
                    || (p.toString().contains("/src/test/kotlin/") && p.toString().endsWith("Test.kt"))).toList()) {
                sources.put(file.getFileName().toString().replaceAll("\\.(java|kt)$", ""), Files.readString(file));
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

    /** A test named in backticks: {@code `SomethingTest`}, with or without a method. */
    private static final Pattern ANY_TEST = Pattern.compile("`[A-Z]\\w*Test\\b");
    /** A promise of a bound in prose: "within 1 s", "at most 300 ms", "no later than the ...". */
    private static final Pattern BOUND = Pattern.compile(
            "\\b(within|at most|no later than)\\s+(\\*\\*)?(\\d|a second|a third|the command|its (own )?bound|W/|T\\b)");

    /**
     * A promise names the test that holds it: every row of a table whose header has a
     * "checked by" column names a test in that column (README.md and every page of docs/), and
     * every paragraph or list item that promises a bound in prose names a test too (README.md and
     * every page of docs/ but the decision records and benchmarks.md). Before this check, a
     * prose promise (the cohort paragraph's "within 1 s") passed unchecked; the guides' prose
     * was checked from 2026-11-26.
     */
    @Test
    void everyPromiseNamesItsTest() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> files = Files.walk(ROOT.resolve("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).forEach(docs::add);
        }
        List<String> unnamed = new ArrayList<>();
        int rows = 0;
        for (Path doc : docs) {
            List<String> lines = Files.readAllLines(doc);
            int checkedBy = -1;
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i).strip();
                if (!line.startsWith("|")) {
                    checkedBy = -1;
                    continue;
                }
                List<String> cells = cells(line);
                if (checkedBy < 0) {
                    // A table's header: find its "checked by" column, if any.
                    for (int c = 0; c < cells.size(); c++) {
                        if (cells.get(c).strip().toLowerCase(java.util.Locale.ROOT).startsWith("checked by")) {
                            checkedBy = c;
                        }
                    }
                    if (checkedBy < 0) {
                        checkedBy = Integer.MAX_VALUE; // a table without one: skip its rows
                    }
                    continue;
                }
                if (checkedBy == Integer.MAX_VALUE || line.matches("\\|[-:| ]+\\|")) {
                    continue;
                }
                rows++;
                String cell = checkedBy < cells.size() ? cells.get(checkedBy) : "";
                // A test named the way everyTestTheDocsNameExists checks it exists.
                if (!NAMED.matcher(cell).find()) {
                    unnamed.add(ROOT.relativize(doc) + ":" + (i + 1) + ": " + line.substring(0, Math.min(120, line.length())));
                }
            }
        }
        assertTrue(rows > 80, "promise rows checked: " + rows);

        // Prose: README.md and every page of docs/ but the decision records and the benchmark
        // page (history and measurements, not promises); guarantees.md up to what it cannot promise.
        for (Path doc : docs) {
            String name = ROOT.relativize(doc).toString().replace('\\', '/');
            if (name.startsWith("docs/adr/") || name.equals("docs/benchmarks.md")) {
                continue;
            }
            String text = Files.readString(doc);
            String cannot = "## What it cannot promise";
            if (name.equals("docs/guarantees.md") && text.contains(cannot)) {
                text = text.substring(0, text.indexOf(cannot));
            }
            text = text.replaceAll("(?s)```.*?```", ""); // code, not promises
            // Paragraphs, and each item of a list on its own: a bullet's promise needs its own test.
            for (String paragraph : text.split("\\n\\s*\\n|\\n(?=- )")) {
                String p = paragraph.strip();
                if (p.startsWith("|") || p.startsWith("#") || p.startsWith("<!--")) {
                    continue;
                }
                if (BOUND.matcher(p).find() && !ANY_TEST.matcher(p).find()) {
                    unnamed.add(name + ": a prose promise naming no test: " + p.substring(0, Math.min(160, p.length())));
                }
            }
        }
        assertEquals(List.of(), unnamed, "promises that name no test");
    }

    /** The cells of a table row, split at pipes outside backticks. */
    private static List<String> cells(String row) {
        List<String> cells = new ArrayList<>();
        StringBuilder cell = new StringBuilder();
        boolean code = false;
        for (int i = 1; i < row.length(); i++) {
            char c = row.charAt(i);
            if (c == '`') {
                code = !code;
            }
            if (c == '|' && !code) {
                cells.add(cell.toString());
                cell.setLength(0);
            } else {
                cell.append(c);
            }
        }
        return cells;
    }
}
