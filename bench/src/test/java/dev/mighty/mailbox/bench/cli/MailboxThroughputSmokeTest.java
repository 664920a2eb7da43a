package dev.mighty.mailbox.bench.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Runs the CLI in-process with tiny settings and checks the output's format: one reference-format line per
 * implementation, the table, the expectations and the three files. Format only: no timing is asserted.
 */
class MailboxThroughputSmokeTest {
    /** The reference page's line: {@code name  median=  0.221 ms  p95=  0.229 ms  p99=  0.234 ms  (1k msgs/iter)}. */
    static final Pattern LINE = Pattern.compile("^([a-z0-9_]+) +median= *(\\d+\\.\\d{3}) ms  p95= *(\\d+\\.\\d{3}) ms"
            + "  p99= *(\\d+\\.\\d{3}) ms  \\((\\d+k?) msgs/iter\\)$");

    record Run(int exitCode, String out, String err) {
    }

    static Run run(String... args) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int code = MailboxThroughput.run(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), args);
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(180)
    void shouldPrintOneReferenceLinePerImplementationWhenRunWithTinySettings(@TempDir Path dir) throws Exception {
        final Run run = run("--msgs", "200", "--iterations", "3", "--warmup", "1", "--latency-samples", "20", "--out",
                dir.toString());

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        final List<String> lines = run.out().lines().filter(l -> l.contains("median=")).collect(Collectors.toList());
        final List<String> names = new ArrayList<>();
        for (String line : lines) {
            final Matcher m = LINE.matcher(line);
            assertThat(m.matches()).as("reference format: '%s'", line).isTrue();
            names.add(m.group(1));
            assertThat(m.group(5)).isEqualTo("200");
            assertThat(Double.parseDouble(m.group(2))).isLessThanOrEqualTo(Double.parseDouble(m.group(3)));
            assertThat(Double.parseDouble(m.group(3))).isLessThanOrEqualTo(Double.parseDouble(m.group(4)));
        }
        assertThat(names).containsExactlyElementsOf(
                Workloads.all().stream().map(Workloads.Entry::name).collect(Collectors.toList()));
        assertThat(lines.stream().map(l -> l.indexOf("median=")).distinct()).as("one column for all names")
                .hasSize(1);

        assertThat(run.out()).contains("JVM:", "Cores:", "Settings:", "Ping-pong", "| implementation |",
                "Expectations", Workloads.MAILBOX + " / " + Workloads.JCTOOLS_MPSC);
        assertThat(run.out().indexOf("JVM:")).as("the header comes first").isZero();
        assertThat(run.err()).contains("[warm-up]", "[measure]", "[latency]");
        assertThat(run.out()).contains("| face | wait policy | p50 µs | p99 µs | p99.9 µs | max µs |",
                "| " + Latency.PUBLISHER_EXECUTOR + " | defaults |", "CPU ns/msg (threads)",
                "receiver CPU ns/msg", "Placement: unpinned",
                "wake-ups /10M msgs");

        final Path md = dir.resolve(Report.MARKDOWN);
        final Path json = dir.resolve(Report.JSON);
        final Path png = dir.resolve(Report.CHART);
        assertThat(md).isRegularFile();
        assertThat(json).isRegularFile();
        assertThat(png).isRegularFile();
        assertThat(Files.readString(md)).contains(lines.get(0), "Command: `java -jar bench/target/mailbox-bench.jar",
                "](" + Report.CHART + ")");
        assertThat(Files.readString(json)).startsWith("{").contains("\"name\": \"" + Workloads.MAILBOX + "\"")
                .contains("\"expectations\"");
        final byte[] head = new byte[8];
        System.arraycopy(Files.readAllBytes(png), 0, head, 0, 8);
        assertThat(head).as("PNG signature").containsExactly(0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A);
    }

    @Test
    @Timeout(120)
    void shouldRunOnlyTheMatchingImplementationsWhenGivenOnly(@TempDir Path dir) {
        final Run run = run("--msgs", "100", "--iterations", "2", "--warmup", "0", "--latency-samples", "0", "--only", "^jctools_",
                "--out", dir.toString());

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        assertThat(run.out().lines().filter(l -> LINE.matcher(l).matches()).map(l -> l.split(" ")[0]))
                .containsExactly(Workloads.JCTOOLS_MPSC, Workloads.JCTOOLS_MPSC_BLOCKING,
                        Workloads.JCTOOLS_SPSC_PARKING, Workloads.JCTOOLS_SPSC);
        assertThat(run.out()).contains("n/a ");
    }

    @Test
    @Timeout(120)
    void shouldAddThePekkoRowsWhenGivenActors(@TempDir Path dir) {
        final Run run = run("--msgs", "100", "--iterations", "2", "--warmup", "1", "--actors", "--only",
                "^mailbox_throughput$|^pekko_", "--out", dir.toString());

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        assertThat(run.out().lines().filter(l -> LINE.matcher(l).matches()).map(l -> l.split(" ")[0]))
                .containsExactly(Workloads.MAILBOX, PekkoRow.ACTOR, PekkoRow.SOURCE_QUEUE);
        assertThat(run.out()).contains("mailbox >= 3x faster than a Pekko actor's mailbox: "
                + PekkoRow.ACTOR + " / " + Workloads.MAILBOX + " = ");
    }

    @Test
    @Timeout(120)
    void shouldPinOrSayWhyNotAndFreeTheCallingThreadAfterwardsWhenGivenPin(@TempDir Path dir) {
        final int[] before = dev.mighty.mailbox.bench.Affinity.currentCpus();
        final Run run = run("--msgs", "100", "--iterations", "2", "--warmup", "1", "--latency-samples", "0", "--pin",
                "--only", "^mailbox_throughput$|^flux_single_mailbox|^sinks_4p", "--out", dir.toString());

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        assertThat(run.out()).containsAnyOf("Placement: pinned (--pin)", "pinning unavailable: ");
        assertThat(run.out().lines().filter(l -> LINE.matcher(l).matches()).map(l -> l.split(" ")[0]))
                .containsExactly(Workloads.MAILBOX, Workloads.FLUX_SINGLE, FourEmitterRows.SINKS);
        // the rows' CPU column: a number and its thread count (1 producer + 1 receiver; + the worker; + 3 emitters)
        assertThat(run.out()).containsPattern("\\| " + Workloads.MAILBOX + " \\| [^|]+\\| [^|]+\\| [^|]+\\| "
                + "\\d+\\.\\d \\(2\\) \\|");
        assertThat(run.out()).containsPattern("\\| " + Workloads.FLUX_SINGLE + " \\| [^|]+\\| [^|]+\\| [^|]+\\| "
                + "\\d+\\.\\d \\(2\\) \\|");
        assertThat(run.out()).containsPattern("\\| " + FourEmitterRows.SINKS + " \\| [^|]+\\| [^|]+\\| [^|]+\\| "
                + "\\d+\\.\\d \\(5\\) \\|");
        assertThat(dev.mighty.mailbox.bench.Affinity.currentCpus()).as("the calling thread is unpinned again")
                .isEqualTo(before);
    }

    @Test
    @Timeout(120)
    void shouldRunTheStreamSectionWithTinyWindowsWhenGivenStream(@TempDir Path dir) throws Exception {
        final Run run = run("--msgs", "200", "--stream", "--only", "_stream$", "--stream-window-ms", "50",
                "--stream-windows", "2", "--stream-warmup-windows", "1", "--out", dir.toString());

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        assertThat(run.out()).contains("| stream | msgs/s median |", "| " + Streams.SINKS + " |",
                "| " + Streams.REACTOR_SINK + " * |", "| " + Streams.FLUX_CREATE + " * |",
                Streams.SINKS + " / " + Streams.REACTOR_SINK + " = ", "Placement: unpinned");
        assertThat(run.out()).doesNotContain("median=");
        assertThat(run.err()).contains("[stream] " + Streams.SINKS + " measured window 2/2");
    }

    @Test
    void shouldExitWithUsageErrorWhenOnlyMatchesNothing(@TempDir Path dir) {
        final Run run = run("--only", "no_such_implementation", "--out", dir.toString());

        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.err()).contains("--only: no_such_implementation matches no implementation");
    }

    @Test
    void shouldExitWithUsageErrorWhenMsgsIsZero(@TempDir Path dir) {
        final Run run = run("--msgs", "0", "--out", dir.toString());

        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.err()).contains("--msgs: 0 (expected: >= 1)");
        assertThat(run.out()).doesNotContain("median=");
    }

    @Test
    void shouldFormatTheReferenceLineExactly() {
        final Measurement m = new Measurement(Workloads.all().get(0), 1000);
        for (int i = 0; i < 50; i++) {
            m.record(221_000, 0, -1, -1);
        }
        for (int i = 0; i < 45; i++) {
            m.record(229_000, 0, -1, -1);
        }
        for (int i = 0; i < 5; i++) {
            m.record(234_000, 0, -1, -1);
        }
        final Report.Header header = new Report.Header("cmd", "jvm", 2, "os", "settings", 1000, 1024, 256, 1, 100);
        final Report report = new Report(header, List.of(m), 100, 100, "gc");

        assertThat(report.line(m)).isEqualTo(
                "mailbox_throughput              median=     0.221 ms  p95=     0.229 ms  p99=     0.234 ms  (1k msgs/iter)");
    }

    @Test
    void shouldSumTheCpuOfEveryThreadThatWorksForTheRow() {
        final Measurement m = new Measurement(Workloads.all().get(0), 100);
        m.record(1_000, 0, 300, 200);
        m.record(1_000, 0, 300, 200);
        m.rowThreadsCpuNanos = 1_000;
        m.rowThreads = 1;

        assertThat(m.cpuPerMessage()).isEqualTo((600 + 400 + 1_000) / 200.0);
        assertThat(m.cpuThreads()).isEqualTo(3);
        m.harnessConsumerCounted = false; // it only waited for the row's own thread
        assertThat(m.cpuPerMessage()).isEqualTo((400 + 1_000) / 200.0);
        assertThat(m.cpuThreads()).isEqualTo(2);
        final Measurement unknown = new Measurement(Workloads.all().get(0), 100);
        unknown.record(1_000, 0, -1, -1);
        assertThat(unknown.cpuPerMessage()).isEqualTo(-1);
    }

    @Test
    void shouldFailTheIterationWhenAMessageIsMissingOrOutOfOrder() {
        final Workloads.OrderCheck outOfOrder = new Workloads.OrderCheck("x");
        outOfOrder.begin(3);
        outOfOrder.check(0);
        outOfOrder.check(2);
        outOfOrder.check(1);
        assertThatThrownBy(outOfOrder::verify).isInstanceOf(IllegalStateException.class)
                .hasMessage("x: received=3, expected=3, firstMismatch: index=1 value=2");

        final Workloads.OrderCheck missing = new Workloads.OrderCheck("y");
        missing.begin(3);
        missing.check(0);
        missing.check(1);
        assertThatThrownBy(missing::verify).isInstanceOf(IllegalStateException.class)
                .hasMessage("y: received=2, expected=3");
    }

    @Test
    void shouldCheckEveryExpectationAgainstRowsOfTheRegistry() {
        final Map<String, Workloads.Entry> names = Workloads.all().stream()
                .collect(Collectors.toMap(Workloads.Entry::name, e -> e));
        // the Pekko rows of --actors and the out-of-process rows of --native are not in the default registry
        Workloads.actorRuntime().forEach(e -> names.put(e.name(), e));
        NativeComparatorsSmokeTest.ROWS.values().stream().flatMap(List::stream)
                .forEach(name -> names.put(name, null));
        for (Report.Expectation e : Report.EXPECTATIONS) {
            assertThat(names).as(e.text()).containsKey(e.slower());
            if (e.faster() != null) { // null: an expectation on the row's spread
                assertThat(names).as(e.text()).containsKey(e.faster());
            }
        }
    }

    @Test
    void shouldCheckASpreadExpectationOnTheRowsP95OverMedian() {
        final Report.Expectation steady = Report.Expectation.spread("goal", "steady", "x", 2.0);
        final Measurement flat = new Measurement(new Workloads.Entry("x", "flat", true, null), 1000);
        final Measurement bimodal = new Measurement(new Workloads.Entry("x", "bimodal", true, null), 1000);
        for (int i = 0; i < 100; i++) {
            flat.record(1_000_000L, -1L, -1L, -1L);
            bimodal.record(i < 90 ? 1_000_000L : 5_000_000L, -1L, -1L, -1L); // p95 in the slow mode
        }

        assertThat(steady.check(Map.of("x", flat))).isEqualTo("PASS");
        assertThat(steady.check(Map.of("x", bimodal))).isEqualTo("MISS");
        assertThat(steady.ratio(Map.of("x", bimodal))).isGreaterThan(4.0);
        assertThat(steady.check(Map.of())).isEqualTo("n/a ");
    }
}
