package dev.baton;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every Java block of the README, the guides (docs/guide/*.md), docs/migration-from-redisson.md
 * and the integration pages (docs/integrations/*.md), and every Kotlin block, is code a test
 * compiles and runs: each block is introduced by {@code <!-- snippet: NAME -->}, and a test source
 * of this module, interop/, micrometer/, reactor/ or kotlin/ holds the same lines between
 * {@code // snippet NAME begins} and {@code // snippet NAME ends} (indentation aside).
 */
@Tag("no-redis")
class DocSnippetsTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("(?:<!-- snippet: ([\\w-]+) -->\\n)?```(?:java|kotlin)\\n(.*?)```",
            Pattern.DOTALL);
    /** A Maven block with a name is checked against a region of a pom.xml; one without is free text. */
    private static final Pattern XML_BLOCK = Pattern.compile("<!-- snippet: ([\\w-]+) -->\\n```xml\\n(.*?)```",
            Pattern.DOTALL);
    private static final Pattern XML_REGION = Pattern.compile("<!-- snippet ([\\w-]+) begins -->\\n(.*?)<!-- snippet \\1 ends -->",
            Pattern.DOTALL);
    private static final Pattern REGION = Pattern.compile("// snippet ([\\w-]+) begins\\n(.*?)// snippet \\1 ends",
            Pattern.DOTALL);

    private static final Path ROOT = Path.of("").toAbsolutePath().getParent();

    @Test
    void everyJavaBlockInTheGuidesIsATestedSnippet() throws IOException {
        Map<String, String> tested = testedSnippets();
        List<Path> docs = new ArrayList<>();
        try (Stream<Path> guides = Files.list(ROOT.resolve("docs/guide"))) {
            guides.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        docs.add(ROOT.resolve("README.md"));
        docs.add(ROOT.resolve("docs/migration-from-redisson.md"));
        try (Stream<Path> integrations = Files.list(ROOT.resolve("docs/integrations"))) {
            integrations.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        assertTrue(docs.size() >= 9, "the guides and the migration guide: " + docs);
        int blocks = 0;
        for (Path doc : docs) {
            Matcher block = JAVA_BLOCK.matcher(Files.readString(doc));
            while (block.find()) {
                blocks++;
                String name = block.group(1);
                String where = ROOT.relativize(doc) + " (block " + blocks + ")";
                assertFalse(name == null, where + ": a java block without <!-- snippet: NAME --> before it");
                assertTrue(tested.containsKey(name), where + ": no test holds snippet '" + name + "'");
                assertEquals(tested.get(name), normalize(block.group(2)), where + ": snippet '" + name
                        + "' differs from the tested code");
            }
            Matcher xml = XML_BLOCK.matcher(Files.readString(doc));
            while (xml.find()) {
                String where = ROOT.relativize(doc) + " (Maven block '" + xml.group(1) + "')";
                assertTrue(tested.containsKey(xml.group(1)), where + ": no pom.xml holds it");
                assertEquals(tested.get(xml.group(1)), normalize(xml.group(2)), where + ": differs from the built pom");
            }
        }
        assertTrue(blocks >= 10, "found " + blocks + " java blocks");
    }

    /** A dependency on one of Baton's artifacts inside a Maven block of a page. */
    private static final Pattern BATON_DEPENDENCY = Pattern.compile(
            "<groupId>dev\\.baton</groupId>\\s*<artifactId>([\\w.-]+)</artifactId>");
    private static final Pattern ANY_XML_BLOCK = Pattern.compile("```xml\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyBatonArtifactAPageTellsUsersToDependOnIsAModuleOfThisBuild() throws IOException {
        java.util.Set<String> modules = new java.util.TreeSet<>();
        try (Stream<Path> poms = Files.walk(ROOT)) {
            for (Path pom : poms.filter(p -> p.getFileName().toString().equals("pom.xml"))
                    .filter(p -> !p.toString().contains("/target/")).toList()) {
                // The module's own artifactId: the first one outside its <parent> block.
                String text = Files.readString(pom).replaceAll("(?s)<parent>.*?</parent>", "");
                Matcher own = Pattern.compile("<artifactId>([\\w.-]+)</artifactId>").matcher(text);
                if (own.find()) {
                    modules.add(own.group(1));
                }
            }
        }
        assertTrue(modules.contains("baton-synchronizers") && modules.contains("baton-shedlock"), "modules: " + modules);
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> pages = Files.walk(ROOT.resolve("docs"))) {
            pages.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        int dependencies = 0;
        for (Path doc : docs) {
            Matcher block = ANY_XML_BLOCK.matcher(Files.readString(doc));
            while (block.find()) {
                Matcher dependency = BATON_DEPENDENCY.matcher(block.group(1));
                while (dependency.find()) {
                    dependencies++;
                    assertTrue(modules.contains(dependency.group(1)), ROOT.relativize(doc) + ": a Maven block names "
                            + dependency.group(1) + ", which no module of this build is (" + modules + ")");
                }
            }
        }
        assertTrue(dependencies >= 6, "found " + dependencies + " Baton dependencies in the pages");
    }

    private static Map<String, String> testedSnippets() throws IOException {
        Map<String, String> snippets = new HashMap<>();
        // Test sources, and the whole of the Spring modules and the examples (an example's own
        // code is what its page shows; its test runs it), with their poms.
        for (String sources : List.of("synchronizers/src/test/java", "interop/src/test/java", "micrometer/src/test/java",
                "reactor/src/test/java", "kotlin/src/test/kotlin", "spring", "examples")) {
            try (Stream<Path> files = Files.walk(ROOT.resolve(sources))) {
                files.filter(p -> !p.toString().contains("/target/"))
                        .filter(p -> p.toString().endsWith(".java") || p.toString().endsWith(".kt")
                                || p.getFileName().toString().equals("pom.xml"))
                        .forEach(p -> {
                    try {
                        Matcher region = (p.toString().endsWith(".xml") ? XML_REGION : REGION).matcher(Files.readString(p));
                        while (region.find()) {
                            String previous = snippets.put(region.group(1), normalize(region.group(2)));
                            assertTrue(previous == null, "snippet '" + region.group(1) + "' is defined twice");
                        }
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            }
        }
        return snippets;
    }

    private static String normalize(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).reduce("", (x, y) -> x + y + "\n");
    }
}
