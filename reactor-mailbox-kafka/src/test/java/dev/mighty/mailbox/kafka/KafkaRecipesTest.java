package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.DocRecipes;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.kafka.KafkaMailboxSender.CorrelatedRecord;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Runs the recipes of {@code docs/kafka.md} (the exactly-once and the share-group ones too) against the embedded
 * broker. The code between {@code // tag::name[]} and {@code // end::name[]} is what the document shows, character
 * for character (minus the indentation); {@link #shouldShowEveryRecipeVerbatimInTheKafkaDoc()} fails when the two
 * drift apart.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaRecipesTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) throws Exception {
        kafka = broker;
        kafka.createTopic("orders", 3);
        kafka.createTopic("audit-events", 1);
    }

    @Test
    void shouldSendThenReceiveAndAcknowledgeEveryOrderWhenRunningTheRecipes() throws Exception {
        final String bootstrapServers = kafka.bootstrapServers();
        final List<Integer> confirmed = new CopyOnWriteArrayList<>();
        final List<String> failed = new CopyOnWriteArrayList<>();

        // tag::send[]
        Map<String, Object> producerConfig = Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);

        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(producerConfig)
                .maxInFlight(1024)                       // records sent and not yet taken as results
                .build()) {                              // stopOnError(true): the first failure ends the stream
            Flux<CorrelatedRecord<String, String, Integer>> orders = Flux.range(0, 10_000)
                    .map(i -> CorrelatedRecord.of(
                            new ProducerRecord<>("orders", "customer-" + i % 100, "order-" + i), i));
            Flux.from(sender.sendCorrelated(orders))     // one result per record, in order of completion
                    .doOnNext(result -> confirmed.add(result.correlation()))   // the order's number, back
                    .blockLast();                        // throws the first failure's exception
        }                                                // close(): sends what it can within 30 s, closes
        // end::send[]

        assertThat(confirmed).hasSize(10_000).doesNotHaveDuplicates();
        final Map<TopicPartition, Long> ends = kafka.endOffsets("orders", 3);
        assertThat(ends.values().stream().mapToLong(Long::longValue).sum()).isEqualTo(10_000L);

        // tag::send-go-on[]
        try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(producerConfig)
                .stopOnError(false)                      // a failed send is a result, and sending goes on
                .build()) {
            Flux<ProducerRecord<String, String>> events = Flux.range(0, 1_000)
                    .map(i -> new ProducerRecord<>("audit-events", "event-" + i));
            Flux.from(sender.send(events))
                    .filter(result -> !result.isSuccess())
                    .doOnNext(result -> failed.add(result.record().value()))   // e.g. to a dead-letter store
                    .blockLast();                        // completes however many failed
        }
        // end::send-go-on[]

        assertThat(failed).isEmpty();
        assertThat(kafka.endOffsets("audit-events", 1)).containsEntry(new TopicPartition("audit-events", 0), 1_000L);

        final Set<String> processed = ConcurrentHashMap.newKeySet();
        final Scheduler scheduler = Schedulers.newSingle("orders");
        try {
            // tag::receive[]
            Map<String, Object> consumerConfig = Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                    ConsumerConfig.GROUP_ID_CONFIG, "billing",
                    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);

            KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(consumerConfig)
                    .topics(List.of("orders"))
                    .capacity(1024)                          // records between the poll thread and the subscriber
                    .commitInterval(Duration.ofMillis(500))
                    .build();

            MailboxFlux.from(receiver.mailbox())
                    .publishOn(scheduler)                    // the subscriber's work off the poll thread
                    .subscribe(r -> {
                        processed.add(r.record().value());   // at least once: make this idempotent
                        r.acknowledge();                     // any thread, any order
                    });
            receiver.start();
            // ... until shutdown:
            awaitProcessed(processed, 10_000);
            receiver.close(Duration.ofSeconds(10));          // wait for acks, commit, leave the group, complete
            // end::receive[]
        } finally {
            scheduler.dispose();
        }
        assertThat(processed).hasSize(10_000);
        assertThat(kafka.committed("billing")).isEqualTo(ends);

        // tag::recv-loop[]
        KafkaMailboxReceiver<String, String> auditor = KafkaMailboxReceiver
                .<String, String>builder(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                        ConsumerConfig.GROUP_ID_CONFIG, "audit",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))
                .topics(List.of("orders"))
                .build();
        Mailbox<ReceivedRecord<String, String>> inbox = auditor.mailbox();
        List<ReceivedRecord<String, String>> batch = new ArrayList<>();
        auditor.start();
        int audited = 0;
        while (audited < 10_000 && inbox.recvMany(batch::add, 256) > 0) { // parks while empty
            audited += batch.size();                     // e.g. one database write per batch ...
            batch.forEach(ReceivedRecord::acknowledge);  // ... then acknowledge the batch
            batch.clear();
        }
        auditor.close();
        // end::recv-loop[]

        assertThat(audited).isEqualTo(10_000);
        assertThat(kafka.committed("audit")).isEqualTo(ends);

        final Set<String> shippedOrders = ConcurrentHashMap.newKeySet();
        // tag::receive-flux[]
        KafkaMailboxReceiver<String, String> shipping = KafkaMailboxReceiver
                .<String, String>builder(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                        ConsumerConfig.GROUP_ID_CONFIG, "shipping",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))
                .topics(List.of("orders"))
                .maxUnacknowledged(512)                  // per partition: handed out and not yet acknowledged
                .build();
        Disposable shipper = shipping.receive()          // subscribing starts it; onNext off the poll thread
                .flatMap(r -> ship(shippedOrders, r.value())   // asynchronous work, 64 records at a time
                        .doOnSuccess(done -> r.acknowledge()), 64)
                .subscribe();
        // ... until shutdown:
        awaitProcessed(shippedOrders, 10_000);
        shipper.dispose();                               // cancel: commit what is acknowledged, leave the group
        // end::receive-flux[]

        assertThat(KafkaTestSupport.eventually(() -> {
            try {
                return kafka.committed("shipping").equals(ends);
            } catch (Exception e) {
                return false;
            }
        })).as("the cancel committed every acknowledged record").isTrue();
    }

    @Test
    void shouldWriteEachReceiptOnceWhenRunningTheExactlyOnceRecipe() throws Exception {
        final String bootstrapServers = kafka.bootstrapServers();
        final Map<TopicPartition, Long> ends = KafkaTestSupport.loadTopic(kafka, "payments", 2, 300);
        kafka.createTopic("receipts", 1);
        final String instanceId = "0";
        final Set<String> settled = ConcurrentHashMap.newKeySet();

        // tag::exactly-once[]
        KafkaMailboxReceiver<String, String> payments = KafkaMailboxReceiver
                .<String, String>builder(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                        ConsumerConfig.GROUP_ID_CONFIG, "receipt-writer",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",   // no aborted input
                        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))
                .topics(List.of("payments"))
                .transactionBatch(100, Duration.ofMillis(50))   // a transaction: up to 100 records, or 50 ms
                .build();
        try (KafkaMailboxSender<String, String> receipts = KafkaMailboxSender.<String, String>builder(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, "receipts-" + instanceId,   // the same after a restart
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))
                .build()) {                              // initTransactions(): fences an older "receipts-0"
            Disposable writer = payments.receiveExactlyOnce(receipts, payment -> Mono.just(
                            new ProducerRecord<>("receipts", payment.key(), "receipt-for-" + payment.value())))
                    .subscribe(tx -> tx.records().forEach(r -> settled.add(r.value())));   // committed, once
            // ... until shutdown:
            awaitProcessed(settled, 300);
            writer.dispose();                            // closes the receiver: an open transaction commits or aborts
            payments.close();                            // waits for that close
        }
        // end::exactly-once[]

        assertThat(kafka.committed("receipt-writer")).isEqualTo(ends);
        final List<String> expected = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            expected.add("receipt-for-v-" + i);
        }
        assertThat(readCommitted(bootstrapServers, "receipts", 300)).containsExactlyInAnyOrderElementsOf(expected);
    }

    @Test
    void shouldAcceptEveryJobOnceWhenRunningTheShareGroupRecipe() throws Exception {
        final String bootstrapServers = kafka.bootstrapServers();
        KafkaTestSupport.loadTopic(kafka, "jobs", 2, 100);
        kafka.alterGroupConfigs("workers", Map.of("share.auto.offset.reset", "earliest"));
        final Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        final Set<String> done = ConcurrentHashMap.newKeySet();

        // tag::share[]
        KafkaShareReceiver<String, String> workers = KafkaShareReceiver
                .<String, String>builder(config)         // bootstrap.servers and the deserializers
                .groupId("workers")
                .topics(List.of("jobs"))
                .capacity(256)                           // max.poll.records becomes min(500, capacity)
                .build();
        Disposable worker = workers.receive()            // starts on subscribe; onNext on a thread of its own
                .flatMap(r -> work(done, r.value())
                        .doOnSuccess(x -> r.accept())    // done: never delivered again
                        .doOnError(e -> r.release()), 16)   // retry elsewhere, deliveryCount() + 1
                .subscribe();
        // ... until shutdown:
        awaitAccepted(workers, 100);
        worker.dispose();                                // releases what is not settled, leaves the group
        // end::share[]

        assertThat(done).hasSize(100);
        assertThat(workers.stats().released()).as("none released").isZero();
    }

    private static void awaitAccepted(KafkaShareReceiver<String, String> receiver, long count)
            throws InterruptedException {
        assertThat(KafkaTestSupport.eventually(() -> receiver.stats().accepted() == count)).as("accepted %s", count)
                .isTrue();
    }

    private static Mono<Void> work(Set<String> done, String job) {
        return Mono.<Void>fromRunnable(() -> done.add(job)).subscribeOn(Schedulers.parallel());
    }

    /** Reads {@code topic} (one partition) from the start as a {@code read_committed} consumer, a little past
     *  {@code expected} values so that a duplicate would show. */
    private static List<String> readCommitted(String bootstrapServers, String topic, int expected) {
        final Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        final List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            final TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            final long deadline = System.nanoTime() + KafkaTestSupport.WAIT.toNanos();
            long extra = 0L;
            while (System.nanoTime() - deadline < 0 && (extra == 0L || System.nanoTime() - extra < 0)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    values.add(r.value());
                }
                if (extra == 0L && values.size() >= expected) {
                    extra = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
                }
            }
        }
        return values;
    }

    private static Mono<Void> ship(Set<String> shipped, String order) {
        return Mono.<Void>fromRunnable(() -> shipped.add(order)).subscribeOn(Schedulers.parallel());
    }

    private static void awaitProcessed(Set<String> processed, int count) throws InterruptedException {
        assertThat(KafkaTestSupport.eventually(() -> processed.size() == count)).as("processed %s", count).isTrue();
    }

    // ------------------------------------------------------------------ the document and the code agree

    @Test
    void shouldShowEveryRecipeVerbatimInTheKafkaDoc() throws IOException {
        DocRecipes.assertShownVerbatim("src/test/java/dev/mighty/mailbox/kafka/KafkaRecipesTest.java", "docs/kafka.md",
                "send", "send-go-on", "receive", "recv-loop", "receive-flux", "exactly-once", "share");
    }
}
