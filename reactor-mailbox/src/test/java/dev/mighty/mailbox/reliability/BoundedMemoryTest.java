package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Overload: producers faster than the consumer for a sustained run. The mailbox never holds more than its
 * capacity ({@code admitted - received}, read by the consumer after each batch and sampled from another thread all
 * along), the run really was overloaded (the high-water mark reaches the capacity), and memory does not grow: the
 * retained heap is measured after {@code System.gc()} before and after, and on the zero-garbage paths the bytes
 * each thread allocates are counted ({@code ThreadMXBean.getCurrentThreadAllocatedBytes}: a count, not a timing).
 */
class BoundedMemoryTest {
    private static final int CAPACITY = 64;
    private static final long MiB = 1L << 20;

    @ParameterizedTest
    @EnumSource(Endpoint.Variant.class)
    void shouldHoldAtMostCapacityAndKeepTheHeapFlatWhenProducersOutrunTheConsumer(Endpoint.Variant variant) {
        overload(variant, 100_000);
    }

    @Tag("stress")
    @ParameterizedTest
    @EnumSource(Endpoint.Variant.class)
    void shouldHoldAtMostCapacityAndKeepTheHeapFlatWhenProducersOutrunTheConsumerForLong(Endpoint.Variant variant) {
        overload(variant, 3_000_000);
    }

    private static void overload(Endpoint.Variant variant, int perProducer) {
        assertTimeoutPreemptively(Duration.ofMinutes(perProducer > 1_000_000 ? 30 : 2), () -> {
            runOverload(variant, 20_000); // warm-up: classes loaded, code compiled, thread-locals created
            final long before = retainedHeap();
            final int sent = runOverload(variant, perProducer);
            final long after = retainedHeap();
            assertThat(after - before).as("retained heap growth after %d messages (before=%d, after=%d)", sent,
                    before, after).isLessThan(4 * MiB);
        });
    }

    /** Runs producers flat out against a slow consumer; returns the number of messages. */
    private static int runOverload(Endpoint.Variant variant, int perProducer) throws Exception {
        final int producers = variant.producers(3);
        final Endpoint endpoint = variant.create(CAPACITY);
        final Mailbox<?> mailbox = endpoint.mailbox();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final int producer = p;
            threads.add(new Thread(() -> {
                try {
                    for (long seq = 0; seq < perProducer; seq++) {
                        endpoint.send(producer, seq);
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }, "producer-" + p));
        }
        final SequenceChecker checker = new SequenceChecker(producers);
        final long total = (long) producers * perProducer;
        final AtomicLong overCapacity = new AtomicLong();
        final AtomicLong maxOccupancy = new AtomicLong();
        threads.add(new Thread(() -> {
            try {
                long sink = 0;
                while (checker.received() < total) {
                    endpoint.receive(checker, Endpoint.RECV_MANY, 4);
                    // exact here: only this thread moves 'received'
                    final MailboxStats stats = mailbox.stats();
                    occupancy(stats.admitted() - stats.received(), overCapacity, maxOccupancy);
                    for (int i = 0; i < 300; i++) { // the slow part of the consumer
                        sink += i * checker.received();
                    }
                }
                if (sink == 42) {
                    System.out.print("");
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }, "consumer"));
        final AtomicBoolean done = new AtomicBoolean();
        final AtomicLong samples = new AtomicLong();
        final Thread sampler = new Thread(() -> {
            boolean last = false;
            while (!last) {
                last = done.get(); // one sample after the parties are done, however late this thread ran
                // NOTE: not size(), stats().size() or the high-water mark: they are clamped to [0, capacity], so
                // they could never show an overfull mailbox. The raw counters can: admitted is read first, received
                // after it, and received only grows, so admitted - received <= capacity holds under every
                // interleaving (reading them the other way round, as one stats() does, would not).
                final long admitted = mailbox.stats().admitted();
                final long received = mailbox.stats().received();
                occupancy(admitted - received, overCapacity, maxOccupancy);
                samples.incrementAndGet();
                LockSupport.parkNanos(20_000L);
            }
        }, "sampler");
        sampler.start();
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        done.set(true);
        sampler.join();

        assertThat(failure.get()).isNull();
        final long[] sent = new long[producers];
        Arrays.fill(sent, perProducer);
        checker.assertExactlyOnceInOrder(sent);
        assertThat(samples.get()).as("size samples taken").isPositive();
        assertThat(overCapacity.get()).as("samples above capacity (admitted - received; highest %d)",
                maxOccupancy.get()).isZero();
        final MailboxStats stats = mailbox.stats();
        assertThat(stats.highWaterMark()).as("the mailbox was full: producers outran the consumer").isEqualTo(CAPACITY);
        assertThat(stats.size()).isZero();
        return (int) total;
    }

    private static void occupancy(long occupancy, AtomicLong overCapacity, AtomicLong maxOccupancy) {
        if (occupancy > CAPACITY) {
            overCapacity.incrementAndGet();
        }
        maxOccupancy.accumulateAndGet(occupancy, Math::max);
    }

    @Test
    void shouldAllocateNothingPerMessageOnTheFramePathUnderOverload() {
        assumeAllocationCounting();
        assertTimeoutPreemptively(Duration.ofMinutes(2), () -> {
            final FrameMailbox mailbox = Mailboxes.frames(CAPACITY);
            final FrameProducer producer = new FrameProducer(mailbox);
            final FrameConsumer consumer = new FrameConsumer(2);
            runZeroGarbage(mailbox, consumer, producer, 50_000); // warm-up
            final long[] allocated = runZeroGarbage(mailbox, consumer, producer, 300_000);
            final long total = Arrays.stream(allocated).sum();
            assertThat(total).as("bytes allocated by producers and consumer for 600,000 frames: %s",
                    Arrays.toString(allocated)).isLessThan(64 * 1024);
        });
    }

    @Test
    void shouldAllocateNothingPerMessageOnTheReferencePathUnderOverload() {
        assumeAllocationCounting();
        assertTimeoutPreemptively(Duration.ofMinutes(2), () -> {
            final Mailbox<Object> mailbox = Mailboxes.bounded(CAPACITY);
            final Object[][] messages = new Object[2][1024];
            for (Object[] row : messages) {
                for (int i = 0; i < row.length; i++) {
                    row[i] = new Object();
                }
            }
            final RefConsumer consumer = new RefConsumer(messages);
            final TrySend producer = (p, seq) -> mailbox.trySend(messages[p][(int) (seq & 1023)]);
            runZeroGarbage(mailbox, consumer, producer, 50_000); // warm-up
            final long[] allocated = runZeroGarbage(mailbox, consumer, producer, 300_000);
            final long total = Arrays.stream(allocated).sum();
            assertThat(total).as("bytes allocated for 600,000 messages: %s", Arrays.toString(allocated))
                    .isLessThan(64 * 1024);
        });
    }

    @FunctionalInterface
    interface TrySend {
        boolean trySend(int producer, long seq);
    }

    interface Drain {
        /** One non-blocking batch; returns how many were taken. */
        int drain();

        long received();

        void check(long perProducer);
    }

    static final class FrameProducer implements TrySend {
        private final FrameMailbox mailbox;
        private final ThreadLocal<ByteBuffer> buffers = ThreadLocal.withInitial(() -> ByteBuffer.allocate(128));

        FrameProducer(FrameMailbox mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        public boolean trySend(int producer, long seq) {
            return mailbox.trySend(producer, seq, SequenceChecker.payload(buffers.get(), producer, seq));
        }
    }

    /** Checks order and payload bytes without allocating. */
    static final class FrameConsumer implements Drain, FrameHandler {
        private final byte[] scratch = new byte[128];
        private final long[] next;
        private FrameMailbox mailbox;
        private long received;
        private long violations;

        FrameConsumer(int producers) {
            this.next = new long[producers];
        }

        void reset(FrameMailbox mailbox) {
            this.mailbox = mailbox;
            Arrays.fill(next, 0L);
            received = 0;
        }

        @Override
        public void onFrame(FrameView frame) {
            final int producer = frame.kind();
            final long seq = frame.correlationId();
            final int length = frame.getPayload(scratch, 0);
            if (seq != next[producer] || length != SequenceChecker.payloadLength(seq)) {
                violations++;
            }
            for (int i = 0; i < length; i++) {
                if (scratch[i] != SequenceChecker.payloadByte(producer, seq, i)) {
                    violations++;
                    break;
                }
            }
            next[producer] = seq + 1;
            received++;
        }

        @Override
        public int drain() {
            return mailbox.tryRecvFrames(this, 32);
        }

        @Override
        public long received() {
            return received;
        }

        @Override
        public void check(long perProducer) {
            assertThat(violations).as("order or payload violations").isZero();
            for (long n : next) {
                assertThat(n).isEqualTo(perProducer);
            }
        }
    }

    static final class RefConsumer implements Drain, java.util.function.Consumer<Object> {
        private final Object[][] messages;
        private final long[] next;
        private Mailbox<Object> mailbox;
        private long received;
        private long violations;

        RefConsumer(Object[][] messages) {
            this.messages = messages;
            this.next = new long[messages.length];
        }

        @Override
        public void accept(Object m) {
            // identity tells producer and position; the per-producer cursor tells order
            received++;
            for (int p = 0; p < messages.length; p++) {
                if (messages[p][(int) (next[p] & 1023)] == m) {
                    next[p]++;
                    return;
                }
            }
            violations++;
        }

        @Override
        public int drain() {
            return mailbox.tryRecvMany(this, 32);
        }

        @Override
        public long received() {
            return received;
        }

        @Override
        public void check(long perProducer) {
            assertThat(violations).as("order violations").isZero();
            for (long n : next) {
                assertThat(n).isEqualTo(perProducer);
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static long[] runZeroGarbage(Mailbox<?> mailbox, Drain consumer, TrySend producer, int perProducer)
            throws Exception {
        if (consumer instanceof FrameConsumer) {
            ((FrameConsumer) consumer).reset((FrameMailbox) mailbox);
        } else {
            final RefConsumer refs = (RefConsumer) consumer;
            refs.mailbox = (Mailbox<Object>) mailbox;
            Arrays.fill(refs.next, 0L);
            refs.received = 0;
        }
        final int producers = 2;
        final long[] allocated = new long[producers + 1];
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final int id = p;
            threads.add(new Thread(() -> {
                try {
                    final long start = allocatedBytes();
                    for (long seq = 0; seq < perProducer; ) {
                        if (producer.trySend(id, seq)) {
                            seq++;
                        } else {
                            Thread.yield(); // full: the consumer is slower; no parking, so no waiter nodes
                        }
                    }
                    allocated[id] = allocatedBytes() - start;
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }, "producer-" + p));
        }
        final long total = (long) producers * perProducer;
        threads.add(new Thread(() -> {
            try {
                final long start = allocatedBytes();
                long spin = 0;
                while (consumer.received() < total) {
                    if (consumer.drain() == 0) {
                        Thread.yield();
                    }
                    for (int i = 0; i < 50; i++) { // slower than the producers
                        spin += i;
                    }
                }
                allocated[producers] = allocatedBytes() - start + (spin == 42 ? 1 : 0);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }, "consumer"));
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        assertThat(failure.get()).isNull();
        consumer.check(perProducer);
        assertThat(mailbox.stats().highWaterMark()).isEqualTo(CAPACITY);
        return allocated;
    }

    private static void assumeAllocationCounting() {
        assumeTrue(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean
                && ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
                        .isThreadAllocatedMemorySupported(), "per-thread allocation counting not available");
    }

    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
                .getCurrentThreadAllocatedBytes();
    }

    /** Used heap after full collections, the smallest of three readings. */
    static long retainedHeap() throws InterruptedException {
        long min = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            min = Math.min(min, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }
        return min;
    }
}
