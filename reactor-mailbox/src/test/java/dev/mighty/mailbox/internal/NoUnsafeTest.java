package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import dev.mighty.mailbox.Mailbox;

/**
 * The library's own classes never reference {@code sun.misc.Unsafe} (nor the JDK-internal one): memory
 * ordering goes through {@code VarHandle}s (JCTools {@code AtomicQueueDoesNotLoadUnsafeTest}). Checked on
 * the compiled classes of {@code dev.mighty.mailbox.**}, whose constant pools would name the class.
 */
class NoUnsafeTest {
    private static final List<String> FORBIDDEN = List.of("sun/misc/Unsafe", "jdk/internal/misc/Unsafe");

    private static List<Path> compiledClasses() throws IOException, URISyntaxException {
        final Path root = Path.of(Mailbox.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertThat(root).as("the library's classes are a directory in this build").isDirectory();
        try (Stream<Path> files = Files.walk(root.resolve("dev/mighty/mailbox"))) {
            return files.filter(f -> f.toString().endsWith(".class")).collect(Collectors.toList());
        }
    }

    private static boolean mentionsUnsafe(byte[] classFile) {
        // class names sit in the constant pool as (modified) UTF-8; ISO-8859-1 maps each byte to one char
        final String text = new String(classFile, StandardCharsets.ISO_8859_1);
        return FORBIDDEN.stream().anyMatch(text::contains);
    }

    @Test
    void shouldNotReferenceUnsafeWhenCompiled() throws Exception {
        final List<Path> classes = compiledClasses();
        assertThat(classes).as("compiled classes found").hasSizeGreaterThan(20)
                .anyMatch(p -> p.endsWith("MailboxRing.class"))
                .anyMatch(p -> p.endsWith("FrameRing.class"));
        final List<Path> offenders = classes.stream().filter(p -> {
            try {
                return mentionsUnsafe(Files.readAllBytes(p));
            } catch (IOException e) {
                throw new AssertionError(p.toString(), e);
            }
        }).collect(Collectors.toList());
        assertThat(offenders).isEmpty();
    }

    @Test
    void shouldDetectUnsafeWhenClassUsesIt() throws IOException {
        // the check can fail: JCTools' own accessor class is built on sun.misc.Unsafe
        try (InputStream in = NoUnsafeTest.class.getResourceAsStream("/org/jctools/util/UnsafeAccess.class")) {
            assertThat(in).isNotNull();
            assertThat(mentionsUnsafe(in.readAllBytes())).isTrue();
        }
    }
}
