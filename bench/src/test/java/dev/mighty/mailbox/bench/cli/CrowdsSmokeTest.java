package dev.mighty.mailbox.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import dev.mighty.mailbox.bench.Crowd;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The crowd rows ({@code --crowds}) with one measured crowd each: the reference lines, the table with the ratio
 * to ArrayBlockingQueue and the parks per message, and the virtual-thread rows skipped on a JDK without virtual
 * threads. Format only: no timing is asserted.
 */
class CrowdsSmokeTest {
    /** {@link MailboxThroughputSmokeTest#LINE}, with digits in the names. */
    static final Pattern LINE = Pattern.compile("^([a-z0-9_]+) +median= *(\\d+\\.\\d{3}) ms  p95= *(\\d+\\.\\d{3}) ms"
            + "  p99= *(\\d+\\.\\d{3}) ms  \\((\\d+k?) msgs/iter\\)$");

    @Test
    @Timeout(300)
    void shouldPrintTheCrowdRowsWhenAskedFor() {
        final MailboxThroughputSmokeTest.Run run = MailboxThroughputSmokeTest.run("--crowds", "--only", "crowd",
                "--crowd-iterations", "1");

        assertThat(run.exitCode()).as("exit code; stderr:%n%s", run.err()).isZero();
        final boolean virtual = Crowd.virtualThreads() != null;
        final List<String> lines = run.out().lines().filter(l -> l.contains("median=")).collect(Collectors.toList());
        assertThat(lines).hasSize(virtual ? 4 : 2);
        for (String line : lines) {
            final Matcher m = LINE.matcher(line);
            assertThat(m.matches()).as("reference format: '%s'", line).isTrue();
        }
        assertThat(run.out()).contains("Settings: crowd rows only", "| crowd | median ms | p95 ms |",
                "| " + Crowds.ABQ_PLATFORM + " * |", "| 1.00x | - |", "Crowd mailbox stats at the end:")
                .containsPattern("\\| " + Crowds.PLATFORM + " \\| [\\d.]+ \\| [\\d.]+ \\| [\\d,]+ \\| [\\d.]+x \\| "
                        + "[\\d.]+ \\|");
        if (!virtual) {
            assertThat(run.out()).containsPattern(Crowds.VIRTUAL + " +skipped \\(JDK < 21");
        }
        assertThat(run.err()).contains("[crowds]");
    }

    @Test
    void shouldListTheCrowdRows() {
        final MailboxThroughputSmokeTest.Run run = MailboxThroughputSmokeTest.run("--list");
        assertThat(run.out()).contains(Crowds.VIRTUAL, Crowds.ABQ_VIRTUAL, Crowds.PLATFORM, Crowds.ABQ_PLATFORM,
                "(--crowds)");
    }

    @Test
    void shouldNotRunTheCrowdRowsByDefault() {
        final MailboxThroughputSmokeTest.Run run = MailboxThroughputSmokeTest.run("--only", "crowd");
        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.err()).contains("the crowd rows need --crowds");
    }
}
