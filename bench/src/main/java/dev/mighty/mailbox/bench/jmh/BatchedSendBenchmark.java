package dev.mighty.mailbox.bench.jmh;

import static dev.mighty.mailbox.bench.jmh.OneToOneState.CAPACITY;
import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.SpscArrayQueue;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * A producer that has its messages in runs (a decoded socket read, a Kafka poll) hands them over with
 * {@code Mailbox.sendMany}: one claim (one CAS) per run of {@value #RUN} instead of one per message. The workload
 * of {@link MailboxThroughputBenchmark} (1 producer thread, the benchmark thread receiving with
 * {@code recvMany}/{@code drain}, 10,000 messages per operation through capacity 1024, scored per message), with
 * its comparators in the same class so one run compares them:
 * <ul>
 *     <li>{@code mpsc_send}: the per-message {@code send} into the MPSC mailbox
 *     (= {@code batched_recv_empty_payload});</li>
 *     <li>{@code jctools_spsc_offer}: the bare {@link SpscArrayQueue}, {@code offer} per message
 *     (= {@code jctools_spsc_drain});</li>
 *     <li>{@code jctools_spsc_fill}: the same ring fed runs of {@value #RUN} with its own batched producer API,
 *     {@code fill(supplier, limit)}, which stores the run and publishes the producer index once.</li>
 * </ul>
 * Goals (issue #14): {@code spsc_send_many} &lt;= 1.3x {@code jctools_spsc_offer}; {@code mpsc_send_many} &lt;= 0.7x
 * {@code mpsc_send}; 0 B/msg ({@code -prof gc}).
 *
 * <p>{@code local_*}: the same paths on one thread (send a run, receive it), for their instruction cost.
 *
 * <p>{@code frames}: whether a batched claim pays on the slab, where each frame's copy into its slot costs more
 * than the claim: the same preallocated 32-byte {@link MessageFrame}s sent one {@code send} at a time
 * ({@code EACH}) or {@code sendMany} runs of {@value #RUN} ({@code RUN}), received with {@code recvFrames}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class BatchedSendBenchmark {
    /** Messages per run: what the producer hands over at once. */
    public static final int RUN = 32;

    /** The producer sends {@code sendMany(run, 0, k)}, k = {@value #RUN} (an operation's last run may be shorter). */
    public abstract static class RunMailboxState extends MailboxThroughputBenchmark.MailboxState {
        final Object[] run = new Object[RUN];

        {
            Arrays.fill(run, MESSAGE);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final Mailbox<Object> mailbox = this.mailbox;
            final Object[] run = this.run;
            for (int sent = 0; sent < n; ) {
                sent += mailbox.sendMany(run, 0, Math.min(RUN, n - sent));
            }
        }
    }

    @State(Scope.Thread)
    public static class MpscRunMailbox extends RunMailboxState {
        @Override
        Mailbox<Object> newMailbox() {
            return Mailboxes.bounded(CAPACITY);
        }
    }

    @State(Scope.Thread)
    public static class SpscRunMailbox extends RunMailboxState {
        @Override
        Mailbox<Object> newMailbox() {
            return Mailboxes.builder().capacity(CAPACITY).singleProducer().build();
        }
    }

    /** The bare {@link SpscArrayQueue} fed with {@code fill}: up to {@value #RUN} per call; spin, then yield, when full. */
    @State(Scope.Thread)
    public static class SpscFillRing extends MailboxThroughputBenchmark.RingState {
        private static final MessagePassingQueue.Supplier<Object> SUPPLIER = () -> MESSAGE;

        @Override
        MessagePassingQueue<Object> newQueue() {
            return new SpscArrayQueue<>(CAPACITY);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final MessagePassingQueue<Object> queue = this.queue;
            for (int sent = 0, spins = 0; sent < n; ) {
                final int k = queue.fill(SUPPLIER, Math.min(RUN, n - sent));
                if (k == 0) {
                    spins = producerIdle(spins);
                } else {
                    sent += k;
                    spins = 0;
                }
            }
        }
    }

    /** How the frame producer hands frames over. */
    public enum FrameSend { EACH, RUN }

    /** A {@link FrameMailbox}: the producer sends preallocated 32-byte frames one at a time or in runs. */
    @State(Scope.Thread)
    public static class Frames extends FrameMailboxState {
        @Param
        FrameSend send;

        final MessageFrame[] run = new MessageFrame[RUN];

        @Override
        protected void open() {
            mailbox = Mailboxes.frames(CAPACITY);
            for (int i = 0; i < RUN; i++) {
                run[i] = MessageFrame.of(7, i, new byte[32]);
            }
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final FrameMailbox mailbox = this.mailbox;
            final MessageFrame[] run = this.run;
            if (send == FrameSend.RUN) {
                for (int sent = 0; sent < n; ) {
                    sent += mailbox.sendMany(run, 0, Math.min(RUN, n - sent));
                }
            } else {
                for (int i = 0; i < n; i++) {
                    mailbox.send(run[i & (RUN - 1)]);
                }
            }
        }

        @Override
        protected int drainNow() {
            return mailbox.tryRecvFrames(sink, Integer.MAX_VALUE);
        }
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long frames(Frames s) throws InterruptedException {
        return FrameMailboxState.recvFrames(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object mpsc_send(MailboxThroughputBenchmark.MpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object mpsc_send_many(MpscRunMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object spsc_send(MailboxThroughputBenchmark.SpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object spsc_send_many(SpscRunMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_spsc_offer(MailboxThroughputBenchmark.SpscRing s, Control control) {
        return MailboxThroughputBenchmark.drain(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_spsc_fill(SpscFillRing s, Control control) {
        return MailboxThroughputBenchmark.drain(s, control);
    }

    // ------------------------------------------------------------------ one thread: the instruction cost

    /**
     * Send a run of {@value #RUN} and receive it on the benchmark thread alone: no cache line crosses cores, so the
     * scores are the instruction cost of each path (what the CAS per message costs, and what one per run saves),
     * steady on a machine too busy for the cross-core rows.
     */
    @State(Scope.Thread)
    public static class Local {
        final Object[] run = new Object[RUN];
        final Sink sink = new Sink();
        final Mailbox<Object> mpsc = Mailboxes.bounded(CAPACITY);
        final Mailbox<Object> spsc = Mailboxes.builder().capacity(CAPACITY).singleProducer().build();
        final SpscArrayQueue<Object> ring = new SpscArrayQueue<>(CAPACITY);
        final MessagePassingQueue.Supplier<Object> supplier = () -> OneToOneState.MESSAGE;
        final FrameMailbox frames = Mailboxes.frames(CAPACITY);
        final MessageFrame[] frameRun = new MessageFrame[RUN];

        {
            Arrays.fill(run, OneToOneState.MESSAGE);
            for (int i = 0; i < RUN; i++) {
                frameRun[i] = MessageFrame.of(7, i, new byte[32]);
            }
        }
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public long local_frames_send(Local s) throws InterruptedException {
        final FrameMailbox frames = s.frames;
        for (MessageFrame f : s.frameRun) {
            frames.send(f);
        }
        frames.tryRecvFrames(s.sink, RUN);
        return s.sink.frameIds;
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public long local_frames_send_many(Local s) throws InterruptedException {
        s.frames.sendMany(s.frameRun, 0, RUN);
        s.frames.tryRecvFrames(s.sink, RUN);
        return s.sink.frameIds;
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public Object local_mpsc_send(Local s) throws InterruptedException {
        final Mailbox<Object> mailbox = s.mpsc;
        for (Object m : s.run) {
            mailbox.send(m);
        }
        mailbox.tryRecvMany(s.sink, RUN);
        return s.sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public Object local_mpsc_send_many(Local s) throws InterruptedException {
        s.mpsc.sendMany(s.run, 0, RUN);
        s.mpsc.tryRecvMany(s.sink, RUN);
        return s.sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public Object local_spsc_send_many(Local s) throws InterruptedException {
        s.spsc.sendMany(s.run, 0, RUN);
        s.spsc.tryRecvMany(s.sink, RUN);
        return s.sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public Object local_jctools_spsc_offer(Local s) {
        final SpscArrayQueue<Object> ring = s.ring;
        for (Object m : s.run) {
            ring.offer(m);
        }
        ring.drain(s.sink, RUN);
        return s.sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(RUN)
    public Object local_jctools_spsc_fill(Local s) {
        s.ring.fill(s.supplier, RUN);
        s.ring.drain(s.sink, RUN);
        return s.sink.last;
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar BatchedSendBenchmark
     *   java -jar bench/target/benchmarks.jar BatchedSendBenchmark -prof gc               # + gc.alloc.rate.norm
     *   java -jar bench/target/benchmarks.jar BatchedSendBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s   # a quick look
     *
     * Scores are ns per message (AverageTime over 10,000-message operations). Compare within one run only.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(BatchedSendBenchmark.class.getSimpleName())
                .build()).run();
    }
}
