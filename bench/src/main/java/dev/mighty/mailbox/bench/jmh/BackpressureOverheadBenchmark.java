package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.bench.DrivenExecutor;
import dev.mighty.mailbox.bench.Faces;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
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
 * <p>The publisher rows drain on the benchmark thread through the publisher's {@code Executor} constructor (a
 * {@link DrivenExecutor} that thread drives), exactly as the sink row's {@code publishOn} does, so every row is
 * one producer thread and one consumer thread.
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

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object publisher_unbounded_demand(PublisherState s, Control control) {
        return ComparatorThroughputBenchmark.delivered(s, s.executor, s.subscriber, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object publisher_demand_256(PublisherDemand256State s, Control control) {
        return ComparatorThroughputBenchmark.delivered(s, s.executor, s.subscriber, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object flux_fused_publish_on(FluxState s, Control control) {
        return ComparatorThroughputBenchmark.delivered(s, s.executor, s.subscriber, control);
    }

    /** {@link Faces#fusedFlux} on the benchmark thread, no policy: ASYNC-fused, publishOn polls the mailbox. */
    @State(Scope.Thread)
    public static class FluxState extends PublisherState {
        Scheduler scheduler;

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            subscriber = newSubscriber();
            scheduler = Schedulers.fromExecutor(executor);
            Faces.fusedFlux(mailbox, scheduler, null).subscribe(subscriber);
            executor.runPending();
        }

        @Override
        protected void close() {
            super.close();
            scheduler.dispose();
        }
    }

    /** {@link Faces#publisherOn} over an MPSC mailbox, draining on the benchmark thread, unbounded demand. */
    @State(Scope.Thread)
    public static class PublisherState extends OneToOneState {
        final DrivenExecutor executor = new DrivenExecutor();
        CountingSubscriber subscriber;
        Mailbox<Object> mailbox;

        CountingSubscriber newSubscriber() {
            return new CountingSubscriber();
        }

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            subscriber = newSubscriber();
            Faces.publisherOn(mailbox, executor, subscriber);
            executor.runPending();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final Mailbox<Object> mailbox = this.mailbox;
            for (int i = 0; i < n; i++) {
                mailbox.send(MESSAGE);
            }
        }

        @Override
        protected int drainNow() {
            final long before = subscriber.count;
            executor.runPending();
            return (int) (subscriber.count - before);
        }

        @Override
        protected void close() {
            mailbox.close();
            executor.runPending();
        }
    }

    /** As {@link PublisherState}, with a subscriber that requests 256 up front and 256 more per 256 received. */
    @State(Scope.Thread)
    public static class PublisherDemand256State extends PublisherState {
        @Override
        CountingSubscriber newSubscriber() {
            return new CountingSubscriber(256);
        }
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
