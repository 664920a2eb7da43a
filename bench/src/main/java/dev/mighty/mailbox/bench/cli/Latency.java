package dev.mighty.mailbox.bench.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.rs.MailboxProcessor;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.HdrHistogram.Histogram;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The lone-message latency of each face, wired through {@link Faces}: one message at a time (send one, wait until
 * the consumer has it, record the time from before the send to the consumer's receipt, pause so the consumer goes
 * idle, repeat). This is what a wait policy trades against throughput: a consumer that has parked pays a wake-up
 * (an {@code unpark}, an executor hand-off, a context switch) for the next lone message.
 *
 * <h2>Threads</h2>
 * The calling thread sends and waits (spin, then yield); each face receives on its own thread (a dedicated
 * {@code recv} thread, an executor, a scheduler worker), except the trampoline publisher, which delivers inside
 * the send. The receipt time is taken on the receiving thread and published with a volatile store.
 */
final class Latency {
    /** The pause after each sample: longer than any back-off, so every sample starts from an idle consumer. */
    static final long PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long SAMPLE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    /** One face under test: a channel from the calling thread to a consumer that calls {@link Probe#received()}. */
    interface Face extends AutoCloseable {
        void send(Integer message) throws Exception;

        @Override
        void close();
    }

    /** Where the consumer reports a receipt. */
    static final class Probe {
        private final AtomicLong count = new AtomicLong();
        private volatile long receivedAt;

        /** Receiving thread: one message arrived. */
        void received() {
            receivedAt = System.nanoTime();
            count.incrementAndGet(); // publishes receivedAt
        }
    }

    /** A face to measure: its name, what it waits with, and how to build it around a probe. */
    record Entry(String name, String waitPolicy, java.util.function.Function<Probe, Face> factory) {
    }

    /** One result line. */
    record Result(String name, String waitPolicy, Histogram histogram) {
    }

    private Latency() {
    }

    /** {@link RecvThread}'s name: the raw mailbox, no face. */
    static final String RECV = "mailbox recv()";
    /** {@link ExecutorPublisher}'s name: {@value}. */
    static final String PUBLISHER_EXECUTOR = Faces.PUBLISHER + " on a single-thread executor";
    /** {@link TrampolinePublisher}'s name: {@value}. */
    static final String PUBLISHER_TRAMPOLINE = Faces.PUBLISHER_TRAMPOLINE;
    /** {@link FluxSingle}'s name (the policy is in its own column): {@value}. */
    static final String FLUX_SINGLE = Faces.FUSED_FLUX + "(Schedulers.newSingle)";
    /** {@link SubscriberRecv}'s name: {@value}. */
    static final String SUBSCRIBER = "upstream -> " + Faces.SUBSCRIBER + " -> recv()";
    /** {@link ProcessorExecutor}'s name: {@value}. */
    static final String PROCESSOR = "upstream -> " + Faces.PROCESSOR + " -> subscriber on a single-thread executor";
    /** {@link SinkSingle}'s name, {@code *} for a comparator: {@value}. */
    static final String SINK_SINGLE = "* " + Faces.SINK_ON + "(Schedulers.newSingle)";

    /** @return the faces measured, in output order, each wired through {@link Faces} */
    static List<Entry> faces(int capacity) {
        final List<Entry> faces = new ArrayList<>();
        faces.add(new Entry(RECV, "defaults", p -> new RecvThread(capacity, p, WaitPolicy.defaults())));
        faces.add(new Entry(RECV, "park", p -> new RecvThread(capacity, p, WaitPolicy.park())));
        faces.add(new Entry(PUBLISHER_EXECUTOR, "defaults",
                p -> new ExecutorPublisher(capacity, p, WaitPolicy.defaults())));
        faces.add(new Entry(PUBLISHER_EXECUTOR, "park", p -> new ExecutorPublisher(capacity, p, WaitPolicy.park())));
        faces.add(new Entry(PUBLISHER_TRAMPOLINE, "park (fixed)", p -> new TrampolinePublisher(capacity, p)));
        faces.add(new Entry(FLUX_SINGLE, "linger (default)", p -> new FluxSingle(capacity, p, null)));
        faces.add(new Entry(FLUX_SINGLE, "defaults (opt-in)", p -> new FluxSingle(capacity, p, WaitPolicy.defaults())));
        faces.add(new Entry(SUBSCRIBER, "defaults", p -> new SubscriberRecv(capacity, p)));
        faces.add(new Entry(PROCESSOR, "defaults", p -> new ProcessorExecutor(capacity, p)));
        faces.add(new Entry(SINK_SINGLE, "(Reactor)", p -> new SinkSingle(capacity, p)));
        return faces;
    }

    /** Measures every face, {@code samples} lone messages each (after {@code samples / 10} unrecorded ones). */
    static List<Result> run(int capacity, int samples, Supplier<Boolean> progress) throws Exception {
        final List<Result> results = new ArrayList<>();
        final Integer message = 42;
        for (Entry e : faces(capacity)) {
            final Probe probe = new Probe();
            final Histogram h = new Histogram(3);
            try (Face face = e.factory().apply(probe)) {
                final int warmup = Math.max(10, samples / 10);
                for (int i = 0; i < warmup + samples; i++) {
                    final long before = probe.count.get();
                    final long t0 = System.nanoTime();
                    face.send(message);
                    final long deadline = t0 + SAMPLE_TIMEOUT_NANOS;
                    for (int spins = 0; probe.count.get() == before; ) {
                        spins = Workload.idle(spins);
                        if (System.nanoTime() - deadline > 0) {
                            throw new IllegalStateException(e.name() + ": a lone message was not received in 10 s");
                        }
                    }
                    if (i >= warmup) {
                        h.recordValue(Math.max(1L, probe.receivedAt - t0));
                    }
                    LockSupport.parkNanos(PAUSE_NANOS);
                }
            }
            results.add(new Result(e.name(), e.waitPolicy(), h));
            progress.get();
        }
        return results;
    }

    static String table(List<Result> results, int samples) {
        final StringBuilder sb = new StringBuilder();
        sb.append("Lone-message latency: ").append(samples).append(" samples per face, one message at a time, a ")
                .append(PAUSE_NANOS / 1_000_000).append(" ms pause between (the consumer goes idle), time from before "
                        + "the send to the consumer's receipt, in microseconds.\n\n");
        sb.append("| face | wait policy | p50 µs | p99 µs | p99.9 µs | max µs |\n");
        sb.append("|---|---|---:|---:|---:|---:|\n");
        for (Result r : results) {
            final Histogram h = r.histogram();
            sb.append(String.format(Locale.ROOT, "| %s | %s | %.1f | %.1f | %.1f | %.1f |%n", r.name(), r.waitPolicy(),
                    h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(99) / 1e3,
                    h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3));
        }
        sb.append("\n`*` comparator.\n");
        return sb.toString();
    }

    // ------------------------------------------------------------------ faces

    private static Thread daemon(Runnable r, String name) {
        final Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** Starts a daemon thread that {@code recv()}s until the mailbox closes, reporting each message to the probe. */
    private static Thread startRecvLoop(Mailbox<Integer> mailbox, Probe probe, String name) {
        final Thread t = daemon(() -> {
            try {
                while (mailbox.recv() != null) {
                    probe.received();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name);
        t.start();
        return t;
    }

    /** A face whose producer calls {@code send} on a mailbox it owns, and whose close closes that mailbox. */
    abstract static class MailboxFace implements Face {
        final Mailbox<Integer> mailbox;

        MailboxFace(Mailbox<Integer> mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        public final void send(Integer message) throws InterruptedException {
            mailbox.send(message);
        }

        @Override
        public void close() {
            mailbox.close();
        }
    }

    /** A subscriber that reports each message to the probe. */
    static final class ProbeSubscriber implements CoreSubscriber<Integer> {
        private final Probe probe;

        ProbeSubscriber(Probe probe) {
            this.probe = probe;
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Integer value) {
            probe.received();
        }

        @Override
        public void onError(Throwable t) {
        }

        @Override
        public void onComplete() {
        }
    }

    /** {@code recv()} on a dedicated thread, with the given wait policy. */
    static final class RecvThread extends MailboxFace {
        private final Thread consumer;

        RecvThread(int capacity, Probe probe, WaitPolicy policy) {
            super(Mailboxes.<Integer>builder().capacity(capacity).waitPolicy(policy).build());
            this.consumer = startRecvLoop(mailbox, probe, "latency-recv");
        }
    }

    /** {@link Faces#publisherOn} a single-thread executor, with the given wait policy. */
    static final class ExecutorPublisher extends MailboxFace {
        private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> daemon(r, "latency-pub"));

        ExecutorPublisher(int capacity, Probe probe, WaitPolicy policy) {
            super(Mailboxes.bounded(capacity));
            Faces.publisherOn(mailbox, executor, policy, new ProbeSubscriber(probe));
        }

        @Override
        public void close() {
            super.close();
            executor.shutdown();
        }
    }

    /** {@link Faces#publisherTrampoline}: the send runs the drain. */
    static final class TrampolinePublisher extends MailboxFace {
        TrampolinePublisher(int capacity, Probe probe) {
            super(Mailboxes.bounded(capacity));
            Faces.publisherTrampoline(mailbox, new ProbeSubscriber(probe));
        }
    }

    /** {@link Faces#fusedFlux} on a single-thread scheduler; a null policy is the library's default (the linger). */
    static final class FluxSingle extends MailboxFace {
        private final Scheduler scheduler = Schedulers.newSingle("latency-flux", true);

        FluxSingle(int capacity, Probe probe, WaitPolicy policy) {
            super(Mailboxes.bounded(capacity));
            Faces.fusedFlux(mailbox, scheduler, policy).subscribe(new ProbeSubscriber(probe));
        }

        @Override
        public void close() {
            super.close();
            scheduler.dispose();
        }
    }

    /** A synchronous upstream on the calling thread into {@link Faces#subscriber}; {@code recv()} on a thread. */
    static final class SubscriberRecv implements Face {
        private final Mailbox<Integer> mailbox;
        private final MailboxSubscriber<Integer> subscriber;
        private final Workloads.DemandUpstream upstream;
        private final Integer[] one = new Integer[1];
        private final Thread consumer;

        SubscriberRecv(int capacity, Probe probe) {
            this.mailbox = Mailboxes.bounded(capacity);
            this.subscriber = Faces.subscriber(mailbox);
            this.upstream = new Workloads.DemandUpstream(one);
            subscriber.onSubscribe(upstream);
            this.consumer = startRecvLoop(mailbox, probe, "latency-sub");
        }

        @Override
        public void send(Integer message) throws InterruptedException {
            one[0] = message;
            upstream.emit(subscriber, 1);
        }

        @Override
        public void close() {
            subscriber.onComplete();
        }
    }

    /** A synchronous upstream into {@link Faces#processorOn}, its downstream on a single-thread executor. */
    static final class ProcessorExecutor implements Face {
        private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> daemon(r, "latency-proc"));
        private final MailboxProcessor<Integer> processor;
        private final Workloads.DemandUpstream upstream;
        private final Integer[] one = new Integer[1];

        ProcessorExecutor(int capacity, Probe probe) {
            this.processor = Faces.processorOn(Mailboxes.bounded(capacity), executor);
            this.upstream = new Workloads.DemandUpstream(one);
            processor.subscribe(new ProbeSubscriber(probe));
            processor.onSubscribe(upstream);
        }

        @Override
        public void send(Integer message) throws InterruptedException {
            one[0] = message;
            upstream.emit(processor, 1);
        }

        @Override
        public void close() {
            processor.onComplete();
            executor.shutdown();
        }
    }

    /** The comparator: {@link Faces#reactorUnicastSink} into {@link Faces#sinkOn} a single-thread scheduler. */
    static final class SinkSingle implements Face {
        private final Sinks.Many<Integer> sink;
        private final Scheduler scheduler = Schedulers.newSingle("latency-sink", true);

        SinkSingle(int capacity, Probe probe) {
            this.sink = Faces.reactorUnicastSink(capacity);
            Faces.sinkOn(sink, scheduler).subscribe(new ProbeSubscriber(probe));
        }

        @Override
        public void send(Integer message) {
            final Sinks.EmitResult result = sink.tryEmitNext(message);
            if (result != Sinks.EmitResult.OK) {
                throw new IllegalStateException("tryEmitNext: " + result);
            }
        }

        @Override
        public void close() {
            sink.tryEmitComplete();
            scheduler.dispose();
        }
    }
}
