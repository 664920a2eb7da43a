package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.TimeUnit;

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

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The price of reporting two consumers at once (issue #6, "misuse"): {@code tryRecvMany} marks the consumer
 * thread for the duration of each batch ({@code MailboxRing.enterConsumer}/{@code exitConsumer}: one plain
 * read and two plain writes of a consumer-owned field, and a {@code try}/{@code finally}) and throws
 * {@code IllegalStateException} if it finds another thread's mark. {@code checked} is the public
 * {@code tryRecvMany}; {@code unchecked} is the same batch written against the ring's internal
 * {@code poll()}/{@code afterReceive(n)}, without the mark. Both consumers spin then yield on an empty poll
 * (the same backoff), so the only difference is the check. Reference workload: 1 producer, 1 consumer,
 * capacity 1024, 10,000 messages per operation.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class ConsumerCheckBenchmark {

    @State(Scope.Thread)
    public static class Mpsc extends MailboxThroughputBenchmark.MpscMailbox {
        MailboxRing<Object> ring;

        @Override
        protected void open() {
            super.open();
            ring = MailboxRing.of(mailbox);
        }
    }

    @Benchmark
    @OperationsPerInvocation(OneToOneState.MESSAGES)
    public Object checked(Mpsc s, Control control) {
        return consume(s, control, true);
    }

    @Benchmark
    @OperationsPerInvocation(OneToOneState.MESSAGES)
    public Object unchecked(Mpsc s, Control control) {
        return consume(s, control, false);
    }

    /**
     * One operation: {@code MESSAGES} messages, spinning then yielding on an empty receive without entering the
     * mailbox's own wait (chosen when the parking {@code recvMany} was bimodal on this machine; see
     * docs/benchmarks-log.md for why it was and the fix), so small differences show.
     */
    static Object consume(Mpsc s, Control control, boolean checked) {
        if (checked) {
            OneToOneState.spinReceive(s, control, (st, max) -> st.mailbox.tryRecvMany(st.sink, max));
        } else {
            OneToOneState.spinReceive(s, control, (st, max) -> drainUnchecked(st.ring, st.sink, max));
        }
        return s.sink.last;
    }

    /** {@code tryRecvMany}'s batch without the consumer mark: what the check is measured against. */
    private static int drainUnchecked(MailboxRing<Object> ring, Sink sink, int max) {
        int n = 0;
        Object e;
        while (n < max && (e = ring.poll()) != null) {
            n++;
            sink.accept(e);
        }
        if (n > 0) {
            ring.afterReceive(n);
        }
        return n;
    }

    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(ConsumerCheckBenchmark.class.getSimpleName())
                .addProfiler("gc")
                .build()).run();
    }
}
