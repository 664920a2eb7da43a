package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Steady-state allocation of the zero-garbage paths, counted (not timed) with
 * {@link com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes()}: one thread sends and receives in
 * a loop, first to warm up (so the JIT has compiled the paths), then {@value #MESSAGES} messages measured.
 * The budget is {@value #BUDGET_BYTES} bytes for the whole measured run, i.e. 0 bytes per message: a path
 * that allocated 8 bytes per message would exceed it 800-fold.
 *
 * <p>A measurement may catch a one-off allocation (a late deoptimization, a class loaded on first use), so
 * it is repeated up to {@value #ATTEMPTS} times and the smallest figure is judged. The payload checks in the
 * loops use preallocated arrays, so they allocate nothing themselves.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AllocationTest {
    private static final int MESSAGES = 100_000;
    private static final int WARMUP_MESSAGES = 300_000;
    private static final int ATTEMPTS = 3;
    private static final long BUDGET_BYTES = 1024;
    private static final int BATCH = 32;

    private static com.sun.management.ThreadMXBean threads;

    @BeforeAll
    static void enableAllocationCounting() {
        final ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        assumeTrue(bean instanceof com.sun.management.ThreadMXBean, "no per-thread allocation counter");
        threads = (com.sun.management.ThreadMXBean) bean;
        assumeTrue(threads.isThreadAllocatedMemorySupported(), "no per-thread allocation counter");
        threads.setThreadAllocatedMemoryEnabled(true);
    }

    /** Sends and receives {@code messages} messages on the calling thread. */
    @FunctionalInterface
    private interface Loop {
        void run(int messages) throws InterruptedException;
    }

    /** @return the smallest number of bytes a measured run of {@code loop} allocated, after a warm-up */
    private static long allocatedBytes(Loop loop) throws InterruptedException {
        loop.run(WARMUP_MESSAGES);
        long smallest = Long.MAX_VALUE;
        for (int attempt = 0; attempt < ATTEMPTS && smallest >= BUDGET_BYTES; attempt++) {
            final long before = threads.getCurrentThreadAllocatedBytes();
            loop.run(MESSAGES);
            smallest = Math.min(smallest, threads.getCurrentThreadAllocatedBytes() - before);
        }
        return smallest;
    }

    // ------------------------------------------------------------------ references

    /** A sink allocated once: checks it gets the preallocated messages back, in order. */
    private static final class CheckingSink implements Consumer<Object> {
        private final Object[] expected;
        private int next;

        CheckingSink(Object[] expected) {
            this.expected = expected;
        }

        @Override
        public void accept(Object m) {
            if (m != expected[next]) {
                throw new AssertionError("out of order at " + next);
            }
            next = (next + 1) % expected.length;
        }
    }

    private static Object[] messages() {
        final Object[] messages = new Object[BATCH];
        for (int i = 0; i < BATCH; i++) {
            messages[i] = new Object();
        }
        return messages;
    }

    private static long trySendTryRecvMany(Mailbox<Object> mb) throws InterruptedException {
        final Object[] messages = messages();
        final CheckingSink sink = new CheckingSink(messages);
        return allocatedBytes(count -> {
            for (int done = 0; done < count; done += BATCH) {
                for (Object m : messages) {
                    if (!mb.trySend(m)) {
                        throw new AssertionError("full");
                    }
                }
                if (mb.tryRecvMany(sink, BATCH) != BATCH) {
                    throw new AssertionError("short batch");
                }
            }
        });
    }

    @Test
    void shouldAllocateNothingPerMessageWhenMpscTrySendAndTryRecvMany() throws InterruptedException {
        final Mailbox<Object> mb = Mailboxes.bounded(1024);
        assertThat(trySendTryRecvMany(mb)).as("bytes for %d messages", MESSAGES).isLessThan(BUDGET_BYTES);
    }

    @Test
    void shouldAllocateNothingPerMessageWhenSpscTrySendAndTryRecvMany() throws InterruptedException {
        final Mailbox<Object> mb = Mailboxes.builder().capacity(1024).singleProducer().build();
        assertThat(trySendTryRecvMany(mb)).as("bytes for %d messages", MESSAGES).isLessThan(BUDGET_BYTES);
    }

    @Test
    void shouldAllocateNothingPerMessageWhenSendAndRecvManyFindRoomAndData() throws InterruptedException {
        final Mailbox<Object> mb = Mailboxes.bounded(1024);
        final Object[] messages = messages();
        final CheckingSink sink = new CheckingSink(messages);
        final long bytes = allocatedBytes(count -> {
            for (int done = 0; done < count; done += BATCH) {
                for (Object m : messages) {
                    mb.send(m);
                }
                if (mb.recvMany(sink, BATCH) != BATCH) {
                    throw new AssertionError("short batch");
                }
            }
        });
        assertThat(bytes).as("bytes for %d messages", MESSAGES).isLessThan(BUDGET_BYTES);
    }

    // ------------------------------------------------------------------ batched sends

    /** Runs of {@value #BATCH}: {@code trySendMany} from an array or an {@code ArrayList}, {@code sendMany}. */
    private static long batchedSendRecvMany(Mailbox<Object> mb, int form) throws InterruptedException {
        final Object[] messages = messages();
        final List<Object> list = new ArrayList<>(Arrays.asList(messages));
        final CheckingSink sink = new CheckingSink(messages);
        return allocatedBytes(count -> {
            for (int done = 0; done < count; done += BATCH) {
                final int n = switch (form) {
                    case 0 -> mb.trySendMany(messages, 0, BATCH);
                    case 1 -> mb.trySendMany(list, 0, BATCH);
                    default -> mb.sendMany(list);
                };
                if (n != BATCH) {
                    throw new AssertionError("short run: " + n);
                }
                if (mb.recvMany(sink, BATCH) != BATCH) {
                    throw new AssertionError("short batch");
                }
            }
        });
    }

    @ParameterizedTest(name = "form {0}")
    @ValueSource(ints = {0, 1, 2})
    void shouldAllocateNothingPerMessageWhenMpscSendsRuns(int form) throws InterruptedException {
        final Mailbox<Object> mb = Mailboxes.bounded(1024);
        assertThat(batchedSendRecvMany(mb, form)).as("bytes for %d messages", MESSAGES).isLessThan(BUDGET_BYTES);
    }

    @ParameterizedTest(name = "form {0}")
    @ValueSource(ints = {0, 1, 2})
    void shouldAllocateNothingPerMessageWhenSpscSendsRuns(int form) throws InterruptedException {
        final Mailbox<Object> mb = Mailboxes.builder().capacity(1024).singleProducer().build();
        assertThat(batchedSendRecvMany(mb, form)).as("bytes for %d messages", MESSAGES).isLessThan(BUDGET_BYTES);
    }

    // ------------------------------------------------------------------ frames

    /** A handler allocated once: copies each payload into a preallocated array and checks it. */
    private static final class CheckingHandler implements FrameHandler {
        private final byte[] expected;
        private final byte[] copy;
        private long nextId;

        CheckingHandler(byte[] expected) {
            this.expected = expected;
            this.copy = new byte[expected.length];
        }

        @Override
        public void onFrame(FrameView frame) {
            if (frame.correlationId() != nextId++ || frame.kind() != 7 || frame.payloadLength() != expected.length) {
                throw new AssertionError("unexpected frame " + frame);
            }
            frame.getPayload(copy, 0);
            if (copy[0] != expected[0] || copy[copy.length - 1] != expected[expected.length - 1]) {
                throw new AssertionError("payload differs");
            }
        }
    }

    private static byte[] payload(int size) {
        final byte[] payload = new byte[size];
        for (int i = 0; i < size; i++) {
            payload[i] = (byte) (i * 7 + 1);
        }
        return payload;
    }

    /** Inline (32 bytes) and spilled (200 bytes, the same size every time, so each slot reuses its buffer). */
    @ParameterizedTest(name = "{0}-byte payload")
    @ValueSource(ints = {32, FrameMailbox.INLINE_PAYLOAD, 200})
    void shouldAllocateNothingPerMessageWhenFrameTrySendAndTryRecvFrames(int size) throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(1024);
        final byte[] payload = payload(size);
        final ByteBuffer heap = ByteBuffer.wrap(payload);
        final ByteBuffer direct = ByteBuffer.allocateDirect(size).put(payload).flip();
        final CheckingHandler handler = new CheckingHandler(payload);
        final long[] id = {0};
        final long bytes = allocatedBytes(count -> {
            for (int done = 0; done < count; done += BATCH) {
                for (int i = 0; i < BATCH; i++) {
                    if (!fm.trySend(7, id[0]++, (i & 1) == 0 ? heap : direct)) {
                        throw new AssertionError("full");
                    }
                }
                if (fm.tryRecvFrames(handler, BATCH) != BATCH) {
                    throw new AssertionError("short batch");
                }
            }
        });
        assertThat(bytes).as("bytes for %d messages of %d bytes", MESSAGES, size).isLessThan(BUDGET_BYTES);
        assertThat(heap.position()).isZero();
        assertThat(direct.position()).isZero();
    }

    /** The batched frame send: a reused {@link FrameBatch}, refilled per run, sent by both forms. */
    @ParameterizedTest(name = "{0}-byte payload")
    @ValueSource(ints = {32, 200})
    void shouldAllocateNothingPerMessageWhenFramesAreSentInBatches(int size) throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(1024);
        final byte[] payload = payload(size);
        final ByteBuffer heap = ByteBuffer.wrap(payload);
        final ByteBuffer direct = ByteBuffer.allocateDirect(size).put(payload).flip();
        final FrameBatch batch = new FrameBatch(BATCH);
        final CheckingHandler handler = new CheckingHandler(payload);
        final long[] id = {0};
        final long bytes = allocatedBytes(count -> {
            for (int done = 0; done < count; done += BATCH) {
                batch.clear();
                for (int i = 0; i < BATCH; i++) {
                    batch.add(7, id[0]++, (i & 1) == 0 ? heap : direct);
                }
                final int n = (done & BATCH) == 0 ? fm.trySendMany(batch, 0, BATCH) : fm.sendMany(batch, 0, BATCH);
                if (n != BATCH) {
                    throw new AssertionError("short run: " + n);
                }
                if (fm.tryRecvFrames(handler, BATCH) != BATCH) {
                    throw new AssertionError("short batch");
                }
            }
        });
        assertThat(bytes).as("bytes for %d messages of %d bytes", MESSAGES, size).isLessThan(BUDGET_BYTES);
    }

    @Test
    void shouldAllocateNothingPerMessageWhenFrameSendAndRecvFramesSpill() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(64);
        final byte[] payload = payload(1000);
        final ByteBuffer buffer = ByteBuffer.wrap(payload);
        final CheckingHandler handler = new CheckingHandler(payload);
        final long[] id = {0};
        final long bytes = allocatedBytes(count -> {
            for (int done = 0; done < count; done += BATCH) {
                for (int i = 0; i < BATCH; i++) {
                    fm.send(7, id[0]++, buffer);
                }
                if (fm.recvFrames(handler, BATCH) != BATCH) {
                    throw new AssertionError("short batch");
                }
            }
        });
        assertThat(bytes).as("bytes for %d messages of 1000 bytes", MESSAGES).isLessThan(BUDGET_BYTES);
    }

    /** The instrument can fail: the {@code Mailbox<MessageFrame>} face allocates a frame per message. */
    @Test
    void shouldCountAllocationWhenFramesReceivedAsMessageFrames() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(64);
        final MessageFrame frame = MessageFrame.of(7, 0L, payload(16));
        final long bytes = allocatedBytes(count -> {
            for (int done = 0; done < count; done++) {
                if (!fm.trySend(frame) || fm.tryRecv() == null) {
                    throw new AssertionError("lost");
                }
            }
        });
        assertThat(bytes).as("a MessageFrame and its payload array per message").isGreaterThan(16L * MESSAGES);
    }
}
