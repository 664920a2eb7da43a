package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.bench.FourEmitters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
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
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * Issue 19's rows in JMH: {@value FourEmitters#EMITTERS} threads emitting at once into one sink, delivered through
 * {@code publishOn(Schedulers.newSingle(..))}, {@value #MESSAGES} messages per operation in total, every message
 * checked (each emitter's messages once and in order). The kinds ({@link FourEmitters.Kind}): {@code MailboxSinks},
 * Reactor's unicast sink with a handler retrying {@code FAIL_NON_SERIALIZED} and {@code FAIL_OVERFLOW}, and
 * {@code Flux.create(BUFFER)}. The benchmark thread is emitter 0; the operation ends when the scheduler thread has
 * received the last message. Scored per message; the CLI rows {@code sinks_4p_mailbox_throughput},
 * {@code reactor_sink_4p_mailbox_throughput} and {@code flux_create_4p_mailbox_throughput} are the same workload.
 *
 * <p>Goals (issue 19): {@code MAILBOX_SINKS} &gt;= 4x faster than {@code REACTOR_SINK} and &gt;= 1.5x faster than
 * {@code FLUX_CREATE}; 0 B/msg on our side. {@code -prof gc} counts every thread of the fork: the boxed messages are
 * preallocated and our emitters and fused poll allocate nothing ({@code MailboxSinksAllocationTest} pins that), so
 * what it shows for {@code MAILBOX_SINKS} is Reactor's {@code publishOn}, which allocates a task each time its
 * worker is woken: read it as wake-ups per message.
 *
 * <p>Five threads and a scheduler on a 2-core machine: read the scores as contention, not parallel speed-up.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class SinksFourEmitterBenchmark {
    /** Messages per operation, in all (the CLI's iteration). */
    public static final int MESSAGES = 1_000;

    /** Checks each emitter's order; the benchmark thread waits on {@code count}. */
    static final class EmitterCheck implements CoreSubscriber<Integer> {
        private final long[] next = new long[FourEmitters.EMITTERS];
        private int inIteration;
        volatile long count;
        volatile Throwable error;

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Integer value) {
            final int v = value;
            final int emitter = v % FourEmitters.EMITTERS;
            if (inIteration == 0) {
                for (int e = 0; e < next.length; e++) {
                    next[e] = e;
                }
            }
            if (v != next[emitter] && error == null) {
                error = new IllegalStateException("emitter " + emitter + ": expected " + next[emitter] + ", got " + v);
            }
            next[emitter] = v + FourEmitters.EMITTERS;
            inIteration = inIteration + 1 == MESSAGES ? 0 : inIteration + 1;
            count = count + 1; // one writer: the scheduler thread
        }

        @Override
        public void onError(Throwable t) {
            error = t;
        }

        @Override
        public void onComplete() {
        }
    }

    @State(Scope.Benchmark)
    public static class Emitters {
        @Param
        FourEmitters.Kind kind;

        @Param("1024")
        int capacity;

        final EmitterCheck check = new EmitterCheck();
        FourEmitters emitters;

        @Setup(Level.Trial)
        public void setUp() {
            final Integer[] payload = new Integer[MESSAGES];
            for (int i = 0; i < MESSAGES; i++) {
                payload[i] = i;
            }
            emitters = FourEmitters.create(kind, "jmh-" + kind, capacity, payload, OneToOneState::producerIdle);
            emitters.open(check);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            emitters.close();
        }
    }

    @Benchmark
    @OperationsPerInvocation(MESSAGES)
    public long emit_4p_publish_on(Emitters s) throws InterruptedException {
        final EmitterCheck check = s.check;
        final long target = check.count + MESSAGES;
        s.emitters.emit(MESSAGES);
        // every message was accepted: the scheduler thread delivers them all, so this wait ends
        for (int spins = 0; check.count < target && check.error == null; spins++) {
            OneToOneState.producerIdle(spins);
        }
        final Throwable error = check.error;
        if (error != null) {
            throw new IllegalStateException("subscriber", error);
        }
        return check.count;
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   java -jar bench/target/benchmarks.jar SinksFourEmitterBenchmark -prof gc
     *
     * Scores are ns per message; compare MAILBOX_SINKS with REACTOR_SINK and FLUX_CREATE from the same run.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(SinksFourEmitterBenchmark.class.getSimpleName())
                .addProfiler("gc")
                .build()).run();
    }
}
