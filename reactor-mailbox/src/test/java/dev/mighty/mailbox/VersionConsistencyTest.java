package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * The version a user cites is the same everywhere they read it: the pom (passed in by Surefire), the README's
 * dependency snippet, and the newest section of {@code CHANGELOG.md} (without {@code -SNAPSHOT}).
 */
class VersionConsistencyTest {
    private static final String VERSION = System.getProperty("mailbox.project.version", "");
    private static final Path ROOT = Path.of(System.getProperty("mailbox.project.root", ".."));

    @Test
    void shouldShowThePomVersionInTheReadmeSnippet() throws IOException {
        assertThat(VERSION).as("mailbox.project.version, set by the pom").isNotEmpty();
        final Matcher m = Pattern.compile("<artifactId>reactor-mailbox</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(ROOT.resolve("README.md")));
        assertThat(m.find()).as("a reactor-mailbox dependency snippet in README.md").isTrue();
        assertThat(m.group(1)).isEqualTo(VERSION);
    }

    @Test
    void shouldDescribeThePomVersionInTheNewestChangelogSection() throws IOException {
        final Matcher m = Pattern.compile("(?m)^## \\[([^\\]]+)\\]")
                .matcher(Files.readString(ROOT.resolve("CHANGELOG.md")));
        assertThat(m.find()).as("a release section in CHANGELOG.md").isTrue();
        assertThat(m.group(1)).isEqualTo(VERSION.replace("-SNAPSHOT", ""));
    }
}
