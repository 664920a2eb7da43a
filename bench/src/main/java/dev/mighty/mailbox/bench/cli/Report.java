package dev.mighty.mailbox.bench.cli;

import java.awt.Color;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Turns the measurements of one run into the reference lines, the table, the expectation checks and the
 * three files ({@value #MARKDOWN}, {@value #JSON}, and {@value #CHART} where the JVM can draw it).
 */
final class Report {
    static final String MARKDOWN = "results.md";
    static final String JSON = "results.json";
    static final String CHART = "mailbox_throughput.png";
    /** The reference page pads names to column 32 (its longest name + 3). */
    static final int MIN_NAME_COLUMN = 32;

    /**
     * A shape the reference page or one of the project's goals expects, checked as a ratio of two medians of this run.
     *
     * @param source    where the expectation comes from
     * @param text      what it says
     * @param slower    the row expected to take more time (the numerator)
     * @param faster    the row expected to take less time (the denominator); null: the expectation is on
     *                  {@code slower}'s spread (p95 / median), not on a ratio of two rows
     * @param bound     the ratio that passes
     * @param atMost    true: pass when the ratio is at most {@code bound}; false: at least {@code bound}
     */
    record Expectation(String source, String text, String slower, String faster, double bound, boolean atMost) {
        String check(Map<String, Measurement> rows) {
            final Double ratio = ratio(rows);
            if (ratio == null) {
                return "n/a ";
            }
            return (atMost ? ratio <= bound : ratio >= bound) ? "PASS" : "MISS";
        }

        /** An expectation on {@code row}'s spread, p95 / median, at most {@code bound}. */
        static Expectation spread(String source, String text, String row, double bound) {
            return new Expectation(source, text, row, null, bound, true);
        }

        Double ratio(Map<String, Measurement> rows) {
            final Measurement a = rows.get(slower);
            if (faster == null) {
                return a == null ? null : a.spread();
            }
            final Measurement b = rows.get(faster);
            return a == null || b == null ? null : a.medianNanos() / b.medianNanos();
        }
    }

    static final List<Expectation> EXPECTATIONS = List.of(
            new Expectation("reference", "mailbox within 2x of the bare bounded channel (jctools mpsc)",
                    Workloads.MAILBOX, Workloads.JCTOOLS_MPSC, 2.0, true),
            new Expectation("reference", "mailbox at most 5x slower than an SPSC lock-free ring (reference saw 3-5x)",
                    Workloads.MAILBOX, Workloads.JCTOOLS_SPSC, 5.0, true),
            new Expectation("reference", "batched recv faster than single recv (reference saw 7-8%)",
                    Workloads.MAILBOX_SINGLE_RECV, Workloads.MAILBOX, 1.0, false),
            new Expectation("goal", "MPSC mailbox <= 1.1x bare MpscArrayQueue (both batch receives: drain)",
                    Workloads.MAILBOX, Workloads.JCTOOLS_MPSC, 1.1, true),
            new Expectation("goal", "MPSC mailbox <= 1.0x JCTools MpscBlockingConsumerArrayQueue (both consumers park)",
                    Workloads.MAILBOX, Workloads.JCTOOLS_MPSC_BLOCKING, 1.0, true),
            new Expectation("goal", "SPSC mailbox <= 1.5x bare SpscArrayQueue (whose consumer never parks)",
                    Workloads.SPSC_MAILBOX, Workloads.JCTOOLS_SPSC, 1.5, true),
            new Expectation("goal", "SPSC mailbox <= 1.1x the SPSC ring with a parking consumer (ParkingSpscRing)",
                    Workloads.SPSC_MAILBOX, Workloads.JCTOOLS_SPSC_PARKING, 1.1, true),
            new Expectation("goal", "mailbox >= 2x faster than ArrayBlockingQueue",
                    Workloads.ABQ, Workloads.MAILBOX, 2.0, false),
            new Expectation("goal", "SPSC mailbox, sendMany runs of 32, <= 1.3x bare SpscArrayQueue",
                    Workloads.SPSC_BATCHED_SEND_MAILBOX, Workloads.JCTOOLS_SPSC, 1.3, true),
            new Expectation("goal", "MPSC mailbox, sendMany runs of 32, <= 0.7x the per-message send",
                    Workloads.BATCHED_SEND_MAILBOX, Workloads.MAILBOX, 0.7, true),
            new Expectation("goal", "frame inline path (32 B) <= 2x the raw mailbox",
                    Workloads.FRAME_MAILBOX, Workloads.MAILBOX, 2.0, true),
            new Expectation("goal", "frame spill path (256 B) <= 3x the raw mailbox",
                    Workloads.FRAME_MAILBOX_SPILL, Workloads.MAILBOX, 3.0, true),
            new Expectation("goal", "frame inline path in FrameBatch runs of 32 <= 2x the raw mailbox's sendMany "
                    + "runs of 32", Workloads.BATCHED_SEND_FRAME_MAILBOX, Workloads.BATCHED_SEND_MAILBOX, 2.0, true),
            new Expectation("goal", "frame inline path <= 1.25x Agrona's ManyToOneRingBuffer, same 32 B records",
                    Workloads.FRAME_MAILBOX, Workloads.AGRONA_MANY_TO_ONE, 1.25, true),
            new Expectation("goal", "frame inline path in FrameBatch runs of 32 <= 0.6x the per-frame send",
                    Workloads.BATCHED_SEND_FRAME_MAILBOX, Workloads.FRAME_MAILBOX, 0.6, true),
            new Expectation("goal", "frame inline path faster than ArrayBlockingQueue",
                    Workloads.ABQ, Workloads.FRAME_MAILBOX, 1.0, false),
            new Expectation("goal", "frame inline path faster than SubmissionPublisher",
                    Workloads.SUBMISSION_PUBLISHER, Workloads.FRAME_MAILBOX, 1.0, false),
            new Expectation("goal", "MailboxPublisher <= 1.2x the raw mailbox (DrivenExecutor: adapter cost only)",
                    Workloads.PUBLISHER_MAILBOX, Workloads.MAILBOX, 1.2, true),
            new Expectation("goal", "fused MailboxFlux >= 3x faster than the Reactor unicast sink (DrivenExecutor)",
                    Workloads.REACTOR_SINK, Workloads.FLUX_MAILBOX, 3.0, false),
            new Expectation("goal", "MailboxPublisher on a single-thread executor <= 1.5x raw recvMany",
                    Workloads.PUBLISHER_EXECUTOR, Workloads.MAILBOX, 1.5, true),
            new Expectation("goal", "fused MailboxFlux on a single scheduler >= 2.5x faster than the sink on one",
                    Workloads.REACTOR_SINK_SINGLE, Workloads.FLUX_SINGLE, 2.5, false),
            Expectation.spread("goal", "fused MailboxFlux on a single scheduler steady: spread (p95/median) <= 2",
                    Workloads.FLUX_SINGLE, 2.0),
            new Expectation("goal", "MailboxSinks, 4 emitters, >= 4x faster than Reactor's unicast sink with a "
                    + "retrying handler", FourEmitterRows.REACTOR_SINK, FourEmitterRows.SINKS, 4.0, false),
            new Expectation("goal", "MailboxSinks, 4 emitters, >= 1.5x faster than Flux.create(BUFFER)",
                    FourEmitterRows.FLUX_CREATE, FourEmitterRows.SINKS, 1.5, false),
            new Expectation("goal", "MailboxSubscriber <= 1.5x raw trySend/tryRecvMany",
                    Workloads.SUBSCRIBER, Workloads.MAILBOX_TRY, 1.5, true),
            new Expectation("goal", "trampoline MailboxPublisher <= 2x raw trySend/tryRecvMany",
                    Workloads.PUBLISHER_TRAMPOLINE, Workloads.MAILBOX_TRY, 2.0, true),
            new Expectation("goal", "mailbox >= 10x faster than tokio mpsc (out of process, --native)",
                    NativeComparators.RUST_TOKIO, Workloads.MAILBOX, 10.0, false),
            new Expectation("goal", "mailbox >= 5x faster than a Go buffered chan (out of process, --native)",
                    NativeComparators.GO_CHAN, Workloads.MAILBOX, 5.0, false),
            new Expectation("goal", "MPSC mailbox within 1.5x of boost's SPSC ring (out of process, --native)",
                    Workloads.MAILBOX, NativeComparators.CPP_SPSC_BOOST, 1.5, true),
            new Expectation("goal", "mailbox >= 3x faster than a Pekko actor's mailbox",
                    PekkoRow.ACTOR, Workloads.MAILBOX, 3.0, false),
            new Expectation("goal", "fused MailboxFlux faster than Pekko's Source.queue",
                    PekkoRow.SOURCE_QUEUE, Workloads.FLUX_MAILBOX, 1.0, false));

    /** What the run was: printed first, and written at the top of results.md and results.json. */
    record Header(String command, String jvm, int cores, String os, String settings, int messages, int capacity,
            int batch, int warmup, int iterations) {
    }

    private final Header header;
    private final List<Measurement> rows;
    private final Map<String, Measurement> byName = new LinkedHashMap<>();
    private final double pingPongStart;
    private final double pingPongEnd;
    private final String gc;
    private final int nameColumn;
    /** The lone-message latency table ({@link Latency#table}), or null when skipped. */
    String latency;
    /** The crowd rows' section ({@link Crowds#run}), or null without {@code --crowds}. */
    String crowds;
    /** The continuous-stream section ({@link Streams#table}), or null without {@code --stream}. */
    String streams;
    /** The continuous-stream section as a JSON array ({@link Streams#json}), or null without {@code --stream}. */
    String streamsJson;
    /** Where the threads ran (unpinned, or {@code --pin}'s CPUs), or null. */
    String placement;
    /** Why the last {@link #write} drew no chart, or null. */
    private String chartFailure;

    Report(Header header, List<Measurement> rows, double pingPongStart, double pingPongEnd, String gc) {
        this.header = header;
        this.rows = rows;
        for (Measurement m : rows) {
            byName.put(m.name(), m);
        }
        this.pingPongStart = pingPongStart;
        this.pingPongEnd = pingPongEnd;
        this.gc = gc;
        int longest = 0;
        for (Measurement m : rows) {
            longest = Math.max(longest, m.name().length());
        }
        this.nameColumn = Math.max(MIN_NAME_COLUMN, longest + 3);
    }

    /** The header lines, printed before the run. */
    static String header(Header h) {
        return "JVM:      " + h.jvm() + "\n"
                + "Cores:    " + h.cores() + " (Runtime.availableProcessors)\n"
                + "OS:       " + h.os() + "\n"
                + "Settings: " + h.settings() + "\n"
                + "Command:  " + h.command() + "\n";
    }

    static String msgsLabel(int messages) {
        return messages % 1000 == 0 ? messages / 1000 + "k" : Integer.toString(messages);
    }

    /** One reference-format line, e.g. {@code mailbox_throughput   median=     0.221 ms  p95=  ...}. */
    String line(Measurement m) {
        return line(m, nameColumn);
    }

    /** As {@link #line(Measurement)}, with the name padded to {@code nameColumn}. */
    static String line(Measurement m, int nameColumn) {
        return String.format(Locale.ROOT, "%-" + nameColumn + "smedian=%10.3f ms  p95=%10.3f ms  p99=%10.3f ms  (%s msgs/iter)",
                m.name(), m.medianNanos() / 1e6, m.p95Nanos() / 1e6, m.p99Nanos() / 1e6,
                msgsLabel(m.messagesPerIteration));
    }

    String lines() {
        final StringBuilder sb = new StringBuilder();
        for (Measurement m : rows) {
            sb.append(line(m)).append('\n');
        }
        return sb.toString();
    }

    String pingPong() {
        return String.format(Locale.ROOT, "Ping-pong calibration (one cache-line round trip between the producer and "
                + "consumer threads): %.0f ns at start, %.0f ns at end", pingPongStart, pingPongEnd);
    }

    private String ratio(Measurement m, String to) {
        final Measurement base = byName.get(to);
        return base == null ? "-" : String.format(Locale.ROOT, "%.2fx", m.medianNanos() / base.medianNanos());
    }

    /** The table, as Markdown (readable on a terminal too). */
    String table() {
        final StringBuilder sb = new StringBuilder();
        sb.append("| implementation | median ms | msgs/s (median) | ns/msg | CPU ns/msg (threads) | vs mailbox "
                + "| vs SPSC ring | spread p95/median | B/msg | receiver CPU ns/msg | wake-ups /10M msgs |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Measurement m : rows) {
            final double b = m.bytesPerMessage();
            final double cpu = m.consumerCpuPerMessage();
            final double allCpu = m.cpuPerMessage();
            final double wakeups = m.wakeupsPer10M();
            sb.append(String.format(Locale.ROOT, "| %s | %.3f | %,.0f | %.1f | %s | %s | %s | %.2f | %s | %s | %s |%n",
                    m.name() + (m.entry.ours() ? "" : m.outOfProcess != null ? " †" : " *")
                            + (Workloads.DRIVEN_EXECUTOR.contains(m.name()) ? " ◇" : ""), m.medianNanos() / 1e6,
                    m.msgsPerSecond(), m.nanosPerMessage(),
                    allCpu < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f (%d)", allCpu, m.cpuThreads()),
                    ratio(m, Workloads.MAILBOX), ratio(m, Workloads.JCTOOLS_SPSC), m.spread(),
                    b < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", b),
                    cpu < 0 ? (m.deliveredOnProducer ? "n/a ‡" : "n/a") : String.format(Locale.ROOT, "%.1f", cpu),
                    wakeups < 0 ? "-" : String.format(Locale.ROOT, "%,.0f", wakeups)));
        }
        sb.append("\n`*` comparator. `◇` delivers on the harness's consumer thread through an executor it drives (a "
                + "DrivenExecutor): adapter cost without scheduler cost; the other rows deliver on the thread users "
                + "would run them on. Ratios are of median iteration times (> 1 is slower). B/msg: bytes allocated "
                + "by both harness threads during the measured iterations, per message. CPU ns/msg (threads): the CPU "
                + "time (ThreadMXBean) of every thread that does the row's work, per message, and how many there are: "
                + "the producer in its sends, the harness consumer in its receive when it receives (not when it only "
                + "waits for the row's own thread), and the row's own executor, scheduler worker and emitter threads "
                + "over the whole measured phase (their waits between iterations included). Wall ns/msg backs latency "
                + "and throughput claims on a machine with a core per thread; CPU ns/msg backs the cost on a loaded "
                + "server. Receiver CPU: thread CPU time "
                + "(ThreadMXBean) of the thread that ran onNext or the receive, per message: a row's own executor or "
                + "scheduler thread over the whole measured phase (its back-off between iterations included), else the "
                + "harness consumer thread during the iterations; waiting counts, so a spinning consumer is never free. "
                + "`‡`: onNext ran inside the producer's sends (trampoline). Wake-ups: the mailbox's consumerParks + "
                + "producerParks during the "
                + "measured phase (parks and wake-up registrations), per 10 M messages.\n");
        sb.append(outOfProcess());
        return sb.toString();
    }

    /** The legend of the out-of-process rows ({@code --native}), or nothing when there are none. */
    String outOfProcess() {
        final StringBuilder sb = new StringBuilder();
        for (Measurement m : rows) {
            if (m.outOfProcess != null) {
                sb.append("- ").append(m.name()).append(": ").append(m.entry.description()).append(" (")
                        .append(m.outOfProcess).append(")\n");
            }
        }
        return sb.length() == 0 ? "" : "`†` out-of-process comparator (bench/native, run after the JVM's rows with the "
                + "same settings, not interleaved with them):\n" + sb;
    }

    String expectations() {
        final StringBuilder sb = new StringBuilder();
        for (Expectation e : EXPECTATIONS) {
            final Double r = e.ratio(byName);
            sb.append("- ").append(e.check(byName)).append("  ").append(e.text()).append(": ");
            if (r == null) {
                sb.append("not measured (").append(byName.containsKey(e.slower()) ? e.faster() : e.slower())
                        .append(" not in this run)");
            } else if (e.faster() == null) {
                sb.append(String.format(Locale.ROOT, "%s p95/median = %.2f (<= %.1f)", e.slower(), r, e.bound()));
            } else {
                sb.append(String.format(Locale.ROOT, "%s / %s = %.2fx (%s %.1fx)", e.slower(), e.faster(), r,
                        e.atMost() ? "<=" : ">=", e.bound()));
            }
            sb.append(" [").append(e.source()).append("]\n");
        }
        return sb.toString();
    }

    String stats() {
        final StringBuilder sb = new StringBuilder();
        for (Measurement m : rows) {
            if (m.stats != null) {
                sb.append(String.format(Locale.ROOT, "%-" + nameColumn + "s%s%n", m.name(), m.stats));
            }
        }
        return sb.toString();
    }

    /** Everything after the run, for stdout. */
    String console() {
        return lines() + "\n" + pingPong() + "\n\n" + table() // the placement line came with the header
                + "\nExpectations (ratios of medians, this run):\n"
                + expectations() + (stats().isEmpty() ? "" : "\nMailbox stats at the end:\n" + stats())
                + "\n" + gc + "\n" + (latency == null ? "" : "\n" + latency)
                + (crowds == null ? "" : "\n" + crowds)
                + (streams == null ? "" : "\n" + streams);
    }

    String markdown() {
        return "## mailbox_throughput\n\n"
                + "Command: `" + header.command() + "`\n\n"
                + "- JVM: " + header.jvm() + "\n"
                + "- Cores: " + header.cores() + "\n"
                + "- OS: " + header.os() + "\n"
                + "- Settings: " + header.settings() + "\n"
                + "- " + pingPong() + "\n"
                + (placement == null ? "" : "- " + placement + "\n")
                + "- " + gc + "\n\n"
                + "```text\n" + lines() + "```\n\n"
                + table() + "\n"
                + "Expectations (ratios of medians, this run):\n\n" + expectations() + "\n"
                + (chartFailure == null ? "![msgs/s per implementation](" + CHART + ")\n"
                        : "(No chart: " + chartFailure + ")\n")
                + (stats().isEmpty() ? "" : "\nMailbox stats at the end:\n\n```text\n" + stats() + "```\n")
                + (latency == null ? "" : "\n### Lone-message latency\n\n" + latency)
                + (crowds == null ? "" : "\n### Crowds\n\n" + crowds)
                + (streams == null ? "" : "\n### Continuous stream\n\n" + streams);
    }

    String json() {
        final StringBuilder sb = new StringBuilder();
        sb.append("{\n");
        sb.append("  \"command\": ").append(quote(header.command())).append(",\n");
        sb.append("  \"jvm\": ").append(quote(header.jvm())).append(",\n");
        sb.append("  \"cores\": ").append(header.cores()).append(",\n");
        sb.append("  \"os\": ").append(quote(header.os())).append(",\n");
        sb.append("  \"settings\": {\"msgsPerIteration\": ").append(header.messages())
                .append(", \"capacity\": ").append(header.capacity())
                .append(", \"batch\": ").append(header.batch())
                .append(", \"warmupIterations\": ").append(header.warmup())
                .append(", \"measuredIterations\": ").append(header.iterations()).append("},\n");
        sb.append("  \"pingPongNanos\": {\"start\": ").append(num(pingPongStart)).append(", \"end\": ")
                .append(num(pingPongEnd)).append("},\n");
        sb.append("  \"gc\": ").append(quote(gc)).append(",\n");
        sb.append("  \"placement\": ").append(placement == null ? "null" : quote(placement)).append(",\n");
        sb.append("  \"streams\": ").append(streamsJson == null ? "null" : streamsJson).append(",\n");
        sb.append("  \"results\": [\n");
        for (int i = 0; i < rows.size(); i++) {
            final Measurement m = rows.get(i);
            sb.append("    {\"name\": ").append(quote(m.name()))
                    .append(", \"description\": ").append(quote(m.entry.description()))
                    .append(", \"comparator\": ").append(!m.entry.ours())
                    .append(", \"iterations\": ").append(m.histogram.getTotalCount())
                    .append(", \"medianMs\": ").append(num(m.medianNanos() / 1e6))
                    .append(", \"p95Ms\": ").append(num(m.p95Nanos() / 1e6))
                    .append(", \"p99Ms\": ").append(num(m.p99Nanos() / 1e6))
                    .append(", \"msgsPerSecond\": ").append(num(m.msgsPerSecond()))
                    .append(", \"nsPerMessage\": ").append(num(m.nanosPerMessage()))
                    .append(", \"ratioToMailbox\": ").append(ratioJson(m, Workloads.MAILBOX))
                    .append(", \"ratioToSpscRing\": ").append(ratioJson(m, Workloads.JCTOOLS_SPSC))
                    .append(", \"spreadP95OverMedian\": ").append(num(m.spread()))
                    .append(", \"bytesPerMessage\": ").append(m.bytesPerMessage() < 0 ? "null" : num(m.bytesPerMessage()))
                    .append(", \"cpuNsPerMessage\": ")
                    .append(m.cpuPerMessage() < 0 ? "null" : num(m.cpuPerMessage()))
                    .append(", \"cpuThreads\": ").append(m.cpuPerMessage() < 0 ? "null" : m.cpuThreads())
                    .append(", \"consumerCpuNsPerMessage\": ")
                    .append(m.consumerCpuPerMessage() < 0 ? "null" : num(m.consumerCpuPerMessage()))
                    .append(", \"deliveredOnProducer\": ").append(m.deliveredOnProducer)
                    .append(", \"wakeupsPer10M\": ").append(m.wakeupsPer10M() < 0 ? "null" : num(m.wakeupsPer10M()))
                    .append(", \"stats\": ").append(m.stats == null ? "null" : quote(m.stats))
                    .append(", \"outOfProcess\": ").append(m.outOfProcess != null)
                    .append(", \"toolchain\": ").append(m.outOfProcess == null ? "null" : quote(m.outOfProcess))
                    .append(i + 1 < rows.size() ? "},\n" : "}\n");
        }
        sb.append("  ],\n");
        sb.append("  \"expectations\": [\n");
        for (int i = 0; i < EXPECTATIONS.size(); i++) {
            final Expectation e = EXPECTATIONS.get(i);
            final Double r = e.ratio(byName);
            sb.append("    {\"source\": ").append(quote(e.source()))
                    .append(", \"text\": ").append(quote(e.text()))
                    .append(", \"ratio\": ").append(r == null ? "null" : num(r))
                    .append(", \"bound\": ").append(num(e.bound()))
                    .append(", \"atMost\": ").append(e.atMost())
                    .append(", \"status\": ").append(quote(e.check(byName).trim()))
                    .append(i + 1 < EXPECTATIONS.size() ? "},\n" : "}\n");
        }
        sb.append("  ]\n}\n");
        return sb.toString();
    }

    private String ratioJson(Measurement m, String to) {
        final Measurement base = byName.get(to);
        return base == null ? "null" : num(m.medianNanos() / base.medianNanos());
    }

    private static String num(double d) {
        return Double.isFinite(d) ? String.format(Locale.ROOT, "%.6g", d) : "null";
    }

    static String quote(String s) {
        final StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }

    /** Draws the chart into a file: {@link #write(Path, ChartWriter)}'s seam. */
    @FunctionalInterface
    interface ChartWriter {
        void draw(Path png) throws Exception;
    }

    /** @return why the chart was not drawn by the last {@link #write}, or null if it was */
    String chartFailure() {
        return chartFailure;
    }

    /** Writes results.md, results.json and the chart into {@code dir}; returns the paths written. */
    List<Path> write(Path dir) throws IOException {
        return write(dir, this::writeChart);
    }

    /**
     * Writes results.md, results.json and, if {@code chart} can draw it, the chart into {@code dir}. The figures
     * are the run's result and the chart is not: a JVM that cannot draw (no font stack, as on a bare server image
     * without libfreetype, where the chart library fails with a {@link LinkageError} or an AWT error) still gets
     * its results files, and results.md says why the chart is missing ({@link #chartFailure()}). The virtual
     * machine's own errors (out of memory, say) are not caught.
     *
     * @return the paths written: results.md, results.json, then the chart if drawn
     */
    List<Path> write(Path dir, ChartWriter chart) throws IOException {
        Files.createDirectories(dir);
        final Path png = dir.resolve(CHART);
        chartFailure = null;
        try {
            chart.draw(png); // first, so that results.md can say whether it is there
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Exception | Error e) {
            chartFailure = e.toString();
            Files.deleteIfExists(png); // no half-written chart beside results that say there is none
        }
        final List<Path> written = new ArrayList<>();
        final Path md = dir.resolve(MARKDOWN);
        Files.writeString(md, markdown(), StandardCharsets.UTF_8);
        written.add(md);
        final Path json = dir.resolve(JSON);
        Files.writeString(json, json(), StandardCharsets.UTF_8);
        written.add(json);
        if (chartFailure == null) {
            written.add(png);
        }
        return written;
    }

    /** A bar per implementation, msgs/s at the median; ours and comparators in two colours. Headless. */
    private void writeChart(Path png) throws IOException {
        final CategoryChart chart = new CategoryChartBuilder().width(1200).height(800)
                .title("mailbox_throughput: msgs/s at the median (" + msgsLabel(header.messages())
                        + " msgs/iter, capacity " + header.capacity() + ", " + header.cores() + " cores; higher is better)")
                .xAxisTitle("implementation").yAxisTitle("million msgs/s").build();
        final Styler styler = chart.getStyler();
        chart.getStyler().setOverlapped(true);
        // Vertical labels, centred under their bars. At 30 degrees XChart ends each label at its tick, so the last
        // label ran past the chart's right edge and was not drawn: one bar more than labels.
        chart.getStyler().setXAxisLabelRotation(90);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setSeriesColors(new Color[] {new Color(0x2E7D32), new Color(0x9E9E9E), new Color(0x6A8FC8)});
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        styler.setToolTipsEnabled(false);
        final List<String> names = new ArrayList<>();
        final List<Double> ours = new ArrayList<>();
        final List<Double> others = new ArrayList<>();
        final List<Double> outOfProcess = new ArrayList<>();
        for (Measurement m : rows) {
            names.add(m.name().replace("_throughput", ""));
            final double mps = m.msgsPerSecond() / 1e6;
            ours.add(m.entry.ours() ? mps : 0.0);
            others.add(m.entry.ours() || m.outOfProcess != null ? 0.0 : mps);
            outOfProcess.add(m.outOfProcess != null ? mps : 0.0);
        }
        chart.addSeries("reactor-mailbox", names, ours);
        chart.addSeries("comparators", names, others);
        if (outOfProcess.stream().anyMatch(v -> v > 0)) {
            chart.addSeries("out-of-process comparators (--native)", names, outOfProcess);
        }
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
