package dev.mighty.mailbox.bench.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.bench.AgronaFrameRing;
import dev.mighty.mailbox.bench.FrameRuns;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
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

import static dev.mighty.mailbox.bench.jmh.OneToOneState.CAPACITY;
import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

/**
 * The slab path of {@link FrameMailbox}: payloads that fit the slot's 48 inline bytes ({@code INLINE_32}) and
 * payloads that go to the slot's reused spill buffer ({@code SPILL_256}), sent with the zero-garbage
 * {@code trySend(kind, id, ByteBuffer)} and received with {@code recvFrames} through the reused
 * {@code FrameView}. {@code mailbox_batched_recv} (an object {@code Mailbox}, no payload copy) is the raw
 * baseline; {@code message_frame_objects} is the same slab used through {@code Mailbox<MessageFrame>}, which
 * allocates a frame per received message (compare {@code gc.alloc.rate.norm} with {@code -prof gc}).
 *
 * <p>The {@code *_spin} methods receive with a consumer that never parks: {@code tryRecvFrames} /
 * {@code tryRecvMany} / {@code ArrayBlockingQueue.drainTo} in a loop that spins ({@link Thread#onSpinWait()}), then
 * yields, on an empty call ({@link OneToOneState#stalled}). They are the spinning-consumer comparison of issue 22:
 * {@code frames_spin} (payload {@code INLINE_32}) against {@code mailbox_spin} (the raw mailbox, same consumer
 * loop) and {@code abq_spin}, in one run; {@code frames_batch_spin} is {@code frames_spin} with the producer sending
 * {@link FrameBatch} runs of 32. The parking methods ({@code frames_recv_frames},
 * {@code mailbox_batched_recv}) wait in the library's own back-off, then park. {@code agrona_ring_spin} is Agrona's
 * {@code ManyToOneRingBuffer} / {@code OneToOneRingBuffer} ({@code -p ring=...}) carrying the same 32-byte payload
 * under the same spinning consumer ({@link AgronaFrameRing}, the wiring the CLI's Agrona rows use); its forks get
 * {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED} (Agrona 2.x on JDK 17).
 *
 * <p>Goals: {@code frames_recv_frames} with {@code INLINE_32} &lt;= 2x {@code mailbox_batched_recv} of the same
 * run, {@code SPILL_256} &lt;= 3x; {@code frames_spin} {@code INLINE_32} &lt;= 2x {@code mailbox_spin} and below
 * {@code abq_spin}; error &lt;= 30% of the mean over 3 forks ({@code -f 3}); 0 B/msg on the
 * {@code ByteBuffer}/{@code FrameView} path.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class FramePayloadBenchmark {
    static final int KIND = 7;

    /** Payload sizes: around the 48-byte inline limit of a 64-byte slot. */
    public enum PayloadSize {
        EMPTY(0), INLINE_32(32), SPILL_256(256);

        final int bytes;

        PayloadSize(int bytes) {
            this.bytes = bytes;
        }
    }

    @State(Scope.Thread)
    public static class Frames extends FrameMailboxState {
        @Param
        PayloadSize payload;

        ByteBuffer buffer;

        @Override
        protected void open() {
            mailbox = Mailboxes.frames(CAPACITY);
            buffer = ByteBuffer.allocate(payload.bytes);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final FrameMailbox mailbox = this.mailbox;
            final ByteBuffer buffer = this.buffer;
            for (int i = 0; i < n; i++) {
                if (!mailbox.trySend(KIND, i, buffer)) {
                    mailbox.send(KIND, i, buffer);
                }
            }
        }

        @Override
        protected int drainNow() {
            return mailbox.tryRecvFrames(sink, Integer.MAX_VALUE);
        }
    }

    /** The producer sends in {@link FrameBatch} runs of {@value #RUN}: one claim per run instead of one per frame. */
    @State(Scope.Thread)
    public static class FrameRunState extends Frames {
        static final int RUN = 32;
        final FrameBatch run = new FrameBatch(RUN);

        @Override
        protected void produce(int n) throws InterruptedException {
            FrameRuns.send(mailbox, run, KIND, buffer, n);
        }
    }

    /** Agrona's byte ring carrying the inline frame's 32 bytes, the id in the first 8 ({@link AgronaFrameRing}). */
    @State(Scope.Thread)
    public static class AgronaFrames extends OneToOneState implements MessageHandler {
        @Param
        AgronaFrameRing.Kind ring;

        AgronaFrameRing frames;
        long ids;

        @Override
        protected void open() {
            frames = new AgronaFrameRing(ring, CAPACITY, PayloadSize.INLINE_32.bytes);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final AgronaFrameRing frames = this.frames;
            for (int i = 0; i < n; i++) {
                frames.send(i, OneToOneState::producerIdle);
            }
        }

        @Override
        protected int drainNow() {
            return frames.receive(this, Integer.MAX_VALUE);
        }

        @Override
        public void onMessage(int msgTypeId, MutableDirectBuffer buffer, int index, int length) {
            ids += buffer.getLong(index);
        }
    }

    @State(Scope.Thread)
    public static class FrameObjects extends FrameMailboxState {
        @Param
        PayloadSize payload;

        MessageFrame frame;

        @Override
        protected void open() {
            mailbox = Mailboxes.frames(CAPACITY);
            frame = MessageFrame.of(KIND, 1L, new byte[payload.bytes]);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final FrameMailbox mailbox = this.mailbox;
            final MessageFrame frame = this.frame;
            for (int i = 0; i < n; i++) {
                mailbox.send(frame);
            }
        }

        @Override
        protected int drainNow() {
            return mailbox.tryRecvMany(sink, Integer.MAX_VALUE);
        }
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long frames_recv_frames(Frames s) throws InterruptedException {
        return FrameMailboxState.recvFrames(s);
    }

    /** The spinning consumer: {@code tryRecvFrames} in a loop, spinning then yielding on an empty call. */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long frames_spin(Frames s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.mailbox.tryRecvFrames(st.sink, max));
        return s.sink.frameIds;
    }

    /** As {@code frames_spin}, the producer sending {@link FrameBatch} runs of 32 ({@code trySendMany}). */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long frames_batch_spin(FrameRunState s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.mailbox.tryRecvFrames(st.sink, max));
        return s.sink.frameIds;
    }

    /** The raw mailbox (object slots, no payload copy) under the same spinning consumer: {@code tryRecvMany}. */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object mailbox_spin(MailboxThroughputBenchmark.MpscMailbox s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.mailbox.tryRecvMany(st.sink, max));
        return s.sink.last;
    }

    /** Agrona's byte rings, 32-byte records, under the same spinning consumer: {@code read(handler, max)}. */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long agrona_ring_spin(AgronaFrames s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.frames.receive(st, max));
        return s.ids;
    }

    /** {@code ArrayBlockingQueue} ({@code put}) under the same spinning consumer: {@code drainTo}. */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object abq_spin(ComparatorThroughputBenchmark.Abq s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.queue.drainTo(st.target, max));
        return s.target.last;
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object message_frame_objects(FrameObjects s) throws InterruptedException {
        s.request();
        final FrameMailbox mailbox = s.mailbox;
        final Sink sink = s.sink;
        int n = 0;
        while (n < MESSAGES) {
            n += mailbox.recvMany(sink, MESSAGES - n);
        }
        s.received(n);
        return sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object mailbox_batched_recv(MailboxThroughputBenchmark.MpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s); // the same state and loop as the reference pair
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar FramePayloadBenchmark -prof gc
     *   java -jar bench/target/benchmarks.jar FramePayloadBenchmark.frames_recv_frames -p payload=INLINE_32,SPILL_256
     *   java -jar bench/target/benchmarks.jar 'FramePayloadBenchmark.(frames|frames_batch|mailbox|abq)_spin' -p payload=INLINE_32 \
     *        -f 3 -wi 3 -i 5                                    # the spinning-consumer comparison (issue 22)
     *
     * Scores are ns per message; gc.alloc.rate.norm is bytes per message (the operation count includes
     * @OperationsPerInvocation).
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(FramePayloadBenchmark.class.getSimpleName())
                .addProfiler("gc")
                .build()).run();
    }
}
