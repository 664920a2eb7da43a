package dev.mighty.mailbox.bench.jmh;

import java.util.AbstractCollection;
import java.util.Iterator;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.jctools.queues.MpscArrayQueue;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Multi-producer scaling of the MPSC mailbox against JCTools {@link MpscArrayQueue} and
 * {@link ArrayBlockingQueue}, in the JCTools {@code QueueThroughputBackoffNone} shape: a {@code Scope.Group}
 * channel, P producer threads each offering one message per operation, one consumer thread draining up to
 * {@link #BATCH} per operation. Group {@code p1} has 1 producer, {@code p2} has 2 (with the consumer, 3 threads:
 * already over 2 cores, so read {@code p2} as contention, not parallel speed-up). For 4 producers:
 * {@code -tg 1,4} on a group (the consumer first: JMH orders a group's methods by name).
 *
 * <p>Scores: {@code offersMade} and {@code messages} (the {@link AuxCounters}) are the throughput that counts,
 * in messages per microsecond; {@code offersFailed} (full) and {@code pollsEmpty} show who waits. The primary
 * score counts operations, failed ones included, so read the counters.
 *
 * <p>Neither side waits inside the channel: a full {@code offer} and an empty drain back off in
 * {@link #backoff()}, kept out of line ({@code DONT_INLINE}) so it costs the same for every channel. Every
 * operation is one attempt, so no loop can outlive the measurement.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class MpscScalingBenchmark {
    /** Most messages one consumer operation takes. */
    public static final int BATCH = 64;
    static final Integer MESSAGE = 1;

    /** The channels compared. */
    public enum Impl {
        MAILBOX, MPSC_ARRAY_QUEUE, ARRAY_BLOCKING_QUEUE
    }

    /** Non-blocking offer and batched drain: the shape every channel here supports. */
    abstract static class Channel {
        abstract boolean offer(Integer m);

        abstract int drain(Sink sink, int max);
    }

    static final class MailboxChannel extends Channel {
        final Mailbox<Integer> mailbox;

        MailboxChannel(int capacity) {
            this.mailbox = Mailboxes.bounded(capacity);
        }

        @Override
        boolean offer(Integer m) {
            return mailbox.trySend(m);
        }

        @Override
        int drain(Sink sink, int max) {
            return mailbox.tryRecvMany(sink, max);
        }
    }

    static final class MpscChannel extends Channel {
        final MpscArrayQueue<Object> queue;

        MpscChannel(int capacity) {
            this.queue = new MpscArrayQueue<>(capacity);
        }

        @Override
        boolean offer(Integer m) {
            return queue.offer(m);
        }

        @Override
        int drain(Sink sink, int max) {
            return queue.drain(sink, max);
        }
    }

    static final class AbqChannel extends Channel {
        final ArrayBlockingQueue<Object> queue;
        final SinkCollection into = new SinkCollection();

        AbqChannel(int capacity) {
            this.queue = new ArrayBlockingQueue<>(capacity);
        }

        @Override
        boolean offer(Integer m) {
            return queue.offer(m);
        }

        @Override
        int drain(Sink sink, int max) {
            into.sink = sink;
            return queue.drainTo(into, max);
        }
    }

    /** A collection that hands what {@code drainTo} adds to a {@link Sink} and keeps nothing. */
    static final class SinkCollection extends AbstractCollection<Object> {
        Sink sink;

        @Override
        public boolean add(Object e) {
            sink.accept(e);
            return true;
        }

        @Override
        public Iterator<Object> iterator() {
            throw new UnsupportedOperationException();
        }

        @Override
        public int size() {
            return 0;
        }
    }

    @State(Scope.Group)
    public static class Shared {
        @Param
        Impl impl;

        @Param("1024")
        int capacity;

        Channel channel;

        @Setup(Level.Trial)
        public void setUp() {
            switch (impl) {
                case MAILBOX -> channel = new MailboxChannel(capacity);
                case MPSC_ARRAY_QUEUE -> channel = new MpscChannel(capacity);
                case ARRAY_BLOCKING_QUEUE -> channel = new AbqChannel(capacity);
                default -> throw new IllegalArgumentException("impl: " + impl);
            }
        }

        /** Empties the channel between iterations (all group threads have stopped: JMH orders this after them). */
        @TearDown(Level.Iteration)
        public void empty() {
            final Sink sink = new Sink();
            while (channel.drain(sink, Integer.MAX_VALUE) != 0) {
                // drain
            }
        }
    }

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class OfferCounters {
        public long offersMade;
        public long offersFailed;

        @Setup(Level.Iteration)
        public void reset() {
            offersMade = 0;
            offersFailed = 0;
        }
    }

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class PollCounters {
        public long messages;
        public long pollsEmpty;
        final Sink sink = new Sink();

        @Setup(Level.Iteration)
        public void reset() {
            messages = 0;
            pollsEmpty = 0;
        }
    }

    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static void backoff() {
        Thread.onSpinWait();
    }

    static void offer(Shared s, OfferCounters c) {
        if (s.channel.offer(MESSAGE)) {
            c.offersMade++;
        } else {
            c.offersFailed++;
            backoff();
        }
    }

    static Object poll(Shared s, PollCounters c) {
        final int n = s.channel.drain(c.sink, BATCH);
        if (n != 0) {
            c.messages += n;
        } else {
            c.pollsEmpty++;
            backoff();
        }
        return c.sink.last;
    }

    @Benchmark
    @Group("p1")
    @GroupThreads(1)
    public void p1_offer(Shared s, OfferCounters c) {
        offer(s, c);
    }

    @Benchmark
    @Group("p1")
    @GroupThreads(1)
    public Object p1_drain(Shared s, PollCounters c) {
        return poll(s, c);
    }

    @Benchmark
    @Group("p2")
    @GroupThreads(2)
    public void p2_offer(Shared s, OfferCounters c) {
        offer(s, c);
    }

    @Benchmark
    @Group("p2")
    @GroupThreads(1)
    public Object p2_drain(Shared s, PollCounters c) {
        return poll(s, c);
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar MpscScalingBenchmark
     *   java -jar bench/target/benchmarks.jar MpscScalingBenchmark.p1 -p impl=MAILBOX,MPSC_ARRAY_QUEUE
     *   java -jar bench/target/benchmarks.jar MpscScalingBenchmark.p2 -tg 1,4      # 1 consumer, 4 producers (JMH orders a group's methods by name: p2_drain first)
     *
     * Read the messages/offersMade counters (per microsecond), not the primary score.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(MpscScalingBenchmark.class.getSimpleName())
                .build()).run();
    }
}
