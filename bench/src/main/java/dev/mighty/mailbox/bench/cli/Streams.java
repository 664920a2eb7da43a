package dev.mighty.mailbox.bench.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.bench.FourEmitters;
import dev.mighty.mailbox.bench.Placement;
import dev.mighty.mailbox.bench.ThreadCpu;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * The continuous stream ({@code --stream}): the {@link FourEmitters} sinks with four emitter threads that keep
 * emitting, without iterations or a start barrier, while the harness reads the delivered count and the CPU time of
 * the five threads (four emitters, the scheduler's worker) at the edges of timed windows: warm-up windows, then
 * measured ones. A window's throughput is its deliveries over its wall time; its CPU per message is the five
 * threads' CPU time over its deliveries. The subscriber checks every emitter's order all along.
 *
 * <h2>Threads</h2>
 * {@link #run} on one thread (it only sleeps between window edges); the emitters and the worker come from the row's
 * {@link ThreadCpu} factories and take their {@link Placement} slots.
 */
final class Streams {
    static final String SINKS = "sinks_4p_stream";
    static final String REACTOR_SINK = "reactor_sink_4p_stream";
    static final String FLUX_CREATE = "flux_create_4p_stream";
    static final long DEFAULT_WINDOW_MS = 1_000;
    static final int DEFAULT_WINDOWS = 5;
    static final int DEFAULT_WARMUP_WINDOWS = 2;
    /**
     * A row with no delivery for this long fails the run: a stalled sink must not look slow. (Shorter gaps are a
     * busy machine's: a window with none counts as 0 msgs/s.)
     */
    static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(10);

    /** One stream row. */
    record Row(String name, String description, FourEmitters.Kind kind, boolean ours) {
    }

    /** The measured windows of one row. */
    record Result(Row row, double[] msgsPerSecond, double[] cpuNanosPerMessage, int threads, String placement) {
        double medianMsgsPerSecond() {
            return median(msgsPerSecond);
        }

        double medianCpu() {
            return median(cpuNanosPerMessage);
        }
    }

    private Streams() {
    }

    static List<Row> all() {
        return List.of(
                new Row(SINKS, "4 emitter threads tryEmitNext into " + Faces.MAILBOX_SINKS + " (spin, then yield on "
                        + "FAIL_OVERFLOW) -> publishOn(Schedulers.newSingle)", FourEmitters.Kind.MAILBOX_SINKS, true),
                new Row(REACTOR_SINK, "4 emitter threads emitNext into " + Faces.REACTOR_UNICAST_SINK + ", handler "
                        + "retrying FAIL_NON_SERIALIZED and FAIL_OVERFLOW -> publishOn(Schedulers.newSingle)",
                        FourEmitters.Kind.REACTOR_SINK, false),
                new Row(FLUX_CREATE, "4 emitter threads next() into Flux.create(sink, BUFFER), each waiting while "
                        + "requestedFromDownstream() is 0 -> publishOn(Schedulers.newSingle)",
                        FourEmitters.Kind.FLUX_CREATE, false));
    }

    static List<Row> select(Predicate<String> names) {
        final List<Row> rows = new ArrayList<>();
        for (Row r : all()) {
            if (names.test(r.name())) {
                rows.add(r);
            }
        }
        return rows;
    }

    /**
     * Runs each row in turn: subscribe, start the four emitters, {@code warmup} then {@code windows} windows of
     * {@code windowNanos}, stop, check.
     *
     * @param cycle the emitters cycle through messages {@code 0 .. cycle-1} ({@code payload.length})
     * @throws IllegalStateException if a message arrives out of order, an emitter fails or a window stalls
     */
    static List<Result> run(List<Row> rows, int capacity, Integer[] payload, long windowNanos, int warmup,
            int windows, Placement placement, PrintStream progress) throws InterruptedException {
        final List<Result> results = new ArrayList<>();
        for (Row row : rows) {
            results.add(runOne(row, capacity, payload, windowNanos, warmup, windows, placement, progress));
        }
        return results;
    }

    private static Result runOne(Row row, int capacity, Integer[] payload, long windowNanos, int warmup, int windows,
            Placement placement, PrintStream progress) throws InterruptedException {
        final ThreadCpu threads = new ThreadCpu(placement);
        final FourEmitters emitters = FourEmitters.create(row.kind(), row.name(), capacity, payload, Workload::idle,
                threads);
        final StreamCheck check = new StreamCheck(row.name(), payload.length);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread[] emitting = new Thread[FourEmitters.EMITTERS];
        final AtomicBoolean running = new AtomicBoolean(true);
        emitters.subscribe(check);
        for (int e = 0; e < emitting.length; e++) {
            final int emitter = e;
            emitting[e] = threads.factory(row.name() + "-emitter-" + e, Placement.emitter(e)).newThread(() -> {
                try {
                    emitters.emitStream(emitter, payload.length, running::get);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            });
        }
        for (Thread t : emitting) {
            t.start();
        }
        final double[] mps = new double[windows];
        final double[] cpu = new double[windows];
        long progressAt = System.nanoTime();
        try {
            for (int w = 0; w < warmup + windows; w++) {
                final long c0 = check.delivered();
                final long cpu0 = threads.cpuNanos();
                final long t0 = System.nanoTime();
                final long deadline = t0 + windowNanos;
                for (long left; (left = deadline - System.nanoTime()) > 0; ) {
                    LockSupport.parkNanos(left);
                    check.throwIfFailed(failure.get());
                }
                final long t1 = System.nanoTime();
                final long cpu1 = threads.cpuNanos();
                final long c1 = check.delivered();
                check.throwIfFailed(failure.get());
                if (c1 != c0) {
                    progressAt = t1;
                } else if (t1 - progressAt > STALL_NANOS) {
                    throw new IllegalStateException(row.name() + ": nothing delivered for "
                            + TimeUnit.NANOSECONDS.toMillis(t1 - progressAt) + " ms (delivered so far: " + c1 + ")");
                }
                if (w >= warmup) {
                    mps[w - warmup] = (c1 - c0) * 1e9 / (t1 - t0);
                    cpu[w - warmup] = cpu0 < 0 || cpu1 < 0 || c1 == c0 ? -1 : (cpu1 - cpu0) / (double) (c1 - c0);
                }
                progress.printf(Locale.ROOT, "[stream] %s %s window %d/%d: %,.0f msgs/s%n", row.name(),
                        w < warmup ? "warm-up" : "measured", w < warmup ? w + 1 : w - warmup + 1,
                        w < warmup ? warmup : windows, (c1 - c0) * 1e9 / (t1 - t0));
            }
        } finally {
            running.set(false);
            for (Thread t : emitting) {
                t.join(TimeUnit.SECONDS.toMillis(10));
                if (t.isAlive()) {
                    t.interrupt(); // a wait on a sink that stopped draining
                    t.join(TimeUnit.SECONDS.toMillis(1));
                }
            }
            emitters.close();
        }
        check.throwIfFailed(failure.get());
        return new Result(row, mps, cpu, threads.threads().size(), placement.describe(threads.threads().size()));
    }

    /** The section: one line per row, and the goals checked as ratios of median throughput. */
    static String table(List<Result> results, long windowNanos, int warmup, int windows) {
        final StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "Continuous stream (4 emitter threads, no barrier): %d measured windows "
                + "of %d ms after %d warm-up windows; median (min .. max) over the windows%n%n", windows,
                TimeUnit.NANOSECONDS.toMillis(windowNanos), warmup));
        sb.append("| stream | msgs/s median | min .. max | wall ns/msg | CPU ns/msg (all threads) | threads | vs "
                + SINKS + " |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---:|\n");
        Result sinks = null;
        for (Result r : results) {
            if (r.row().name().equals(SINKS)) {
                sinks = r;
            }
        }
        for (Result r : results) {
            final double median = r.medianMsgsPerSecond();
            final double cpu = r.medianCpu();
            sb.append(String.format(Locale.ROOT, "| %s | %,.0f | %,.0f .. %,.0f | %.1f | %s | %d | %s |%n",
                    r.row().name() + (r.row().ours() ? "" : " *"), median, min(r.msgsPerSecond()),
                    max(r.msgsPerSecond()), 1e9 / median, cpu < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", cpu),
                    r.threads(), sinks == null ? "-" : String.format(Locale.ROOT, "%.2fx",
                            sinks.medianMsgsPerSecond() / median)));
        }
        sb.append("\n`*` comparator. vs ").append(SINKS).append(": its median throughput over this row's (> 1: "
                + "MailboxSinks delivers more). CPU ns/msg: CPU time of the four emitters and the scheduler's worker "
                + "per delivered message (ThreadMXBean), waits included.\n");
        if (!results.isEmpty()) {
            sb.append("Placement: ").append(results.get(0).placement()).append('\n');
        }
        sb.append("\nGoals (ratios of median throughput, this run):\n");
        sb.append(goal(results, sinks, REACTOR_SINK, 4.0,
                "MailboxSinks, 4 emitters, >= 4x the throughput of Reactor's unicast sink with a retrying handler"));
        sb.append(goal(results, sinks, FLUX_CREATE, 1.5,
                "MailboxSinks, 4 emitters, >= 1.5x the throughput of a demand-bounded Flux.create(BUFFER)"));
        return sb.toString();
    }

    /** @return the results as a JSON array: per row its windows' msgs/s and CPU ns per message, and the medians */
    static String json(List<Result> results) {
        final StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < results.size(); i++) {
            final Result r = results.get(i);
            sb.append(i == 0 ? "\n" : ",\n").append("    {\"name\": ").append(Report.quote(r.row().name()))
                    .append(", \"comparator\": ").append(!r.row().ours())
                    .append(", \"threads\": ").append(r.threads())
                    .append(", \"placement\": ").append(Report.quote(r.placement()))
                    .append(", \"msgsPerSecondMedian\": ").append(number(r.medianMsgsPerSecond()))
                    .append(", \"cpuNsPerMessageMedian\": ")
                    .append(r.medianCpu() < 0 ? "null" : number(r.medianCpu()))
                    .append(", \"msgsPerSecond\": ").append(array(r.msgsPerSecond()))
                    .append(", \"cpuNsPerMessage\": ").append(array(r.cpuNanosPerMessage())).append('}');
        }
        return sb.append(results.isEmpty() ? "]" : "\n  ]").toString();
    }

    private static String array(double[] values) {
        final StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(values[i] < 0 ? "null" : number(values[i]));
        }
        return sb.append(']').toString();
    }

    private static String number(double d) {
        return Double.isFinite(d) ? String.format(Locale.ROOT, "%.6g", d) : "null";
    }

    private static String goal(List<Result> results, Result sinks, String other, double bound, String text) {
        Result o = null;
        for (Result r : results) {
            if (r.row().name().equals(other)) {
                o = r;
            }
        }
        if (sinks == null || o == null) {
            return "- n/a   " + text + ": not measured (" + (sinks == null ? SINKS : other) + " not in this run)\n";
        }
        final double ratio = sinks.medianMsgsPerSecond() / o.medianMsgsPerSecond();
        return String.format(Locale.ROOT, "- %s  %s: %s / %s = %.2fx (>= %.1fx)%n", ratio >= bound ? "PASS" : "MISS",
                text, SINKS, other, ratio, bound);
    }

    static double median(double[] values) {
        final double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted.length == 0 ? Double.NaN : sorted[sorted.length / 2];
    }

    private static double min(double[] values) {
        return Arrays.stream(values).min().orElse(Double.NaN);
    }

    private static double max(double[] values) {
        return Arrays.stream(values).max().orElse(Double.NaN);
    }

    /**
     * Checks each emitter's order in the stream: emitter e sends {@code e, e + 4, ...} below {@code cycle}, then
     * {@code e} again. Runs on the scheduler's worker; {@link #delivered()} is read by the harness.
     */
    static final class StreamCheck implements CoreSubscriber<Integer> {
        private final String name;
        private final int cycle;
        private final int[] next = new int[FourEmitters.EMITTERS];
        /** Worker only. */
        private long count;
        /** Published with a release store per message (no full fence on the worker). */
        private final AtomicLong delivered = new AtomicLong();
        private volatile Throwable error;

        StreamCheck(String name, int cycle) {
            this.name = name;
            this.cycle = cycle;
            for (int e = 0; e < next.length; e++) {
                next[e] = e;
            }
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Integer value) {
            final int v = value;
            final int e = v % FourEmitters.EMITTERS;
            if (v != next[e] && error == null) {
                error = new IllegalStateException(name + ": emitter " + e + " sent " + v + ", expected " + next[e]
                        + " (after " + count + " messages)");
            }
            final int following = v + FourEmitters.EMITTERS;
            next[e] = following >= cycle ? e : following;
            delivered.lazySet(++count);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onComplete() {
        }

        long delivered() {
            return delivered.get();
        }

        void throwIfFailed(Throwable emitterFailure) {
            final Throwable t = error;
            if (t != null) {
                throw new IllegalStateException(name + ": the subscriber failed", t);
            }
            if (emitterFailure != null) {
                throw new IllegalStateException(name + ": an emitter failed", emitterFailure);
            }
        }
    }
}
