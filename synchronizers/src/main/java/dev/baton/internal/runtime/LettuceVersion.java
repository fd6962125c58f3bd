package dev.baton.internal.runtime;

import io.lettuce.core.RedisClient;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Lettuce lines Baton supports, checked when a client opens. Baton subclasses Lettuce's
 * command class and uses its cluster routing, which are not Lettuce's public API, and an
 * application's framework (Spring Boot's dependency management, for one) decides which Lettuce
 * is on the class path; an older or newer line than the tested ones is refused at once, with the
 * version it found, instead of failing later in a way that names neither.
 */
final class LettuceVersion {
    /** What the README's Lettuce matrix lists as tested. */
    static final String SUPPORTED = "6.4 to 7.x (tested: 6.4, 6.6, 6.8, 7.5, 7.7)";

    private static final Pattern MAJOR_MINOR = Pattern.compile("^(\\d+)\\.(\\d+)");

    private LettuceVersion() {
    }

    /** Checks the Lettuce on the class path; a repackaged one that does not say its version passes. */
    static void check() {
        check(RedisClient.class.getPackage().getImplementationVersion());
    }

    /**
     * Checks one version string as Lettuce's manifest spells it ({@code 6.8.2.RELEASE/34f8700}).
     *
     * @throws IllegalStateException naming the version, if it is outside the supported lines
     */
    static void check(String version) {
        if (version == null) {
            return;
        }
        Matcher m = MAJOR_MINOR.matcher(version);
        if (!m.find()) {
            return;
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        if (major < 6 || (major == 6 && minor < 4) || major > 7) {
            throw new IllegalStateException("Baton supports Lettuce " + SUPPORTED + ", but lettuce-core " + version
                    + " is on the class path; depend on a supported io.lettuce:lettuce-core (for Spring Boot, set the "
                    + "lettuce.version property)");
        }
    }
}
