package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.key;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;

/**
 * A second member joins, then the first leaves, under the incremental rebalance protocols: the classic protocol with
 * the {@code CooperativeStickyAssignor} (only the partitions that move are revoked; its members heartbeat every
 * 500 ms) and the KIP-848 {@code consumer} protocol (the broker assigns; the shared broker runs its heartbeats every
 * 500 ms). In both, every record is acknowledged by the first member or delivered to the second, and no record the
 * first acknowledged reaches the second.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaRebalanceProtocolsTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    @Test
    void shouldHandPartitionsOnWithNoDuplicateOfAnAcknowledgedRecordUnderCooperativeSticky() throws Exception {
        // heartbeats every 500 ms (the default is 3 s), as the broker sets them for the consumer protocol: a member
        // learns of a rebalance at its next heartbeat, and a cooperative hand-over takes two rebalances
        final Map<String, Object> config = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName(),
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        handOver("coop", config);
    }

    @Test
    void shouldHandPartitionsOnWithNoDuplicateOfAnAcknowledgedRecordUnderTheConsumerProtocol() throws Exception {
        handOver("kip848", Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"));
    }

    private static void handOver(String name, Map<String, Object> protocol) throws Exception {
        final String topic = "proto-" + name;
        final String group = "proto-" + name + "-group";
        final int count = 3_000;
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);
        final Set<Long> ackedByA = ConcurrentHashMap.newKeySet();
        final Map<Long, Integer> deliveredToB = new ConcurrentHashMap<>();
        final AtomicInteger countA = new AtomicInteger();
        final KafkaMailboxReceiver<String, String> a = member(group, topic, protocol);
        final KafkaMailboxReceiver<String, String> b = member(group, topic, protocol);
        final Disposable subA = a.receive().subscribe(r -> {
            countA.incrementAndGet();
            sleep(2); // about 6 s for the topic: A still has records to go when B joins
            ackedByA.add(key(r.partition(), r.offset())); // before the ack: a commit past it implies it is here
            r.acknowledge();
        });
        Disposable subB = null;
        try {
            assertThat(eventually(() -> countA.get() >= 200)).isTrue();
            subB = b.receive().subscribe(r -> {
                deliveredToB.merge(key(r.partition(), r.offset()), 1, Integer::sum);
                r.acknowledge();
            });
            assertThat(eventually(() -> !deliveredToB.isEmpty() || countA.get() == count)).isTrue();
            subA.dispose(); // A leaves: B gets every partition
            assertThat(a.closeAsync(Duration.ofSeconds(10)).toCompletableFuture().get(30, TimeUnit.SECONDS))
                    .isNull();
            assertThat(eventually(() -> {
                try {
                    return kafka.committed(group).equals(ends);
                } catch (Exception e) {
                    return false;
                }
            })).as("committed to the log end").isTrue();
        } finally {
            subA.dispose();
            if (subB != null) {
                subB.dispose();
            }
            b.closeAsync(Duration.ofSeconds(10)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            for (long offset = 0; offset < e.getValue(); offset++) {
                final long k = key(e.getKey().partition(), offset);
                assertThat(ackedByA.contains(k) || deliveredToB.containsKey(k))
                        .as("%s-%s delivered", e.getKey(), offset).isTrue();
            }
        }
        final List<Long> duplicates = new ArrayList<>();
        for (Long k : deliveredToB.keySet()) {
            if (ackedByA.contains(k)) {
                duplicates.add(k);
            }
        }
        assertThat(duplicates).as("records A acknowledged and B got again").isEmpty();
        assertThat(deliveredToB.values()).allMatch(n -> n == 1);
    }

    private static KafkaMailboxReceiver<String, String> member(String group, String topic,
            Map<String, Object> protocol) {
        final Map<String, Object> config = consumerConfig(kafka, group);
        config.putAll(protocol);
        return KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of(topic))
                .capacity(256)
                .commitInterval(Duration.ofMillis(100))
                .revocationTimeout(Duration.ofSeconds(5))
                .build();
    }

    private static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
