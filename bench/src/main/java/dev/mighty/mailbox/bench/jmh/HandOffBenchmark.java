package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.rs.MailboxProcessor;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import static dev.mighty.mailbox.bench.jmh.OneToOneState.CAPACITY;
import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

/**
 * The hand-off cost of each face on the executors and schedulers users run (1 producer thread, capacity 1024,
 * 10,000 messages per operation, scored per message), next to the raw mailbox in the same run:
 * <ul>
 *     <li>the Publisher half: {@code MailboxPublisher} on {@code Executors.newSingleThreadExecutor()} (its
 *     default wait policy) and in trampoline mode; the fused {@code MailboxFlux} into {@code publishOn} on a
 *     single-thread Reactor scheduler, and Reactor's unicast sink into the same, the comparator;</li>
 *     <li>the Subscriber half: a demand-respecting upstream calling {@code onNext} on the producer thread into
 *     {@code MailboxSubscriber}, the benchmark thread receiving with {@code tryRecvMany}, next to raw
 *     {@code trySend}/{@code tryRecvMany}; and the pair as {@code MailboxProcessor} with its downstream on an
 *     executor.</li>
 * </ul>
 * Where the consumer is a pool thread the benchmark thread only waits for the count (spin, then yield: the
 * same wait for the faces and the comparator). Each trial prints the mailbox's wake-up counters per 10 M
 * messages ({@code consumerParks}: data wake-up registrations and parks; {@code producerParks}: room
 * registrations and parked sends).
 *
 * <p>Goals (issue 11, defaults only): executor publisher &lt;= 1.5x {@code raw_batched_recv}; fused flux
 * &gt;= 2.5x faster than {@code reactor_sink_single}; subscriber &lt;= 1.5x {@code raw_try_send_try_recv_many};
 * trampoline publisher &lt;= 2x {@code raw_try_send_try_recv_many}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 3, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class HandOffBenchmark {

    // ------------------------------------------------------------------ baselines

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object raw_batched_recv(MailboxThroughputBenchmark.MpscMailbox s) throws InterruptedException {
        return MailboxThroughputBenchmark.batchedRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object raw_try_send_try_recv_many(RawTrySend s, Control control) {
        return tryRecvMany(s, control);
    }

    // ------------------------------------------------------------------ the Publisher half

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object publisher_executor(PublisherExecutor s, Control control) {
        return delivered(s, s.subscriber, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object publisher_trampoline(PublisherTrampoline s, Control control) {
        return delivered(s, s.subscriber, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object flux_single(FluxSingle s, Control control) {
        return delivered(s, s.subscriber, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object reactor_sink_single(SinkSingle s, Control control) {
        return delivered(s, s.subscriber, control);
    }

    // ------------------------------------------------------------------ the Subscriber half

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object subscriber_try_recv_many(SubscriberFed s, Control control) {
        return tryRecvMany(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object processor_executor(ProcessorExecutor s, Control control) {
        return delivered(s, s.subscriber, control);
    }

    // ------------------------------------------------------------------ consumer loops

    static <S extends MailboxHandOff & WithSink> Object tryRecvMany(S s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.mailbox.tryRecvMany(st.sink(), max));
        return s.sink().last;
    }

    /** Waits (spin, then yield) until the subscriber, running elsewhere, has seen this operation's messages. */
    static Object delivered(OneToOneState s, VolatileCounter subscriber, Control control) {
        s.request();
        final long start = subscriber.accounted;
        final long target = start + MESSAGES;
        long count;
        for (int spins = 0; (count = subscriber.count()) < target; ) {
            if (s.stalled(control, spins++)) {
                break;
            }
        }
        subscriber.checkError();
        subscriber.accounted = count;
        s.received((int) (count - start));
        return subscriber.last;
    }

    interface WithSink {
        Sink sink();
    }

    /** An unbounded-demand subscriber whose count another thread may read (release store per message). */
    static final class VolatileCounter implements CoreSubscriber<Object> {
        private final AtomicLong count = new AtomicLong();
        /** Messages already counted as received by an operation or by resync. Benchmark thread only. */
        long accounted;
        Object last;
        volatile Throwable error;

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Object item) {
            last = item;
            count.lazySet(count.get() + 1); // single writer: the thread delivering onNext
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onComplete() {
        }

        long count() {
            return count.get();
        }

        /** @return messages delivered and not yet counted (what a cut-short operation left); benchmark thread */
        int takeUnaccounted() {
            final long c = count();
            final int d = (int) (c - accounted);
            accounted = c;
            return d;
        }

        void checkError() {
            final Throwable t = error;
            if (t != null) {
                throw new IllegalStateException("onError", t);
            }
        }
    }

    /** A mailbox-backed state that prints its wake-up counters per 10 M messages at the end of each trial. */
    public abstract static class MailboxHandOff extends OneToOneState {
        Mailbox<Object> mailbox;
        private MailboxStats before;

        @org.openjdk.jmh.annotations.Setup(Level.Iteration)
        public final void markStats() {
            before = mailbox.stats();
        }

        @TearDown(Level.Iteration)
        public final void printStats() {
            final MailboxStats s = mailbox.stats();
            final long msgs = s.received() - before.received();
            if (msgs > 0) {
                System.out.printf("%n  [%s] wake-ups per 10M msgs: consumerParks=%.0f producerParks=%.0f (%d msgs)%n",
                        getClass().getSimpleName(),
                        (s.consumerParks() - before.consumerParks()) * 1e7 / msgs,
                        (s.producerParks() - before.producerParks()) * 1e7 / msgs, msgs);
            }
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final Mailbox<Object> mailbox = this.mailbox;
            for (int i = 0; i < n; i++) {
                mailbox.send(MESSAGE);
            }
        }

        @Override
        protected void producerFailed(Throwable t) {
            mailbox.closeExceptionally(t);
        }
    }

    /** A mailbox whose consumer is a subscriber on another thread. */
    public abstract static class Delivering extends MailboxHandOff {
        final VolatileCounter subscriber = new VolatileCounter();

        @Override
        protected int drainNow() {
            return subscriber.takeUnaccounted(); // the subscriber receives on its own thread
        }
    }

    /** The producer sends with {@code trySend}, spinning then yielding while full. */
    @State(Scope.Thread)
    public static class RawTrySend extends MailboxHandOff implements WithSink {
        final Sink sink = new Sink();

        @Override
        public Sink sink() {
            return sink;
        }

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final Mailbox<Object> mailbox = this.mailbox;
            for (int i = 0; i < n; i++) {
                for (int spins = 0; !mailbox.trySend(MESSAGE); ) {
                    spins = producerIdle(spins);
                }
            }
        }

        @Override
        protected int drainNow() {
            return mailbox.tryRecvMany(sink, Integer.MAX_VALUE);
        }
    }

    /** {@link Faces#publisherOn} with {@code Executors.newSingleThreadExecutor()}: the default wait policy. */
    @State(Scope.Thread)
    public static class PublisherExecutor extends Delivering {
        ExecutorService executor;

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            executor = Executors.newSingleThreadExecutor(receiverThreads("publisher-executor"));
            Faces.publisherOn(mailbox, executor, subscriber);
        }

        @Override
        protected void close() {
            mailbox.close();
            executor.shutdown();
        }
    }

    /** {@link Faces#publisherTrampoline}: the drain runs on the producer's thread once the subscriber keeps up. */
    @State(Scope.Thread)
    public static class PublisherTrampoline extends Delivering {
        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            Faces.publisherTrampoline(mailbox, subscriber);
        }

        @Override
        protected void close() {
            mailbox.close();
        }
    }

    /**
     * {@link Faces#fusedFlux} on a single-thread scheduler: ASYNC-fused, no policy (the library's default wait, a
     * linger on an earned budget, then a registration).
     */
    @State(Scope.Thread)
    public static class FluxSingle extends Delivering {
        Scheduler scheduler;

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            scheduler = Schedulers.newSingle(receiverThreads("flux-single"));
            Faces.fusedFlux(mailbox, scheduler, null).subscribe(subscriber);
        }

        @Override
        protected void close() {
            mailbox.close();
            scheduler.dispose();
        }
    }

    /**
     * The comparator: {@link Faces#reactorUnicastSink} (capacity 1024) into {@link Faces#sinkOn} a single-thread
     * scheduler.
     */
    @State(Scope.Thread)
    public static class SinkSingle extends OneToOneState {
        final VolatileCounter subscriber = new VolatileCounter();
        Sinks.Many<Object> sink;
        Scheduler scheduler;

        @Override
        protected void open() {
            sink = Faces.reactorUnicastSink(CAPACITY);
            scheduler = Schedulers.newSingle(receiverThreads("sink-single"));
            Faces.sinkOn(sink, scheduler).subscribe(subscriber);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            ComparatorThroughputBenchmark.emitAll(sink, n);
        }

        @Override
        protected int drainNow() {
            return subscriber.takeUnaccounted();
        }

        @Override
        protected void close() {
            sink.tryEmitComplete();
            scheduler.dispose();
        }
    }

    /**
     * A demand-respecting upstream on the producer thread: {@code onNext} only within what was requested,
     * spinning then yielding while there is no demand (a synchronous source, as {@code Flux.range} would be).
     */
    static final class DemandUpstream implements Subscription {
        private final AtomicLong requested = new AtomicLong();
        private long emitted;
        private volatile boolean cancelled;

        @Override
        public void request(long n) {
            requested.getAndAdd(n); // no overflow here: the subscriber asks for at most its capacity at a time
        }

        @Override
        public void cancel() {
            cancelled = true;
        }

        void emit(Subscriber<Object> downstream, int n) throws InterruptedException {
            for (int i = 0; i < n; i++) {
                for (int spins = 0; requested.get() == emitted; ) {
                    if (cancelled) {
                        throw new IllegalStateException("upstream cancelled");
                    }
                    spins = OneToOneState.producerIdle(spins);
                }
                emitted++;
                downstream.onNext(OneToOneState.MESSAGE);
            }
        }
    }

    /** Upstream → {@link Faces#subscriber} → the benchmark thread's {@code tryRecvMany}. */
    @State(Scope.Thread)
    public static class SubscriberFed extends MailboxHandOff implements WithSink {
        final Sink sink = new Sink();
        final DemandUpstream upstream = new DemandUpstream();
        MailboxSubscriber<Object> subscriber;

        @Override
        public Sink sink() {
            return sink;
        }

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            subscriber = Faces.subscriber(mailbox);
            subscriber.onSubscribe(upstream);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            upstream.emit(subscriber, n);
        }

        @Override
        protected int drainNow() {
            return mailbox.tryRecvMany(sink, Integer.MAX_VALUE);
        }
    }

    /** Upstream → {@link Faces#processorOn} → a subscriber on {@code Executors.newSingleThreadExecutor()}. */
    @State(Scope.Thread)
    public static class ProcessorExecutor extends Delivering {
        final DemandUpstream upstream = new DemandUpstream();
        ExecutorService executor;
        MailboxProcessor<Object> processor;

        @Override
        protected void open() {
            mailbox = Mailboxes.bounded(CAPACITY);
            executor = Executors.newSingleThreadExecutor(receiverThreads("processor-executor"));
            processor = Faces.processorOn(mailbox, executor);
            processor.subscribe(subscriber);
            processor.onSubscribe(upstream);
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            upstream.emit(processor, n);
        }

        @Override
        protected void close() {
            processor.onComplete();
            executor.shutdown();
        }
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar HandOffBenchmark
     *   java -jar bench/target/benchmarks.jar HandOffBenchmark -f 1 -wi 3 -i 5     # a quick look
     *
     * Scores are ns per message; compare each face with its baseline from the same run. The printed
     * "wake-ups per 10M msgs" lines are per measured iteration.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(HandOffBenchmark.class.getSimpleName())
                .build()).run();
    }
}
