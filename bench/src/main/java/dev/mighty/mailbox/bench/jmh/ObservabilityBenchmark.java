package dev.mighty.mailbox.bench.jmh;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import jdk.jfr.Recording;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;

import dev.mighty.mailbox.MailboxStats;

/**
 * What observing a mailbox costs on the reference workload (1 producer, 1 consumer, capacity 1024, 10,000
 * messages per operation, batched {@code tryRecvMany} spinning then yielding while empty: the loop of
 * {@code ConsumerCheckBenchmark.checked}, chosen when the parking {@code recvMany} was bimodal), issue #7:
 * <ul>
 *   <li>{@code none}: nobody looks; JFR never started in the fork.</li>
 *   <li>{@code stats}: a monitoring thread calls {@code mailbox.stats()} every millisecond (a metrics scrape
 *       is seconds apart: this is a thousand times more often). The counters behind the figures are kept
 *       whether anyone reads them or not (ring indices, failure-path counters, the sampled high-water mark),
 *       so reading them is the only part of "statistics on" that can be switched off.</li>
 *   <li>{@code jfr}: a JFR recording runs with the mailbox's three events enabled ({@code ProducerParked} at
 *       its 10 ms threshold, {@code ConsumerStalled} every 100 ms, {@code ClosedExceptionally}).</li>
 * </ul>
 * Goals: {@code stats} within 3% of {@code none}, {@code jfr} not measurably slower, all 0 B/msg on the
 * producer and consumer ({@code -prof gc} counts the monitoring thread's {@code stats()} records too: one per
 * millisecond).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class ObservabilityBenchmark {
    /** How often the {@code stats} observer reads the figures. */
    static final long STATS_PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    @State(Scope.Thread)
    public static class Observed extends ConsumerCheckBenchmark.Mpsc {
        @Param({"none", "stats", "jfr"})
        String observer;

        private Recording recording;
        private Thread reader;
        private volatile boolean stopped;
        /** Keeps the reader's snapshots alive as far as the JIT can tell. */
        volatile MailboxStats last;

        /** The recording starts before the mailbox is built, so the stall check watches it from the start. */
        @Override
        protected void open() {
            switch (observer) {
                case "none":
                    super.open();
                    break;
                case "stats":
                    super.open();
                    reader = new Thread(this::readStats, "stats-reader");
                    reader.setDaemon(true);
                    reader.start();
                    break;
                case "jfr":
                    recording = new Recording();
                    recording.enable("dev.mighty.mailbox.ProducerParked").withThreshold(Duration.ofMillis(10));
                    recording.enable("dev.mighty.mailbox.ConsumerStalled").withPeriod(Duration.ofMillis(100));
                    recording.enable("dev.mighty.mailbox.ClosedExceptionally");
                    recording.setToDisk(false);
                    recording.start();
                    super.open();
                    break;
                default:
                    throw new IllegalArgumentException("observer: " + observer + " (expected: none, stats, jfr)");
            }
        }

        private void readStats() {
            while (!stopped) {
                last = mailbox.stats();
                LockSupport.parkNanos(STATS_PERIOD_NANOS);
            }
        }

        @TearDown(Level.Trial)
        public void stopObserver() throws InterruptedException {
            stopped = true;
            if (reader != null) {
                reader.join(TimeUnit.SECONDS.toMillis(10));
            }
            if (recording != null) {
                recording.close();
            }
        }
    }

    @Benchmark
    @OperationsPerInvocation(OneToOneState.MESSAGES)
    public Object batched_recv_empty_payload(Observed s, Control control) {
        return ConsumerCheckBenchmark.consume(s, control, true);
    }

    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(ObservabilityBenchmark.class.getSimpleName())
                .addProfiler("gc")
                .build()).run();
    }
}
