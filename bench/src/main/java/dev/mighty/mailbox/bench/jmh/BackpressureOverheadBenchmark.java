package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;

import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

/**
 * What backpressure costs on the reference workload (1 producer thread, 1 consumer, 10,000 messages per
 * operation, capacity 1024, scored per message): the raw mailbox's batched receive, the Reactive Streams
 * face ({@code MailboxPublisher}, unbounded demand and 256 at a time), the fused {@code MailboxFlux} into
 * {@code publishOn}, and Reactor's unicast sink into {@code publishOn} as the comparator a Reactor user has
 * today.
 *
 * <p>Goals (issue #5): publisher &lt;= 1.2x raw; fused Flux &gt;= 3x faster than the unicast sink.
 *
 * <p>TODO(lead, after merging the adapters): add {@code publisher_unbounded_demand},
 * {@code publisher_demand_256} and {@code flux_publish_on} here. They do not exist on the bench branch yet
 * ({@code dev.mighty.mailbox.rs.MailboxPublisher}, {@code dev.mighty.mailbox.reactor.MailboxFlux}). The
 * shape: a {@code OneToOneState} whose {@code open()} subscribes a {@link CountingSubscriber} (requesting
 * {@code Long.MAX_VALUE}, or 256 then 256 more per 256 received) to {@code new MailboxPublisher<>(mailbox)} or to
 * {@code MailboxFlux.from(mailbox).publishOn(Schedulers.fromExecutor(executor))}, whose {@code produce} is the
 * mailbox's {@code send}, and whose benchmark method is {@link ComparatorThroughputBenchmark#delivered} (or, if
 * the publisher delivers on the requesting or producing thread, a wait for the subscriber's count).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class BackpressureOverheadBenchmark {

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object raw_mailbox_batched_recv(MailboxThroughputBenchmark.MpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object reactor_unicast_sink_publish_on(ComparatorThroughputBenchmark.ReactorSink s, Control control) {
        return ComparatorThroughputBenchmark.delivered(s, s.executor, s.subscriber, control);
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar BackpressureOverheadBenchmark -prof gc
     *
     * Scores are ns per message; compare each row with raw_mailbox_batched_recv from the same run.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(BackpressureOverheadBenchmark.class.getSimpleName())
                .addProfiler("gc")
                .build()).run();
    }
}
