package dev.mighty.mailbox.bench.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link Report#write}: the figures are the run's result; a chart the JVM cannot draw does not lose them. */
class ReportTest {
    private static Report emptyReport() {
        return new Report(new Report.Header("java -jar mailbox-bench.jar", "jvm", 16, "os", "settings", 1000, 1024,
                256, 1, 1), List.of(), 100.0, 100.0, "gc");
    }

    @Test
    void shouldWriteTheResultsAndSayWhyWhenTheChartCannotBeDrawn(@TempDir Path dir) throws Exception {
        // A JVM whose font stack is missing (no libfreetype on a bare server image) fails inside the chart library.
        final Report report = emptyReport();

        final List<Path> written = report.write(dir, png -> {
            Files.writeString(png, "half a chart");
            throw new UnsatisfiedLinkError("libfreetype.so.6: cannot open shared object file");
        });

        assertThat(written).containsExactly(dir.resolve(Report.MARKDOWN), dir.resolve(Report.JSON));
        assertThat(dir.resolve(Report.CHART)).doesNotExist();
        assertThat(report.chartFailure()).contains("libfreetype.so.6");
        assertThat(Files.readString(dir.resolve(Report.MARKDOWN)))
                .contains("No chart: java.lang.UnsatisfiedLinkError: libfreetype.so.6")
                .doesNotContain("](" + Report.CHART + ")");
        assertThat(Files.readString(dir.resolve(Report.JSON))).startsWith("{");
    }

    @Test
    void shouldListTheChartAndLinkItWhenItIsDrawn(@TempDir Path dir) throws Exception {
        final Report report = emptyReport();

        final List<Path> written = report.write(dir, png -> Files.writeString(png, "a chart"));

        assertThat(written).containsExactly(dir.resolve(Report.MARKDOWN), dir.resolve(Report.JSON),
                dir.resolve(Report.CHART));
        assertThat(report.chartFailure()).isNull();
        assertThat(Files.readString(dir.resolve(Report.MARKDOWN))).contains("](" + Report.CHART + ")");
    }

    @Test
    void shouldNotSwallowTheVirtualMachinesOwnErrorsWhenTheChartFails(@TempDir Path dir) {
        final Report report = emptyReport();

        assertThatThrownBy(() -> report.write(dir, png -> {
            throw new OutOfMemoryError("Java heap space");
        })).isInstanceOf(OutOfMemoryError.class);
    }
}
