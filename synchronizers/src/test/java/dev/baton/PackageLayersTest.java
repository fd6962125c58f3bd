package dev.baton;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layers of {@code dev.baton.internal} (docs/architecture.md, ADR 0010), read from the main
 * sources: a package names only packages of a lower layer, so there are no circles and a reader
 * can take the layers from the bottom up; and only {@code DefaultBaton} and {@code Sync} of the
 * API reach into the implementation.
 */
@Tag("no-redis")
class PackageLayersTest {
    private static final Path SOURCES = Path.of("src/main/java");
    /** The layers from the bottom up; "" is {@code dev.baton.internal} itself (Services). */
    private static final List<Set<String>> LAYERS = List.of(
            Set.of("time", "support"),
            Set.of("command"),
            Set.of("pubsub"),
            Set.of("engine"),
            Set.of("lease", "unconfirmed"),
            Set.of(""),
            Set.of("lock", "semaphore", "latch", "ratelimit"),
            Set.of("composite", "election"),
            Set.of("runtime"));
    private static final Pattern INTERNAL = Pattern.compile("\\bdev\\.baton\\.internal(?:\\.([a-z]\\w*))?\\.[A-Z]");

    @Test
    void everyInternalPackageNamesOnlyLowerLayers() throws IOException {
        Map<String, Set<String>> uses = uses();
        Set<String> listed = new TreeSet<>();
        LAYERS.forEach(listed::addAll);
        assertEquals(listed, new TreeSet<>(uses.keySet()), "the layers name every internal package and no other");
        List<String> upward = new ArrayList<>();
        uses.forEach((from, targets) -> {
            for (String to : targets) {
                if (!to.equals(from) && layer(to) >= layer(from)) {
                    upward.add("internal." + from + " -> internal." + to);
                }
            }
        });
        assertTrue(upward.isEmpty(), "imports across or up the layers: " + upward);
    }

    @Test
    void onlyTheDoorAndTheWaitReachIntoTheImplementation() throws IOException {
        Set<String> reaching = new TreeSet<>();
        try (Stream<Path> files = Files.list(SOURCES.resolve("dev/baton"))) {
            files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> INTERNAL.matcher(code(p)).find())
                    .forEach(p -> reaching.add(p.getFileName().toString()));
        }
        assertEquals(Set.of("DefaultBaton.java", "Sync.java"), reaching);
    }

    /**
     * The implementation never reaches back up into the API's own implementation: it may name the
     * API's types (options, exceptions, the synchronizer interfaces it implements), but not
     * {@code DefaultBaton} nor a static method of {@code Baton} (issue 47: the owner-id counter
     * lived in DefaultBaton and RedisLock and MultiLock called up to it).
     */
    @Test
    void theImplementationNamesNoApiImplementation() throws IOException {
        Pattern upward = Pattern.compile("\\bDefaultBaton\\b|\\bBaton\\.[a-z]\\w*\\s*\\(");
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(SOURCES.resolve("dev/baton/internal"))) {
            files.filter(p -> p.toString().endsWith(".java")).forEach(p -> {
                Matcher m = upward.matcher(code(p));
                while (m.find()) {
                    found.add(SOURCES.relativize(p) + ": " + m.group());
                }
            });
        }
        assertEquals(List.of(), found, "internal code calling up into the API's implementation");
    }

    private static int layer(String pkg) {
        for (int i = 0; i < LAYERS.size(); i++) {
            if (LAYERS.get(i).contains(pkg)) {
                return i;
            }
        }
        throw new AssertionError("internal." + pkg + " is in no layer");
    }

    /** Each internal package ("" for dev.baton.internal itself) and the internal packages its code names. */
    private static Map<String, Set<String>> uses() throws IOException {
        Path root = SOURCES.resolve("dev/baton/internal");
        Map<String, Set<String>> uses = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.filter(p -> p.toString().endsWith(".java")).forEach(p -> {
                Path dir = root.relativize(p.getParent());
                String pkg = dir.toString().replace('/', '.');
                Set<String> targets = uses.computeIfAbsent(pkg, k -> new TreeSet<>());
                Matcher m = INTERNAL.matcher(code(p));
                while (m.find()) {
                    targets.add(m.group(1) == null ? "" : m.group(1));
                }
            });
        }
        return uses;
    }

    /** The file without its comments (javadoc may name a class of any layer). */
    private static String code(Path file) {
        try {
            return Files.readString(file).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
