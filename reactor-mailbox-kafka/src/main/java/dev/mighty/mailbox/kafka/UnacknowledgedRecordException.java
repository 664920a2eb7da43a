package dev.mighty.mailbox.kafka;

import java.time.Duration;

import org.apache.kafka.common.TopicPartition;

/**
 * A {@link KafkaMailboxReceiver} ended because a partition's oldest unacknowledged record stayed unacknowledged
 * longer than {@link KafkaMailboxReceiver.Builder#maxUnacknowledgedAge(Duration)} allows: a record dropped without an
 * acknowledgement (a {@code filter}, an {@code onErrorContinue}, a lost callback) or processing that hangs. The
 * receiver committed what was acknowledged before it, so the record goes to the partition's next owner.
 */
public final class UnacknowledgedRecordException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The partition of the overdue record. */
    private final TopicPartition partition;
    /** The overdue record's offset. */
    private final long offset;
    /** How long it had been its partition's oldest unacknowledged record. */
    private final Duration age;

    UnacknowledgedRecordException(TopicPartition partition, long offset, Duration age, Duration maxAge) {
        super("partition " + partition + ": the record at offset " + offset + " has not been acknowledged for "
                + age.toMillis() + " ms (maxUnacknowledgedAge=" + maxAge.toMillis() + " ms); acknowledge every record,"
                + " including those you skip, or give maxUnacknowledgedAge a handler");
        this.partition = partition;
        this.offset = offset;
        this.age = age;
    }

    /** {@return the partition of the overdue record} */
    public TopicPartition partition() {
        return partition;
    }

    /** {@return the overdue record's offset: the partition's committed offset stays there} */
    public long offset() {
        return offset;
    }

    /** {@return how long the record had been its partition's oldest unacknowledged one} */
    public Duration age() {
        return age;
    }
}
