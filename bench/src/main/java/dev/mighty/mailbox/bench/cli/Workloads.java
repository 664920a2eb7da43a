package dev.mighty.mailbox.bench.cli;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;

import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.bench.AgronaFrameRing;
import dev.mighty.mailbox.bench.BlockingConsumerRing;
import dev.mighty.mailbox.bench.ParkingRing;
import dev.mighty.mailbox.bench.ParkingSpscRing;
import dev.mighty.mailbox.bench.DrainTarget;
import dev.mighty.mailbox.bench.DrivenExecutor;
import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.bench.FrameRuns;
import dev.mighty.mailbox.bench.Placement;
import dev.mighty.mailbox.bench.ThreadCpu;
import dev.mighty.mailbox.rs.MailboxProcessor;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscArrayQueue;
import org.jctools.queues.SpscArrayQueue;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The registry of what {@code mailbox_throughput} measures, in output (and interleaving) order. Each row is a
 * small {@link Workload}; add one by adding an {@link Entry} to {@link #all()}.
 *
 * <p>Every row carries the same boxed messages ({@code Integer} 0 .. n-1, allocated once per run), except the
 * frame rows, which copy a 32- or 256-byte payload from one reused buffer and carry the index as the
 * correlation id. Producers that can wait (mailbox {@code send}, {@code ArrayBlockingQueue.put},
 * {@code SubmissionPublisher.submit}) wait the way the implementation does; bare rings busy-wait with
 * {@link Workload#idle(int)} (spin, then yield), as a user of a bare ring would.
 */
final class Workloads {
    static final String MAILBOX = "mailbox_throughput";
    static final String MAILBOX_SINGLE_RECV = "mailbox_single_recv_throughput";
    static final String SPSC_MAILBOX = "spsc_mailbox_throughput";
    static final String BATCHED_SEND_MAILBOX = "batched_send_mailbox_throughput";
    static final String SPSC_BATCHED_SEND_MAILBOX = "spsc_batched_send_mailbox_throughput";
    /** The run length of the batched-send rows: the producer hands the mailbox {@code sendMany} runs of this many. */
    static final int SEND_RUN = 32;
    static final String FRAME_MAILBOX = "frame_mailbox_throughput";
    static final String FRAME_MAILBOX_SPILL = "frame_mailbox_spill_throughput";
    static final String BATCHED_SEND_FRAME_MAILBOX = "batched_send_frame_mailbox_throughput";
    static final String MAILBOX_TRY = "mailbox_try_throughput";
    static final String PUBLISHER_MAILBOX = "publisher_mailbox_throughput";
    static final String PUBLISHER_EXECUTOR = "publisher_executor_mailbox_throughput";
    static final String PUBLISHER_TRAMPOLINE = "publisher_trampoline_mailbox_throughput";
    static final String FLUX_MAILBOX = "flux_mailbox_throughput";
    static final String FLUX_SINGLE = "flux_single_mailbox_throughput";
    static final String FLUX_SINGLE_BACKOFF = "flux_single_backoff_mailbox_throughput";
    static final String SUBSCRIBER = "subscriber_mailbox_throughput";
    static final String PROCESSOR = "processor_mailbox_throughput";
    static final String ABQ = "abq_mailbox_throughput";
    static final String JCTOOLS_MPSC = "jctools_mpsc_mailbox_throughput";
    static final String JCTOOLS_SPSC = "jctools_spsc_mailbox_throughput";
    static final String JCTOOLS_MPSC_BLOCKING = "jctools_mpsc_blocking_mailbox_throughput";
    static final String JCTOOLS_SPSC_PARKING = "jctools_spsc_parking_mailbox_throughput";
    static final String AGRONA_MANY_TO_ONE = "agrona_many_to_one_frame_throughput";
    static final String AGRONA_ONE_TO_ONE = "agrona_one_to_one_frame_throughput";
    static final String REACTOR_SINK = "reactor_sink_mailbox_throughput";
    static final String REACTOR_SINK_SINGLE = "reactor_sink_single_mailbox_throughput";
    static final String SUBMISSION_PUBLISHER = "submission_publisher_mailbox_throughput";
    /** The rows that deliver on the harness's consumer thread through a {@link DrivenExecutor} it spins on. */
    static final Set<String> DRIVEN_EXECUTOR = Set.of(PUBLISHER_MAILBOX, FLUX_MAILBOX, REACTOR_SINK,
            SUBMISSION_PUBLISHER);

    /** Payload of {@link #FRAME_MAILBOX}: fits the slot's 48 inline bytes. */
    static final int INLINE_PAYLOAD = 32;
    /** Payload of {@link #FRAME_MAILBOX_SPILL}: goes to the slot's reused spill buffer. */
    static final int SPILL_PAYLOAD = 256;
    /** The frame kind sent by the frame rows. */
    static final int FRAME_KIND = 7;

    private Workloads() {
    }

    /**
     * What a workload is built from.
     *
     * @param capacity bounded capacity of every channel
     * @param batch    the most messages one batched receive takes
     * @param messages messages per iteration; {@code payload[i]} is message i
     * @param consumer runs on the consumer thread: the executor of the rows that hop threads
     * @param threads  the row's own threads (executors, schedulers, emitters) join this registry, through its
     *                 thread factories, so that the row's CPU time counts them and {@code --pin} places them
     */
    record Setup(int capacity, int batch, int messages, Integer[] payload, DrivenExecutor consumer,
            ThreadCpu threads) {
        /** Unpinned, with a registry of its own (tests, and rows built outside the CLI's loop). */
        Setup(int capacity, int batch, int messages, Integer[] payload, DrivenExecutor consumer) {
            this(capacity, batch, messages, payload, consumer, new ThreadCpu(Placement.unpinned()));
        }

        /** @return this setup, for one row whose threads join {@code threads} */
        Setup with(ThreadCpu threads) {
            return new Setup(capacity, batch, messages, payload, consumer, threads);
        }

        /** @return a factory of the row's receiving thread (slot {@link Placement#CONSUMER}), named {@code name} */
        ThreadFactory receiver(String name) {
            return threads.factory(name, Placement.CONSUMER);
        }
    }

    /**
     * One row of the report.
     *
     * @param name        the reference-style name, e.g. {@code mailbox_throughput}
     * @param description what is measured, for results.md
     * @param ours        whether it is reactor-mailbox (true) or a comparator (false)
     */
    record Entry(String name, String description, boolean ours, Function<Setup, Workload> factory) {
    }

    /** @return every row, in output order */
    static List<Entry> all() {
        return List.of(
                new Entry(MAILBOX, "MPSC Mailbox: send() / recvMany(batch)", true,
                        s -> new MailboxBatched(Mailboxes.<Integer>builder().capacity(s.capacity()).name(MAILBOX)
                                .build(), s)),
                new Entry(MAILBOX_SINGLE_RECV, "MPSC Mailbox: send() / recv()", true, MailboxSingleRecv::new),
                new Entry(MAILBOX_TRY, "MPSC Mailbox, busy: trySend() / tryRecvMany(batch), spin then yield when "
                        + "full/empty (the Subscriber half's baseline)", true, MailboxTry::new),
                new Entry(SPSC_MAILBOX, "SPSC Mailbox (singleProducer): send() / recvMany(batch)", true,
                        s -> new MailboxBatched(Mailboxes.<Integer>builder().capacity(s.capacity()).singleProducer()
                                .name(SPSC_MAILBOX).build(), s)),
                new Entry(BATCHED_SEND_MAILBOX, "MPSC Mailbox: sendMany(runs of " + SEND_RUN + ") / recvMany(batch)",
                        true, s -> new MailboxBatchedSend(Mailboxes.<Integer>builder().capacity(s.capacity())
                                .name(BATCHED_SEND_MAILBOX).build(), s)),
                new Entry(SPSC_BATCHED_SEND_MAILBOX, "SPSC Mailbox (singleProducer): sendMany(runs of " + SEND_RUN
                        + ") / recvMany(batch)", true, s -> new MailboxBatchedSend(Mailboxes.<Integer>builder()
                                .capacity(s.capacity()).singleProducer().name(SPSC_BATCHED_SEND_MAILBOX).build(), s)),
                new Entry(FRAME_MAILBOX, "FrameMailbox, 32 B inline: trySend(kind, id, ByteBuffer) / recvFrames", true,
                        s -> new Frames(FRAME_MAILBOX, INLINE_PAYLOAD, s)),
                new Entry(FRAME_MAILBOX_SPILL, "FrameMailbox, 256 B spilled: trySend(kind, id, ByteBuffer) / recvFrames",
                        true, s -> new Frames(FRAME_MAILBOX_SPILL, SPILL_PAYLOAD, s)),
                new Entry(BATCHED_SEND_FRAME_MAILBOX, "FrameMailbox, 32 B inline: sendMany(FrameBatch runs of "
                        + SEND_RUN + ") / recvFrames", true, s -> new FrameRunRow(BATCHED_SEND_FRAME_MAILBOX,
                        INLINE_PAYLOAD, s)),
                new Entry(AGRONA_MANY_TO_ONE, "Agrona ManyToOneRingBuffer, 32 B records: write(type, buffer) / "
                        + "read(handler, batch), busy (spin, then yield)", false,
                        s -> new AgronaFrameRow(AGRONA_MANY_TO_ONE, AgronaFrameRing.Kind.MANY_TO_ONE, s)),
                new Entry(AGRONA_ONE_TO_ONE, "Agrona OneToOneRingBuffer, 32 B records: write(type, buffer) / "
                        + "read(handler, batch), busy (spin, then yield)", false,
                        s -> new AgronaFrameRow(AGRONA_ONE_TO_ONE, AgronaFrameRing.Kind.ONE_TO_ONE, s)),
                new Entry(PUBLISHER_MAILBOX, Faces.PUBLISHER + " on the harness consumer thread (a DrivenExecutor it "
                        + "spins on), its default WaitPolicy, unbounded demand: adapter cost without scheduler cost",
                        true, PublisherRow::new),
                new Entry(PUBLISHER_EXECUTOR, Faces.PUBLISHER + " on Executors.newSingleThreadExecutor(), its default "
                        + "WaitPolicy, unbounded demand", true, PublisherExecutorRow::new),
                new Entry(PUBLISHER_TRAMPOLINE, Faces.PUBLISHER_TRAMPOLINE + ": the drain runs on the signalling "
                        + "thread (mostly the producer's send), WaitPolicy.park() (fixed), unbounded demand", true,
                        PublisherTrampolineRow::new),
                new Entry(FLUX_MAILBOX, Faces.FUSED_FLUX + "(harness consumer thread, a DrivenExecutor), ASYNC-fused, "
                        + "no policy (the default wait): adapter cost without scheduler cost", true, FluxRow::new),
                new Entry(FLUX_SINGLE, Faces.FUSED_FLUX + "(Schedulers.newSingle), ASYNC-fused, no policy: the "
                        + "default wait (a linger on an earned budget, then a registration)", true,
                        s -> new FluxSingleRow(FLUX_SINGLE, null, s)),
                new Entry(FLUX_SINGLE_BACKOFF, Faces.FUSED_FLUX + "(Schedulers.newSingle), ASYNC-fused, policy "
                        + "WaitPolicy.defaults(): the opt-in back-off on a dedicated worker", true,
                        s -> new FluxSingleRow(FLUX_SINGLE_BACKOFF, WaitPolicy.defaults(), s)),
                new Entry(SUBSCRIBER, "demand-respecting upstream on the producer thread -> " + Faces.SUBSCRIBER
                        + " -> consumer recvMany(batch)", true, SubscriberRow::new),
                new Entry(PROCESSOR, "demand-respecting upstream on the producer thread -> " + Faces.PROCESSOR
                        + " -> subscriber on Executors.newSingleThreadExecutor(), its default WaitPolicy", true,
                        ProcessorRow::new),
                new Entry(ABQ, "java.util.concurrent.ArrayBlockingQueue: put() / take() then drainTo(batch - 1)",
                        false, Abq::new),
                new Entry(JCTOOLS_MPSC, "JCTools MpscArrayQueue, bare: offer() / drain(consumer, batch), busy "
                        + "(spin, then yield)", false,
                        s -> new BareRing(JCTOOLS_MPSC, new MpscArrayQueue<>(s.capacity()), s)),
                new Entry(JCTOOLS_MPSC_BLOCKING, "JCTools MpscBlockingConsumerArrayQueue: offer() (spin, then yield "
                        + "when full) / take() (parks while empty) then drain(consumer, batch - 1)", false,
                        s -> new BlockingRing(JCTOOLS_MPSC_BLOCKING, new BlockingConsumerRing<>(s.capacity()), s)),
                new Entry(JCTOOLS_SPSC_PARKING, "JCTools SpscArrayQueue plus what a consumer that parks needs "
                        + "(ParkingSpscRing): offer(), a StoreLoad fence and a waiter check / drain(consumer, batch), "
                        + "WaitPolicy.defaults() back-off, then park: the floor of an SPSC queue whose consumer sleeps",
                        false, s -> new BlockingRing(JCTOOLS_SPSC_PARKING,
                                new ParkingSpscRing<>(s.capacity(), WaitPolicy.defaults()), s)),
                new Entry(JCTOOLS_SPSC, "JCTools SpscArrayQueue, bare: offer() / drain(consumer, batch), busy "
                        + "(spin, then yield)", false,
                        s -> new BareRing(JCTOOLS_SPSC, new SpscArrayQueue<>(s.capacity()), s)),
                new Entry(REACTOR_SINK, Faces.SINK_ON + "(harness consumer thread, a DrivenExecutor)", false,
                        ReactorSink::new),
                new Entry(REACTOR_SINK_SINGLE, Faces.SINK_ON + "(Schedulers.newSingle)", false,
                        ReactorSinkSingle::new),
                new Entry(FourEmitterRows.SINKS, "4 threads tryEmitNext at once into " + Faces.MAILBOX_SINKS
                        + " (spin, then yield on FAIL_OVERFLOW) -> publishOn(Schedulers.newSingle), ASYNC-fused", true,
                        FourEmitterRows.Row::sinks),
                new Entry(FourEmitterRows.REACTOR_SINK, "4 threads emitNext at once into " + Faces.REACTOR_UNICAST_SINK
                        + ", handler retrying FAIL_NON_SERIALIZED and FAIL_OVERFLOW (spin, then yield) -> "
                        + "publishOn(Schedulers.newSingle)", false, FourEmitterRows.Row::reactorSink),
                new Entry(FourEmitterRows.FLUX_CREATE, "4 threads next() at once into Flux.create(sink, BUFFER) "
                        + "(unbounded) -> publishOn(Schedulers.newSingle)", false, FourEmitterRows.Row::fluxCreate),
                new Entry(SUBMISSION_PUBLISHER, "java.util.concurrent.SubmissionPublisher: submit() / onNext "
                        + "(executor: the harness consumer thread)", false, Submission::new));
    }

    /**
     * The JVM's actor runtime ({@code --actors}): not in the default table, whose run they would lengthen by
     * about half on a 2-core machine (their iterations' tails are the fork-join pool's park and wake-up).
     *
     * @return the Pekko rows, in output order, after {@link #all()}
     */
    static List<Entry> actorRuntime() {
        return List.of(
                new Entry(PekkoRow.ACTOR, "Apache Pekko typed actor: tell() into the default mailbox (unbounded "
                        + "ConcurrentLinkedQueue: no backpressure), default dispatcher (fork-join, throughput 5)",
                        false, PekkoRow.actor()),
                new Entry(PekkoRow.SOURCE_QUEUE, "Apache Pekko Streams Source.queue(capacity) (BoundedSourceQueue.offer, "
                        + "dropped = full: spin, then yield) into Sink.foreach, default dispatcher", false,
                        PekkoRow.sourceQueue()));
    }

    // ------------------------------------------------------------------ checks

    /**
     * Counts the messages of one iteration and checks their order: message i must be i (or, with several emitters,
     * each emitter's messages in its own order). Used by one thread at a time (the consumer thread, or the executor
     * task running on it).
     */
    static class OrderCheck implements BooleanSupplier {
        private final String name;
        /**
         * Null: one producer, message i must be the i-th received. Else the rows with {@code next.length} emitters,
         * emitter e sending e, e + E, e + 2E, ...: {@code next[e]} is the message emitter e must deliver next.
         */
        private final long[] next;
        private int received;
        private int expected;
        private int firstBadIndex = -1;
        private long firstBadValue;

        OrderCheck(String name) {
            this(name, 1);
        }

        OrderCheck(String name, int emitters) {
            this.name = name;
            this.next = emitters == 1 ? null : new long[emitters];
        }

        final void begin(int n) {
            received = 0;
            expected = n;
            firstBadIndex = -1;
            if (next != null) {
                for (int e = 0; e < next.length; e++) {
                    next[e] = e;
                }
            }
        }

        final void check(long value) {
            final long want;
            if (next == null) {
                want = received;
            } else {
                final int emitter = (int) Math.floorMod(value, (long) next.length);
                want = next[emitter];
                next[emitter] = value + next.length;
            }
            if (value != want && firstBadIndex < 0) {
                firstBadIndex = received;
                firstBadValue = value;
            }
            received++;
        }

        final void fail(long value) {
            if (firstBadIndex < 0) {
                firstBadIndex = received;
                firstBadValue = value;
            }
        }

        final int remaining() {
            return expected - received;
        }

        /** @return whether all messages of the iteration arrived (the {@link DrivenExecutor} stop condition) */
        @Override
        public boolean getAsBoolean() {
            return received >= expected;
        }

        /** @throws IllegalStateException if the iteration did not receive exactly 0 .. n-1 in order */
        final void verify() {
            if (received != expected || firstBadIndex >= 0) {
                throw new IllegalStateException(name + ": received=" + received + ", expected=" + expected
                        + (firstBadIndex < 0 ? "" : ", firstMismatch: index=" + firstBadIndex + " value="
                        + firstBadValue));
            }
        }
    }

    static final class ObjectCheck extends OrderCheck implements Consumer<Integer>, MessagePassingQueue.Consumer<Integer> {
        ObjectCheck(String name) {
            super(name);
        }

        @Override
        public void accept(Integer value) {
            check(value.intValue());
        }
    }

    /** Checks the correlation id (the index), the kind and the payload length of each frame. */
    static final class FrameCheck extends OrderCheck implements FrameHandler {
        private final int payloadLength;

        FrameCheck(String name, int payloadLength) {
            super(name);
            this.payloadLength = payloadLength;
        }

        @Override
        public void onFrame(FrameView frame) {
            if (frame.payloadLength() != payloadLength || frame.kind() != FRAME_KIND) {
                fail(frame.correlationId());
            }
            check(frame.correlationId());
        }
    }

    /** A subscriber for both Reactor ({@link CoreSubscriber}) and the JDK ({@link Flow.Subscriber}). */
    static final class SubscriberCheck extends OrderCheck implements CoreSubscriber<Integer>,
            Flow.Subscriber<Integer> {
        volatile boolean subscribed;
        volatile Throwable error;
        /** When the iteration's last message arrived; consumer thread only (the DrivenExecutor runs onNext). */
        long finishedAt;

        SubscriberCheck(String name) {
            super(name);
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
            subscribed = true;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            s.request(Long.MAX_VALUE);
            subscribed = true;
        }

        @Override
        public void onNext(Integer value) {
            check(value.intValue());
            if (remaining() == 0) {
                finishedAt = System.nanoTime(); // the executor task may back off after this: not measured
            }
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onComplete() {
        }

        @Override
        public boolean getAsBoolean() {
            return super.getAsBoolean() || error != null;
        }

        void verifyNoError() {
            final Throwable t = error;
            if (t != null) {
                throw new IllegalStateException("subscriber got onError", t);
            }
            verify();
        }
    }

    /**
     * A subscriber (and a {@code Consumer}) whose messages may arrive on a thread other than the harness's
     * consumer thread (an executor's, a scheduler's, or the producer's): the harness's consumer thread waits for
     * the iteration's last message by parking, and the time of that last message, taken on the delivering thread,
     * ends the iteration (so the harness thread's own wake-up is not measured).
     */
    static final class HandOffCheck extends OrderCheck implements CoreSubscriber<Integer>, Consumer<Integer> {
        volatile Throwable error;
        /** The thread that ran the last onNext; plain, read after {@code finished}. */
        private Thread deliverer;
        private long finishedAt;
        private volatile boolean finished;
        private volatile Thread waiter;

        HandOffCheck(String name) {
            super(name);
        }

        /** For {@code emitters} producers at once: each one's messages in its order, see {@link OrderCheck}. */
        HandOffCheck(String name, int emitters) {
            super(name, emitters);
        }

        /** Harness consumer thread, before the producer starts: the messages of the next iteration. */
        void prepare(int n) {
            begin(n);
            finishedAt = 0L;
            finished = n == 0;
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Integer value) {
            accept(value);
        }

        @Override
        public void accept(Integer value) {
            check(value.intValue());
            final Thread self = Thread.currentThread();
            if (deliverer != self) {
                deliverer = self;
            }
            if (remaining() == 0) {
                finishedAt = System.nanoTime();
                finished = true; // publishes the order check's state to the waiting harness thread
                final Thread w = waiter;
                if (w != null) {
                    LockSupport.unpark(w);
                }
            }
        }

        @Override
        public void onError(Throwable t) {
            error = t;
            final Thread w = waiter;
            if (w != null) {
                LockSupport.unpark(w);
            }
        }

        @Override
        public void onComplete() {
        }

        /**
         * Harness consumer thread: waits until the iteration's last message arrived (or an error), spinning, then
         * yielding (so the producer and the delivering thread get the cores they need), then parking. The
         * iteration is timed on the delivering thread, so this wait is not measured; it only decides how soon the
         * next iteration starts, which it keeps as close as for the other rows.
         */
        void await() throws InterruptedException {
            final long start = System.nanoTime();
            for (int spins = 0; !finished && error == null; ) {
                if (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(1)) {
                    spins = Workload.idle(spins);
                    continue;
                }
                waiter = Thread.currentThread();
                try {
                    if (!finished && error == null) {
                        LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
                    }
                    if (Thread.interrupted()) {
                        throw new InterruptedException("aborted by the harness");
                    }
                } finally {
                    waiter = null;
                }
            }
            final Throwable t = error;
            if (t != null) {
                throw new IllegalStateException("subscriber got onError", t);
            }
            verify();
        }

        long finishedAt() {
            return finished ? finishedAt : 0L;
        }

        Thread deliverer() {
            return deliverer;
        }
    }

    /**
     * A demand-respecting upstream: {@code onNext} only within what was requested, on the producer thread,
     * spinning then yielding while there is none (a synchronous source such as {@code Flux.range} behaves alike).
     */
    static final class DemandUpstream implements Subscription {
        private final AtomicLong requested = new AtomicLong();
        private final Integer[] payload;
        private long emitted;
        private volatile boolean cancelled;

        DemandUpstream(Integer[] payload) {
            this.payload = payload;
        }

        @Override
        public void request(long n) {
            requested.getAndAdd(n); // the mailbox subscriber asks for at most its capacity at a time
        }

        @Override
        public void cancel() {
            cancelled = true;
        }

        void emit(Subscriber<Integer> downstream, int n) throws InterruptedException {
            final Integer[] payload = this.payload;
            final AtomicLong requested = this.requested;
            for (int i = 0; i < n; i++) {
                for (int spins = 0; requested.get() == emitted; ) {
                    if (cancelled) {
                        throw new IllegalStateException("upstream cancelled by the mailbox subscriber");
                    }
                    spins = Workload.idle(spins);
                }
                emitted++;
                downstream.onNext(payload[i]);
            }
        }
    }

    static String format(MailboxStats s) {
        return "admitted=" + s.admitted() + " received=" + s.received() + " highWaterMark=" + s.highWaterMark()
                + " refused=" + s.refused() + " producerParks=" + s.producerParks() + " consumerParks="
                + s.consumerParks() + " size=" + s.size();
    }

    // ------------------------------------------------------------------ reactor-mailbox rows

    /**
     * The consumer side of the {@code recvMany(check, batch)} rows: receives {@code n} messages into the check,
     * at most {@code batch} a call, then verifies them. A receive of 0 means closed and drained: {@code verify()}
     * reports the shortfall.
     */
    static void recvManyAll(Mailbox<Integer> mailbox, ObjectCheck check, int batch, int n)
            throws InterruptedException {
        check.begin(n);
        for (int r; (r = check.remaining()) > 0; ) {
            if (mailbox.recvMany(check, Math.min(batch, r)) == 0) {
                break;
            }
        }
        check.verify();
    }

    /** The wake-up count a mailbox row reports: data wake-up parks plus parked sends. */
    static long parks(MailboxStats s) {
        return s.consumerParks() + s.producerParks();
    }

    /** A row over a {@code Mailbox<Integer>}: the producer sends with {@code send()} (unless a row overrides it). */
    abstract static class MailboxRow implements Workload {
        final Mailbox<Integer> mailbox;
        final Integer[] payload;

        MailboxRow(Mailbox<Integer> mailbox, Setup s) {
            this.mailbox = mailbox;
            this.payload = s.payload();
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final Mailbox<Integer> mailbox = this.mailbox;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                mailbox.send(payload[i]);
            }
        }

        @Override
        public String stats() {
            return format(mailbox.stats());
        }

        @Override
        public long wakeups() {
            return parks(mailbox.stats());
        }

        @Override
        public void close() {
            mailbox.close();
        }
    }

    /** {@code send()} / {@code recvMany(check, batch)}: the actor loop's batched receive. MPSC or SPSC. */
    static final class MailboxBatched extends MailboxRow {
        private final int batch;
        private final ObjectCheck check;

        MailboxBatched(Mailbox<Integer> mailbox, Setup s) {
            super(mailbox, s);
            this.batch = s.batch();
            this.check = new ObjectCheck(mailbox.stats().name());
        }

        @Override
        public void consume(int n) throws InterruptedException {
            recvManyAll(mailbox, check, batch, n);
        }
    }

    /**
     * {@code sendMany(payload, i, i + 32)} / {@code recvMany(check, batch)}: a producer that has its messages in
     * runs (a decoded socket read, a Kafka poll) hands each run over with one claim. MPSC or SPSC.
     */
    static final class MailboxBatchedSend implements Workload {
        private final Mailbox<Integer> mailbox;
        private final Integer[] payload;
        private final int batch;
        private final ObjectCheck check;

        MailboxBatchedSend(Mailbox<Integer> mailbox, Setup s) {
            this.mailbox = mailbox;
            this.payload = s.payload();
            this.batch = s.batch();
            this.check = new ObjectCheck(mailbox.stats().name());
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final Mailbox<Integer> mailbox = this.mailbox;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i += SEND_RUN) {
                final int to = Math.min(n, i + SEND_RUN);
                if (mailbox.sendMany(payload, i, to) != to - i) {
                    throw new IllegalStateException("sendMany admitted part of a run on an open mailbox");
                }
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            recvManyAll(mailbox, check, batch, n);
        }

        @Override
        public String stats() {
            return format(mailbox.stats());
        }

        @Override
        public void close() {
            mailbox.close();
        }
    }

    /** {@code send()} / {@code recv()}: one message per receive. */
    static final class MailboxSingleRecv extends MailboxRow {
        private final ObjectCheck check = new ObjectCheck(MAILBOX_SINGLE_RECV);

        MailboxSingleRecv(Setup s) {
            super(Mailboxes.<Integer>builder().capacity(s.capacity()).name(MAILBOX_SINGLE_RECV).build(), s);
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final Mailbox<Integer> mailbox = this.mailbox;
            final ObjectCheck check = this.check;
            check.begin(n);
            for (int i = 0; i < n; i++) {
                final Integer value = mailbox.recv();
                if (value == null) {
                    break;
                }
                check.accept(value);
            }
            check.verify();
        }
    }

    /** The slab path: {@code trySend(kind, id, ByteBuffer)} (then {@code send} if full) / {@code recvFrames}. */
    static class Frames implements Workload {
        final FrameMailbox mailbox;
        final ByteBuffer buffer;
        private final int batch;
        private final FrameCheck check;

        Frames(String name, int payloadLength, Setup s) {
            this.mailbox = Mailboxes.builder().capacity(s.capacity()).name(name).buildFrames();
            this.buffer = ByteBuffer.allocate(payloadLength);
            for (int i = 0; i < payloadLength; i++) {
                buffer.put(i, (byte) i);
            }
            this.batch = s.batch();
            this.check = new FrameCheck(name, payloadLength);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final FrameMailbox mailbox = this.mailbox;
            final ByteBuffer buffer = this.buffer;
            for (int i = 0; i < n; i++) {
                if (!mailbox.trySend(FRAME_KIND, i, buffer)) {
                    mailbox.send(FRAME_KIND, i, buffer);
                }
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final FrameCheck check = this.check;
            check.begin(n);
            for (int r; (r = check.remaining()) > 0; ) {
                if (mailbox.recvFrames(check, Math.min(batch, r)) == 0) {
                    break;
                }
            }
            check.verify();
        }

        @Override
        public String stats() {
            return format(mailbox.stats());
        }

        @Override
        public void close() {
            mailbox.close();
        }
    }

    /**
     * The slab path in runs: a reused {@code FrameBatch} of {@link #SEND_RUN} frames, {@code trySendMany} then
     * {@code sendMany} for what did not fit / {@code recvFrames}, as {@link Frames} otherwise.
     */
    static final class FrameRunRow extends Frames {
        private final FrameBatch run = new FrameBatch(SEND_RUN);

        FrameRunRow(String name, int payloadLength, Setup s) {
            super(name, payloadLength, s);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            FrameRuns.send(mailbox, run, FRAME_KIND, buffer, n);
        }
    }

    /**
     * A mailbox whose consumer side is a subscriber draining on the consumer thread (the {@link DrivenExecutor}):
     * the producer sends with {@code send()}, the consumer thread runs the pipeline until the check is done.
     */
    abstract static class DrivenMailboxRow extends MailboxRow {
        final DrivenExecutor consumer;
        final SubscriberCheck check;

        DrivenMailboxRow(String name, Setup s) {
            super(Mailboxes.<Integer>builder().capacity(s.capacity()).name(name).build(), s);
            this.consumer = s.consumer();
            this.check = new SubscriberCheck(name);
        }

        @Override
        public void consume(int n) throws InterruptedException {
            check.begin(n);
            check.finishedAt = 0L;
            consumer.runUntil(check, Workload::idle);
            check.verifyNoError();
        }

        @Override
        public long finishedAt() {
            return check.finishedAt;
        }
    }

    /**
     * {@link Faces#publisherOn} over an MPSC mailbox, its drain handed to the consumer thread through the
     * publisher's {@code Executor} constructor, so that {@code onNext} runs there (two threads, as every row).
     */
    static final class PublisherRow extends DrivenMailboxRow {
        PublisherRow(Setup s) {
            super(PUBLISHER_MAILBOX, s);
        }

        @Override
        public void open() {
            Faces.publisherOn(mailbox, consumer, check);
            consumer.runPending();
        }
    }

    /**
     * {@link Faces#fusedFlux} (no policy: the default wait) into {@code publishOn} on the consumer thread: fused, so
     * {@code publishOn} polls the mailbox itself. The same shape as {@link ReactorSink}, with the mailbox's
     * {@code send} as the producer.
     */
    static final class FluxRow extends DrivenMailboxRow {
        private final Scheduler scheduler;

        FluxRow(Setup s) {
            super(FLUX_MAILBOX, s);
            this.scheduler = Schedulers.fromExecutor(consumer);
        }

        @Override
        public void open() {
            Faces.fusedFlux(mailbox, scheduler, null).subscribe(check);
            consumer.runPending();
        }

        @Override
        public void close() {
            super.close();
            scheduler.dispose();
        }
    }

    /** Busy {@code trySend} / {@code tryRecvMany(check, batch)}: the raw mailbox as a bare ring is used. */
    static final class MailboxTry extends MailboxRow {
        private final int batch;
        private final ObjectCheck check = new ObjectCheck(MAILBOX_TRY);

        MailboxTry(Setup s) {
            super(Mailboxes.<Integer>builder().capacity(s.capacity()).name(MAILBOX_TRY).build(), s);
            this.batch = s.batch();
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final Mailbox<Integer> mailbox = this.mailbox;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                for (int spins = 0; !mailbox.trySend(payload[i]); ) {
                    spins = Workload.idle(spins);
                }
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final Mailbox<Integer> mailbox = this.mailbox;
            final ObjectCheck check = this.check;
            final int batch = this.batch;
            check.begin(n);
            for (int r, spins = 0; (r = check.remaining()) > 0; ) {
                if (mailbox.tryRecvMany(check, Math.min(batch, r)) != 0) {
                    spins = 0;
                } else {
                    spins = Workload.idle(spins);
                }
            }
            check.verify();
        }
    }

    /** A mailbox fed by {@code send()} whose consumer is a {@link HandOffCheck} on some other thread. */
    abstract static class HandOffRow extends MailboxRow implements HandOffWorkload {
        final HandOffCheck check;

        HandOffRow(String name, Setup s) {
            super(Mailboxes.<Integer>builder().capacity(s.capacity()).name(name).build(), s);
            this.check = new HandOffCheck(name);
        }

        @Override
        public HandOffCheck check() {
            return check;
        }
    }

    /** {@link Faces#publisherOn} with {@code Executors.newSingleThreadExecutor()}: its default wait policy. */
    static final class PublisherExecutorRow extends HandOffRow {
        private final ExecutorService executor;

        PublisherExecutorRow(Setup s) {
            super(PUBLISHER_EXECUTOR, s);
            this.executor = Executors.newSingleThreadExecutor(s.receiver(PUBLISHER_EXECUTOR));
        }

        @Override
        public void open() {
            Faces.publisherOn(mailbox, executor, check);
        }

        @Override
        public void close() {
            super.close();
            executor.shutdown();
        }
    }

    /** {@link Faces#publisherTrampoline}: the drain runs on whichever thread signals it. */
    static final class PublisherTrampolineRow extends HandOffRow {
        PublisherTrampolineRow(Setup s) {
            super(PUBLISHER_TRAMPOLINE, s);
        }

        @Override
        public void open() {
            Faces.publisherTrampoline(mailbox, check);
        }
    }

    /** {@link Faces#fusedFlux} on {@code Schedulers.newSingle(..)}: fused, the worker polls the mailbox. */
    static final class FluxSingleRow extends HandOffRow {
        private final Scheduler scheduler;
        private final WaitPolicy waitPolicy;

        FluxSingleRow(String name, WaitPolicy waitPolicy, Setup s) {
            super(name, s);
            this.scheduler = Schedulers.newSingle(s.receiver(name));
            this.waitPolicy = waitPolicy;
        }

        @Override
        public void open() {
            // null: the library's default wait, as users run it
            Faces.fusedFlux(mailbox, scheduler, waitPolicy).subscribe((CoreSubscriber<Integer>) check);
        }

        @Override
        public void close() {
            super.close();
            scheduler.dispose();
        }
    }

    /** Upstream (producer thread) {@code ->} {@link Faces#subscriber} {@code ->} the consumer's {@code recvMany}. */
    static final class SubscriberRow implements Workload {
        private final Mailbox<Integer> mailbox;
        private final DemandUpstream upstream;
        private final MailboxSubscriber<Integer> subscriber;
        private final int batch;
        private final ObjectCheck check = new ObjectCheck(SUBSCRIBER);

        SubscriberRow(Setup s) {
            this.mailbox = Mailboxes.<Integer>builder().capacity(s.capacity()).name(SUBSCRIBER).build();
            this.upstream = new DemandUpstream(s.payload());
            this.subscriber = Faces.subscriber(mailbox);
            this.batch = s.batch();
        }

        @Override
        public void open() {
            subscriber.onSubscribe(upstream);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            upstream.emit(subscriber, n);
        }

        @Override
        public void consume(int n) throws InterruptedException {
            recvManyAll(mailbox, check, batch, n);
        }

        @Override
        public String stats() {
            return format(mailbox.stats());
        }

        @Override
        public long wakeups() {
            return parks(mailbox.stats());
        }

        @Override
        public void close() {
            subscriber.onComplete();
        }
    }

    /** Upstream {@code ->} {@link Faces#processorOn} {@code ->} a subscriber on that executor. */
    static final class ProcessorRow extends HandOffRow {
        private final ExecutorService executor;
        private final DemandUpstream upstream;
        private final MailboxProcessor<Integer> processor;

        ProcessorRow(Setup s) {
            super(PROCESSOR, s);
            this.executor = Executors.newSingleThreadExecutor(s.receiver(PROCESSOR));
            this.upstream = new DemandUpstream(s.payload());
            this.processor = Faces.processorOn(mailbox, executor);
        }

        @Override
        public void open() {
            processor.subscribe(check);
            processor.onSubscribe(upstream);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            upstream.emit(processor, n);
        }

        @Override
        public void close() {
            processor.onComplete();
            executor.shutdown();
        }
    }

    // ------------------------------------------------------------------ comparators

    /** The lock-based bounded channel: {@code put} / {@code take}. */
    static final class Abq implements Workload {
        private final ArrayBlockingQueue<Integer> queue;
        private final Integer[] payload;
        private final ObjectCheck check = new ObjectCheck(ABQ);
        private final DrainTarget<Integer> target = new DrainTarget<>(check);
        private final int batch;

        Abq(Setup s) {
            this.queue = new ArrayBlockingQueue<>(s.capacity());
            this.payload = s.payload();
            this.batch = s.batch();
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final ArrayBlockingQueue<Integer> queue = this.queue;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                queue.put(payload[i]);
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final ArrayBlockingQueue<Integer> queue = this.queue;
            final ObjectCheck check = this.check;
            final DrainTarget<Integer> target = this.target;
            final int batch = this.batch;
            check.begin(n);
            for (int r; (r = check.remaining()) > 0; ) {
                check.accept(queue.take()); // parks while empty, then takes the rest under the same lock
                if (r > 1) {
                    queue.drainTo(target, Math.min(batch, r) - 1);
                }
            }
            check.verify();
        }
    }

    /** A bare JCTools ring, the practical limit: busy {@code offer} / {@code poll}. */
    static final class BareRing implements Workload {
        private final MessagePassingQueue<Integer> queue;
        private final int batch;
        private final Integer[] payload;
        private final ObjectCheck check;

        BareRing(String name, MessagePassingQueue<Integer> queue, Setup s) {
            this.queue = queue;
            this.payload = s.payload();
            this.check = new ObjectCheck(name);
            this.batch = s.batch();
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final MessagePassingQueue<Integer> queue = this.queue;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                for (int spins = 0; !queue.offer(payload[i]); ) {
                    spins = Workload.idle(spins);
                }
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final MessagePassingQueue<Integer> queue = this.queue;
            final ObjectCheck check = this.check;
            final int batch = this.batch;
            check.begin(n);
            // drain(consumer, limit): JCTools' batch receive, which reads the producer index only when a slot is
            // empty (poll() re-reads it on every empty poll)
            for (int r, spins = 0; (r = check.remaining()) > 0; ) {
                if (queue.drain(check, Math.min(batch, r)) != 0) {
                    spins = 0;
                } else {
                    spins = Workload.idle(spins);
                }
            }
            check.verify();
        }
    }

    /** A ring whose consumer parks ({@link ParkingRing}: JCTools' blocking MPSC, the parking SPSC; shared with JMH). */
    static final class BlockingRing implements Workload {
        private final ParkingRing<Integer> ring;
        private final Integer[] payload;
        private final ObjectCheck check;
        private final int batch;

        BlockingRing(String name, ParkingRing<Integer> ring, Setup s) {
            this.ring = ring;
            this.check = new ObjectCheck(name);
            this.payload = s.payload();
            this.batch = s.batch();
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final ParkingRing<Integer> ring = this.ring;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                ring.send(payload[i], Workload::idle);
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final ObjectCheck check = this.check;
            check.begin(n);
            for (int r; (r = check.remaining()) > 0; ) {
                ring.receive(check, Math.min(batch, r));
            }
            check.verify();
        }
    }

    /**
     * Agrona's byte rings with the inline frame row's 32-byte payload ({@link AgronaFrameRing}, shared with JMH):
     * the id in the record's first 8 bytes, checked with the type and the length.
     */
    static final class AgronaFrameRow implements Workload {
        private final AgronaFrameRing ring;
        private final int batch;
        private final RecordCheck check;

        AgronaFrameRow(String name, AgronaFrameRing.Kind kind, Setup s) {
            this.ring = new AgronaFrameRing(kind, s.capacity(), INLINE_PAYLOAD);
            this.batch = s.batch();
            this.check = new RecordCheck(name, INLINE_PAYLOAD);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final AgronaFrameRing ring = this.ring;
            for (int i = 0; i < n; i++) {
                ring.send(i, Workload::idle);
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            final RecordCheck check = this.check;
            final AgronaFrameRing ring = this.ring;
            final int batch = this.batch;
            check.begin(n);
            for (int r, spins = 0; (r = check.remaining()) > 0; ) {
                if (ring.receive(check, Math.min(batch, r)) != 0) {
                    spins = 0;
                } else {
                    spins = Workload.idle(spins);
                }
            }
            check.verify();
        }
    }

    /** Checks the id (the record's first 8 bytes), the type and the length of each Agrona record. */
    static final class RecordCheck extends OrderCheck implements MessageHandler {
        private final int payloadLength;

        RecordCheck(String name, int payloadLength) {
            super(name);
            this.payloadLength = payloadLength;
        }

        @Override
        public void onMessage(int msgTypeId, MutableDirectBuffer buffer, int index, int length) {
            final long id = buffer.getLong(index);
            if (length != payloadLength || msgTypeId != AgronaFrameRing.MSG_TYPE) {
                fail(id);
            }
            check(id);
        }
    }

    /** {@link Faces#reactorUnicastSink} into {@link Faces#sinkOn} the consumer thread. */
    static final class ReactorSink implements Workload {
        private final Sinks.Many<Integer> sink;
        private final Scheduler scheduler;
        private final DrivenExecutor consumer;
        private final Integer[] payload;
        private final SubscriberCheck check = new SubscriberCheck(REACTOR_SINK);

        ReactorSink(Setup s) {
            this.sink = Faces.reactorUnicastSink(s.capacity());
            this.consumer = s.consumer();
            this.scheduler = Schedulers.fromExecutor(consumer);
            this.payload = s.payload();
        }

        @Override
        public void open() {
            Faces.sinkOn(sink, scheduler).subscribe(check);
            consumer.runPending();
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final Sinks.Many<Integer> sink = this.sink;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                Sinks.EmitResult result;
                for (int spins = 0; (result = sink.tryEmitNext(payload[i])) != Sinks.EmitResult.OK; ) {
                    if (result != Sinks.EmitResult.FAIL_OVERFLOW) {
                        throw new IllegalStateException("tryEmitNext: " + result);
                    }
                    spins = Workload.idle(spins);
                }
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            check.begin(n);
            consumer.runUntil(check, Workload::idle);
            check.verifyNoError();
        }

        @Override
        public void close() {
            sink.tryEmitComplete();
            scheduler.dispose();
        }
    }

    /**
     * A row whose messages arrive on another thread (an executor's, a scheduler's, an emitter's): its
     * {@link HandOffCheck} checks them, and the harness waits for it and takes its time of the last message.
     */
    interface HandOffWorkload extends Workload {
        /** @return the check the delivering thread runs */
        HandOffCheck check();

        @Override
        default void prepare(int n) {
            check().prepare(n);
        }

        @Override
        default void consume(int n) throws InterruptedException {
            check().await();
        }

        @Override
        default long finishedAt() {
            return check().finishedAt();
        }

        @Override
        default Thread deliveringThread() {
            return check().deliverer();
        }

        @Override
        default boolean receivesOnHarnessConsumer() {
            return false; // it waits for the delivering thread
        }
    }

    /** {@link Faces#reactorUnicastSink} into {@link Faces#sinkOn} {@code Schedulers.newSingle(..)}. */
    static final class ReactorSinkSingle implements HandOffWorkload {
        private final Sinks.Many<Integer> sink;
        private final Scheduler scheduler;
        private final Integer[] payload;
        private final HandOffCheck check = new HandOffCheck(REACTOR_SINK_SINGLE);

        ReactorSinkSingle(Setup s) {
            this.scheduler = Schedulers.newSingle(s.receiver(REACTOR_SINK_SINGLE));
            this.sink = Faces.reactorUnicastSink(s.capacity());
            this.payload = s.payload();
        }

        @Override
        public HandOffCheck check() {
            return check;
        }

        @Override
        public void open() {
            Faces.sinkOn(sink, scheduler).subscribe((CoreSubscriber<Integer>) check);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            final Sinks.Many<Integer> sink = this.sink;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                Sinks.EmitResult result;
                for (int spins = 0; (result = sink.tryEmitNext(payload[i])) != Sinks.EmitResult.OK; ) {
                    if (result != Sinks.EmitResult.FAIL_OVERFLOW) {
                        throw new IllegalStateException("tryEmitNext: " + result);
                    }
                    spins = Workload.idle(spins);
                }
            }
        }

        @Override
        public void close() {
            sink.tryEmitComplete();
            scheduler.dispose();
        }
    }

    /**
     * The JDK's {@link SubmissionPublisher} with its buffer at the capacity, delivering on the consumer thread.
     * Subscribed from the consumer thread, not the submitting one: on these machines a same-thread
     * subscribe/submit left the last item undelivered in 5 of 6 long runs (see DESIGN.md).
     */
    static final class Submission implements Workload {
        private final SubmissionPublisher<Integer> publisher;
        private final DrivenExecutor consumer;
        private final Integer[] payload;
        private final SubscriberCheck check = new SubscriberCheck(SUBMISSION_PUBLISHER);

        Submission(Setup s) {
            this.consumer = s.consumer();
            this.publisher = new SubmissionPublisher<>(consumer, s.capacity());
            this.payload = s.payload();
        }

        @Override
        public void open() throws InterruptedException {
            publisher.subscribe(check);
            final SubscriberCheck check = this.check;
            consumer.runUntil(() -> check.subscribed || check.error != null, Workload::idle);
        }

        @Override
        public void produce(int n) {
            final SubmissionPublisher<Integer> publisher = this.publisher;
            final Integer[] payload = this.payload;
            for (int i = 0; i < n; i++) {
                publisher.submit(payload[i]);
            }
        }

        @Override
        public void consume(int n) throws InterruptedException {
            check.begin(n);
            consumer.runUntil(check, Workload::idle);
            check.verifyNoError();
        }

        @Override
        public void close() {
            publisher.close();
        }
    }
}
