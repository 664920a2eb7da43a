package dev.mighty.mailbox.bench.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
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
 * <p>Goals: {@code frames_recv_frames} with {@code INLINE_32} &lt;= 2x {@code mailbox_batched_recv} of the same
 * run, {@code SPILL_256} &lt;= 3x; error &lt;= 30% of the mean over 3 forks ({@code -f 3}); 0 B/msg on the
 * {@code ByteBuffer}/{@code FrameView} path.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
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
