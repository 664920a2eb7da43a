package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscArrayQueue;
import org.jctools.queues.SpscArrayQueue;
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

import static dev.mighty.mailbox.bench.jmh.OneToOneState.CAPACITY;
import static dev.mighty.mailbox.bench.jmh.OneToOneState.MESSAGES;

/**
 * The reference pair, {@code single_recv_empty_payload} and {@code batched_recv_empty_payload} (the Rust
 * runtime's {@code benches/mailbox_throughput.rs}): 1 producer thread, 1 consumer (the benchmark thread),
 * 10,000 messages per operation through capacity 1024, scored per message. Next to them, in the same class so
 * one run compares them, the bare JCTools rings the mailbox must stay close to: {@link MpscArrayQueue} and
 * {@link SpscArrayQueue}, received one {@code poll} at a time and by {@code drain}.
 *
 * <p>Goals (issue #5): MPSC mailbox batched &lt;= 1.2x {@code jctools_mpsc_drain}; SPSC mailbox batched
 * &lt;= 1.3x {@code jctools_spsc_drain}; 0 B/msg ({@code -prof gc}: {@code gc.alloc.rate.norm} per message).
 *
 * <p>Producers: the mailbox's {@code send} (spins, then parks while full); the bare rings spin then yield on
 * a full {@code offer}. Consumers: the mailbox's {@code recv}/{@code recvMany} (spin, then park while empty);
 * the bare rings spin, then yield, on an empty {@code poll}/{@code drain}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class MailboxThroughputBenchmark {

    /** A reactor-mailbox {@link Mailbox} of {@link OneToOneState#CAPACITY}; the producer uses {@code send}. */
    public abstract static class MailboxState extends OneToOneState {
        Mailbox<Object> mailbox;
        final Sink sink = new Sink();

        abstract Mailbox<Object> newMailbox();

        @Override
        protected void open() {
            mailbox = newMailbox();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final Mailbox<Object> mailbox = this.mailbox;
            for (int i = 0; i < n; i++) {
                mailbox.send(MESSAGE);
            }
        }

        @Override
        protected int drainNow() {
            return mailbox.tryRecvMany(sink, Integer.MAX_VALUE);
        }

        @Override
        protected void producerFailed(Throwable t) {
            mailbox.closeExceptionally(t); // wakes a consumer parked in recv
        }

        /** Closes the mailbox and prints its stats (parks, high-water) with the trial's output. */
        @Override
        protected void close() {
            mailbox.close();
            System.out.println("mailbox stats: " + mailbox.stats());
        }
    }

    @State(Scope.Thread)
    public static class MpscMailbox extends MailboxState {
        @Override
        Mailbox<Object> newMailbox() {
            return Mailboxes.bounded(CAPACITY);
        }
    }

    @State(Scope.Thread)
    public static class SpscMailbox extends MailboxState {
        @Override
        Mailbox<Object> newMailbox() {
            return Mailboxes.builder().capacity(CAPACITY).singleProducer().build();
        }
    }

    /** A bare JCTools ring; the producer spins (then yields) on a full {@code offer}. */
    public abstract static class RingState extends OneToOneState {
        MessagePassingQueue<Object> queue;
        final Sink sink = new Sink();

        abstract MessagePassingQueue<Object> newQueue();

        @Override
        protected void open() {
            queue = newQueue();
        }

        @Override
        protected void produce(int n) throws InterruptedException {
            final MessagePassingQueue<Object> queue = this.queue;
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

    @State(Scope.Thread)
    public static class MpscRing extends RingState {
        @Override
        MessagePassingQueue<Object> newQueue() {
            return new MpscArrayQueue<>(CAPACITY);
        }
    }

    @State(Scope.Thread)
    public static class SpscRing extends RingState {
        @Override
        MessagePassingQueue<Object> newQueue() {
            return new SpscArrayQueue<>(CAPACITY);
        }
    }

    // ------------------------------------------------------------------ the reference pair (MPSC mailbox)

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object single_recv_empty_payload(MpscMailbox s) throws InterruptedException {
        return singleRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object batched_recv_empty_payload(MpscMailbox s) throws InterruptedException {
        return batchedRecv(s);
    }

    // ------------------------------------------------------------------ SPSC mailbox

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object spsc_single_recv_empty_payload(SpscMailbox s) throws InterruptedException {
        return singleRecv(s);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object spsc_batched_recv_empty_payload(SpscMailbox s) throws InterruptedException {
        return batchedRecv(s);
    }

    // ------------------------------------------------------------------ bare rings

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_mpsc_poll(MpscRing s, Control control) {
        return poll(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_mpsc_drain(MpscRing s, Control control) {
        return drain(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_spsc_poll(SpscRing s, Control control) {
        return poll(s, control);
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public Object jctools_spsc_drain(SpscRing s, Control control) {
        return drain(s, control);
    }

    // ------------------------------------------------------------------ consumer loops

    static Object singleRecv(MailboxState s) throws InterruptedException {
        s.request();
        final Mailbox<Object> mailbox = s.mailbox;
        Object last = null;
        for (int i = 0; i < MESSAGES; i++) {
            last = mailbox.recv(); // parks while empty; throws once the producer failed (closeExceptionally)
        }
        s.received(MESSAGES);
        return last;
    }

    static Object batchedRecv(MailboxState s) throws InterruptedException {
        s.request();
        final Mailbox<Object> mailbox = s.mailbox;
        final Sink sink = s.sink;
        int n = 0;
        while (n < MESSAGES) {
            n += mailbox.recvMany(sink, MESSAGES - n);
        }
        s.received(n);
        return sink.last;
    }

    static Object poll(RingState s, Control control) {
        s.request();
        final MessagePassingQueue<Object> queue = s.queue;
        Object last = null;
        int n = 0;
        for (int spins = 0; n < MESSAGES; ) {
            final Object e = queue.poll();
            if (e != null) {
                last = e;
                n++;
                spins = 0;
            } else if (s.stalled(control, spins++)) {
                break;
            }
        }
        s.received(n);
        return last;
    }

    static Object drain(RingState s, Control control) {
        OneToOneState.spinReceive(s, control, (st, max) -> st.queue.drain(st.sink, max));
        return s.sink.last;
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar MailboxThroughputBenchmark
     *   java -jar bench/target/benchmarks.jar MailboxThroughputBenchmark -prof gc        # + gc.alloc.rate.norm
     *   java -jar bench/target/benchmarks.jar 'MailboxThroughputBenchmark.(batched_recv|jctools_mpsc_drain)' \
     *        -f 1 -wi 3 -i 5 -w 1s -r 1s                                                  # a quick look
     *
     * Scores are ns per message (AverageTime over 10,000-message operations). Compare within one run only.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(MailboxThroughputBenchmark.class.getSimpleName())
                .build()).run();
    }
}
