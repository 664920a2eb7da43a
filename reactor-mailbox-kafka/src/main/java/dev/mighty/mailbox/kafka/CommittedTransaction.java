package dev.mighty.mailbox.kafka;

import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * One transaction of {@link KafkaMailboxReceiver#receiveExactlyOnce}, committed: the records it consumed, how many
 * records their processing produced (committed in the same transaction), and the consumed offsets it committed with
 * them. Immutable.
 *
 * @param <K> the consumed records' key type
 * @param <V> the consumed records' value type
 */
public final class CommittedTransaction<K, V> {
    private final List<ConsumerRecord<K, V>> records;
    private final int outputs;
    private final Map<TopicPartition, OffsetAndMetadata> offsets;

    CommittedTransaction(List<ConsumerRecord<K, V>> records, int outputs,
            Map<TopicPartition, OffsetAndMetadata> offsets) {
        this.records = List.copyOf(records);
        this.outputs = outputs;
        this.offsets = Map.copyOf(offsets);
    }

    /** {@return the consumed records, in the order they were processed (offset order within a partition)} */
    public List<ConsumerRecord<K, V>> records() {
        return records;
    }

    /** {@return how many records the processing sent in this transaction} */
    public int outputs() {
        return outputs;
    }

    /** {@return the consumer group offsets committed in this transaction, per partition consumed} */
    public Map<TopicPartition, OffsetAndMetadata> offsets() {
        return offsets;
    }

    @Override
    public String toString() {
        return "CommittedTransaction{records=" + records.size() + ", outputs=" + outputs + ", offsets=" + offsets
                + "}";
    }
}
