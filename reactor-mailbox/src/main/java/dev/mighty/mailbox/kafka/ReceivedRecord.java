package dev.mighty.mailbox.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * A record the {@link KafkaMailboxReceiver} delivered into its mailbox, with the handle that acknowledges it.
 *
 * <h2>Threads</h2>
 * Immutable apart from the acknowledgement; {@link #acknowledge()} may be called from any thread, any number
 * of times (the first call counts), in any order relative to other records.
 *
 * <h2>Visibility</h2>
 * What the acknowledging thread did before {@link #acknowledge()} happens-before the receiver's commit of an
 * offset past this record (the acknowledgement is a release store, read with acquire by the poll thread).
 *
 * <h2>Stale records</h2>
 * A record belongs to the assignment of its partition that delivered it. When the partition is revoked (or lost,
 * or the receiver closes) before the record is acknowledged, the record may still be in the mailbox or in the
 * application's hands: it is still handed to the consumer (the mailbox does not filter), {@link #isRevoked()}
 * turns {@code true}, and its acknowledgement changes nothing any more: it cannot move the offsets of the
 * partition's next owner (another receiver, or this one after a new assignment, which delivers the record
 * again). Processing a stale record is a duplicate that at-least-once allows; an application that wants fewer
 * duplicates skips records whose {@code isRevoked()} is {@code true}.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class ReceivedRecord<K, V> {
    private final ConsumerRecord<K, V> record;
    private final PartitionAcks owner;
    private final PartitionAcks.Chunk chunk;
    private final int index;

    ReceivedRecord(ConsumerRecord<K, V> record, PartitionAcks owner, PartitionAcks.Chunk chunk, int index) {
        this.record = record;
        this.owner = owner;
        this.chunk = chunk;
        this.index = index;
    }

    /** @return the record as the {@code KafkaConsumer} returned it */
    public ConsumerRecord<K, V> record() {
        return record;
    }

    /**
     * Acknowledges this record: once it and every record delivered before it from the same partition are
     * acknowledged, the receiver may commit the offset past it. Idempotent; any thread; wait-free.
     */
    public void acknowledge() {
        PartitionAcks.acknowledge(chunk, index);
    }

    /**
     * @return {@code true} once the assignment that delivered this record has ended (partition revoked or lost,
     *         or the receiver closed): acknowledging it has no effect, and the record is (or will be) delivered
     *         to the partition's next owner
     */
    public boolean isRevoked() {
        return owner.isRevoked();
    }

    /**
     * @return the assignment epoch of this record: it grows with every assignment of a partition to this receiver,
     *         so two records of one partition with different epochs came from different assignments
     */
    public long assignmentEpoch() {
        return owner.epoch;
    }

    @Override
    public String toString() {
        return "ReceivedRecord{" + record.topic() + "-" + record.partition() + "@" + record.offset()
                + ", epoch=" + owner.epoch + (owner.isRevoked() ? ", revoked" : "") + "}";
    }
}
