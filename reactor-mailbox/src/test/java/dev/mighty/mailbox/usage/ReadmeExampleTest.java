package dev.mighty.mailbox.usage;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.mighty.mailbox.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's example is a program a reader can paste: the first {@code java} block of {@code README.md} is
 * compiled as it stands ({@code -Xlint:all -Werror}) against the test class path and run in a JVM of its own,
 * which must print what the comments promise and end by itself. The README's links to files of the repository
 * must lead somewhere.
 */
@Timeout(300)
class ReadmeExampleTest {
    private static final Path ROOT = Path.of(System.getProperty("mailbox.project.root", ".."));
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\R(.*?)\\R```", Pattern.DOTALL);
    private static final Pattern LOCAL_LINK = Pattern.compile("\\]\\((?!https?:|#)([^)#\\s]+)");

    @Test
    void shouldCompileAndRunTheReadmeExampleToItsEnd(@TempDir Path dir) throws Exception {
        final Matcher block = JAVA_BLOCK.matcher(readme());
        assertThat(block.find()).as("a java block in README.md").isTrue();
        final String source = block.group(1);
        assertThat(source).as("the README example is a whole program").contains("public class Example");

        final Path file = Files.writeString(dir.resolve("Example.java"), source, StandardCharsets.UTF_8);
        final Path classes = Files.createDirectories(dir.resolve("classes"));
        ChildJvm.compile(classes, List.of("--release", "17", "-classpath", ChildJvm.testClassPath()), List.of(file));

        final ChildJvm.Result result = ChildJvm.run(120, List.of(
                "-cp", classes + File.pathSeparator + ChildJvm.testClassPath(), "Example"));
        assertThat(result.exitCode()).as("exit code; it printed:%n%s", result.output()).isZero();
        assertThat(result.output().lines().filter(line -> !line.startsWith("SLF4J:"))) // the test class path's
                .containsExactly("got hello", "got world");
    }

    @Test
    void shouldLinkOnlyToFilesThatExist() throws IOException {
        final Matcher link = LOCAL_LINK.matcher(readme());
        final List<String> missing = new ArrayList<>();
        int links = 0;
        while (link.find()) {
            links++;
            if (!Files.exists(ROOT.resolve(link.group(1)))) {
                missing.add(link.group(1));
            }
        }
        assertThat(links).as("links to the docs").isGreaterThan(5);
        assertThat(missing).as("README.md links to files that do not exist").isEmpty();
    }

    private static String readme() throws IOException {
        return Files.readString(ROOT.resolve("README.md"), StandardCharsets.UTF_8);
    }
}
