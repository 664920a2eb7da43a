package dev.mighty.mailbox.bench.kafka;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
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

import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.kafka.CommittedTransaction;
import dev.mighty.mailbox.kafka.EmbeddedKafka;
import dev.mighty.mailbox.kafka.KafkaMailboxReceiver;
import dev.mighty.mailbox.kafka.KafkaMailboxSender;
import dev.mighty.mailbox.kafka.KafkaMailboxSender.CorrelatedRecord;
import dev.mighty.mailbox.kafka.KafkaShareReceiver;
import dev.mighty.mailbox.kafka.ReceivedRecord;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kafka-bridge}: what the Kafka bridge costs over the Kafka clients' own fastest loops. Starts an in-process
 * Kafka node (KRaft, localhost), loads one topic with {@code --records} small records, then runs the selected sets
 * ({@code --sets}, default {@code read}), each set its own rounds and table. Within a set, every run reads the
 * whole topic from the beginning with a fresh group, and the set's ways alternate their order round by round
 * (A B C, C B A, ...).
 *
 * <h2>{@code read} (the default run)</h2>
 * <ul>
 *   <li>{@code bare_poll_loop}: one thread, {@code poll} and a loop over the records, {@code commitSync()} every
 *       second (the same commit work the receiver does);</li>
 *   <li>{@code receiver_flux_publishOn}: receiver &rarr; {@code MailboxFlux} ({@link Faces#flux}) &rarr;
 *       {@code publishOn} (a single worker) &rarr; subscriber that acknowledges every record: the poll thread and
 *       the subscriber on two threads, as {@code docs/kafka.md} recommends for real work;</li>
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
 * <h2>{@code rpw}: read-process-write, exactly-once against at-least-once</h2>
 * Each input record becomes one output record (the same value, no key) in an output topic of the run's own (the
 * input's partition count; deleted after the run's check). All three ways use one producer configuration
 * ({@code ByteArraySerializer}, {@code acks=all}, {@code retry.backoff.ms} from {@code --retry-backoff-ms}, default
 * 10, Kafka's defaults otherwise: idempotent, {@code linger.ms}, {@code batch.size}); the senders keep
 * {@link KafkaMailboxSender#DEFAULT_MAX_IN_FLIGHT}. The backoff: the transaction coordinator answers
 * {@code CONCURRENT_TRANSACTIONS} to a transaction's offsets sent while it still completes the previous commit, and
 * with Kafka's 100 ms the bare loop waited that out in every transaction (see {@code producerConfig}).
 * <ul>
 *   <li>{@code at_least_once_rpw}: {@code receiver.receive()} &rarr; {@code sender.sendCorrelated(records.map(r ->
 *       CorrelatedRecord.of(new ProducerRecord<>(out, value), r)))} &rarr; each result's
 *       {@code correlation().acknowledge()}; a non-transactional sender; the receiver commits every second. Timed
 *       to the last output's acknowledgement by the broker.</li>
 *   <li>{@code exactly_once_rpw}: {@code receiver.receiveExactlyOnce(txSender, r -> Mono.just(new
 *       ProducerRecord<>(out, value)))} with a sender built with a {@code transactional.id} (new per run), counting
 *       {@code CommittedTransaction.records().size()}; the receiver reads {@code read_committed}. Timed to the
 *       commit of the transaction that holds the last record.</li>
 *   <li>{@code bare_eos_loop}: the comparator, Kafka's fastest exactly-once API on one thread: a
 *       {@code KafkaConsumer} ({@code read_committed}) and a transactional {@code KafkaProducer}: {@code poll},
 *       {@code beginTransaction}, {@code send} each, then {@code sendOffsetsToTransaction(offsets,
 *       consumer.groupMetadata())} and {@code commitTransaction}, with the receiver's batch rule: a transaction
 *       ends at {@code maxRecords} records (mid-poll if need be, its offsets those of the records sent) or
 *       {@code maxWait} after its first record, whichever comes first. Timed as {@code exactly_once_rpw}.</li>
 * </ul>
 * The transactions' size is {@code --tx-records} and {@code --tx-wait-ms} ({@code Builder.transactionBatch}); by
 * default the receiver's own ({@code min(max.poll.records, capacity)} records, 100 ms), which the run prints,
 * with the transactions each run made. After each run a {@code read_committed} consumer counts the output topic,
 * and a count other than {@code --records} fails the whole benchmark, so a broken harness cannot report a figure.
 * The table gives the ratios to {@code at_least_once_rpw} and to {@code bare_eos_loop}: the median of the rounds'
 * ratios (each round's ways ran back to back) and their range.
 *
 * <h2>{@code share}: share groups (KIP-932)</h2>
 * Each run joins a fresh share group, whose {@code share.auto.offset.reset=earliest} is set first through Admin
 * {@code incrementalAlterConfigs} on the group's config resource.
 * <ul>
 *   <li>{@code share_receiver}: {@code KafkaShareReceiver.receive()} &rarr; subscriber that {@code accept()}s each
 *       record.</li>
 *   <li>{@code bare_share_loop}: the comparator, one thread and a {@code KafkaShareConsumer} with what the receiver
 *       configures ({@code share.acknowledgement.mode=explicit}, {@code share.acquire.mode=record_limit}): {@code
 *       poll}, {@code acknowledge(record, ACCEPT)} each (the next poll sends them), {@code commitSync()} at the
 *       end.</li>
 * </ul>
 * Both with {@code max.poll.records = min(500, capacity)}, timed from the first record to the acceptance of the
 * last distinct one (a redelivered record counts once, and the run says how many deliveries it got). The table
 * prints the ratio to {@code bare_share_loop} and the goal, {@code share_receiver} at 0.9&times; or more.
 *
 * <p>Usage: {@code java -cp bench/target/mailbox-bench.jar dev.mighty.mailbox.bench.kafka.KafkaBridgeBench
 * [--sets read,rpw,share]} ({@code --help} for the options).
 */
@Command(name = "kafka-bridge", mixinStandardHelpOptions = true, sortOptions = false,
        version = "kafka-bridge (reactor-mailbox)",
        description = {"Reads one topic of small records with a bare KafkaConsumer poll loop and through",
                "KafkaMailboxReceiver -> MailboxFlux -> subscriber with acks, in one JVM, against an in-process",
                "Kafka broker; prints records/s and the ratio to the bare loop. --sets rpw: read-process-write,",
                "exactly-once against at-least-once and a bare transactional loop; --sets share: KafkaShareReceiver",
                "against a bare KafkaShareConsumer loop."})
public final class KafkaBridgeBench implements Callable<Integer> {
    /** The ways of running the topic through; each belongs to one {@link WaySet}. */
    enum Way {
        BARE_POLL_LOOP, RECEIVER_FLUX_PUBLISH_ON, RECEIVER_FLUX_INLINE, RECEIVER_RECEIVE,
        AT_LEAST_ONCE_RPW, EXACTLY_ONCE_RPW, BARE_EOS_LOOP,
        SHARE_RECEIVER, BARE_SHARE_LOOP;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The sets {@code --sets} selects: the ways that run in one round, and what the table divides by. */
    enum WaySet {
        /** The default run: consuming only. */
        READ(List.of(Way.BARE_POLL_LOOP, Way.RECEIVER_FLUX_PUBLISH_ON, Way.RECEIVER_FLUX_INLINE,
                Way.RECEIVER_RECEIVE), List.of(Way.BARE_POLL_LOOP)),
        /** Read-process-write: exactly-once against at-least-once and the bare transactional loop. */
        RPW(List.of(Way.AT_LEAST_ONCE_RPW, Way.EXACTLY_ONCE_RPW, Way.BARE_EOS_LOOP),
                List.of(Way.AT_LEAST_ONCE_RPW, Way.BARE_EOS_LOOP)),
        /** Share groups: the receiver against the bare share consumer. */
        SHARE(List.of(Way.SHARE_RECEIVER, Way.BARE_SHARE_LOOP), List.of(Way.BARE_SHARE_LOOP));

        final List<Way> ways;
        final List<Way> baselines;

        WaySet(List<Way> ways, List<Way> baselines) {
            this.ways = ways;
            this.baselines = baselines;
        }
    }

    private static final String TOPIC = "bench";
    /** Held so the level set in main stays (java.util.logging keeps loggers weakly). */
    private static final java.util.logging.Logger RECEIVER_LOG =
            java.util.logging.Logger.getLogger("dev.mighty.mailbox.kafka");
    private static final Duration RUN_LIMIT = Duration.ofMinutes(5);
    private static final long COMMIT_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** The receivers' and the bare loops' {@code max.poll.records} ceiling (Kafka's default). */
    private static final int MAX_POLL_RECORDS = 500;
    /** The share group goal of the issue: {@code share_receiver} at this fraction of {@code bare_share_loop}. */
    private static final double SHARE_GOAL = 0.9;

    @Option(names = "--records", paramLabel = "N", description = "Records in the topic (default: ${DEFAULT-VALUE}).")
    int records = 1_000_000;

    @Option(names = "--partitions", paramLabel = "N", description = "Partitions (default: ${DEFAULT-VALUE}).")
    int partitions = 3;

    @Option(names = "--value-bytes", paramLabel = "N", description = "Value size (default: ${DEFAULT-VALUE}).")
    int valueBytes = 16;

    @Option(names = "--rounds", paramLabel = "N",
            description = "Rounds of each set's ways (default: ${DEFAULT-VALUE}).")
    int rounds = 5;

    @Option(names = "--warmup", paramLabel = "N",
            description = "Rounds run first and not reported, per set (default: ${DEFAULT-VALUE}).")
    int warmup = 3;

    @Option(names = "--in-flight", paramLabel = "N",
            description = "maxInFlight of at_least_once_rpw's sender (default: ${DEFAULT-VALUE}).")
    int inFlight = 4096;

    @Option(names = "--capacity", paramLabel = "N", description = "Receiver capacity (default: ${DEFAULT-VALUE}).")
    int capacity = 1024;

    @Option(names = "--sets", paramLabel = "SET", split = ",",
            description = "Sets of ways to run, in this order: read (consume only), rpw (read-process-write:"
                    + " exactly-once vs at-least-once vs a bare transactional loop), share (share groups)"
                    + " (default: read).")
    List<WaySet> sets = List.of(WaySet.READ);

    @Option(names = "--tx-records", paramLabel = "N",
            description = "rpw: the most records of one transaction (Builder.transactionBatch; default: the"
                    + " receiver's, min(max.poll.records, capacity)).")
    int txRecords;

    @Option(names = "--tx-wait-ms", paramLabel = "MS",
            description = "rpw: how long a transaction waits for more records after its first (default: the"
                    + " receiver's, 100 ms).")
    long txWaitMs;

    @Option(names = "--retry-backoff-ms", paramLabel = "MS",
            description = "rpw: the producers' retry.backoff.ms, all three ways (default: ${DEFAULT-VALUE}; Kafka's"
                    + " is 100, which a transaction's offsets sent right after the previous commit wait out).")
    int retryBackoffMs = 10;

    private final PrintStream out;
    /** Sinks every value's length so no loop is dead code. */
    private long sink;
    /** Numbers the runs: group ids, output topics and transactional ids are new per run. */
    private int run;

    KafkaBridgeBench(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"); // the broker's INFO is a flood
        }
        RECEIVER_LOG.setLevel(java.util.logging.Level.WARNING); // the receivers' rebalance lines, one per run
        System.exit(new CommandLine(new KafkaBridgeBench(System.out)).setCaseInsensitiveEnumValuesAllowed(true)
                .execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (txRecords < 0 || txWaitMs < 0 || retryBackoffMs < 0) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--tx-records: " + txRecords
                    + ", --tx-wait-ms: " + txWaitMs + ", --retry-backoff-ms: " + retryBackoffMs
                    + " (expected: >= 1, or absent for the default; the backoff >= 0)");
        }
        out.printf(Locale.ROOT, "kafka-bridge: JVM %s %s, %d cores, records=%,d partitions=%d value=%dB warmup=%d"
                        + " rounds=%d capacity=%d%n", System.getProperty("java.vm.name"),
                System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(), records, partitions,
                valueBytes, warmup, rounds, capacity);
        if (!sets.equals(List.of(WaySet.READ))) {
            out.println("sets: " + sets.stream().map(s -> s.name().toLowerCase(Locale.ROOT)).toList());
        }
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
            for (WaySet set : new java.util.LinkedHashSet<>(sets)) {
                runSet(kafka, set);
            }
            out.println("(sink " + (sink & 1) + ")");
        }
        return 0;
    }

    /** The rounds of one set and its table. */
    private void runSet(EmbeddedKafka kafka, WaySet set) throws Exception {
        if (set != WaySet.READ || sets.size() > 1) {
            out.println();
            out.println("set " + set.name().toLowerCase(Locale.ROOT) + ":");
        }
        if (set == WaySet.RPW) {
            out.printf(Locale.ROOT, "transactions: maxRecords=%d%s, maxWait=%d ms%s (exactly_once_rpw and"
                            + " bare_eos_loop alike)%n", txBatchRecords(),
                    txRecords > 0 ? " (--tx-records)" : " (the receiver's default: min(max.poll.records, capacity))",
                    txWait().toMillis(), txWaitMs > 0 ? " (--tx-wait-ms)" : " (the receiver's default)");
            out.printf(Locale.ROOT, "producers: acks=all, idempotent, retry.backoff.ms=%d (--retry-backoff-ms), Kafka's"
                    + " defaults otherwise%n", retryBackoffMs);
        }
        final Map<Way, List<Double>> rates = new EnumMap<>(Way.class);
        final Map<Way, List<Double>> cpu = new EnumMap<>(Way.class);
        for (int round = -warmup; round < rounds; round++) {
            final List<Way> order = new ArrayList<>(set.ways);
            if (Math.floorMod(round, 2) == 1) {
                Collections.reverse(order);
            }
            for (Way way : order) {
                final int n = run++;
                final String group = way.label() + "-" + n;
                final Run result = switch (way) {
                    case BARE_POLL_LOOP -> bare(kafka, group);
                    case RECEIVER_FLUX_PUBLISH_ON, RECEIVER_FLUX_INLINE, RECEIVER_RECEIVE -> bridge(kafka, group, way);
                    case AT_LEAST_ONCE_RPW, EXACTLY_ONCE_RPW, BARE_EOS_LOOP -> readProcessWrite(kafka, group, way, n);
                    case SHARE_RECEIVER -> shareReceiver(kafka, group);
                    case BARE_SHARE_LOOP -> bareShare(kafka, group);
                };
                if (round >= 0) {
                    rates.computeIfAbsent(way, k -> new ArrayList<>()).add(result.rate);
                    cpu.computeIfAbsent(way, k -> new ArrayList<>()).add(result.cpuNanosPerRecord);
                }
                out.printf(Locale.ROOT, "  %s  %-26s %,12.0f records/s %,8.0f CPU ns/record %s%n",
                        round < 0 ? "warm-up" : "round " + (round + 1), way.label(), result.rate,
                        result.cpuNanosPerRecord, result.note);
            }
        }
        if (rounds <= 0) {
            return;
        }
        out.println();
        if (set == WaySet.READ) {
            final double bare = median(rates.get(Way.BARE_POLL_LOOP));
            out.println("| way | median records/s | runs | vs bare loop | process CPU ns/record (median) |");
            out.println("|---|---:|---|---:|---:|");
            for (Way way : set.ways) {
                final List<Double> list = rates.get(way);
                out.printf(Locale.ROOT, "| `%s` | %,.0f | %s | %.2f | %,.0f |%n", way.label(), median(list),
                        runs(list), median(list) / bare, median(cpu.get(way)));
            }
            return;
        }
        final StringBuilder header = new StringBuilder("| way | median records/s | runs |");
        final StringBuilder rule = new StringBuilder("|---|---:|---|");
        for (Way base : set.baselines) {
            header.append(" vs `").append(base.label()).append("` (rounds: min .. max) |");
            rule.append("---:|");
        }
        out.println(header.append(" process CPU ns/record (median) |"));
        out.println(rule.append("---:|"));
        for (Way way : set.ways) {
            final List<Double> list = rates.get(way);
            final StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "| `%s` | %,.0f | %s |",
                    way.label(), median(list), runs(list)));
            for (Way base : set.baselines) {
                final List<Double> ratios = ratios(list, rates.get(base));
                row.append(String.format(Locale.ROOT, " %.2f (%.2f .. %.2f) |", median(ratios),
                        Collections.min(ratios), Collections.max(ratios)));
            }
            out.println(row.append(String.format(Locale.ROOT, " %,.0f |", median(cpu.get(way)))));
        }
        if (set == WaySet.SHARE) {
            final List<Double> ratios = ratios(rates.get(Way.SHARE_RECEIVER), rates.get(Way.BARE_SHARE_LOOP));
            final double ratio = median(ratios);
            out.printf(Locale.ROOT, "share_receiver / bare_share_loop: %.2f (rounds %.2f .. %.2f); goal >= %.2f: %s%n",
                    ratio, Collections.min(ratios), Collections.max(ratios), SHARE_GOAL,
                    ratio >= SHARE_GOAL ? "PASS" : "MISS");
        }
    }

    private static String runs(List<Double> list) {
        final StringBuilder runs = new StringBuilder();
        for (double r : list) {
            runs.append(runs.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%,.0f", r));
        }
        return runs.toString();
    }

    /** @return each round's ratio {@code way / base} (the two ran back to back in that round) */
    private static List<Double> ratios(List<Double> way, List<Double> base) {
        final List<Double> ratios = new ArrayList<>(way.size());
        for (int i = 0; i < way.size(); i++) {
            ratios.add(way.get(i) / base.get(i));
        }
        return ratios;
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

    private int maxPollRecords() {
        return Math.min(MAX_POLL_RECORDS, capacity);
    }

    private Map<String, Object> consumerConfig(EmbeddedKafka kafka, String group) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords());
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
            return new Run(records / ((end - first) / 1e9), (cpuEnd - cpuFirst) / (double) records, "");
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
                    : Faces.flux(receiver.mailbox());
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
                (counter.cpuEnd - counter.cpuFirst) / (double) records,
                String.format(Locale.ROOT, "%,d consumer wake-ups", wakeUps));
    }

    // ------------------------------------------------------------------ rpw: read-process-write

    /** @return the transactions' record bound: {@code --tx-records}, else the receiver's default */
    private int txBatchRecords() {
        return txRecords > 0 ? txRecords : Math.min(maxPollRecords(), capacity);
    }

    /** @return the transactions' wait: {@code --tx-wait-ms}, else the receiver's default */
    private Duration txWait() {
        return txWaitMs > 0 ? Duration.ofMillis(txWaitMs) : KafkaMailboxReceiver.DEFAULT_TRANSACTION_WAIT;
    }

    /** The one producer configuration of the three rpw ways (a transactional id added for two of them). */
    private Map<String, Object> producerConfig(EmbeddedKafka kafka) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        config.put(ProducerConfig.ACKS_CONFIG, "all"); // and Kafka's idempotent default
        // NOTE: the transaction coordinator answers CONCURRENT_TRANSACTIONS to a transaction's AddOffsetsToTxn while
        // it still completes the previous commit, and the producer retries after retry.backoff.ms: with Kafka's 100
        // ms, bare_eos_loop (which sends its offsets right after its sends) spent ~60 ms of every transaction there
        // in a smoke run and came out at a third of exactly_once_rpw. The same value for all three ways.
        config.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, retryBackoffMs);
        return config;
    }

    /**
     * One rpw run into an output topic of its own, then the check: a {@code read_committed} count of that topic must
     * be {@code --records}, or the benchmark fails.
     */
    private Run readProcessWrite(EmbeddedKafka kafka, String group, Way way, int n) throws Exception {
        final String outTopic = "bench-out-" + n;
        kafka.createTopic(outTopic, partitions);
        try {
            final Run result = switch (way) {
                case AT_LEAST_ONCE_RPW -> atLeastOnce(kafka, group, outTopic);
                case EXACTLY_ONCE_RPW -> exactlyOnce(kafka, group, outTopic, "kafka-bridge-eos-" + n);
                case BARE_EOS_LOOP -> bareEos(kafka, group, outTopic, "kafka-bridge-bare-eos-" + n);
                default -> throw new IllegalArgumentException("way: " + way + " (expected: an rpw way)");
            };
            final long count = countCommitted(kafka, outTopic);
            if (count != records) {
                throw new IllegalStateException(way.label() + ": the output topic " + outTopic + " holds " + count
                        + " committed records (expected: " + records + "); no figure for a broken run");
            }
            return result;
        } finally {
            kafka.admin().deleteTopics(List.of(outTopic)).all().get(60, TimeUnit.SECONDS);
        }
    }

    /** {@code receive()} → {@code sendCorrelated} → acknowledge each record once its output is acknowledged. */
    private Run atLeastOnce(EmbeddedKafka kafka, String group, String outTopic) throws Exception {
        final KafkaMailboxReceiver<byte[], byte[]> receiver = KafkaMailboxReceiver
                .<byte[], byte[]>builder(consumerConfig(kafka, group))
                .topics(List.of(TOPIC))
                .capacity(capacity)
                .commitInterval(Duration.ofSeconds(1))
                .build();
        final Span span = new Span();
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final long records = this.records;
        final long[] count = {0L}; // the sender's result thread only
        // its fastest setting: enough sends in flight to cover the rate times the produce round trip (the default,
        // 256, bounds this way near 256 / round trip; the transactional ways have no such bound)
        final KafkaMailboxSender<byte[], byte[]> sender =
                KafkaMailboxSender.<byte[], byte[]>builder(producerConfig(kafka)).maxInFlight(inFlight).build();
        Disposable subscription = null;
        try {
            final Flux<CorrelatedRecord<byte[], byte[], ReceivedRecord<byte[], byte[]>>> outputs = receiver.receive()
                    .map(r -> {
                        span.start(); // the receive worker
                        span.sink += r.record().value().length;
                        return CorrelatedRecord.of(new ProducerRecord<>(outTopic, r.record().value()), r);
                    });
            subscription = Flux.from(sender.sendCorrelated(outputs)).subscribe(result -> {
                result.correlation().acknowledge();
                if (++count[0] == records) {
                    span.end();
                    done.countDown();
                }
            }, e -> {
                error.set(e);
                done.countDown();
            });
            await(done, error, () -> "at_least_once_rpw: " + count[0] + " of " + records);
        } finally {
            if (subscription != null) {
                subscription.dispose(); // cancels receive(): the receiver commits what is acknowledged and leaves
            }
            receiver.close(Duration.ofSeconds(30));
            sender.close();
        }
        this.sink += span.sink;
        return span.run(records, "");
    }

    /** {@code receiveExactlyOnce} with a transactional sender, counting the committed transactions' records. */
    private Run exactlyOnce(EmbeddedKafka kafka, String group, String outTopic, String transactionalId)
            throws Exception {
        final Map<String, Object> consumerConfig = consumerConfig(kafka, group);
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        final KafkaMailboxReceiver.Builder<byte[], byte[]> builder = KafkaMailboxReceiver
                .<byte[], byte[]>builder(consumerConfig)
                .topics(List.of(TOPIC))
                .capacity(capacity)
                .commitInterval(Duration.ofSeconds(1));
        if (txRecords > 0 || txWaitMs > 0) {
            builder.transactionBatch(txBatchRecords(), txWait());
        }
        final KafkaMailboxReceiver<byte[], byte[]> receiver = builder.build();
        final Map<String, Object> producerConfig = producerConfig(kafka);
        producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        final Span span = new Span();
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final long records = this.records;
        final long[] counts = {0L, 0L, 0L}; // records, transactions, largest transaction: the transaction thread only
        final KafkaMailboxSender<byte[], byte[]> sender =
                KafkaMailboxSender.<byte[], byte[]>builder(producerConfig).build();
        Disposable subscription = null;
        try {
            subscription = receiver.receiveExactlyOnce(sender, r -> {
                span.start(); // the transaction thread
                span.sink += r.value().length;
                return Mono.just(new ProducerRecord<byte[], byte[]>(outTopic, r.value()));
            }).subscribe((CommittedTransaction<byte[], byte[]> tx) -> {
                final int size = tx.records().size();
                counts[1]++;
                counts[2] = Math.max(counts[2], size);
                if ((counts[0] += size) >= records) {
                    span.end();
                    done.countDown();
                }
            }, e -> {
                error.set(e);
                done.countDown();
            });
            await(done, error, () -> "exactly_once_rpw: " + counts[0] + " of " + records);
        } finally {
            if (subscription != null) {
                subscription.dispose(); // the receiver closes (no transaction is open: every record is committed)
            }
            receiver.close(Duration.ofSeconds(30));
            sender.close();
        }
        this.sink += span.sink;
        return span.run(records, transactions(counts[1], counts[2]));
    }

    /** The bare exactly-once loop's tally: records committed, transactions, the largest, the time spent ending them. */
    private static final class TransactionTally {
        long committed;
        long transactions;
        long largest;
        /** Nanos in {@code sendOffsetsToTransaction} and {@code commitTransaction}. */
        long endingNanos;

        /** Ends the open transaction of {@code size} records with its {@code offsets}, timed from {@code start}. */
        void commit(KafkaProducer<byte[], byte[]> producer, KafkaConsumer<byte[], byte[]> consumer,
                Map<TopicPartition, OffsetAndMetadata> offsets, int size, long start) {
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            producer.commitTransaction();
            endingNanos += System.nanoTime() - start;
            committed += size;
            transactions++;
            largest = Math.max(largest, size);
            offsets.clear();
        }
    }

    /**
     * The comparator: Kafka's exactly-once loop on one thread, with the receiver's batch rule (a transaction ends at
     * {@code maxRecords} records, mid-poll if need be, or {@code maxWait} after its first record).
     */
    private Run bareEos(EmbeddedKafka kafka, String group, String outTopic, String transactionalId) {
        final Map<String, Object> consumerConfig = consumerConfig(kafka, group);
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        final Map<String, Object> producerConfig = producerConfig(kafka);
        producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        final int maxRecords = txBatchRecords();
        final long maxWaitNanos = txWait().toNanos();
        final TopicPartition[] topicPartitions = new TopicPartition[partitions];
        for (int p = 0; p < partitions; p++) {
            topicPartitions[p] = new TopicPartition(TOPIC, p);
        }
        long sink = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig)) {
            producer.initTransactions();
            consumer.subscribe(List.of(TOPIC));
            final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            final long deadline = System.nanoTime() + RUN_LIMIT.toNanos();
            final TransactionTally tally = new TransactionTally();
            int inTransaction = 0;
            long transactionStart = 0;
            long first = 0;
            long cpuFirst = 0;
            while (tally.committed < records) {
                final long wait = inTransaction == 0 ? TimeUnit.MILLISECONDS.toNanos(100)
                        : Math.max(0L, maxWaitNanos - (System.nanoTime() - transactionStart));
                final ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofNanos(wait));
                if (!polled.isEmpty() && first == 0) {
                    first = System.nanoTime();
                    cpuFirst = processCpuNanos();
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    if (inTransaction == 0) {
                        producer.beginTransaction();
                        transactionStart = System.nanoTime();
                    }
                    sink += r.value().length;
                    producer.send(new ProducerRecord<>(outTopic, r.value()));
                    offsets.put(topicPartitions[r.partition()],
                            new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), ""));
                    if (++inTransaction == maxRecords) {
                        tally.commit(producer, consumer, offsets, inTransaction, System.nanoTime());
                        inTransaction = 0;
                    }
                }
                final long now = System.nanoTime();
                if (inTransaction > 0 && now - transactionStart >= maxWaitNanos) {
                    tally.commit(producer, consumer, offsets, inTransaction, now);
                    inTransaction = 0;
                }
                if (now - deadline > 0) {
                    throw new IllegalStateException("bare_eos_loop: " + tally.committed + " of " + records + " in "
                            + RUN_LIMIT);
                }
            }
            final long end = System.nanoTime();
            final long cpuEnd = processCpuNanos();
            this.sink += sink;
            return new Run(records / ((end - first) / 1e9), (cpuEnd - cpuFirst) / (double) records,
                    transactions(tally.transactions, tally.largest) + String.format(Locale.ROOT, ", offsets+commit "
                            + "%.0f%% of the span", 100.0 * tally.endingNanos / (end - first)));
        }
    }

    private String transactions(long transactions, long largest) {
        return String.format(Locale.ROOT, "%,d transactions, %.0f records each (largest %d)", transactions,
                records / (double) Math.max(1L, transactions), largest);
    }

    /** @return the records a {@code read_committed} consumer sees in {@code topic}, read to its end */
    private long countCommitted(EmbeddedKafka kafka, String topic) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            final List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                all.add(new TopicPartition(topic, p));
            }
            consumer.assign(all);
            consumer.seekToBeginning(all);
            final Map<TopicPartition, Long> ends = consumer.endOffsets(all); // read_committed: the stable offsets
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            long count = 0;
            while (!reached(consumer, ends)) {
                count += consumer.poll(Duration.ofMillis(100)).count();
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("counting " + topic + ": not at its end after 60 s");
                }
            }
            return count;
        }
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    // ------------------------------------------------------------------ share: share groups

    /** A fresh share group that reads from the start of the log. */
    private static String shareGroup(EmbeddedKafka kafka, String group) throws Exception {
        kafka.alterGroupConfigs(group, Map.of("share.auto.offset.reset", "earliest"));
        return group;
    }

    /** What both share ways configure; the receiver adds the two share modes itself, the bare loop sets them. */
    private Map<String, Object> shareConfig(EmbeddedKafka kafka) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords());
        return config;
    }

    /** {@code KafkaShareReceiver.receive()} → accept each record. */
    private Run shareReceiver(EmbeddedKafka kafka, String group) throws Exception {
        final KafkaShareReceiver<byte[], byte[]> receiver = KafkaShareReceiver
                .<byte[], byte[]>builder(shareConfig(kafka))
                .groupId(shareGroup(kafka, group))
                .topics(List.of(TOPIC))
                .capacity(capacity)
                .build();
        final Span span = new Span();
        final Tally tally = new Tally(partitions, records);
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        Disposable subscription = null;
        try {
            subscription = receiver.receive().subscribe(r -> {
                span.start(); // the receive worker
                span.sink += r.value().length;
                r.accept();
                if (tally.add(r.record().partition(), r.record().offset())) {
                    span.end();
                    done.countDown();
                }
            }, e -> {
                error.set(e);
                done.countDown();
            });
            await(done, error, () -> "share_receiver: " + tally.distinct + " of " + records);
        } finally {
            if (subscription != null) {
                subscription.dispose(); // the receiver closes: commits the acknowledgements, leaves the group
            }
            receiver.close(Duration.ofSeconds(30));
        }
        this.sink += span.sink;
        return span.run(records, tally.note(receiver.stats().polls()));
    }

    /** The comparator: a bare share consumer loop in explicit acknowledgement mode, as the receiver configures it. */
    private Run bareShare(EmbeddedKafka kafka, String group) throws Exception {
        final Map<String, Object> config = shareConfig(kafka);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, shareGroup(kafka, group));
        config.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        config.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit");
        final Tally tally = new Tally(partitions, records);
        long sink = 0;
        long polls = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(config)) {
            consumer.subscribe(List.of(TOPIC));
            final long deadline = System.nanoTime() + RUN_LIMIT.toNanos();
            long first = 0;
            long cpuFirst = 0;
            long end = 0;
            long cpuEnd = 0;
            while (end == 0) {
                final ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                polls++;
                if (!polled.isEmpty() && first == 0) {
                    first = System.nanoTime();
                    cpuFirst = processCpuNanos();
                }
                for (ConsumerRecord<byte[], byte[]> r : polled) { // every record of a poll acknowledged: explicit
                    sink += r.value().length;
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    if (tally.add(r.partition(), r.offset())) {
                        end = System.nanoTime();
                        cpuEnd = processCpuNanos();
                    }
                }
                if (end == 0 && System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("bare_share_loop: " + tally.distinct + " of " + records + " in "
                            + RUN_LIMIT);
                }
            }
            consumer.commitSync();
            this.sink += sink;
            return new Run(records / ((end - first) / 1e9), (cpuEnd - cpuFirst) / (double) records,
                    tally.note(polls));
        }
    }

    /** The distinct records a share run got (partition, offset), and its deliveries; one thread. */
    private static final class Tally {
        private final BitSet[] seen;
        private final long records;
        long distinct;
        long deliveries;

        Tally(int partitions, long records) {
            this.seen = new BitSet[partitions];
            for (int p = 0; p < partitions; p++) {
                seen[p] = new BitSet();
            }
            this.records = records;
        }

        /** @return true when this delivery completes the topic (the last distinct record) */
        boolean add(int partition, long offset) {
            deliveries++;
            final BitSet bits = seen[partition];
            if (bits.get((int) offset)) {
                return false;
            }
            bits.set((int) offset);
            return ++distinct == records;
        }

        String note(long polls) {
            return String.format(Locale.ROOT, "%,d polls, %,d deliveries", polls, deliveries);
        }
    }

    // ------------------------------------------------------------------ common

    /** Waits for a run's latch; a timeout or an error fails the run (and the benchmark). */
    private static void await(CountDownLatch done, AtomicReference<Throwable> error,
            java.util.function.Supplier<String> progress) throws InterruptedException {
        if (!done.await(RUN_LIMIT.toMillis(), TimeUnit.MILLISECONDS) || error.get() != null) {
            throw new IllegalStateException(progress.get(), error.get());
        }
    }

    /**
     * A run's span: started by the first record's thread, ended by the thread that completes the run (another one,
     * for the rpw ways), read after the latch; volatile, as those threads differ.
     */
    private static final class Span {
        private volatile long first;
        private volatile long cpuFirst;
        private volatile long end;
        private volatile long cpuEnd;
        /** Written by the starting thread only. */
        long sink;

        /** The first record: one thread (the one that sees the records first). */
        void start() {
            if (first == 0) {
                cpuFirst = processCpuNanos();
                first = System.nanoTime();
            }
        }

        void end() {
            end = System.nanoTime();
            cpuEnd = processCpuNanos();
        }

        Run run(long records, String note) {
            return new Run(records / ((end - first) / 1e9), (cpuEnd - cpuFirst) / (double) records, note);
        }
    }

    /**
     * One run: records/s from the first record to the last, the process's CPU time per record over that span, and a
     * note (the mailbox's consumer wake-up registrations over the whole run, the transactions, the share polls).
     */
    private record Run(double rate, double cpuNanosPerRecord, String note) {
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
