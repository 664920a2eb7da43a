package dev.mighty.mailbox.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import dev.mighty.mailbox.Mailbox;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Run by {@link KafkaReactorOptionalTest} inside a loader without reactor-core and micrometer-core: the low-level
 * path of the receiver (build, start, receive from the mailbox, acknowledge, read its stats, close) must neither need
 * nor load them. Takes the bootstrap servers and a topic holding records ({@code "servers topic"}); returns how many records it
 * took, and what {@code stats()} says once it is closed.
 */
public final class NoReactorProbe implements Function<String, String> {
    @Override
    public String apply(String serversAndTopic) {
        final String[] args = serversAndTopic.split(" ");
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
                ConsumerConfig.GROUP_ID_CONFIG, "no-reactor-group",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))
                .topics(List.of(args[1]))
                .maxUnacknowledged(8)
                .build();
        final Mailbox<ReceivedRecord<String, String>> mailbox = receiver.mailbox();
        int taken = 0;
        try {
            receiver.start();
            ReceivedRecord<String, String> r;
            while (taken < 10 && (r = mailbox.recv(Duration.ofSeconds(45))) != null) {
                r.acknowledge();
                r.commitAsync();
                taken++;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            receiver.stats(); // while running
            receiver.close(Duration.ofSeconds(5));
        }
        final KafkaReceiverStats stats = receiver.stats();
        // a ledger on its own, too: the record's shortcuts
        final ReceivedRecord<String, String> one = new PartitionAcks(new TopicPartition("t", 0), 1)
                .deliver(new ConsumerRecord<>("t", 0, 7L, "k", "v"));
        return taken + " " + one.key() + one.value() + one.offset() + " stats="
                + (stats.assignedPartitions() + stats.unacknowledged());
    }
}
