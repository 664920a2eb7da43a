package dev.mighty.mailbox.kafka;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Headers;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A record the {@link KafkaMailboxReceiver} delivered into its mailbox, with the handle that acknowledges it.
 *
 * <h2>Threads</h2>
 * Immutable apart from the acknowledgement; {@link #acknowledge()}, {@link #commitAsync()} and {@link #commit()}
 * may be called from any thread, any number of times (the first acknowledgement counts), in any order relative to
 * other records.
 *
 * <h2>Progress</h2>
 * {@link #acknowledge()} is wait-free; {@link #commitAsync()} is lock-free (it queues a waiter) and never blocks.
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
 * <h2>Memory</h2>
 * A record kept by the application pins the record itself and one chunk of its partition's ledger (256 entries),
 * not the chunks delivered after it.
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

    /** {@return the record as the {@code KafkaConsumer} returned it} */
    public ConsumerRecord<K, V> record() {
        return record;
    }

    /** {@return {@code record().key()}} */
    public @Nullable K key() {
        return record.key();
    }

    /** {@return {@code record().value()}} */
    public @Nullable V value() {
        return record.value();
    }

    /** {@return {@code record().topic()}} */
    public String topic() {
        return record.topic();
    }

    /** {@return {@code record().partition()}} */
    public int partition() {
        return record.partition();
    }

    /** {@return {@code record().offset()}} */
    public long offset() {
        return record.offset();
    }

    /** {@return {@code record().headers()}} */
    public Headers headers() {
        return record.headers();
    }

    /**
     * Acknowledges this record: once it and every record delivered before it from the same partition are
     * acknowledged, the receiver may commit the offset past it. Idempotent; any thread; wait-free.
     */
    public void acknowledge() {
        owner.acknowledge(chunk, index);
    }

    /**
     * Acknowledges this record and asks the receiver to commit soon (on its poll thread, at its next turn, not
     * waiting for the commit interval). Called on the poll thread itself (a listener, a subscriber of
     * {@code receive(Schedulers.immediate())}), it commits at once, synchronously: the stage is complete when this
     * returns, failed with {@code IllegalStateException} if records before this one are not acknowledged yet (the
     * commit that covers it could only come from this thread, later).
     *
     * @return a stage that completes normally once a commit of this record's assignment covers its offset (so every
     *         record of the partition delivered before it was acknowledged too), or exceptionally
     *         ({@code IllegalStateException}) if the assignment ends first (revoked, lost, or the receiver closed
     *         before such a commit): the record is then delivered again to the partition's next owner. Completed on
     *         the poll thread (or the calling thread if the assignment has ended already): do not block in
     *         dependent actions.
     */
    public CompletionStage<Void> commitAsync() {
        acknowledge();
        final CompletableFuture<Void> done = new CompletableFuture<>();
        owner.awaitCommit(record.offset(), done);
        return done;
    }

    /**
     * As {@link #commitAsync()}, as a {@code Mono} (reactor-core needed on the class path for this method only):
     * acknowledges and asks for the commit when subscribed, completes when the commit covers this record.
     *
     * @return a lazy {@code Mono} that completes empty, or errors as {@link #commitAsync()}'s stage does
     */
    public Mono<Void> commit() {
        return ReactorReceive.commit(this);
    }

    /**
     * {@return {@code true} once the assignment that delivered this record has ended (partition revoked or lost,
     *          or the receiver closed): acknowledging it has no effect, and the record is (or will be) delivered
     *          to the partition's next owner}
     */
    public boolean isRevoked() {
        return owner.isRevoked();
    }

    /**
     * {@return the assignment epoch of this record: it grows with every assignment of a partition to this receiver
     *          (and when the partition's position moves backwards within one), so two records of one partition with
     *          different epochs came from different assignments}
     */
    public long assignmentEpoch() {
        return owner.epoch;
    }

    /** @return the ledger of this record's assignment (the exactly-once face's barrier reads it) */
    PartitionAcks ledger() {
        return owner;
    }

    @Override
    public String toString() {
        return "ReceivedRecord{" + record.topic() + "-" + record.partition() + "@" + record.offset()
                + ", epoch=" + owner.epoch + (owner.isRevoked() ? ", revoked" : "") + "}";
    }
}
