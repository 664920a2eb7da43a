package dev.mighty.mailbox.bench.kafka;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.kafka.EmbeddedKafka;
import dev.mighty.mailbox.kafka.KafkaMailboxReceiver;
import dev.mighty.mailbox.kafka.ReceivedRecord;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kafka-bridge}: what the {@link KafkaMailboxReceiver} costs over a bare {@code KafkaConsumer} poll loop.
 * Starts an in-process Kafka node (KRaft, localhost), loads one topic with {@code --records} small records, then
 * reads the whole topic, from the beginning, with a fresh consumer group per run, in four ways, alternating their
 * order round by round (A B C, C B A, ...):
 * <ul>
 *   <li>{@code bare_poll_loop}: one thread, {@code poll} and a loop over the records, {@code commitSync()} every
 *       second (the same commit work the receiver does);</li>
 *   <li>{@code receiver_flux_publishOn}: receiver &rarr; {@code MailboxFlux} &rarr; {@code publishOn} (a single
 *       worker) &rarr; subscriber that acknowledges every record: the poll thread and the subscriber on two
 *       threads, as {@code docs/kafka.md} recommends for real work;</li>
 *   <li>{@code receiver_flux_inline}: the same without {@code publishOn}: the subscriber runs on the poll thread
 *       whenever it waits on an empty mailbox (the trampolined path);</li>
 *   <li>{@code receiver_receive}: {@code receiver.receive()} (its own single worker, fused {@code publishOn}, the
 *       revoked-record filter) &rarr; the same subscriber: the reactor-kafka-shaped face.</li>
 * </ul>
 * Both sides use {@code ByteArrayDeserializer}, {@code max.poll.records} 500 and a 1 s commit interval; each
 * touches every record's value. A run is timed from its first record to its last (the group join before it is
 * not counted). {@code --warmup} rounds run first and are not reported: three by default, because the JIT compiles
 * the broker, the client and the bridge for the first half minute (a profile of a one-round warm-up showed the C2
 * compiler thread busy through the measured rounds, on one of the two cores). Reports the median records/s per way
 * and its ratio to the bare loop, and the process's CPU time per record over the same span (all threads, the
 * in-process broker's included: on a small machine the bridge's second thread competes with the broker for the
 * cores, so the CPU column says how much of a lower rate is the bridge's own work).
 *
 * <p>Usage: {@code java -cp bench/target/mailbox-bench.jar dev.mighty.mailbox.bench.kafka.KafkaBridgeBench}
 * ({@code --help} for the options).
 */
@Command(name = "kafka-bridge", mixinStandardHelpOptions = true, sortOptions = false,
        version = "kafka-bridge (reactor-mailbox)",
        description = {"Reads one topic of small records with a bare KafkaConsumer poll loop and through",
                "KafkaMailboxReceiver -> MailboxFlux -> subscriber with acks, in one JVM, against an in-process",
                "Kafka broker; prints records/s and the ratio to the bare loop."})
public final class KafkaBridgeBench implements Callable<Integer> {
    /** The ways of reading the topic. */
    enum Way { BARE_POLL_LOOP, RECEIVER_FLUX_PUBLISH_ON, RECEIVER_FLUX_INLINE, RECEIVER_RECEIVE }

    private static final String TOPIC = "bench";
    /** Held so the level set in main stays (java.util.logging keeps loggers weakly). */
    private static final java.util.logging.Logger RECEIVER_LOG =
            java.util.logging.Logger.getLogger("dev.mighty.mailbox.kafka");
    private static final Duration RUN_LIMIT = Duration.ofMinutes(5);
    private static final long COMMIT_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    @Option(names = "--records", paramLabel = "N", description = "Records in the topic (default: ${DEFAULT-VALUE}).")
    int records = 1_000_000;

    @Option(names = "--partitions", paramLabel = "N", description = "Partitions (default: ${DEFAULT-VALUE}).")
    int partitions = 3;

    @Option(names = "--value-bytes", paramLabel = "N", description = "Value size (default: ${DEFAULT-VALUE}).")
    int valueBytes = 16;

    @Option(names = "--rounds", paramLabel = "N", description = "Rounds of the four ways (default: ${DEFAULT-VALUE}).")
    int rounds = 5;

    @Option(names = "--warmup", paramLabel = "N",
            description = "Rounds run first and not reported (default: ${DEFAULT-VALUE}).")
    int warmup = 3;

    @Option(names = "--capacity", paramLabel = "N", description = "Receiver capacity (default: ${DEFAULT-VALUE}).")
    int capacity = 1024;

    private final PrintStream out;
    /** Sinks every value's length so no loop is dead code. */
    private long sink;

    KafkaBridgeBench(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"); // the broker's INFO is a flood
        }
        RECEIVER_LOG.setLevel(java.util.logging.Level.WARNING); // the receivers' rebalance lines, one per run
        System.exit(new CommandLine(new KafkaBridgeBench(System.out)).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        out.printf(Locale.ROOT, "kafka-bridge: JVM %s %s, %d cores, records=%,d partitions=%d value=%dB warmup=%d"
                        + " rounds=%d capacity=%d%n", System.getProperty("java.vm.name"),
                System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(), records, partitions,
                valueBytes, warmup, rounds, capacity);
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            kafka.createTopic(TOPIC, partitions);
            final long loadStart = System.nanoTime();
            load(kafka);
            final Map<TopicPartition, Long> ends = kafka.endOffsets(TOPIC, partitions);
            final long total = ends.values().stream().mapToLong(Long::longValue).sum();
            out.printf(Locale.ROOT, "loaded %,d records in %.1f s%n", total,
                    (System.nanoTime() - loadStart) / 1e9);
            if (total != records) {
                out.println("FAILED: the topic holds " + total + " records, expected " + records);
                return 1;
            }
            final Map<Way, List<Double>> rates = new EnumMap<>(Way.class);
            final Map<Way, List<Double>> cpu = new EnumMap<>(Way.class);
            int run = 0;
            for (int round = -warmup; round < rounds; round++) {
                final List<Way> order = new ArrayList<>(Arrays.asList(Way.values()));
                if (Math.floorMod(round, 2) == 1) {
                    Collections.reverse(order);
                }
                for (Way way : order) {
                    final String group = way.name().toLowerCase(Locale.ROOT) + "-" + run++;
                    final Run result = way == Way.BARE_POLL_LOOP ? bare(kafka, group)
                            : bridge(kafka, group, way);
                    if (round >= 0) {
                        rates.computeIfAbsent(way, k -> new ArrayList<>()).add(result.rate);
                        cpu.computeIfAbsent(way, k -> new ArrayList<>()).add(result.cpuNanosPerRecord);
                    }
                    out.printf(Locale.ROOT, "  %s  %-26s %,12.0f records/s %,8.0f CPU ns/record %s%n",
                            round < 0 ? "warm-up" : "round " + (round + 1), way.name().toLowerCase(Locale.ROOT),
                            result.rate, result.cpuNanosPerRecord, result.wakeUps < 0 ? ""
                                    : String.format(Locale.ROOT, "%,d consumer wake-ups", result.wakeUps));
                }
            }
            final double bare = median(rates.get(Way.BARE_POLL_LOOP));
            out.println();
            out.println("| way | median records/s | runs | vs bare loop | process CPU ns/record (median) |");
            out.println("|---|---:|---|---:|---:|");
            for (Way way : Way.values()) {
                final List<Double> list = rates.get(way);
                final StringBuilder runs = new StringBuilder();
                for (double r : list) {
                    runs.append(runs.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%,.0f", r));
                }
                out.printf(Locale.ROOT, "| `%s` | %,.0f | %s | %.2f | %,.0f |%n", way.name().toLowerCase(Locale.ROOT),
                        median(list), runs, median(list) / bare, median(cpu.get(way)));
            }
            out.println("(sink " + (sink & 1) + ")");
        }
        return 0;
    }

    private void load(EmbeddedKafka kafka) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 10);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        config.put(ProducerConfig.ACKS_CONFIG, "1");
        final byte[] value = new byte[valueBytes];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
            for (int i = 0; i < records; i++) {
                value[0] = (byte) i;
                producer.send(new ProducerRecord<>(TOPIC, i % partitions, null, value.clone()));
            }
            producer.flush();
        }
    }

    private Map<String, Object> consumerConfig(EmbeddedKafka kafka, String group) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Math.min(500, capacity));
        return config;
    }

    /** The comparator: the consumer's own fastest loop, committing every second as the receiver does. */
    private Run bare(EmbeddedKafka kafka, String group) {
        final Map<String, Object> config = consumerConfig(kafka, group);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        long sink = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            consumer.subscribe(List.of(TOPIC));
            final long deadline = System.nanoTime() + RUN_LIMIT.toNanos();
            long count = 0;
            long first = 0;
            long cpuFirst = 0;
            long lastCommit = System.nanoTime();
            while (count < records) {
                final ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                final long now = System.nanoTime();
                if (!polled.isEmpty() && first == 0) {
                    first = now;
                    cpuFirst = processCpuNanos();
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    sink += r.value().length;
                    count++;
                }
                if (now - lastCommit >= COMMIT_INTERVAL_NANOS) {
                    consumer.commitSync();
                    lastCommit = now;
                }
                if (now - deadline > 0) {
                    throw new IllegalStateException("bare loop: " + count + " of " + records + " in " + RUN_LIMIT);
                }
            }
            final long end = System.nanoTime();
            final long cpuEnd = processCpuNanos();
            consumer.commitSync();
            this.sink += sink;
            return new Run(records / ((end - first) / 1e9), (cpuEnd - cpuFirst) / (double) records, -1L);
        }
    }

    /** Counts on the subscriber's thread; read after the latch. */
    private static final class Counter {
        long count;
        long first;
        long end;
        long cpuFirst;
        long cpuEnd;
        long sink;
    }

    private Run bridge(EmbeddedKafka kafka, String group, Way way) throws InterruptedException {
        final KafkaMailboxReceiver<byte[], byte[]> receiver = KafkaMailboxReceiver
                .<byte[], byte[]>builder(consumerConfig(kafka, group))
                .topics(List.of(TOPIC))
                .capacity(capacity)
                .commitInterval(Duration.ofSeconds(1))
                .build();
        final Scheduler worker = Schedulers.newSingle("kafka-bridge-subscriber");
        final Counter counter = new Counter();
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final long records = this.records;
        try {
            Flux<ReceivedRecord<byte[], byte[]>> flux = way == Way.RECEIVER_RECEIVE ? receiver.receive()
                    : MailboxFlux.from(receiver.mailbox());
            if (way == Way.RECEIVER_FLUX_PUBLISH_ON) {
                flux = flux.publishOn(worker);
            }
            flux.subscribe(r -> {
                if (counter.first == 0) {
                    counter.first = System.nanoTime();
                    counter.cpuFirst = processCpuNanos();
                }
                counter.sink += r.record().value().length;
                r.acknowledge();
                if (++counter.count == records) {
                    counter.end = System.nanoTime();
                    counter.cpuEnd = processCpuNanos();
                    done.countDown();
                }
            }, e -> {
                error.set(e);
                done.countDown();
            });
            if (way != Way.RECEIVER_RECEIVE) {
                receiver.start(); // receive() starts it on subscribe
            }
            if (!done.await(RUN_LIMIT.toMillis(), TimeUnit.MILLISECONDS) || error.get() != null) {
                throw new IllegalStateException("bridge: " + counter.count + " of " + records, error.get());
            }
        } finally {
            receiver.close(Duration.ofSeconds(30));
            worker.dispose();
        }
        final long wakeUps = receiver.mailbox().stats().consumerParks();
        this.sink += counter.sink;
        return new Run(records / ((counter.end - counter.first) / 1e9),
                (counter.cpuEnd - counter.cpuFirst) / (double) records, wakeUps);
    }

    /**
     * One run: records/s from the first record to the last, the process's CPU time per record over that span, and the
     * mailbox's consumer wake-up registrations over the whole run (-1 for the bare loop).
     */
    private record Run(double rate, double cpuNanosPerRecord, long wakeUps) {
    }

    /**
     * @return the CPU time of the whole process (every thread: the broker's, the JIT's and GC's too, so the same for
     *         every way but the bridge's own), or -1 if the JVM does not tell
     */
    private static long processCpuNanos() {
        final java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1L;
    }

    private static double median(List<Double> values) {
        final List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        final int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
