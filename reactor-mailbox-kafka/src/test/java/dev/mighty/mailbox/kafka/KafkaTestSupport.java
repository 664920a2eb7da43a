package dev.mighty.mailbox.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Configurations and loading helpers shared by the tests against {@link EmbeddedKafka}. */
final class KafkaTestSupport {
    /** The longest any single wait in these tests lasts before it fails. */
    static final Duration WAIT = Duration.ofSeconds(45);

    private KafkaTestSupport() {
    }

    static Map<String, Object> consumerConfig(EmbeddedKafka kafka, String groupId) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return config;
    }

    static Map<String, Object> producerConfig(EmbeddedKafka kafka) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        return config;
    }

    /** Produces {@code count} records {@code "v-<i>"}, record {@code i} to partition {@code i % partitions}. */
    static void produce(EmbeddedKafka kafka, String topic, int partitions, int count) {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(kafka))) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, null, "v-" + i));
            }
            producer.flush();
        }
    }

    /** Creates {@code topic}, produces {@code count} records as {@link #produce} does; returns the end offsets. */
    static Map<TopicPartition, Long> loadTopic(EmbeddedKafka kafka, String topic, int partitions, int count)
            throws Exception {
        kafka.createTopic(topic, partitions);
        produce(kafka, topic, partitions, count);
        final Map<TopicPartition, Long> ends = kafka.endOffsets(topic, partitions);
        long total = 0;
        for (long end : ends.values()) {
            total += end;
        }
        if (total != count) {
            throw new AssertionError("records in " + topic + ": " + total + " (expected: " + count + ")");
        }
        return ends;
    }

    /** Waits (bounded by {@link #WAIT}) until {@code group}'s committed offsets are exactly {@code ends}. */
    static boolean committedTo(EmbeddedKafka kafka, String group, Map<TopicPartition, Long> ends)
            throws InterruptedException {
        return eventually(() -> {
            try {
                return kafka.committed(group).equals(ends);
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** Waits (bounded by {@link #WAIT}) until {@code condition} holds; false if it never did. */
    static boolean eventually(BooleanSupplier condition) throws InterruptedException {
        final long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            TimeUnit.MILLISECONDS.sleep(10);
        }
        return true;
    }

    /** A record's identity within a topic: partition and offset in one long. */
    static long key(int partition, long offset) {
        return ((long) partition << 40) | offset;
    }
}
