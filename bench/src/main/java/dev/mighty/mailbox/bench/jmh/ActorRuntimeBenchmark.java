package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.bench.PekkoInbox;
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

import static dev.mighty.mailbox.bench.jmh.OneToOneState.CAPACITY;
import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

/**
 * The JVM's actor runtime on the reference workload (1 producer thread, 10,000 messages per operation, scored
 * per message): an Apache Pekko typed actor on the default dispatcher and the default, unbounded mailbox
 * ({@code tell}: no backpressure), and Pekko Streams' {@code Source.queue(1024)} into {@code Sink.foreach}
 * ({@code offer}, waiting while it answers {@code dropped}); see {@link PekkoInbox}. Baselines in the same
 * run: the MPSC mailbox's batched receive and the fused {@code MailboxFlux} into {@code publishOn}.
 *
 * <p>Pekko consumes on its own dispatcher's threads; the benchmark thread waits until the actor has received the
 * operation's last message: 100 spins, then parks of {@value #WAIT_PARK_NANOS} ns, so that it leaves the two
 * cores to the producer and Pekko's thread (a spinning and yielding third thread made the rows several times
 * slower and far noisier). A park's late wake-up adds at most a few percent to an operation of 10,000 messages. The producer sends the boxed integers {@code 0 .. n-1};
 * the actor checks that every batch arrives exactly in that order, and a mismatch fails the operation.
 *
 * <p>Goals (issue #15): the mailbox &gt;= 3x faster than the Pekko actor; the fused Flux faster than
 * {@code Source.queue}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class ActorRuntimeBenchmark {
    /** The benchmark thread's wait for the Pekko side: one park, in nanoseconds. */
    static final long WAIT_PARK_NANOS = 20_000;

    /** A Pekko inbox fed by the producer thread; the benchmark thread counts completed, checked batches. */
    public abstract static class PekkoState extends OneToOneState {
        /** Message i is {@code PAYLOAD[i]}: allocated once, as the CLI's rows do. */
        static final Integer[] PAYLOAD = new Integer[MESSAGES];

        static {
            for (int i = 0; i < MESSAGES; i++) {
                PAYLOAD[i] = i;
            }
        }

        PekkoInbox inbox;
        /** Benchmark thread only: the batches already counted as received. */
        int accounted;

        abstract PekkoInbox newInbox();

        @Override
        protected void open() {
            inbox = newInbox();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            inbox.send(PAYLOAD, n, OneToOneState::producerIdle);
        }

        /** @return the messages of the batches completed since the last call; throws on a failed check */
        @Override
        protected int drainNow() {
            inbox.checkFailure();
            final int done = inbox.completedBatches();
            final int batches = done - accounted;
            accounted = done;
            return batches * MESSAGES;
        }

        @Override
        protected void close() {
            inbox.close();
        }
    }

    @State(Scope.Thread)
    public static class PekkoActor extends PekkoState {
        @Override
        PekkoInbox newInbox() {
            return PekkoInbox.actor("jmh-pekko-actor", MESSAGES);
        }
    }

    @State(Scope.Thread)
    public static class PekkoSourceQueue extends PekkoState {
        @Override
        PekkoInbox newInbox() {
            return PekkoInbox.sourceQueue("jmh-pekko-source-queue", CAPACITY, MESSAGES);
        }
    }

    // ------------------------------------------------------------------ baselines

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object mailbox_batched_recv(MailboxThroughputBenchmark.MpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object flux_fused_publish_on(BackpressureOverheadBenchmark.FluxState s, Control control) {
        return ComparatorThroughputBenchmark.delivered(s, s.executor, s.subscriber, control);
    }

    // ------------------------------------------------------------------ Pekko

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public int pekko_actor_tell(PekkoActor s, Control control) {
        return delivered(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public int pekko_source_queue_offer(PekkoSourceQueue s, Control control) {
        return delivered(s, control);
    }

    /** Requests a batch and waits until the Pekko side has received (and checked) all of it. */
    static int delivered(PekkoState s, Control control) {
        s.request();
        final int target = s.accounted + 1;
        for (int spins = 0; s.inbox.completedBatches() < target; spins++) {
            if (spins < 100) {
                Thread.onSpinWait();
            } else if (control.stopMeasurement) {
                break;
            } else {
                LockSupport.parkNanos(WAIT_PARK_NANOS);
            }
        }
        s.received(s.drainNow());
        return s.accounted;
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar ActorRuntimeBenchmark
     *   java -jar bench/target/benchmarks.jar ActorRuntimeBenchmark -wi 3 -i 3 -w 1s -r 1s
     *
     * Scores are ns per message.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(ActorRuntimeBenchmark.class.getSimpleName())
                .build()).run();
    }
}
