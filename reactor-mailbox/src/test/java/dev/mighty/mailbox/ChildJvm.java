package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * For the tests that run code as a user would: compile sources with {@code javax.tools} and run them in a JVM of
 * their own (the one running the tests, {@code java.home}), so a program that forgets to end, or a module that
 * does not resolve, fails the test instead of hiding in the test JVM.
 */
public final class ChildJvm {
    private ChildJvm() {
    }

    /** What a child JVM printed and how it ended. */
    public record Result(int exitCode, String output) {
    }

    /**
     * Compiles {@code sources} into {@code out}.
     *
     * @param out  the class output directory
     * @param args javac options (class path or module path, {@code --release}, ...)
     * @param sources the source files
     */
    public static void compile(Path out, List<String> args, List<Path> sources) throws IOException {
        final JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertThat(javac).as("a JDK with javac runs the tests").isNotNull();
        final List<String> all = new ArrayList<>(List.of("-d", out.toString(), "-Xlint:all,-path", "-Werror"));
        all.addAll(args);
        sources.forEach(source -> all.add(source.toString()));
        final ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        final int rc = javac.run(null, diagnostics, diagnostics, all.toArray(String[]::new));
        assertThat(rc).as("javac %s%n%s", String.join(" ", all), diagnostics.toString(StandardCharsets.UTF_8))
                .isZero();
    }

    /**
     * Runs {@code java args...} and waits for it to end.
     *
     * @param timeoutSeconds how long it may run; a JVM still running then is killed and the test fails
     * @param args           the arguments after {@code java}
     * @return its exit code and everything it printed (stdout and stderr, merged)
     */
    public static Result run(long timeoutSeconds, List<String> args) throws IOException, InterruptedException {
        final List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(args);
        final Path log = Files.createTempFile("child-jvm", ".log");
        try {
            final Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(log.toFile()).start();
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError(String.join(" ", command) + " did not end within " + timeoutSeconds
                        + " s; it printed:\n" + Files.readString(log, StandardCharsets.UTF_8));
            }
            return new Result(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** @return the test JVM's class path (under Surefire, its booter jar, whose manifest names the entries) */
    public static String testClassPath() {
        return System.getProperty("java.class.path");
    }

    /** @return {@code entries} joined with the platform's path separator */
    public static String path(List<Path> entries) {
        return String.join(File.pathSeparator, entries.stream().map(Path::toString).toList());
    }
}
