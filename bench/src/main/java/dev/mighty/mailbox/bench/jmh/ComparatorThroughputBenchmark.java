package dev.mighty.mailbox.bench.jmh;

import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.TimeUnit;

import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.RingBuffer;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.bench.BlockingConsumerRing;
import dev.mighty.mailbox.bench.DrivenExecutor;
import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.bench.ParkingRing;
import dev.mighty.mailbox.bench.ParkingSpscRing;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.OneToOneConcurrentArrayQueue;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
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
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import static dev.mighty.mailbox.bench.jmh.OneToOneState.CAPACITY;
import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

/**
 * The channels a Java user would pick instead of the mailbox, on the reference workload (1 producer thread,
 * 1 consumer, 10,000 messages per operation, capacity 1024, scored per message), with the MPSC mailbox's
 * batched receive as the baseline in the same run:
 * <ul>
 *   <li>lock-based bounded queues: {@link ArrayBlockingQueue}, {@link LinkedBlockingQueue} ({@code put}/{@code take});
 *   <li>JCTools {@code MpscBlockingConsumerArrayQueue}: the MPSC ring whose consumer blocks ({@code take()} then
 *       {@code drain}), the JCTools queue closest to the mailbox's job ({@link BlockingConsumerRing}, the wiring
 *       the CLI's row uses);
 *   <li>JCTools {@code SpscArrayQueue} with a consumer that parks ({@link ParkingSpscRing}: a StoreLoad fence and a
 *       waiter check per send, no more): the floor of any SPSC queue whose consumer sleeps while it is empty;
 *   <li>bare rings: JCTools {@code MpscArrayQueue}/{@code SpscArrayQueue} ({@code drain}), Agrona
 *       {@link OneToOneConcurrentArrayQueue} ({@code drain}) and {@link ManyToOneRingBuffer} (8-byte records);
 *   <li>the LMAX Disruptor: a multi-producer {@link RingBuffer} read by an {@link EventPoller}; the producer checks
 *       {@code hasAvailableCapacity(1)} before {@code next()}, which would otherwise park-sleep on a full ring;
 *   <li>Reactive: Reactor's {@code Sinks.many().unicast()} over a bounded queue into {@code publishOn}, and the
 *       JDK {@link SubmissionPublisher} (subscribed from the consumer thread, not the submitting one: see
 *       DESIGN.md). Both deliver on the benchmark thread through a {@link DrivenExecutor}.
 * </ul>
 * Goal: the mailbox &gt;= 2x faster than {@code ArrayBlockingQueue}.
 *
 * <p>Agrona 2.x needs {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED}, passed to the forks below.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class ComparatorThroughputBenchmark {

    /** A {@link BlockingQueue} of capacity 1024 used with {@code put} / {@code take} then {@code drainTo}. */
    public abstract static class BlockingState extends OneToOneState {
        BlockingQueue<Object> queue;
        final DrainTarget target = new DrainTarget();

        abstract BlockingQueue<Object> newQueue();

        @Override
        protected void open() {
            queue = newQueue();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final BlockingQueue<Object> queue = this.queue;
            for (int i = 0; i < n; i++) {
                queue.put(MESSAGE);
            }
        }

        @Override
        protected int drainNow() {
            int n = 0;
            while (queue.poll() != null) {
                n++;
            }
            return n;
        }
    }

    @State(Scope.Thread)
    public static class Abq extends BlockingState {
        @Override
        BlockingQueue<Object> newQueue() {
            return new ArrayBlockingQueue<>(CAPACITY);
        }
    }

    @State(Scope.Thread)
    public static class Lbq extends BlockingState {
        @Override
        BlockingQueue<Object> newQueue() {
            return new LinkedBlockingQueue<>(CAPACITY);
        }
    }

    /** A {@link ParkingRing}: {@code offer} (spin, then yield when full) / wait (parks while empty) then drain. */
    public abstract static class ParkingState extends OneToOneState {
        ParkingRing<Object> ring;
        final Sink sink = new Sink();

        abstract ParkingRing<Object> newRing();

        @Override
        protected void open() {
            ring = newRing();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final ParkingRing<Object> ring = this.ring;
            for (int i = 0; i < n; i++) {
                ring.send(MESSAGE, OneToOneState::producerIdle);
            }
        }

        @Override
        protected int drainNow() {
            return ring.drainNow(sink);
        }
    }

    /** {@link BlockingConsumerRing}: JCTools' MPSC ring whose consumer {@code take()}s, then drains. */
    @State(Scope.Thread)
    public static class BlockingConsumer extends ParkingState {
        @Override
        ParkingRing<Object> newRing() {
            return new BlockingConsumerRing<>(CAPACITY);
        }
    }

    /** {@link ParkingSpscRing}: the SPSC ring plus the fence and waiter check a consumer that parks needs. */
    @State(Scope.Thread)
    public static class ParkingSpsc extends ParkingState {
        @Override
        ParkingRing<Object> newRing() {
            return new ParkingSpscRing<>(CAPACITY, WaitPolicy.defaults());
        }
    }

    @State(Scope.Thread)
    public static class AgronaQueue extends OneToOneState {
        OneToOneConcurrentArrayQueue<Object> queue;
        final Sink sink = new Sink();

        @Override
        protected void open() {
            queue = new OneToOneConcurrentArrayQueue<>(CAPACITY);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final OneToOneConcurrentArrayQueue<Object> queue = this.queue;
            for (int i = 0; i < n; i++) {
                for (int spins = 0; !queue.offer(MESSAGE); ) {
                    spins = producerIdle(spins);
                }
            }
        }

        @Override
        protected int drainNow() {
            return queue.drain(sink);
        }
    }

    /** Agrona's many-to-one ring of 8-byte records (a long each: 16 bytes with the header), 1024 of them. */
    @State(Scope.Thread)
    public static class AgronaRingBuffer extends OneToOneState implements MessageHandler {
        static final int RECORD = 16;
        ManyToOneRingBuffer ring;
        final UnsafeBuffer source = new UnsafeBuffer(new byte[Long.BYTES]);
        long sum;

        @Override
        protected void open() {
            ring = new ManyToOneRingBuffer(new UnsafeBuffer(
                    ByteBuffer.allocateDirect(CAPACITY * RECORD + RingBufferDescriptor.TRAILER_LENGTH)));
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final ManyToOneRingBuffer ring = this.ring;
            final UnsafeBuffer source = this.source;
            for (int i = 0; i < n; i++) {
                source.putLong(0, i);
                for (int spins = 0; !ring.write(1, source, 0, Long.BYTES); ) {
                    spins = producerIdle(spins);
                }
            }
        }

        @Override
        protected int drainNow() {
            return ring.read(this);
        }

        @Override
        public void onMessage(int msgTypeId, MutableDirectBuffer buffer, int index, int length) {
            sum += buffer.getLong(index);
        }
    }

    /** The Disruptor's event: one mutable slot. */
    public static final class Event {
        Object value;
    }

    @State(Scope.Thread)
    public static class Disruptor extends OneToOneState implements EventPoller.Handler<Event> {
        RingBuffer<Event> ring;
        EventPoller<Event> poller;
        Object last;
        int taken;
        int limit;

        @Override
        protected void open() {
            ring = RingBuffer.createMultiProducer(Event::new, CAPACITY);
            poller = ring.newPoller();
            ring.addGatingSequences(poller.getSequence());
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final RingBuffer<Event> ring = this.ring;
            for (int i = 0; i < n; i++) {
                for (int spins = 0; !ring.hasAvailableCapacity(1); ) {
                    spins = producerIdle(spins);
                }
                final long sequence = ring.next();
                ring.get(sequence).value = MESSAGE;
                ring.publish(sequence);
            }
        }

        /** Polls at most {@code max} events. */
        int poll(int max) throws Exception {
            taken = 0;
            limit = max;
            poller.poll(this);
            return taken;
        }

        @Override
        public boolean onEvent(Event event, long sequence, boolean endOfBatch) {
            last = event.value;
            return ++taken < limit;
        }

        @Override
        protected int drainNow() {
            try {
                return poll(Integer.MAX_VALUE);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** {@link Faces#reactorUnicastSink} (capacity 1024) into {@link Faces#sinkOn} the benchmark thread. */
    @State(Scope.Thread)
    public static class ReactorSink extends OneToOneState {
        final DrivenExecutor executor = new DrivenExecutor();
        final CountingSubscriber subscriber = new CountingSubscriber();
        Sinks.Many<Object> sink;
        Scheduler scheduler;

        @Override
        protected void open() {
            sink = Faces.reactorUnicastSink(CAPACITY);
            scheduler = Schedulers.fromExecutor(executor);
            Faces.sinkOn(sink, scheduler).subscribe(subscriber);
            executor.runPending();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            emitAll(sink, n);
        }

        @Override
        protected int drainNow() {
            final long before = subscriber.count;
            executor.runPending();
            return (int) (subscriber.count - before);
        }

        @Override
        protected void close() {
            sink.tryEmitComplete();
            scheduler.dispose();
        }
    }

    /** The JDK's {@link SubmissionPublisher}, buffer 1024, delivering on the benchmark thread. */
    @State(Scope.Thread)
    public static class Submission extends OneToOneState {
        final DrivenExecutor executor = new DrivenExecutor();
        final CountingSubscriber subscriber = new CountingSubscriber();
        SubmissionPublisher<Object> publisher;

        @Override
        protected void open() {
            publisher = new SubmissionPublisher<>(executor, CAPACITY);
            publisher.subscribe(subscriber); // on the benchmark thread; submit() runs on the producer thread
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!subscriber.subscribed) {
                if (executor.runPending() == 0 && System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("SubmissionPublisher did not call onSubscribe");
                }
            }
        }

        @Override
        protected void produce(int n) {
            final SubmissionPublisher<Object> publisher = this.publisher;
            for (int i = 0; i < n; i++) {
                publisher.submit(MESSAGE);
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
            publisher.close();
        }
    }

    // ------------------------------------------------------------------ baseline

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object mailbox_batched_recv(MailboxThroughputBenchmark.MpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    // ------------------------------------------------------------------ comparators

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object abq_put_take_drain_to(Abq s) throws InterruptedException {
        return take(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object lbq_put_take_drain_to(Lbq s) throws InterruptedException {
        return take(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_mpsc_drain(MailboxThroughputBenchmark.MpscRing s, Control control) {
        return MailboxThroughputBenchmark.drain(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_spsc_drain(MailboxThroughputBenchmark.SpscRing s, Control control) {
        return MailboxThroughputBenchmark.drain(s, control);
    }

    /** {@code take()} (parks while empty), then {@code drain} the rest that is there, as the CLI's row does. */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_mpsc_blocking_take_drain(BlockingConsumer s) throws InterruptedException {
        return receive(s);
    }

    /**
     * The SPSC ring with a consumer that parks ({@link ParkingSpscRing}): the floor of the SPSC mailbox, whose
     * consumer parks too; {@code jctools_spsc_drain}'s consumer never sleeps, so its producer fences nothing.
     */
    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_spsc_parking_drain(ParkingSpsc s) throws InterruptedException {
        return receive(s);
    }

    private static Object receive(ParkingState s) throws InterruptedException {
        s.request();
        final ParkingRing<Object> ring = s.ring;
        final Sink sink = s.sink;
        int n = 0;
        while (n < MESSAGES) {
            n += ring.receive(sink, MESSAGES - n);
        }
        s.received(n);
        return sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object agrona_one_to_one_queue_drain(AgronaQueue s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.queue.drain(st.sink, max));
        return s.sink.last;
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long agrona_many_to_one_ring_buffer(AgronaRingBuffer s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.ring.read(st, max));
        return s.sum;
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object disruptor_poller(Disruptor s, Control control) throws Exception {
        s.request();
        int n = 0;
        for (int spins = 0; n < MESSAGES; ) {
            final int k = s.poll(MESSAGES - n);
            if (k != 0) {
                n += k;
                spins = 0;
            } else if (s.stalled(control, spins++)) {
                break;
            }
        }
        s.received(n);
        return s.last;
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object reactor_unicast_sink_publish_on(ReactorSink s, Control control) {
        return delivered(s, s.executor, s.subscriber, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object submission_publisher(Submission s, Control control) {
        return delivered(s, s.executor, s.subscriber, control);
    }

    /** {@code take()} (parks while empty), then {@code drainTo} the rest that is there: the queue's batch receive. */
    private static Object take(BlockingState s) throws InterruptedException {
        s.request();
        final BlockingQueue<Object> queue = s.queue;
        final DrainTarget target = s.target;
        int n = 0;
        while (n < MESSAGES) {
            target.last = queue.take();
            n++;
            if (n < MESSAGES) {
                n += queue.drainTo(target, MESSAGES - n);
            }
        }
        s.received(n);
        return target.last;
    }

    /** What {@code drainTo} adds to: keeps the last element, stores nothing, allocates nothing. */
    static final class DrainTarget extends java.util.AbstractCollection<Object> {
        Object last;

        @Override
        public boolean add(Object e) {
            last = e;
            return true;
        }

        @Override
        public java.util.Iterator<Object> iterator() {
            throw new UnsupportedOperationException();
        }

        @Override
        public int size() {
            return 0;
        }
    }

    /** Drives the executor until the subscriber has seen this operation's messages. */
    static Object delivered(OneToOneState s, DrivenExecutor executor, CountingSubscriber subscriber,
            Control control) {
        s.request();
        final long start = subscriber.count;
        final long target = start + MESSAGES;
        for (int spins = 0; subscriber.count < target; ) {
            if (executor.runPending() != 0) {
                spins = 0;
            } else if (s.stalled(control, spins++)) {
                break;
            }
        }
        subscriber.checkError();
        s.received((int) (subscriber.count - start));
        return subscriber.last;
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar ComparatorThroughputBenchmark
     *   java -jar bench/target/benchmarks.jar 'ComparatorThroughputBenchmark.(mailbox|abq|agrona)' -prof gc
     *
     * The forks get --add-exports java.base/jdk.internal.misc=ALL-UNNAMED (Agrona 2.x on JDK 17) through
     * @Fork(jvmArgsAppend); a -jvmArgsAppend on the command line replaces that list, so repeat the flag there.
     * Scores are ns per message.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(ComparatorThroughputBenchmark.class.getSimpleName())
                .build()).run();
    }

    /**
     * The Reactor sink producer: {@code tryEmitNext} each of {@code n} messages, spinning then yielding while the
     * queue is full ({@code FAIL_OVERFLOW}); any other result is a failure.
     */
    static void emitAll(Sinks.Many<Object> sink, int n) throws InterruptedException {
        for (int i = 0; i < n; i++) {
            Sinks.EmitResult result;
            for (int spins = 0; (result = sink.tryEmitNext(OneToOneState.MESSAGE)) != Sinks.EmitResult.OK; ) {
                if (result != Sinks.EmitResult.FAIL_OVERFLOW) {
                    throw new IllegalStateException("tryEmitNext: " + result);
                }
                spins = OneToOneState.producerIdle(spins);
            }
        }
    }
}
