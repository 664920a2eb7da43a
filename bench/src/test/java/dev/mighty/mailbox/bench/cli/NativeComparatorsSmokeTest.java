package dev.mighty.mailbox.bench.cli;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The out-of-process comparators of {@code bench/native}: each program is built (offline, by {@code run.sh
 * --no-install --build-only}) and run with tiny settings when its toolchain is on this machine, and skipped
 * (a JUnit assumption) when it is not. Checks the output's format, the settings echoed back, one time per
 * measured iteration, and that the per-iteration check fails a run whose messages arrive out of order
 * ({@code --fault}). Format and checks only: no timing is asserted.
 */
class NativeComparatorsSmokeTest {
    /** Row names per program. */
    static final Map<String, List<String>> ROWS = Map.of(
            "rust-tokio", List.of(NativeComparators.RUST_TOKIO, NativeComparators.RUST_TOKIO_DRAIN),
            "go-chan", List.of(NativeComparators.GO_CHAN),
            "cpp-spsc", List.of(NativeComparators.CPP_SPSC_BOOST, NativeComparators.CPP_SPSC_RING));

    /** Capacity below the message count, so that both the full and the empty wait are exercised. */
    static final List<String> TINY = List.of("--msgs", "100", "--capacity", "16", "--warmup", "2", "--iterations", "5");

    record Exec(int exitCode, String out, String err) {
    }

    /** {@code bench/native}, from the module's folder (Maven's working directory) or the repository's. */
    static Path nativeDir() {
        for (Path p : List.of(Path.of("native"), Path.of("bench", "native"))) {
            if (Files.isRegularFile(p.resolve("run.sh"))) {
                return p;
            }
        }
        throw new IllegalStateException("bench/native not found from " + Path.of("").toAbsolutePath());
    }

    static Exec exec(List<String> command, long timeoutMinutes) throws IOException, InterruptedException {
        final Path out = Files.createTempFile("native-smoke", ".out");
        final Path err = Files.createTempFile("native-smoke", ".err");
        try {
            final Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            if (!p.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError(command + ": still running after " + timeoutMinutes + " min; stderr:\n"
                        + Files.readString(err, StandardCharsets.UTF_8));
            }
            return new Exec(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static boolean onPath(String command) {
        final String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                if (Files.isExecutable(Path.of(dir, command))) {
                    return true;
                }
            }
        }
        return false;
    }

    /** @return why the program cannot be built here, or null if its toolchain and library are present */
    static String missingToolchain(String program) throws IOException {
        switch (program) {
            case "rust-tokio": {
                final Path rustup = Path.of(System.getProperty("user.home"), ".cargo", "bin", "cargo");
                if (!onPath("cargo") && !Files.isExecutable(rustup)) {
                    return "no cargo";
                }
                final Path registry = Path.of("/usr/share/cargo/registry");
                if (!Files.isDirectory(registry)) {
                    return "no Debian crates (librust-tokio-dev)";
                }
                try (var dirs = Files.list(registry)) {
                    return dirs.anyMatch(d -> d.getFileName().toString().startsWith("tokio-1."))
                            ? null : "no Debian tokio crate (librust-tokio-dev)";
                }
            }
            case "go-chan":
                return onPath("go") ? null : "no go (golang-go)";
            case "cpp-spsc":
                if (!onPath("g++")) {
                    return "no g++";
                }
                return Files.isRegularFile(Path.of("/usr/include/boost/lockfree/spsc_queue.hpp"))
                        ? null : "no boost/lockfree (libboost-dev)";
            default:
                throw new IllegalArgumentException(program);
        }
    }

    static Path build(String program) throws Exception {
        final String missing = missingToolchain(program);
        Assumptions.assumeTrue(missing == null, () -> program + " skipped: " + missing);
        final Path dir = nativeDir();
        final Exec build = exec(List.of("bash", dir.resolve("run.sh").toString(), "--no-install", "--build-only",
                "--program", program), 15);
        assertThat(build.exitCode()).as("run.sh exit code; stderr:%n%s", build.err()).isZero();
        assertThat(build.out()).as("run.sh output; stderr:%n%s", build.err()).doesNotContain("skipped:");
        final NativeComparators.Program p = NativeComparators.PROGRAMS.stream()
                .filter(q -> q.name().equals(program)).findFirst().orElseThrow();
        final Path binary = p.binary(dir);
        assertThat(binary).isExecutable();
        return binary;
    }

    @ParameterizedTest
    @ValueSource(strings = {"rust-tokio", "go-chan", "cpp-spsc"})
    @Timeout(value = 20, unit = TimeUnit.MINUTES)
    void shouldPrintReferenceLinesAndOneJsonRowPerComparatorWhenRunWithTinySettings(String program)
            throws Exception {
        final Path binary = build(program);
        final List<String> command = new ArrayList<>(List.of(binary.toString()));
        command.addAll(TINY);

        final Exec run = exec(command, 5);

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        final List<String> names = new ArrayList<>();
        for (String line : run.out().lines().filter(l -> !l.startsWith("{")).collect(Collectors.toList())) {
            final Matcher m = MailboxThroughputSmokeTest.LINE.matcher(line);
            assertThat(m.matches()).as("reference format: '%s'", line).isTrue();
            names.add(m.group(1));
            assertThat(m.group(5)).isEqualTo("100");
            assertThat(Double.parseDouble(m.group(2))).isLessThanOrEqualTo(Double.parseDouble(m.group(3)));
            assertThat(Double.parseDouble(m.group(3))).isLessThanOrEqualTo(Double.parseDouble(m.group(4)));
        }
        assertThat(names).containsExactlyElementsOf(ROWS.get(program));

        final List<NativeComparators.Row> rows = NativeComparators.parse(run.out());
        assertThat(rows).extracting(NativeComparators.Row::name).containsExactlyElementsOf(ROWS.get(program));
        for (NativeComparators.Row row : rows) {
            assertThat(row.msgs()).isEqualTo(100);
            assertThat(row.capacity()).isEqualTo(16);
            assertThat(row.warmup()).isEqualTo(2);
            assertThat(row.iterations()).isEqualTo(5);
            assertThat(row.nanos()).hasSize(5);
            assertThat(java.util.Arrays.stream(row.nanos()).min().orElse(0)).as("shortest iteration").isPositive();
            assertThat(row.description()).isNotBlank();
            assertThat(row.toolchain()).isNotBlank();
            assertThat(row.library()).isNotBlank();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rust-tokio", "go-chan", "cpp-spsc"})
    @Timeout(value = 20, unit = TimeUnit.MINUTES)
    void shouldFailTheRunWhenTwoMessagesArriveOutOfOrder(String program) throws Exception {
        final Path binary = build(program);
        final List<String> command = new ArrayList<>(List.of(binary.toString()));
        command.addAll(TINY);
        command.add("--fault");

        final Exec run = exec(command, 5);

        assertThat(run.exitCode()).as("exit code; stdout:%n%s", run.out()).isEqualTo(1);
        assertThat(run.err()).contains("check failed: " + ROWS.get(program).get(0) + " iteration 0",
                "firstMismatch: index=0 value=1");
        assertThat(run.out()).doesNotContain("median=");
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void shouldAddTheBuiltProgramsRowsMarkedOutOfProcessOrSaySkipped(@TempDir Path dir) throws Exception {
        final MailboxThroughputSmokeTest.Run run = MailboxThroughputSmokeTest.run("--msgs", "100", "--warmup", "1",
                "--iterations", "3", "--only", "^mailbox_throughput$", "--native", nativeDir().toString(),
                "--out", dir.toString());

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        for (NativeComparators.Program p : NativeComparators.PROGRAMS) {
            if (Files.isExecutable(p.binary(nativeDir()))) {
                for (String name : ROWS.get(p.name())) {
                    assertThat(run.out()).contains("| " + name + " † |");
                }
            } else {
                assertThat(run.out()).contains("skipped: " + p.name() + ": not built");
            }
        }
        final String json = Files.readString(dir.resolve(Report.JSON));
        assertThat(json).contains("\"name\": \"mailbox_throughput\"");
        assertThat(json).contains("\"outOfProcess\": false");
    }

    @Test
    void shouldParseTheProgramsJsonRows() {
        final String out = "go_chan_mailbox_throughput      median=     0.015 ms  p95=     0.052 ms  p99=     0.322 ms"
                + "  (1k msgs/iter)\n"
                + "{\"name\":\"go_chan_mailbox_throughput\",\"description\":\"ch \\u003c- f / \\\"q\\\"\","
                + "\"toolchain\":\"go1.19.8\",\"library\":\"std\",\"msgs\":1000,\"capacity\":1024,\"warmup\":2,"
                + "\"iterations\":3,\"medianNanos\":15000,\"p95Nanos\":5.2e4,\"p99Nanos\":322000,"
                + "\"iterationNanos\":[15000, 52000,322000]}\n";

        final List<NativeComparators.Row> rows = NativeComparators.parse(out);

        assertThat(rows).hasSize(1);
        final NativeComparators.Row row = rows.get(0);
        assertThat(row.name()).isEqualTo("go_chan_mailbox_throughput");
        assertThat(row.description()).isEqualTo("ch <- f / \"q\"");
        assertThat(row.msgs()).isEqualTo(1000);
        assertThat(row.nanos()).containsExactly(15000, 52000, 322000);
    }

    @Test
    void shouldRejectARowWhoseIterationTimesDoNotMatchItsIterationCount() {
        final String line = "{\"name\": \"x\", \"description\": \"d\", \"toolchain\": \"t\", \"library\": \"l\", "
                + "\"msgs\": 1, \"capacity\": 1, \"warmup\": 0, \"iterations\": 2, \"iterationNanos\": [1]}";

        org.assertj.core.api.Assertions.assertThatThrownBy(() -> NativeComparators.parse(line))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 iteration times (expected: 2)");
    }

    @Test
    void shouldBuildAMissingProgramWithRunShBuildOnlyAndNoInstall(@TempDir Path dir) throws Exception {
        final NativeComparators.Program program = NativeComparators.PROGRAMS.get(2); // cpp-spsc
        final Path args = dir.resolve("args");
        // a run.sh that records its arguments and "builds" the binary where the CLI looks for it
        Files.writeString(dir.resolve("run.sh"), "echo \"$@\" > " + args + "\nmkdir -p " + dir.resolve(
                program.binary()).getParent() + "\nprintf '#!/bin/sh\\n' > " + dir.resolve(program.binary())
                + "\nchmod +x " + dir.resolve(program.binary()) + "\n", StandardCharsets.UTF_8);

        assertThat(NativeComparators.build(dir, program, new java.io.PrintStream(
                java.io.OutputStream.nullOutputStream()))).isTrue();
        assertThat(Files.readString(args, StandardCharsets.UTF_8).strip())
                .isEqualTo("--build-only --no-install --program " + program.name());
    }

    @Test
    void shouldReportNotBuiltWhenRunShCannotBuildIt(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("run.sh"), "echo 'skipped: cpp-spsc: no g++'\n", StandardCharsets.UTF_8);

        assertThat(NativeComparators.build(dir, NativeComparators.PROGRAMS.get(2), new java.io.PrintStream(
                java.io.OutputStream.nullOutputStream()))).isFalse();
        assertThat(NativeComparators.build(dir.resolve("absent"), NativeComparators.PROGRAMS.get(2),
                new java.io.PrintStream(java.io.OutputStream.nullOutputStream()))).isFalse();
    }
}
