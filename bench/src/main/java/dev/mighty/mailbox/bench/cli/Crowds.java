package dev.mighty.mailbox.bench.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

import dev.mighty.mailbox.bench.Crowd;

/**
 * The crowd rows ({@code --crowds}): many producers blocked on one small channel, one consumer draining in
 * batches ({@link Crowd}), the mailbox against {@code ArrayBlockingQueue} in the same run. They do not fit the
 * two-thread harness (their producers are a crowd, and one iteration is a whole crowd of 16k-100k messages), so
 * they run after the two-thread rows with their own, much smaller iteration counts: per shape, the mailbox and
 * its {@code ArrayBlockingQueue} row interleaved (A B A B ...), warm-up first.
 *
 * <p>Each row reports the median/p95/p99 iteration time in the reference format, its ratio to the
 * {@code ArrayBlockingQueue} row of the same shape and run, and (mailbox rows) the producer parks per message:
 * the {@code producerParks} of {@code stats()} over the measured iterations divided by their messages.
 */
final class Crowds {
    static final String VIRTUAL = "crowd_virtual_10k";
    static final String ABQ_VIRTUAL = "abq_crowd_virtual_10k";
    static final String PLATFORM = "crowd_platform_64";
    static final String ABQ_PLATFORM = "abq_crowd_platform_64";
    /** Measured iterations per row unless given (--crowd-iterations); warm-up is a quarter of them. */
    static final int DEFAULT_ITERATIONS = 20;
    static final int QUICK_ITERATIONS = 6;

    /**
     * One crowd row.
     *
     * @param baseline the row of the same shape this one is compared with (the ABQ row compares with itself)
     */
    record Row(String name, Crowd.Shape shape, Crowd.Channel channel, String baseline) {
        String description() {
            return (channel == Crowd.Channel.MAILBOX ? "MPSC Mailbox: send() / recvMany(batch)"
                    : "java.util.concurrent.ArrayBlockingQueue: put() / take() then drainTo(batch - 1)") + "; "
                    + shape + (shape.virtual ? " (JDK 21+)" : "");
        }

        Workloads.Entry entry() {
            return new Workloads.Entry(name, description(), channel == Crowd.Channel.MAILBOX, null);
        }
    }

    private Crowds() {
    }

    /** @return every crowd row, in output order: per shape, the mailbox then its ABQ baseline */
    static List<Row> all() {
        return List.of(
                new Row(VIRTUAL, Crowd.Shape.VIRTUAL_10K, Crowd.Channel.MAILBOX, ABQ_VIRTUAL),
                new Row(ABQ_VIRTUAL, Crowd.Shape.VIRTUAL_10K, Crowd.Channel.ABQ, ABQ_VIRTUAL),
                new Row(PLATFORM, Crowd.Shape.PLATFORM_64, Crowd.Channel.MAILBOX, ABQ_PLATFORM),
                new Row(ABQ_PLATFORM, Crowd.Shape.PLATFORM_64, Crowd.Channel.ABQ, ABQ_PLATFORM));
    }

    /** @return the rows whose name {@code select} accepts */
    static List<Row> select(Predicate<String> select) {
        final List<Row> rows = new ArrayList<>();
        for (Row r : all()) {
            if (select.test(r.name())) {
                rows.add(r);
            }
        }
        return rows;
    }

    /** A measured crowd row, or a skipped one (measurement null). */
    private record Result(Row row, Measurement measurement, double parksPerMessage, String stats, String skipped) {
    }

    /**
     * Runs {@code rows} and returns the section to print: the reference lines, a table, and the mailboxes' stats.
     *
     * @throws IllegalStateException if a crowd lost, duplicated or reordered a message
     */
    static String run(List<Row> rows, int warmup, int iterations, int batch, PrintStream progress)
            throws InterruptedException {
        final List<Result> results = new ArrayList<>();
        for (Crowd.Shape shape : Crowd.Shape.values()) {
            final List<Row> group = new ArrayList<>();
            for (Row r : rows) {
                if (r.shape() == shape) {
                    group.add(r);
                }
            }
            if (group.isEmpty()) {
                continue;
            }
            if (shape.virtual && Crowd.virtualThreads() == null) {
                for (Row r : group) {
                    results.add(new Result(r, null, -1, null, "skipped (JDK < 21: no virtual threads; this is "
                            + Runtime.version() + ")"));
                }
                continue;
            }
            results.addAll(runShape(group, warmup, iterations, batch, progress));
        }
        return format(results, warmup, iterations, batch);
    }

    private static List<Result> runShape(List<Row> group, int warmup, int iterations, int batch,
            PrintStream progress) throws InterruptedException {
        final List<Crowd> crowds = new ArrayList<>();
        final List<Measurement> measurements = new ArrayList<>();
        final long[] parks0 = new long[group.size()];
        final long started = System.nanoTime();
        try {
            for (Row r : group) {
                crowds.add(Crowd.open(r.shape(), r.channel(), batch));
                measurements.add(new Measurement(r.entry(), r.shape().messages()));
            }
            for (int round = 0; round < warmup + iterations; round++) {
                if (round == warmup) {
                    for (int i = 0; i < crowds.size(); i++) {
                        parks0[i] = crowds.get(i).producerParks();
                    }
                }
                for (int i = 0; i < crowds.size(); i++) {
                    final long nanos = crowds.get(i).runOnce();
                    if (round >= warmup) {
                        measurements.get(i).record(nanos, -1L, -1L, -1L);
                    }
                }
                progress.printf(Locale.ROOT, "[crowds] %s: %s %d/%d rounds of %d rows (%.1f s)%n",
                        group.get(0).shape(), round < warmup ? "warm-up" : "measure",
                        round < warmup ? round + 1 : round + 1 - warmup, round < warmup ? warmup : iterations,
                        group.size(), (System.nanoTime() - started) / 1e9);
            }
            final List<Result> results = new ArrayList<>();
            for (int i = 0; i < group.size(); i++) {
                final Crowd c = crowds.get(i);
                final long parks = c.producerParks();
                results.add(new Result(group.get(i), measurements.get(i),
                        parks < 0 ? -1 : (parks - parks0[i]) / ((double) iterations * c.shape().messages()),
                        c.stats(), null));
            }
            return results;
        } finally {
            for (Crowd c : crowds) {
                c.close();
            }
        }
    }

    private static String format(List<Result> results, int warmup, int iterations, int batch) {
        int nameColumn = Report.MIN_NAME_COLUMN;
        for (Result r : results) {
            nameColumn = Math.max(nameColumn, r.row().name().length() + 3);
        }
        final StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "Crowds (--crowds): many producers blocked on one small channel, one "
                + "consumer draining in batches of up to %d; per shape the mailbox and ArrayBlockingQueue "
                + "interleaved, %d warm-up and %d measured crowds each%n%n", batch, warmup, iterations));
        for (Result r : results) {
            sb.append(r.measurement() == null
                    ? String.format(Locale.ROOT, "%-" + nameColumn + "s%s", r.row().name(), r.skipped())
                    : Report.line(r.measurement(), nameColumn)).append('\n');
        }
        sb.append("\n| crowd | median ms | p95 ms | msgs/s (median) | vs ABQ | producer parks/msg | shape |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---|\n");
        for (Result r : results) {
            final Measurement m = r.measurement();
            if (m == null) {
                sb.append(String.format(Locale.ROOT, "| %s | - | - | - | - | - | %s: %s |%n", r.row().name(),
                        r.row().shape(), r.skipped()));
                continue;
            }
            final Measurement base = find(results, r.row().baseline());
            sb.append(String.format(Locale.ROOT, "| %s%s | %.3f | %.3f | %,.0f | %s | %s | %s |%n", r.row().name(),
                    m.entry.ours() ? "" : " *", m.medianNanos() / 1e6, m.p95Nanos() / 1e6, m.msgsPerSecond(),
                    base == null ? "-" : String.format(Locale.ROOT, "%.2fx", m.medianNanos() / base.medianNanos()),
                    r.parksPerMessage() < 0 ? "-" : String.format(Locale.ROOT, "%.3f", r.parksPerMessage()),
                    r.row().shape()));
        }
        sb.append("\n`*` comparator. vs ABQ: ratio of median crowd times to the ArrayBlockingQueue row of the same "
                + "shape in this run (< 1 is faster). Producer parks/msg: the mailbox's producerParks during the "
                + "measured crowds per message. Goals (crowds of blocked producers): crowd_virtual_10k <= 1.0x and "
                + "crowd_platform_64 <= 0.7x ABQ, parks/msg <= 0.1.\n");
        final StringBuilder stats = new StringBuilder();
        for (Result r : results) {
            if (r.stats() != null) {
                stats.append(String.format(Locale.ROOT, "%-" + nameColumn + "s%s%n", r.row().name(), r.stats()));
            }
        }
        if (stats.length() > 0) {
            sb.append("\nCrowd mailbox stats at the end:\n").append(stats);
        }
        return sb.toString();
    }

    private static Measurement find(List<Result> results, String name) {
        for (Result r : results) {
            if (r.row().name().equals(name)) {
                return r.measurement();
            }
        }
        return null;
    }
}
