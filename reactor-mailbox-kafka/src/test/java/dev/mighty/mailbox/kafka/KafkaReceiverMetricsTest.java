package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import dev.mighty.mailbox.DocRecipes;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.kafka.micrometer.KafkaReceiverMetrics;
import dev.mighty.mailbox.micrometer.MailboxMetrics;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link KafkaMailboxReceiver#stats()} and its Micrometer binder, {@link KafkaReceiverMetrics}, against the shared
 * broker: the meters follow the receiver as records are delivered, held unacknowledged, acknowledged and committed.
 */
@org.junit.jupiter.api.Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaReceiverMetricsTest {
    private static final List<String> METERS = List.of("kafka.receiver.assigned", "kafka.receiver.paused",
            "kafka.receiver.at.bound", "kafka.receiver.unacknowledged", "kafka.receiver.oldest.unacknowledged.age",
            "kafka.receiver.lag", "kafka.receiver.commits{result=success}", "kafka.receiver.commits{result=failure}");

    private static EmbeddedKafka kafka;

    private final MeterRegistry registry = new SimpleMeterRegistry();

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    /**
     * N13: the lag comes from the consumer's fetch metrics, not {@code currentLag(partition)}, which under
     * {@code group.protocol=consumer} is a round trip to the consumer's network thread per partition per refresh.
     */
    @Test
    void shouldReadTheLagFromTheConsumersMetricsWithoutARoundTripPerPartition() throws Exception {
        loadTopic(kafka, "meters-lag", 3, 30);
        final Map<String, Object> config = consumerConfig(kafka, "meters-lag-group");
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        final java.util.concurrent.atomic.AtomicReference<FaultyConsumer<String, String>> consumer =
                new java.util.concurrent.atomic.AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of("meters-lag"))
                .commitInterval(Duration.ofMillis(100))
                .consumerFactory(c -> {
                    final FaultyConsumer<String, String> faulty = new FaultyConsumer<>(c);
                    consumer.set(faulty);
                    return faulty;
                })
                .build();
        receiver.start();
        try {
            final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
            for (int i = 0; i < 30; i++) {
                assertThat(inbox.recv(KafkaTestSupport.WAIT)).as("record %s", i).isNotNull().satisfies(
                        ReceivedRecord::acknowledge);
            }
            assertThat(eventually(() -> receiver.stats().lag() == 0L)).as("the lag reaches 0").isTrue();
            assertThat(consumer.get().currentLagCalls.get()).isZero();
        } finally {
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void shouldCountUnacknowledgedRecordsUntilTheyAreAcknowledgedAndCommitted() throws Exception {
        final Map<TopicPartition, Long> ends = loadTopic(kafka, "meters-acks", 2, 20);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(
                        consumerConfig(kafka, "meters-acks-group"))
                .topics(List.of("meters-acks"))
                .capacity(64)
                .commitInterval(Duration.ofMillis(100))
                .build();
        // tag::monitor[]
        KafkaReceiverMetrics.monitor(registry, receiver, "service", "shipping");
        MailboxMetrics.monitor(registry, receiver.mailbox(), "service", "shipping"); // the mailbox's meters too
        // end::monitor[]
        final List<Meter> ours = registry.getMeters().stream()
                .filter(m -> m.getId().getName().startsWith("kafka.receiver.")).collect(Collectors.toList());
        assertThat(ours.stream().map(KafkaReceiverMetricsTest::key).collect(Collectors.toList()))
                .containsExactlyInAnyOrderElementsOf(METERS);
        for (Meter meter : ours) {
            assertThat(meter.getId().getTags()).as(meter.getId().getName())
                    .contains(Tag.of("group", "meters-acks-group"), Tag.of("topics", "meters-acks"),
                            Tag.of("service", "shipping"));
        }
        assertThat(KafkaReceiverMetrics.monitor(new SimpleMeterRegistry(), receiver, Tags.empty())).isSameAs(receiver);
        assertThat(value("kafka.receiver.lag")).as("not started: no lag known").isNaN();
        assertThat(value("kafka.receiver.assigned")).isZero();

        final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
        final List<ReceivedRecord<String, String>> taken = new ArrayList<>();
        receiver.start();
        try {
            for (int i = 0; i < 20; i++) {
                final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                assertThat(r).as("record %s", i).isNotNull();
                taken.add(r);
            }
            // every record taken, none acknowledged
            assertThat(eventually(() -> value("kafka.receiver.unacknowledged") == 20.0
                    && value("kafka.receiver.assigned") == 2.0
                    && value("kafka.receiver.lag") == 0.0 // both partitions fetched to their end
                    && value("kafka.receiver.oldest.unacknowledged.age") > 0.0)).isTrue();
            assertThat(value("kafka.receiver.paused")).isZero();
            assertThat(value("kafka.receiver.at.bound")).isZero();
            final double commitsBefore = timer("success").count();

            taken.forEach(ReceivedRecord::acknowledge);
            assertThat(eventually(() -> value("kafka.receiver.unacknowledged") == 0.0
                    && value("kafka.receiver.oldest.unacknowledged.age") == 0.0
                    && timer("success").count() > commitsBefore)).isTrue();
            assertThat(eventually(() -> committed("meters-acks-group").equals(ends))).isTrue();
            assertThat(timer("success").totalTime(TimeUnit.NANOSECONDS)).as("commits take time").isPositive();
            final KafkaReceiverStats stats = receiver.stats();
            assertThat(timer("success").count()).isLessThanOrEqualTo(stats.commits()); // the stats are as new or newer
            assertThat(stats.lastCommitNanos()).isPositive();
            assertThat(stats.groupId()).isEqualTo("meters-acks-group");
        } finally {
            receiver.close(Duration.ofSeconds(10));
        }
        final KafkaReceiverStats closed = receiver.stats();
        assertThat(closed.assignedPartitions()).isZero();
        assertThat(closed.unacknowledged()).isZero();
        assertThat(value("kafka.receiver.lag")).isNaN();
        assertThat(timer("success").count()).isEqualTo(closed.commits()).isPositive();
        assertThat(timer("failure").count()).isEqualTo(closed.failedCommits());
    }

    @Test
    void shouldReportThePartitionPausedAtTheBoundAndItsLagUntilAcknowledgementsResumeIt() throws Exception {
        final Map<TopicPartition, Long> ends = loadTopic(kafka, "meters-bound", 1, 20);
        final Map<String, Object> config = consumerConfig(kafka, "meters-bound-group");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of("meters-bound"))
                .capacity(64)
                .maxUnacknowledged(4) // the first poll (up to 5 records) reaches it
                .commitInterval(Duration.ofMillis(100))
                .build();
        new KafkaReceiverMetrics(receiver, "orders.in", Tags.empty()).bindTo(registry);
        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getName()).startsWith("orders.in."));
        final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
        final List<ReceivedRecord<String, String>> held = new ArrayList<>();
        receiver.start();
        try {
            assertThat(eventually(() -> receiver.partitionsAtUnacknowledgedBound() == 1)).isTrue();
            ReceivedRecord<String, String> r;
            while ((r = inbox.tryRecv()) != null) { // paused: nothing more comes until acknowledgements
                held.add(r);
            }
            assertThat(held).hasSizeBetween(4, 8); // the bound, at most a poll's records (5) less one over it
            final int out = held.size();
            // the records not yet polled are the lag: the log end (20) less the position (what was delivered)
            assertThat(eventually(() -> registry.get("orders.in.at.bound").gauge().value() == 1.0
                    && registry.get("orders.in.paused").gauge().value() == 1.0
                    && registry.get("orders.in.unacknowledged").gauge().value() == out
                    && registry.get("orders.in.lag").gauge().value() == 20 - out)).isTrue();

            held.forEach(ReceivedRecord::acknowledge);
            for (int i = out; i < 20; i++) {
                final ReceivedRecord<String, String> next = inbox.recv(KafkaTestSupport.WAIT);
                assertThat(next).as("record %s", i).isNotNull();
                next.acknowledge();
            }
            assertThat(eventually(() -> registry.get("orders.in.at.bound").gauge().value() == 0.0
                    && registry.get("orders.in.paused").gauge().value() == 0.0
                    && registry.get("orders.in.unacknowledged").gauge().value() == 0.0
                    && registry.get("orders.in.lag").gauge().value() == 0.0)).isTrue();
            assertThat(eventually(() -> committed("meters-bound-group").equals(ends))).isTrue();
            assertThat(registry.get("orders.in.commits").tag("result", "success").functionTimer().count())
                    .isPositive();
        } finally {
            receiver.close(Duration.ofSeconds(10));
        }
    }

    @Test
    void shouldReportZerosBeforeStartAndNotKeepTheReceiverAlive() throws InterruptedException {
        final WeakReference<KafkaMailboxReceiver<String, String>> ref = boundReceiver();

        final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
        while (ref.get() != null) {
            assertThat(System.nanoTime() - deadline).as("collected before the deadline").isNegative();
            System.gc();
            Thread.sleep(10);
        }
        assertThat(value("kafka.receiver.unacknowledged")).isNaN();
        assertThat(timer("success").count()).as("nothing was committed").isZero();
    }

    @Test
    void shouldRejectBadArgumentsWhenConstructed() {
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(
                consumerConfig(kafka, "meters-args-group")).topics(List.of("meters-args")).build();
        try {
            assertThatThrownBy(() -> new KafkaReceiverMetrics(null)).isInstanceOf(NullPointerException.class)
                    .hasMessage("receiver");
            assertThatThrownBy(() -> new KafkaReceiverMetrics(receiver, (Iterable<Tag>) null))
                    .isInstanceOf(NullPointerException.class).hasMessage("tags");
            assertThatThrownBy(() -> new KafkaReceiverMetrics(receiver, "", Tags.empty()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("prefix: \"\" (expected: non-empty, e.g. \"kafka.receiver\")");
            assertThatThrownBy(() -> new KafkaReceiverMetrics(receiver).bindTo(null))
                    .isInstanceOf(NullPointerException.class).hasMessage("registry");
        } finally {
            receiver.close();
        }
    }

    @Test
    void shouldShowTheMonitoringSnippetVerbatimInTheKafkaDoc() throws IOException {
        DocRecipes.assertShownVerbatim("src/test/java/dev/mighty/mailbox/kafka/KafkaReceiverMetricsTest.java",
                "docs/kafka.md", "monitor");
    }

    // ------------------------------------------------------------------ helpers

    /** Binds a new receiver, never started and closed, checks its zeros, and returns only a weak reference to it. */
    private WeakReference<KafkaMailboxReceiver<String, String>> boundReceiver() {
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(
                consumerConfig(kafka, "meters-gc-group")).topics(List.of("meters-gc")).build();
        new KafkaReceiverMetrics(receiver).bindTo(registry);
        final KafkaReceiverStats stats = receiver.stats();
        assertThat(stats).isEqualTo(new KafkaReceiverStats("meters-gc-group", "meters-gc", 0, 0, 0, 0L, 0L, -1L, 0L,
                0L, 0L, 0L, 0L));
        assertThat(value("kafka.receiver.unacknowledged")).isZero();
        assertThat(value("kafka.receiver.lag")).isNaN();
        receiver.close(); // before start(): closes the consumer, starts nothing
        return new WeakReference<>(receiver);
    }

    private double value(String name) {
        return registry.get(name).meter().measure().iterator().next().getValue();
    }

    private FunctionTimer timer(String result) {
        return registry.get("kafka.receiver.commits").tag("result", result).functionTimer();
    }

    private static Map<TopicPartition, Long> committed(String group) {
        try {
            return kafka.committed(group);
        } catch (Exception e) {
            return Map.of();
        }
    }

    /** @return the meter as {@code name}, or {@code name{result=value}} for the commit timers */
    private static String key(Meter meter) {
        final String result = meter.getId().getTag("result");
        return result == null ? meter.getId().getName() : meter.getId().getName() + "{result=" + result + "}";
    }
}
