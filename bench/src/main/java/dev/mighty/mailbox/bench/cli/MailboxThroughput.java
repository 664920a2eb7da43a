package dev.mighty.mailbox.bench.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;

import dev.mighty.mailbox.bench.Affinity;
import dev.mighty.mailbox.bench.DrivenExecutor;
import dev.mighty.mailbox.bench.Placement;
import dev.mighty.mailbox.bench.ThreadCpu;
import dev.mighty.mailbox.bench.soak.SoakRunner;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mailbox_throughput}: the reference page's workload (one producer thread, one consumer thread, a
 * bounded channel of capacity 1024, 1,000 messages per iteration), run for reactor-mailbox and for the
 * channels a Java user would pick instead, side by side in one JVM.
 *
 * <p>The implementations are interleaved round-robin (A B C A B C ...), so a change of machine mode during the
 * run (on 2-vCPU machines the cross-core round trip flips between ~90 and ~500 ns) hits all of them alike; a
 * ping-pong calibration at the start and at the end shows which mode the run was in. Warm-up rounds come
 * first, then measured rounds whose iteration times go into one HdrHistogram per implementation. Every
 * iteration checks the count and the order of what was received.
 *
 * <p>Output: the reference lines ({@code name median= p95= p99= (1k msgs/iter)}), a table of msgs/s, ns/msg and
 * ratios, the expectations checked, and {@code results.md}, {@code results.json} and a PNG chart in
 * {@code --out}. Progress goes to stderr.
 */
@Command(name = "mailbox_throughput", mixinStandardHelpOptions = true, sortOptions = false,
        subcommands = SoakRunner.class,
        version = "mailbox_throughput (reactor-mailbox benchmarks)",
        description = {"Measures reactor-mailbox against the bounded channels a Java user would pick instead:",
                "one producer thread, one consumer thread, interleaved round-robin in one JVM."})
public final class MailboxThroughput implements Callable<Integer> {
    static final int DEFAULT_MSGS = 1000;
    static final int DEFAULT_WARMUP = 2_000;
    static final int DEFAULT_ITERATIONS = 8_000;
    static final int QUICK_WARMUP = 500;
    static final int QUICK_ITERATIONS = 1_000;
    static final int PING_PONG_ROUNDS = 2_000;
    static final int DEFAULT_LATENCY_SAMPLES = 2_000;
    static final int QUICK_LATENCY_SAMPLES = 300;
    static final int PING_PONG_SAMPLES = 15;

    @Option(names = "--quick", description = "Short run (<= 20 s on a quiet machine): --warmup " + QUICK_WARMUP
            + " --iterations " + QUICK_ITERATIONS + " unless given.")
    boolean quick;

    @Option(names = "--msgs", paramLabel = "N", description = "Messages per iteration (default: ${DEFAULT-VALUE}; "
            + "10000 is the microbenchmark size).")
    int msgs = DEFAULT_MSGS;

    @Option(names = "--iterations", paramLabel = "N", description = "Measured iterations per implementation "
            + "(default: " + DEFAULT_ITERATIONS + ", --quick: " + QUICK_ITERATIONS + ").")
    Integer iterations;

    @Option(names = "--warmup", paramLabel = "N", description = "Warm-up iterations per implementation "
            + "(default: " + DEFAULT_WARMUP + ", --quick: " + QUICK_WARMUP + ").")
    Integer warmup;

    @Option(names = "--only", paramLabel = "REGEX", description = "Run only the implementations whose name "
            + "contains a match, e.g. 'mailbox_throughput|jctools'.")
    Pattern only;

    @Option(names = "--out", paramLabel = "DIR", description = "Where results.md, results.json and "
            + Report.CHART + " go (default: ${DEFAULT-VALUE}).")
    Path out = Path.of("bench", "target", "results");

    @Option(names = "--capacity", paramLabel = "N", description = "Bounded capacity of every channel "
            + "(default: ${DEFAULT-VALUE}).")
    int capacity = 1024;

    @Option(names = "--batch", paramLabel = "N", description = "Most messages per batched receive "
            + "(default: ${DEFAULT-VALUE}).")
    int batch = 256;

    @Option(names = "--latency-samples", paramLabel = "N", description = "Lone-message latency samples per face, "
            + "after the throughput rounds (default: " + DEFAULT_LATENCY_SAMPLES + ", --quick: " + QUICK_LATENCY_SAMPLES
            + "; 0 skips the latency section).")
    Integer latencySamples;

    @Option(names = "--actors", description = "Add the JVM's actor runtime: an Apache Pekko actor's mailbox and "
            + "Pekko Streams' Source.queue (in-process rows, interleaved with the others; they lengthen the run).")
    boolean actors;

    @Option(names = "--native", arity = "0..1", paramLabel = "DIR", fallbackValue = "bench/native",
            description = "After the JVM's rows, run the out-of-process comparators built by bench/native/run.sh "
                    + "in DIR (default: bench/native) with this run's settings, and add their rows, marked "
                    + "out-of-process. A program that is not built yet is built first (run.sh --build-only "
                    + "--no-install); one that cannot be built here is skipped, and said so.")
    Path nativeDir;

    @Option(names = "--crowds", description = "After the other rows, add the crowd rows: 10,000 virtual-thread "
            + "producers x 10 msgs on a mailbox of 64 (JDK 21+) and 64 platform producers on a mailbox of 8, each "
            + "against ArrayBlockingQueue (not in the default run: on a 2-core machine they take from tens of "
            + "seconds to minutes). --only selects among them too.")
    boolean crowds;

    @Option(names = "--crowd-iterations", paramLabel = "N", description = "Measured crowds per crowd row, after a "
            + "quarter as many warm-up crowds (default: " + Crowds.DEFAULT_ITERATIONS + ", --quick: "
            + Crowds.QUICK_ITERATIONS + ").")
    Integer crowdIterations;

    @Option(names = "--pin", description = "Pin each row's threads to distinct CPUs (Linux sched_setaffinity): the "
            + "producer on the first allowed CPU, the receiving thread (the harness consumer, or the row's executor or "
            + "scheduler worker) on the second, further emitters on the next ones, round-robin when there are fewer "
            + "CPUs than threads. Falls back to unpinned, and says why, where pinning is unavailable. The latency "
            + "and crowd sections run unpinned.")
    boolean pin;

    @Option(names = "--stream", description = "After the other rows, run the continuous-stream section: the "
            + "4-emitter sinks (MailboxSinks, Reactor's unicast sink, Flux.create) with four emitter threads that "
            + "keep emitting through timed windows, reporting msgs/s and CPU ns per message (not in the default "
            + "run: about " + (Streams.DEFAULT_WARMUP_WINDOWS + Streams.DEFAULT_WINDOWS) * 3 + " s). --only "
            + "selects among them too.")
    boolean stream;

    @Option(names = "--stream-window-ms", paramLabel = "MS", description = "Length of one stream window "
            + "(default: " + Streams.DEFAULT_WINDOW_MS + ").")
    long streamWindowMs = Streams.DEFAULT_WINDOW_MS;

    @Option(names = "--stream-windows", paramLabel = "N", description = "Measured stream windows per row "
            + "(default: " + Streams.DEFAULT_WINDOWS + ").")
    int streamWindows = Streams.DEFAULT_WINDOWS;

    @Option(names = "--stream-warmup-windows", paramLabel = "N", description = "Warm-up stream windows per row "
            + "(default: " + Streams.DEFAULT_WARMUP_WINDOWS + ").")
    int streamWarmupWindows = Streams.DEFAULT_WARMUP_WINDOWS;

    @Option(names = "--list", description = "List the implementations and exit.")
    boolean list;

    @Spec
    CommandSpec spec;

    /** The last stream section's results as JSON, for results.json. */
    private String streamsJson;
    private PrintStream stdout = System.out;
    private PrintStream stderr = System.err;
    private String[] args = new String[0];

    public static void main(String[] args) {
        System.exit(run(System.out, System.err, args));
    }

    /**
     * Runs the CLI in this JVM (the smoke test's entry point).
     *
     * @return the exit code: 0 on success, 1 if a run failed (e.g. a channel lost a message), 2 on bad options
     */
    static int run(PrintStream stdout, PrintStream stderr, String... args) {
        System.setProperty("java.awt.headless", "true");
        final MailboxThroughput command = new MailboxThroughput();
        command.stdout = stdout;
        command.stderr = stderr;
        command.args = args.clone();
        return new CommandLine(command)
                .setOut(new PrintWriter(stdout, true))
                .setErr(new PrintWriter(stderr, true))
                .execute(args);
    }

    @Override
    public Integer call() throws Exception {
        final int warmup = this.warmup != null ? this.warmup : quick ? QUICK_WARMUP : DEFAULT_WARMUP;
        final int iterations = this.iterations != null ? this.iterations : quick ? QUICK_ITERATIONS
                : DEFAULT_ITERATIONS;
        checkPositive("msgs", msgs, 1);
        checkPositive("iterations", iterations, 1);
        checkPositive("warmup", warmup, 0);
        checkPositive("capacity", capacity, 1);
        checkPositive("batch", batch, 1);
        if (latencySamples != null) {
            checkPositive("latency-samples", latencySamples, 0);
        }

        final List<Workloads.Entry> candidates = new ArrayList<>(Workloads.all());
        if (actors) {
            candidates.addAll(Workloads.actorRuntime());
        }
        final List<Workloads.Entry> entries = new ArrayList<>();
        for (Workloads.Entry e : candidates) {
            if (only == null || only.matcher(e.name()).find()) {
                entries.add(e);
            }
        }
        final List<Crowds.Row> crowdRows = crowds ? Crowds.select(n -> only == null || only.matcher(n).find())
                : List.of();
        final List<Streams.Row> streamRows = stream ? Streams.select(n -> only == null || only.matcher(n).find())
                : List.of();
        if (stream) {
            checkPositive("stream-windows", streamWindows, 1);
            checkPositive("stream-warmup-windows", streamWarmupWindows, 0);
            checkPositive("stream-window-ms", (int) Math.min(Integer.MAX_VALUE, streamWindowMs), 1);
            checkPositive("msgs", msgs, 4); // each of the four emitters cycles through its own share
        }
        final int crowdIterations = this.crowdIterations != null ? this.crowdIterations : quick
                ? Crowds.QUICK_ITERATIONS : Crowds.DEFAULT_ITERATIONS;
        checkPositive("crowd-iterations", crowdIterations, 1);
        if (list) {
            for (Workloads.Entry e : Workloads.all()) {
                stdout.printf(Locale.ROOT, "%-42s %s%n", e.name(), e.description());
            }
            for (Workloads.Entry e : Workloads.actorRuntime()) {
                stdout.printf(Locale.ROOT, "%-42s %s (--actors)%n", e.name(), e.description());
            }
            for (Crowds.Row r : Crowds.all()) {
                stdout.printf(Locale.ROOT, "%-42s %s (--crowds)%n", r.name(), r.description());
            }
            for (Streams.Row r : Streams.all()) {
                stdout.printf(Locale.ROOT, "%-42s %s (--stream)%n", r.name(), r.description());
            }
            return 0;
        }
        final Placement placement = placement();
        if (entries.isEmpty() && crowdRows.isEmpty() && !streamRows.isEmpty()) {
            stdout.print(Report.header(new Report.Header(command(), jvm(), Runtime.getRuntime().availableProcessors(),
                    System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                            + System.getProperty("os.arch"), "stream rows only (--only matches no other row)", msgs,
                    capacity, batch, 0, streamWindows)));
            stdout.println(placementLine(placement));
            stdout.println();
            stdout.print(runStreams(streamRows, placement));
            stdout.flush();
            return 0;
        }
        if (entries.isEmpty() && !crowdRows.isEmpty()) {
            stdout.print(Report.header(new Report.Header(command(), jvm(), Runtime.getRuntime().availableProcessors(),
                    System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                            + System.getProperty("os.arch"), "crowd rows only (--only matches no other row)", msgs,
                    capacity, batch, 0, crowdIterations)));
            stdout.println();
            stdout.print(runCrowds(crowdRows, crowdIterations));
            stdout.flush();
            return 0;
        }
        if (entries.isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--only: " + only
                    + " matches no implementation (see --list" + (actors ? "" : "; the Pekko rows need --actors")
                    + (crowds ? "" : "; the crowd rows need --crowds")
                    + (stream ? "" : "; the stream rows need --stream") + ")");
        }

        final Report.Header header = new Report.Header(command(), jvm(), Runtime.getRuntime().availableProcessors(),
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"),
                String.format(Locale.ROOT, "msgs/iter=%d capacity=%d batch=%d warmup=%d iterations=%d "
                                + "implementations=%d, interleaved round-robin in one JVM, 1 producer + 1 consumer thread",
                        msgs, capacity, batch, warmup, iterations, entries.size())
                        + (nativeDir == null ? "" : "; then the out-of-process programs of " + nativeDir
                                + ", one after the other, with the same settings"),
                msgs, capacity, batch, warmup, iterations);
        stdout.print(Report.header(header));
        stdout.println(placementLine(placement));
        stdout.flush();

        final Integer[] payload = new Integer[msgs];
        for (int i = 0; i < msgs; i++) {
            payload[i] = i;
        }
        final DrivenExecutor consumerExecutor = new DrivenExecutor();
        final Workloads.Setup setup = new Workloads.Setup(capacity, batch, msgs, payload, consumerExecutor);
        final List<Workload> workloads = new ArrayList<>();
        final List<Measurement> measurements = new ArrayList<>();
        final List<ThreadCpu> rowThreads = new ArrayList<>();
        final long started = System.nanoTime();
        double pingStart;
        double pingEnd;
        final long gcCount0;
        final long gcMillis0;
        try (TwoThreadHarness harness = new TwoThreadHarness(placement)) {
            final Allocation allocation = Allocation.of(harness);
            pingStart = pingPong(harness);
            stdout.printf(Locale.ROOT, "Ping-pong: %.0f ns per cache-line round trip between the two threads%n%n",
                    pingStart);
            stdout.flush();
            for (Workloads.Entry e : entries) {
                final ThreadCpu threads = new ThreadCpu(placement);
                final Workload w = e.factory().apply(setup.with(threads));
                rowThreads.add(threads);
                harness.open(w);
                workloads.add(w);
                measurements.add(new Measurement(e, msgs));
            }
            try {
                rounds(harness, workloads, null, warmup, "warm-up", started, allocation);
                gcCount0 = gcCount();
                gcMillis0 = gcMillis();
                final long[] wakeups0 = new long[workloads.size()];
                final long[] cpu0 = new long[workloads.size()];
                final long[] rowCpu0 = new long[workloads.size()];
                for (int i = 0; i < workloads.size(); i++) {
                    wakeups0[i] = workloads.get(i).wakeups();
                    cpu0[i] = delivererCpu(harness, workloads.get(i));
                    // a delivering thread the row did not make (Pekko's dispatcher) counts as the row's own
                    final Thread deliverer = workloads.get(i).deliveringThread();
                    if (deliverer != null && deliverer != Thread.currentThread()
                            && deliverer != harness.consumerThread()) {
                        rowThreads.get(i).add(deliverer);
                    }
                    final String prefix = workloads.get(i).foreignThreadPrefix();
                    if (prefix != null) {
                        for (Thread t : Thread.getAllStackTraces().keySet()) {
                            if (t.getName().startsWith(prefix)) {
                                rowThreads.get(i).add(t);
                            }
                        }
                    }
                    rowCpu0[i] = rowThreads.get(i).cpuNanos();
                }
                rounds(harness, workloads, measurements, iterations, "measure", started, allocation);
                for (int i = 0; i < workloads.size(); i++) {
                    final Workload w = workloads.get(i);
                    final Measurement m = measurements.get(i);
                    final long wakeups = w.wakeups();
                    m.wakeups = wakeups < 0 ? -1L : wakeups - wakeups0[i];
                    final long cpu = delivererCpu(harness, w);
                    m.delivererCpuNanos = cpu < 0 || cpu0[i] < 0 ? -1L : cpu - cpu0[i];
                    m.deliveredOnProducer = w.deliveringThread() == Thread.currentThread();
                    final long rowCpu = rowThreads.get(i).cpuNanos();
                    m.rowThreadsCpuNanos = rowCpu < 0 || rowCpu0[i] < 0 ? -1L : rowCpu - rowCpu0[i];
                    m.rowThreads = rowThreads.get(i).threads().size();
                    m.harnessConsumerCounted = w.receivesOnHarnessConsumer();
                }
            } finally {
                for (int i = 0; i < workloads.size(); i++) {
                    measurements.get(i).stats = workloads.get(i).stats();
                    workloads.get(i).close();
                }
            }
            pingEnd = pingPong(harness);
        } finally {
            if (placement.pinned()) {
                Placement.unpinned().place(Placement.PRODUCER); // what runs next starts from this thread's mask
            }
        }
        if (nativeDir != null) {
            runNative(measurements, warmup, iterations);
        }
        final String gc = String.format(Locale.ROOT, "GC during the measured rounds: %d collections, %d ms; "
                        + "whole run %.1f s", gcCount() - gcCount0, gcMillis() - gcMillis0,
                (System.nanoTime() - started) / 1e9);
        final int samples = latencySamples != null ? latencySamples : quick ? QUICK_LATENCY_SAMPLES
                : DEFAULT_LATENCY_SAMPLES;
        String latency = null;
        if (samples > 0) {
            stderr.printf(Locale.ROOT, "[latency] %d lone messages per face%n", samples);
            final List<Latency.Result> results = Latency.run(capacity, samples, () -> {
                stderr.print(".");
                return true;
            });
            stderr.println();
            latency = Latency.table(results, samples);
        }
        final Report report = new Report(header, measurements, pingStart, pingEnd, gc);
        report.latency = latency;
        report.placement = placementLine(placement) + (placement.failure() == null ? ""
                : " Pinning failed for some threads (they ran unpinned): " + placement.failure());
        if (!crowdRows.isEmpty()) {
            report.crowds = runCrowds(crowdRows, crowdIterations);
        }
        if (!streamRows.isEmpty()) {
            report.streams = runStreams(streamRows, placement);
            report.streamsJson = streamsJson;
        }
        stdout.print(report.console());
        final List<Path> files = report.write(out);
        if (report.chartFailure() != null) {
            stderr.println("No chart (the results files are written): " + report.chartFailure());
        }
        stdout.println("Wrote " + files.stream().map(Path::toString).reduce((a, b) -> a + ", " + b).orElse(""));
        stdout.flush();
        return 0;
    }

    /** The placement {@code --pin} asks for, or unpinned (saying why on stdout when pinning is unavailable). */
    private Placement placement() {
        if (!pin) {
            return Placement.unpinned();
        }
        final String why = Affinity.unavailable();
        if (why != null) {
            stdout.println("pinning unavailable: " + why + "; running unpinned");
            return Placement.unpinned();
        }
        return Placement.pinned(Affinity.allowedCpus());
    }

    private static String placementLine(Placement p) {
        if (!p.pinned()) {
            return "Placement: unpinned (the OS scheduler places the threads; --pin pins them)";
        }
        final int cpus = Affinity.allowedCpus().length;
        return String.format(Locale.ROOT, "Placement: pinned (--pin) over the %d allowed CPUs %s: producer on CPU %d, "
                        + "receiver (harness consumer, or the row's executor / scheduler worker) on CPU %d, further "
                        + "emitters on CPUs %d, %d, %d%s. Latency and crowd sections run unpinned.", cpus,
                java.util.Arrays.toString(Affinity.allowedCpus()), p.cpuOf(Placement.PRODUCER),
                p.cpuOf(Placement.CONSUMER), p.cpuOf(Placement.emitter(1)), p.cpuOf(Placement.emitter(2)),
                p.cpuOf(Placement.emitter(3)), cpus < 5 ? " (fewer CPUs than the 4-emitter rows' 5 threads: "
                        + "round-robin, so some threads share a CPU)" : "");
    }

    /** Runs the stream rows ({@code --stream}) and returns their section. */
    private String runStreams(List<Streams.Row> rows, Placement placement) throws InterruptedException {
        final Integer[] payload = new Integer[msgs];
        for (int i = 0; i < msgs; i++) {
            payload[i] = i;
        }
        final long window = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(streamWindowMs);
        final List<Streams.Result> results = Streams.run(rows, capacity, payload, window, streamWarmupWindows,
                streamWindows, placement, stderr);
        streamsJson = Streams.json(results);
        final String failure = placement.failure();
        return Streams.table(results, window, streamWarmupWindows, streamWindows)
                + (failure == null ? "" : "pinning failed for some threads (they ran unpinned): " + failure + "\n");
    }

    /** Runs the crowd rows ({@code --crowds}) and returns their section. */
    private String runCrowds(List<Crowds.Row> rows, int iterations) throws InterruptedException {
        return Crowds.run(rows, Math.max(1, iterations / 4), iterations, batch, stderr);
    }

    /** Runs the programs of {@code --native} one after the other and adds their rows. */
    private void runNative(List<Measurement> measurements, int warmup, int iterations) throws Exception {
        final List<String> args = List.of("--msgs", Integer.toString(msgs), "--capacity", Integer.toString(capacity),
                "--warmup", Integer.toString(warmup), "--iterations", Integer.toString(iterations));
        for (NativeComparators.Program p : NativeComparators.PROGRAMS) {
            final Path binary = p.binary(nativeDir);
            if (!java.nio.file.Files.isExecutable(binary) && !NativeComparators.build(nativeDir, p, stderr)) {
                stdout.println("skipped: " + p.name() + ": not built, and bench/native/run.sh --build-only could not "
                        + "build it here (its reason is above; as root, run.sh installs the missing toolchain)");
                continue;
            }
            stderr.println("[native] " + binary + " " + String.join(" ", args));
            for (NativeComparators.Row row : NativeComparators.run(binary, args, stderr)) {
                if (row.msgs() != msgs || row.capacity() != capacity || row.warmup() != warmup
                        || row.iterations() != iterations) {
                    throw new IllegalStateException(row.name() + ": ran with other settings: msgs=" + row.msgs()
                            + " capacity=" + row.capacity() + " warmup=" + row.warmup() + " iterations="
                            + row.iterations());
                }
                final Measurement m = new Measurement(new Workloads.Entry(row.name(), row.description(), false,
                        null), msgs);
                for (long nanos : row.nanos()) {
                    m.record(nanos, -1L, -1L, -1L);
                }
                m.outOfProcess = row.toolchain() + "; " + row.library();
                measurements.add(m);
            }
        }
    }

    /** Runs {@code count} rounds of one iteration per workload, in registry order. */
    private void rounds(TwoThreadHarness harness, List<Workload> workloads, List<Measurement> into, int count,
            String phase, long started, Allocation allocation) throws Exception {
        final int step = Math.max(1, count / 10);
        for (int r = 0; r < count; r++) {
            for (int i = 0; i < workloads.size(); i++) {
                final Workload w = workloads.get(i);
                if (into == null) {
                    harness.iterate(w, msgs);
                } else {
                    final long before = allocation.total();
                    final long nanos = harness.iterate(w, msgs);
                    final long after = allocation.total();
                    into.get(i).record(nanos, before < 0 ? -1 : after - before, harness.lastConsumerCpuNanos(),
                            harness.lastProducerCpuNanos());
                }
            }
            if ((r + 1) % step == 0 || r + 1 == count) {
                stderr.printf(Locale.ROOT, "[%s] %d/%d rounds of %d implementations (%.1f s)%n", phase, r + 1, count,
                        workloads.size(), (System.nanoTime() - started) / 1e9);
            }
        }
    }

    /**
     * @return the cumulative CPU time of {@code w}'s own delivering thread (an executor's or a scheduler's, used
     *         by this row alone), or -1 if it has none (the harness threads receive) or the JVM cannot tell
     */
    private static long delivererCpu(TwoThreadHarness harness, Workload w) {
        final Thread t = w.deliveringThread();
        if (t == null || t == Thread.currentThread() || t == harness.consumerThread()) {
            return -1L;
        }
        final java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        if (!bean.isThreadCpuTimeSupported() || !bean.isThreadCpuTimeEnabled()) {
            return -1L;
        }
        return bean.getThreadCpuTime(t.getId());
    }

    private static double pingPong(TwoThreadHarness harness) throws Exception {
        harness.pingPongNanos(PING_PONG_ROUNDS); // warm-up
        final double[] samples = new double[PING_PONG_SAMPLES];
        for (int i = 0; i < samples.length; i++) {
            samples[i] = harness.pingPongNanos(PING_PONG_ROUNDS);
        }
        Arrays.sort(samples);
        return samples[samples.length / 2];
    }

    private String command() {
        return "java -jar bench/target/mailbox-bench.jar" + (args.length == 0 ? "" : " " + String.join(" ", args));
    }

    private static String jvm() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version") + " ("
                + System.getProperty("java.vm.vendor") + ", Java " + System.getProperty("java.version") + ")";
    }

    private void checkPositive(String name, int value, int min) {
        if (value < min) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--" + name + ": " + value + " (expected: >= " + min + ")");
        }
    }

    private static long gcCount() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    private static long gcMillis() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionTime());
        }
        return n;
    }

    /** Bytes allocated so far by the producer and the consumer thread (HotSpot's per-thread counters). */
    static final class Allocation {
        private final com.sun.management.ThreadMXBean bean;
        private final long consumerId;

        private Allocation(com.sun.management.ThreadMXBean bean, long consumerId) {
            this.bean = bean;
            this.consumerId = consumerId;
        }

        static Allocation of(TwoThreadHarness harness) {
            if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean bean
                    && bean.isThreadAllocatedMemorySupported() && bean.isThreadAllocatedMemoryEnabled()) {
                return new Allocation(bean, harness.consumerId());
            }
            return new Allocation(null, -1L);
        }

        /** @return the bytes allocated by the two harness threads, or -1 if the JVM cannot tell */
        long total() {
            return bean == null ? -1L : bean.getCurrentThreadAllocatedBytes() + bean.getThreadAllocatedBytes(consumerId);
        }
    }
}
