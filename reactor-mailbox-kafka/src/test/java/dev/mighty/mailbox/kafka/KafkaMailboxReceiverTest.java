package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.key;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.produce;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * {@link KafkaMailboxReceiver} against a real (in-process KRaft) broker, shared by the Kafka tests. Each test
 * has its own topic and group. Every assertion is an invariant of at-least-once delivery that holds under every
 * interleaving of the poll thread, the consumer and the acknowledging threads: nothing lost, nothing committed
 * that was not acknowledged, order per partition within an assignment, commits equal to the log end once all is
 * acknowledged.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaMailboxReceiverTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) throws Exception {
        kafka = broker;
    }

    /** Waits (bounded) until the group's committed offsets equal {@code ends}; returns the last answer. */
    private static Map<TopicPartition, Long> awaitCommitted(String group, Map<TopicPartition, Long> ends)
            throws Exception {
        final AtomicReference<Map<TopicPartition, Long>> last = new AtomicReference<>(Map.of());
        eventually(() -> {
            try {
                last.set(kafka.committed(group));
            } catch (Exception e) {
                return false;
            }
            return last.get().equals(ends);
        });
        return last.get();
    }

    // ------------------------------------------------------------------ the flowing case

    @Test
    void shouldDeliverAcknowledgeAndCommitEveryRecordWhenFlowingOverThreePartitions() throws Exception {
        final String topic = "flow";
        final int count = 100_000;
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);

        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, "flow-group"))
                .topics(List.of(topic))
                .commitInterval(Duration.ofMillis(200))
                .build();
        final Set<Long> seen = new HashSet<>();            // the publishOn worker only
        final AtomicInteger duplicates = new AtomicInteger();
        final AtomicInteger outOfOrder = new AtomicInteger();
        final long[] last = {-1L, -1L, -1L};
        final CountDownLatch all = new CountDownLatch(1);
        final CountDownLatch completed = new CountDownLatch(1);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final Scheduler worker = Schedulers.newSingle("flow-consumer");
        try {
            final Disposable subscription = MailboxFlux.from(receiver.mailbox())
                    .publishOn(worker)
                    .subscribe(r -> {
                        final int p = r.record().partition();
                        final long offset = r.record().offset();
                        if (!seen.add(key(p, offset))) {
                            duplicates.incrementAndGet();
                        }
                        if (offset <= last[p]) {
                            outOfOrder.incrementAndGet();
                        }
                        last[p] = offset;
                        r.acknowledge();
                        r.acknowledge(); // idempotent
                        if (seen.size() == count) {
                            all.countDown();
                        }
                    }, error::set, completed::countDown);
            receiver.start();

            assertThat(all.await(KafkaTestSupport.WAIT.toSeconds(), TimeUnit.SECONDS))
                    .as("all %s records delivered", count).isTrue();
            receiver.close(Duration.ofSeconds(10));
            assertThat(completed.await(10, TimeUnit.SECONDS)).as("the stream completes after close").isTrue();
            assertThat(subscription.isDisposed()).isTrue();
        } finally {
            receiver.close();
            worker.dispose();
        }
        assertThat(error.get()).isNull();
        assertThat(duplicates.get()).as("duplicates").isZero();
        assertThat(outOfOrder.get()).as("out of order").isZero();
        assertThat(seen).hasSize(count);
        assertThat(kafka.committed("flow-group")).as("committed = log end").isEqualTo(ends);
    }

    // ------------------------------------------------------------------ backpressure

    @Test
    void shouldPauseWhileTheSubscriberIsSlowAndResumeWithoutLosingARecord() throws Exception {
        final String topic = "slow";
        final int count = 5_000;
        final int capacity = 64;
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);

        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, "slow-group"))
                .topics(List.of(topic))
                .capacity(capacity)
                .pollTimeout(Duration.ofMillis(50))
                .commitInterval(Duration.ofMillis(200))
                .build();
        final AtomicInteger overCapacity = new AtomicInteger();
        final RecordSink sink = new RecordSink("slow-consumer", receiver.mailbox(), r -> {
            if (receiver.mailbox().size() > capacity) {
                overCapacity.incrementAndGet();
            }
            if (r.record().offset() % 16 == 0) {
                sleepMillis(1); // slower than the poll thread
            }
            r.acknowledge();
        }, false);
        try {
            receiver.start();
            // nobody consumes yet: the mailbox fills, and the receiver pauses instead of waiting on it
            assertThat(eventually(receiver::paused)).as("paused while nobody consumes").isTrue();
            for (int i = 0; i < 20; i++) {
                assertThat(receiver.mailbox().size()).isLessThanOrEqualTo(capacity);
                sleepMillis(5);
            }
            assertThat(receiver.paused()).as("stays paused: no room was freed").isTrue();
            sink.start();
            assertThat(eventually(() -> sink.count() == count)).as("all delivered, count=%s", sink.count()).isTrue();
            // everything was taken, so there is room for a whole poll: it resumed and stays resumed
            assertThat(eventually(() -> !receiver.paused())).as("resumed").isTrue();
            assertThat(awaitCommitted("slow-group", ends)).as("committed = log end").isEqualTo(ends);
        } finally {
            receiver.close(Duration.ofSeconds(10));
        }
        sink.join();
        assertThat(sink.end()).isNull();
        assertThat(overCapacity.get()).isZero();
        assertThat(sink.deliveries()).hasSize(count).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
        assertThat(sink.outOfOrder()).isZero();
    }

    // ------------------------------------------------------------------ restart

    @Test
    void shouldRedeliverEveryUnacknowledgedRecordWhenAReceiverIsKilledAndANewOneJoins() throws Exception {
        final String topic = "killed";
        final String group = "killed-group";
        final int count = 6_000;
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);

        // A acknowledges all but a sparse set of records (holes), from two threads, out of order
        final Set<Long> ackedByA = ConcurrentHashMap.newKeySet();
        final Map<Long, Boolean> deliveredToA = new ConcurrentHashMap<>();
        final KafkaMailboxReceiver<String, String> a = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .capacity(256)
                .commitInterval(Duration.ofMillis(50))
                .build();
        final ExecutorService ackers = Executors.newFixedThreadPool(2);
        final RecordSink sinkA = new RecordSink("consumer-a", a.mailbox(), r -> {
            final long k = key(r.record().partition(), r.record().offset());
            deliveredToA.put(k, Boolean.TRUE);
            if (r.record().offset() % 97 != 96 || r.record().offset() < 300) {
                ackers.execute(() -> {
                    ackedByA.add(k); // before the ack: a commit past it implies it is in the set
                    r.acknowledge();
                });
            }
        }, false);
        final Map<TopicPartition, Long> committedAtKill;
        try {
            a.start();
            sinkA.start();
            assertThat(eventually(() -> sinkA.count() >= count / 2)).isTrue();
            assertThat(eventually(() -> {
                try {
                    return kafka.committed(group).size() == 3;
                } catch (Exception e) {
                    return false;
                }
            })).as("A committed something for every partition").isTrue();
        } finally {
            a.loop().halt(); // no final commit: as if the process died
            ackers.shutdown();
            assertThat(ackers.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        sinkA.join();
        committedAtKill = kafka.committed(group);

        // nothing unacknowledged was committed: below each committed offset, A acknowledged every record
        for (Map.Entry<TopicPartition, Long> e : committedAtKill.entrySet()) {
            final int p = e.getKey().partition();
            for (long offset = 0; offset < e.getValue(); offset++) {
                assertThat(ackedByA).as("committed past %s-%s, so A acknowledged it", p, offset)
                        .contains(key(p, offset));
            }
        }

        final KafkaMailboxReceiver<String, String> b = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofMillis(50))
                .build();
        final RecordSink sinkB = new RecordSink("consumer-b", b.mailbox(), ReceivedRecord::acknowledge, false);
        try {
            sinkB.start();
            b.start();
            assertThat(awaitCommitted(group, ends)).as("B committed up to the log end").isEqualTo(ends);
        } finally {
            b.close(Duration.ofSeconds(10));
        }
        sinkB.join();
        final Map<Long, Integer> deliveredToB = sinkB.deliveries();
        // B resumed exactly at A's commits: it got every record from there on, once, and nothing before
        final Map<Long, Integer> expected = new HashMap<>();
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            final int p = e.getKey().partition();
            for (long offset = committedAtKill.getOrDefault(e.getKey(), 0L); offset < e.getValue(); offset++) {
                expected.put(key(p, offset), 1);
            }
        }
        assertThat(deliveredToB).isEqualTo(expected);
        // so every record A did not acknowledge was delivered again, and nothing is missing from the union
        for (Long k : deliveredToA.keySet()) {
            if (!ackedByA.contains(k)) {
                assertThat(deliveredToB).containsKey(k);
            }
        }
        assertThat(sinkB.outOfOrder()).isZero();
        assertThat(kafka.committed(group)).isEqualTo(ends);
    }

    // ------------------------------------------------------------------ rebalance

    @Test
    void shouldCoverEveryRecordAndIgnoreStaleAcksWhenASecondReceiverJoinsWhileRecordsFlow() throws Exception {
        final String topic = "rebalance";
        final String group = "rebalance-group";
        final int count = 6_000;
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);

        final Map<String, Object> config = consumerConfig(kafka, group);
        // the classic protocol with an eager assignor: a join revokes every partition of A, so every record in
        // A's mailbox at that moment is stale, whichever partition it came from
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        final KafkaMailboxReceiver<String, String> a = KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of(topic))
                .capacity(128)
                .pollTimeout(Duration.ofMillis(50))
                .revocationTimeout(Duration.ofMillis(200))
                .commitInterval(Duration.ofMillis(50))
                .build();
        final KafkaMailboxReceiver<String, String> b = KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of(topic))
                .capacity(128)
                .commitInterval(Duration.ofMillis(50))
                .build();
        final AtomicBoolean firstTakenByA = new AtomicBoolean(true);
        final AtomicReference<ReceivedRecord<String, String>> firstOfA = new AtomicReference<>();
        final AtomicBoolean firstWasRevoked = new AtomicBoolean();
        final RecordSink sinkA = new RecordSink("consumer-a", a.mailbox(), r -> {
            if (firstTakenByA.getAndSet(false)) {
                firstOfA.set(r);
                firstWasRevoked.set(r.isRevoked());
            }
            r.acknowledge(); // a no-op for stale records
        }, true);
        final RecordSink sinkB = new RecordSink("consumer-b", b.mailbox(), ReceivedRecord::acknowledge, false);
        try {
            a.start();
            // A's mailbox fills while nobody takes from it
            assertThat(eventually(a::paused)).isTrue();
            sinkB.start();
            b.start();
            assertThat(eventually(() -> sinkB.count() > 0)).as("B got an assignment and records").isTrue();
            sinkA.start(); // now A takes what it received before the rebalance, then what it gets after
            assertThat(eventually(() -> {
                for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                    for (long offset = 0; offset < e.getValue(); offset++) {
                        final int p = e.getKey().partition();
                        if (!sinkA.has(p, offset) && !sinkB.has(p, offset)) {
                            return false;
                        }
                    }
                }
                return true;
            })).as("the union covers every record").isTrue();
            assertThat(awaitCommitted(group, ends)).as("committed = log end").isEqualTo(ends);
        } finally {
            a.close(Duration.ofSeconds(10));
            b.close(Duration.ofSeconds(10));
        }
        sinkA.join();
        sinkB.join();
        assertThat(sinkA.end()).isNull();
        assertThat(sinkB.end()).isNull();
        assertThat(kafka.committed(group)).isEqualTo(ends);
        // the first record A took was delivered before the rebalance: stale, and flagged
        assertThat(firstOfA.get()).isNotNull();
        assertThat(firstWasRevoked.get()).as("first record of A is stale: %s", firstOfA.get()).isTrue();
        // every record of A's first assignment is stale now; records of a later assignment came in order
        final long firstEpoch = firstOfA.get().assignmentEpoch();
        assertThat(sinkA.taken()).filteredOn(r -> r.assignmentEpoch() == firstEpoch)
                .allSatisfy(r -> assertThat(r.isRevoked()).isTrue());
        assertThat(sinkA.outOfOrder()).isZero();
        assertThat(sinkB.outOfOrder()).isZero();
    }

    // ------------------------------------------------------------------ poison records

    /** Fails on the value {@code "poison"}; otherwise a {@link StringDeserializer}. */
    public static final class PoisonDeserializer implements Deserializer<String> {
        private final StringDeserializer strings = new StringDeserializer();

        @Override
        public String deserialize(String topic, byte[] data) {
            final String value = strings.deserialize(topic, data);
            if ("poison".equals(value)) {
                throw new SerializationException("poison");
            }
            return value;
        }
    }

    /** One partition: values ok-0 .. ok-149, except offsets 50 and 100, which are "poison". */
    private static void loadPoisoned(String topic) throws Exception {
        kafka.createTopic(topic, 1);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(KafkaTestSupport.producerConfig(kafka))) {
            for (int i = 0; i < 150; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, i == 50 || i == 100 ? "poison" : "ok-" + i));
            }
            producer.flush();
        }
    }

    private static Map<String, Object> poisonConfig(String group) {
        final Map<String, Object> config = consumerConfig(kafka, group);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, PoisonDeserializer.class);
        return config;
    }

    @Test
    void shouldSkipPoisonRecordsToTheHandlerAndCommitPastThemWhenAHandlerIsGiven() throws Exception {
        final String topic = "poison-skip";
        loadPoisoned(topic);
        final List<Long> skipped = new CopyOnWriteArrayList<>();
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(poisonConfig("poison-skip-group"))
                .topics(List.of(topic))
                .onDeserializationError(e -> {
                    assertThat(e.valueBuffer()).isNotNull(); // the raw bytes, e.g. for a dead-letter topic
                    skipped.add(e.offset());
                })
                .build();
        final RecordSink sink = new RecordSink("poison-skip", receiver.mailbox(), ReceivedRecord::acknowledge, true);
        try {
            sink.start();
            receiver.start();
            assertThat(eventually(() -> sink.count() == 148)).isTrue();
            assertThat(awaitCommitted("poison-skip-group", Map.of(new TopicPartition(topic, 0), 150L)))
                    .containsEntry(new TopicPartition(topic, 0), 150L);
        } finally {
            receiver.close(Duration.ofSeconds(10));
        }
        sink.join();
        assertThat(sink.end()).isNull();
        assertThat(skipped).containsExactly(50L, 100L);
        assertThat(sink.taken()).extracting(r -> r.record().offset())
                .containsExactlyElementsOf(LongStream.range(0, 150).filter(o -> o != 50 && o != 100).boxed()
                        .collect(Collectors.toList()));
        assertThat(sink.taken()).allSatisfy(r -> assertThat(r.record().value()).isEqualTo("ok-" + r.record().offset()));
    }

    @Test
    void shouldEndTheStreamWithTheDeserializationErrorAfterTheRecordsBeforeItWhenNoHandlerIsGiven()
            throws Exception {
        final String topic = "poison-fail";
        loadPoisoned(topic);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(poisonConfig("poison-fail-group"))
                .topics(List.of(topic))
                .build();
        final RecordSink sink = new RecordSink("poison-fail", receiver.mailbox(), ReceivedRecord::acknowledge, true);
        try {
            sink.start();
            receiver.start();
            sink.join(); // the receiver ends the stream by itself
        } finally {
            receiver.close(); // harmless after the receiver failed
        }
        assertThat(sink.end()).isInstanceOf(MailboxClosedException.class)
                .cause().isInstanceOf(RecordDeserializationException.class);
        assertThat(((RecordDeserializationException) sink.end().getCause()).offset()).isEqualTo(50L);
        assertThat(sink.taken()).extracting(r -> r.record().offset())
                .containsExactlyElementsOf(LongStream.range(0, 50).boxed().collect(Collectors.toList()));
        // only acknowledged records are committed: never past the poison record
        final Long committed = kafka.committed("poison-fail-group").get(new TopicPartition(topic, 0));
        if (committed != null) {
            assertThat(committed).isLessThanOrEqualTo(50L);
        }
    }

    static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
