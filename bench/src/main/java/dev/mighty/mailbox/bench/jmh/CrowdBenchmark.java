package dev.mighty.mailbox.bench.jmh;

import java.util.Locale;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.bench.Crowd;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 * Crowds of blocked producers (issue 18): one op is one whole crowd ({@link Crowd#runOnce()}): every producer
 * sends its messages with the channel's blocking send and the benchmark thread receives them all in batches of
 * up to {@value #BATCH} and checks each producer's order.
 * <ul>
 *     <li>{@code VIRTUAL_10K}: 10,000 virtual-thread producers × 10 messages into capacity 64, threads started
 *     per crowd (JDK 21+: on 17 the trial fails in its setup, saying so; run it with a JDK 21+ {@code java});</li>
 *     <li>{@code PLATFORM_64}: 64 platform producer threads × {@value Crowd#PLATFORM_MESSAGES} messages into
 *     capacity 8, the threads kept for the trial and released together through a barrier per crowd.</li>
 * </ul>
 * {@code channel} is the mailbox ({@code send} / {@code recvMany}) or {@code ArrayBlockingQueue} ({@code put} /
 * {@code take} then {@code drainTo}). The score is ms per crowd; each measured iteration prints the mailbox's
 * producer parks per message. Goals: virtual crowd no slower than ABQ, platform crowd &lt;= 0.7x ABQ, parks
 * per message &lt;= 0.1.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 5, time = 2, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 2, timeUnit = TimeUnit.SECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class CrowdBenchmark {
    /** The most messages one batched receive takes. */
    static final int BATCH = 256;

    @Param({"VIRTUAL_10K", "PLATFORM_64"})
    public Crowd.Shape shape;

    @Param({"MAILBOX", "ABQ"})
    public Crowd.Channel channel;

    private Crowd crowd;
    private long parks0;
    private long crowds;

    @Setup(Level.Trial)
    public void open() {
        crowd = Crowd.open(shape, channel, BATCH); // throws on JDK < 21 for VIRTUAL_10K
    }

    @Setup(Level.Iteration)
    public void mark() {
        parks0 = crowd.producerParks();
        crowds = 0;
    }

    @Benchmark
    public long crowd() throws InterruptedException {
        crowds++;
        return crowd.runOnce();
    }

    @TearDown(Level.Iteration)
    public void parks() {
        final long parks = crowd.producerParks();
        if (parks >= 0 && crowds > 0) {
            System.out.printf(Locale.ROOT, "%n  [%s %s] producer parks per message: %.3f (%d crowds)%n", shape.name(),
                    channel, (parks - parks0) / ((double) crowds * shape.messages()), crowds);
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        crowd.close();
    }

    /*
     * How to run (from the repository root, after `mvn -B -q -pl bench -am package -DskipTests`):
     *
     *   /usr/lib/jvm/temurin-25-jdk-amd64/bin/java -jar bench/target/benchmarks.jar CrowdBenchmark
     *   java -jar bench/target/benchmarks.jar CrowdBenchmark -p shape=PLATFORM_64      # JDK 17: platform only
     *   java -jar bench/target/benchmarks.jar CrowdBenchmark -f 1 -wi 2 -i 3            # a quick look
     *
     * The forks use the JVM that runs the jar. Compare MAILBOX with ABQ of the same shape in the same run.
     */
    public static void main(String[] args) throws RunnerException {
        new Runner(new OptionsBuilder()
                .include(CrowdBenchmark.class.getSimpleName())
                .build()).run();
    }
}
