package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.producerConfig;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/** {@link KafkaMailboxSender} against a real (in-process KRaft) broker, shared by the Kafka tests. */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaMailboxSenderTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    /**
     * Counts the records between {@code KafkaProducer.send} and their acknowledgement (which Kafka calls before
     * the send's callback): the sends in flight.
     */
    public static final class InFlightInterceptor implements ProducerInterceptor<String, String> {
        static final AtomicLong IN_FLIGHT = new AtomicLong();
        static final AtomicLong MAX_IN_FLIGHT = new AtomicLong();

        @Override
        public ProducerRecord<String, String> onSend(ProducerRecord<String, String> record) {
            final long now = IN_FLIGHT.incrementAndGet();
            MAX_IN_FLIGHT.accumulateAndGet(now, Math::max);
            return record;
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            IN_FLIGHT.decrementAndGet();
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }
    }

    @Test
    void shouldSendEveryRecordWithBoundedSendsInFlightAndReadThemBack() throws Exception {
        final String topic = "sent";
        final int partitions = 3;
        final int count = 100_000;
        final int maxInFlight = 4096;
        kafka.createTopic(topic, partitions);
        final Map<String, Object> config = producerConfig(kafka);
        config.put(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG, InFlightInterceptor.class.getName());
        final List<KafkaMailboxSender.Result<String, String>> results = new ArrayList<>(count);
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(config)
                .maxInFlight(maxInFlight)
                .build()) {
            final Flux<ProducerRecord<String, String>> records = Flux.range(0, count)
                    .map(i -> new ProducerRecord<>(topic, i % partitions, null, "v-" + i));
            StepVerifier.create(Flux.from(sender.send(records)).doOnNext(results::add))
                    .expectNextCount(count)
                    .expectComplete()
                    .verify(KafkaTestSupport.WAIT);
        }
        assertThat(InFlightInterceptor.MAX_IN_FLIGHT.get()).as("sends in flight at most")
                .isBetween(1L, (long) maxInFlight);
        assertThat(InFlightInterceptor.IN_FLIGHT.get()).isZero();

        // one result per record, all successful; per partition in send order (Kafka's callback order)
        final Set<String> values = new HashSet<>();
        final Map<Integer, Long> lastOffset = new HashMap<>();
        final Map<Integer, Integer> lastIndex = new HashMap<>();
        for (KafkaMailboxSender.Result<String, String> r : results) {
            assertThat(r.isSuccess()).as("%s", r).isTrue();
            assertThat(r.exception()).isNull();
            assertThat(values.add(r.record().value())).isTrue();
            final int p = r.metadata().partition();
            assertThat(p).isEqualTo(r.record().partition());
            final int index = Integer.parseInt(r.record().value().substring(2));
            assertThat(r.metadata().offset()).isGreaterThan(lastOffset.getOrDefault(p, -1L));
            assertThat(index).isGreaterThan(lastIndex.getOrDefault(p, -1));
            lastOffset.put(p, r.metadata().offset());
            lastIndex.put(p, index);
        }
        assertThat(values).hasSize(count);

        // read back: exactly the records sent
        final Set<String> readBack = new HashSet<>();
        final List<TopicPartition> assignment = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            assignment.add(new TopicPartition(topic, p));
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig(kafka, "read-back"))) {
            consumer.assign(assignment);
            consumer.seekToBeginning(assignment);
            final long deadline = System.nanoTime() + KafkaTestSupport.WAIT.toNanos();
            int total = 0;
            while (total < count && System.nanoTime() - deadline < 0) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    readBack.add(r.value());
                    total++;
                }
            }
            assertThat(total).isEqualTo(count);
        }
        assertThat(readBack).isEqualTo(values);
        assertThat(kafka.endOffsets(topic, partitions).values().stream().mapToLong(Long::longValue).sum())
                .isEqualTo(count);
    }

    /** Fails on the value {@code "bad"}. */
    public static final class PickySerializer extends StringSerializer {
        @Override
        public byte[] serialize(String topic, String data) {
            if ("bad".equals(data)) {
                throw new SerializationException("bad");
            }
            return super.serialize(topic, data);
        }
    }

    @Test
    void shouldReportAFailedSendAsAResultAndGoOnWhenARecordCannotBeSerializedAndStopOnErrorIsOff() throws Exception {
        final String topic = "picky";
        kafka.createTopic(topic, 1);
        final Map<String, Object> config = producerConfig(kafka);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, PickySerializer.class);
        final List<KafkaMailboxSender.Result<String, String>> results = new ArrayList<>();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(config)
                .maxInFlight(4)
                .stopOnError(false)
                .build()) {
            final Flux<ProducerRecord<String, String>> records = Flux.just("a", "bad", "c")
                    .map(v -> new ProducerRecord<>(topic, 0, null, v));
            StepVerifier.create(Flux.from(sender.send(records)).doOnNext(results::add))
                    .expectNextCount(3)
                    .expectComplete()
                    .verify(KafkaTestSupport.WAIT);
        }
        assertThat(results).extracting(r -> r.record().value()).containsExactlyInAnyOrder("a", "bad", "c");
        assertThat(results).filteredOn(r -> !r.isSuccess()).singleElement().satisfies(r -> {
            assertThat(r.record().value()).isEqualTo("bad");
            assertThat(r.exception()).isInstanceOf(SerializationException.class);
            assertThat(r.metadata()).isNull();
        });
        assertThat(kafka.endOffsets(topic, 1)).containsEntry(new TopicPartition(topic, 0), 2L);
    }

    @Test
    void shouldFailTheResultsAfterTheSendsInFlightWhenTheUpstreamFails() throws Exception {
        final String topic = "upstream-error";
        kafka.createTopic(topic, 1);
        final AtomicInteger sent = new AtomicInteger();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(
                producerConfig(kafka)).build()) {
            final Flux<ProducerRecord<String, String>> records = Flux.range(0, 10)
                    .map(i -> new ProducerRecord<String, String>(topic, 0, null, "v-" + i))
                    .doOnNext(r -> sent.incrementAndGet())
                    .concatWith(Flux.error(new IllegalStateException("boom")));
            StepVerifier.create(sender.send(records))
                    .expectNextCount(10)
                    .expectErrorMessage("boom")
                    .verify(KafkaTestSupport.WAIT);
        }
        assertThat(sent.get()).isEqualTo(10);
        assertThat(kafka.endOffsets(topic, 1)).containsEntry(new TopicPartition(topic, 0), 10L);
    }

    @Test
    void shouldCancelTheUpstreamWhenTheDownstreamCancels() throws Exception {
        final String topic = "cancelled";
        kafka.createTopic(topic, 1);
        final AtomicInteger cancelled = new AtomicInteger();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(
                producerConfig(kafka)).maxInFlight(8).build()) {
            final Flux<ProducerRecord<String, String>> endless = Flux.<Integer, Integer>generate(() -> 0,
                    (i, sink) -> {
                        sink.next(i);
                        return i + 1;
                    })
                    .map(i -> new ProducerRecord<String, String>(topic, 0, null, "v-" + i))
                    .doOnCancel(cancelled::incrementAndGet);
            StepVerifier.create(Flux.from(sender.send(endless)).take(20))
                    .expectNextCount(20)
                    .expectComplete()
                    .verify(KafkaTestSupport.WAIT);
        }
        assertThat(cancelled.get()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ correlation and stopOnError

    private static Flux<KafkaMailboxSender.CorrelatedRecord<String, String, Integer>> correlated(String topic,
            int count, int big, AtomicInteger emitted, AtomicInteger cancels) {
        return Flux.range(0, count)
                .map(i -> KafkaMailboxSender.CorrelatedRecord.of(
                        new ProducerRecord<String, String>(topic, 0, null, i == big ? "x".repeat(4_000) : "v-" + i),
                        i))
                .doOnNext(r -> emitted.incrementAndGet())
                .doOnCancel(cancels::incrementAndGet);
    }

    @Test
    void shouldHandEachCorrelationBackWithItsResultInSendOrderWhenSendingCorrelated() throws Exception {
        final String topic = "correlated";
        final int count = 2_000;
        kafka.createTopic(topic, 1);
        final List<KafkaMailboxSender.CorrelatedResult<String, String, Integer>> results = new ArrayList<>();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(
                producerConfig(kafka)).maxInFlight(64).build()) {
            StepVerifier.create(Flux.from(sender.sendCorrelated(
                            correlated(topic, count, -1, new AtomicInteger(), new AtomicInteger())))
                            .doOnNext(results::add))
                    .expectNextCount(count)
                    .expectComplete()
                    .verify(KafkaTestSupport.WAIT);
        }
        // one partition: Kafka completes the sends in send order, so correlation i comes i-th, with its own record
        for (int i = 0; i < count; i++) {
            final KafkaMailboxSender.CorrelatedResult<String, String, Integer> r = results.get(i);
            assertThat(r.isSuccess()).as("%s", r).isTrue();
            assertThat(r.correlation()).isEqualTo(i);
            assertThat(r.record().value()).isEqualTo("v-" + i);
            assertThat(r.metadata().offset()).isEqualTo(i);
        }
        assertThat(kafka.endOffsets(topic, 1)).containsEntry(new TopicPartition(topic, 0), (long) count);
    }

    @Test
    void shouldEndWithTheFirstFailureAndSendNothingAfterItWhenStopOnErrorIsOn() throws Exception {
        final String topic = "stop-on-error";
        final int big = 50;
        kafka.createTopic(topic, 1);
        final Map<String, Object> config = producerConfig(kafka);
        config.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1024); // record 50 fails in KafkaProducer.send
        final List<KafkaMailboxSender.CorrelatedResult<String, String, Integer>> results = new ArrayList<>();
        final AtomicInteger emitted = new AtomicInteger();
        final AtomicBoolean cancelled = new AtomicBoolean();
        final List<KafkaMailboxSender.CorrelatedRecord<String, String, Integer>> records =
                correlated(topic, 200, big, new AtomicInteger(), new AtomicInteger()).collectList().block();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(config)
                .maxInFlight(64)
                .stopOnError(true)
                .build()) {
            StepVerifier.create(Flux.from(sender.sendCorrelated(finishingRequests(records, emitted, cancelled)))
                            .doOnNext(results::add))
                    .thenConsumeWhile(r -> true)
                    .expectError(RecordTooLargeException.class)
                    .verify(KafkaTestSupport.WAIT);
        }
        // the sends before the failure were in flight: each completed and was published; the failed record got
        // no result, and none of the records the upstream delivered after it reached the producer
        assertThat(results).extracting(KafkaMailboxSender.CorrelatedResult::correlation)
                .containsExactlyElementsOf(range(0, big));
        assertThat(results).allMatch(KafkaMailboxSender.Result::isSuccess);
        assertThat(emitted.get()).as("records delivered after the failed one").isGreaterThan(big + 1);
        assertThat(kafka.endOffsets(topic, 1)).containsEntry(new TopicPartition(topic, 0), (long) big);
        assertThat(cancelled).isTrue();
    }

    /**
     * Emits {@code items} as they are requested, on the requesting thread, and still emits what was requested
     * before a cancel (§2.8 has a subscriber expect that; a Reactor source would stop at once): so the records
     * an upstream delivers after a {@code stopOnError} stop really reach the sender. Requests are serial (§2.7).
     */
    private static <T> Publisher<T> finishingRequests(List<T> items, AtomicInteger emitted, AtomicBoolean cancelled) {
        return subscriber -> subscriber.onSubscribe(new Subscription() {
            private final AtomicLong requested = new AtomicLong();
            private final AtomicInteger wip = new AtomicInteger();
            private int index; // under wip
            private boolean done; // under wip

            @Override
            public void request(long n) {
                if (!cancelled.get()) {
                    requested.accumulateAndGet(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
                }
                if (wip.getAndIncrement() != 0) {
                    return; // re-entrant (from onNext): the running loop emits it
                }
                do {
                    while (!done && index < items.size() && requested.get() > 0) {
                        requested.decrementAndGet();
                        emitted.incrementAndGet();
                        subscriber.onNext(items.get(index++));
                    }
                    if (!done && index == items.size() && !cancelled.get()) {
                        done = true;
                        subscriber.onComplete();
                    }
                } while (wip.decrementAndGet() != 0);
            }

            @Override
            public void cancel() {
                cancelled.set(true); // what was requested before still comes
            }
        });
    }

    @Test
    void shouldStopAtABrokerRejectionOnTheIoThreadByDefault() throws Exception {
        final String topic = "stop-on-broker-error";
        final int big = 5;
        kafka.createTopic(topic, 1, Map.of("max.message.bytes", "1024")); // record 5: the broker refuses it
        final List<KafkaMailboxSender.CorrelatedResult<String, String, Integer>> results = new ArrayList<>();
        final AtomicInteger emitted = new AtomicInteger();
        final AtomicInteger cancels = new AtomicInteger();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(
                producerConfig(kafka)).maxInFlight(1).build()) { // stopOnError: the default
            StepVerifier.create(Flux.from(sender.sendCorrelated(correlated(topic, 20, big, emitted, cancels)))
                            .doOnNext(results::add))
                    .thenConsumeWhile(r -> true)
                    .expectError(RecordTooLargeException.class)
                    .verify(KafkaTestSupport.WAIT);
        }
        // one slot: record i is requested only after record i - 1's result was taken, so the upstream delivered
        // exactly the records up to the failed one, and was cancelled before it delivered another
        assertThat(results).extracting(KafkaMailboxSender.CorrelatedResult::correlation)
                .containsExactlyElementsOf(range(0, big));
        assertThat(emitted.get()).isEqualTo(big + 1);
        assertThat(cancels.get()).isEqualTo(1);
        assertThat(kafka.endOffsets(topic, 1)).containsEntry(new TopicPartition(topic, 0), (long) big);
    }

    @Test
    void shouldReportTheFailureWithItsCorrelationAndGoOnWhenStopOnErrorIsOff() throws Exception {
        final String topic = "go-on-error";
        final int big = 50;
        final int count = 100;
        kafka.createTopic(topic, 1);
        final Map<String, Object> config = producerConfig(kafka);
        config.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1024);
        final List<KafkaMailboxSender.CorrelatedResult<String, String, Integer>> results = new ArrayList<>();
        final AtomicInteger cancels = new AtomicInteger();
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(config)
                .maxInFlight(64)
                .stopOnError(false)
                .build()) {
            StepVerifier.create(Flux.from(sender.sendCorrelated(
                            correlated(topic, count, big, new AtomicInteger(), cancels)))
                            .doOnNext(results::add))
                    .expectNextCount(count)
                    .expectComplete()
                    .verify(KafkaTestSupport.WAIT);
        }
        assertThat(results).filteredOn(r -> !r.isSuccess()).singleElement().satisfies(r -> {
            assertThat(r.correlation()).isEqualTo(big);
            assertThat(r.exception()).isInstanceOf(RecordTooLargeException.class);
            assertThat(r.metadata()).isNull();
        });
        // the failure was reported while earlier sends were in flight; the successes keep their send order
        final List<Integer> succeeded = new ArrayList<>(range(0, count));
        succeeded.remove(Integer.valueOf(big));
        assertThat(results).filteredOn(KafkaMailboxSender.Result::isSuccess)
                .extracting(KafkaMailboxSender.CorrelatedResult::correlation)
                .containsExactlyElementsOf(succeeded);
        assertThat(cancels.get()).isZero();
        assertThat(kafka.endOffsets(topic, 1)).containsEntry(new TopicPartition(topic, 0), (long) count - 1);
    }

    private static List<Integer> range(int from, int to) {
        final List<Integer> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(i);
        }
        return out;
    }

    /**
     * N4: {@code close(timeout)} is bounded by its one timeout, with a record in flight and the broker gone. It
     * flushed first, without a timeout, and so took {@code delivery.timeout.ms} (40 s here, 2 min by default).
     */
    @Test
    @Timeout(180)
    void shouldCloseWithinItsTimeoutWhenTheBrokerIsGoneWithARecordInFlight() throws Exception {
        final EmbeddedKafka own = EmbeddedKafka.start(); // a broker of this test's own, to stop under the sender
        final KafkaMailboxSender<String, String> sender;
        try {
            own.createTopic("gone", 1);
            final Map<String, Object> config = producerConfig(own);
            config.put(ProducerConfig.LINGER_MS_CONFIG, 10_000);          // the record waits in the producer
            config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
            config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 40_000); // >= linger + request timeout
            sender = KafkaMailboxSender.<String, String>builder(config).build();
            assertThat(sender.producer().partitionsFor("gone")).hasSize(1); // metadata cached: send does not block
            Flux.from(sender.send(Flux.just(new ProducerRecord<>("gone", 0, "k", "in flight")))).subscribe();
        } finally {
            own.close();
        }
        final long start = System.nanoTime();
        sender.close(Duration.ofSeconds(2));
        final long tookSeconds = (System.nanoTime() - start) / 1_000_000_000L;
        // a bound on the close's own timeout (2 s) with room for a loaded machine, far below the 40 s of the flush
        assertThat(tookSeconds).as("close(2 s) took %d s", tookSeconds).isLessThan(20L);
    }

    @Test
    void shouldRejectBadArgumentsEarly() {
        final Map<String, Object> config = producerConfig(kafka);
        assertThatThrownBy(() -> KafkaMailboxSender.builder(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> KafkaMailboxSender.builder(config).maxInFlight(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("maxInFlight: 0 (expected: 1 .. 1073741824)");
        final KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(config).build();
        assertThatThrownBy(() -> sender.send(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> sender.sendCorrelated(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> KafkaMailboxSender.CorrelatedRecord.of(null, 1))
                .isInstanceOf(NullPointerException.class);
        assertThat(KafkaMailboxSender.CorrelatedRecord.of(new ProducerRecord<>("t", "v"), null).correlation())
                .isNull();
        assertThatThrownBy(() -> sender.close(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
        sender.close();
        sender.close(); // idempotent
    }
}
