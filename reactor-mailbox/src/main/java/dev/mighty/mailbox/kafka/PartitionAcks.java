package dev.mighty.mailbox.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The acknowledgement ledger of one partition for one assignment (its epoch): the offsets of the records
 * delivered into the mailbox, in delivery order, each with an "acknowledged" flag.
 *
 * <pre>
 *   head chunk                                 tail chunk
 *  +--------------------------------+        +--------------------------------+
 *  | offsets[256]   (poll thread)   | next → | offsets[256]                   |
 *  | acked[256]     (any thread)    |        | acked[256]                     |
 *  +--------------------------------+        +--------------------------------+
 *        ^ headIndex: oldest entry not yet                   ^ tailCount: next free entry
 *          known to be acknowledged
 * </pre>
 *
 * <h2>Threads</h2>
 * The poll thread (the only one that owns the {@code KafkaConsumer}) appends ({@link #deliver}), trims and
 * reads ({@link #commitOffset}, {@link #allAcknowledged}) and revokes. Any thread acknowledges
 * ({@link #acknowledge}), through a {@link ReceivedRecord} it was handed by the mailbox.
 *
 * <h2>Progress</h2>
 * All methods are wait-free. {@link #commitOffset} is amortised O(1) per delivered record: each entry is
 * passed over once by the trimming head.
 *
 * <h2>Visibility</h2>
 * An entry (offset, flag 0) is written before its record is sent into the mailbox, so the acknowledging
 * thread, which got the record from the mailbox, sees the entry's chunk initialised. An acknowledgement is a
 * release store of the entry's flag; the poll thread reads flags with acquire loads (pairs with the
 * {@code setRelease} in {@link #acknowledge}), so a commit that moves past an entry happens-after its
 * acknowledgement.
 *
 * <p>Chunks are never reused: an entry's flag belongs to one record for ever, so a second (idempotent)
 * acknowledgement, or one that comes after the partition was revoked, cannot mark another record.
 */
final class PartitionAcks {
    static final int CHUNK = 256;

    private static final VarHandle FLAG = MethodHandles.arrayElementVarHandle(byte[].class);
    private static final byte ACKED = 1;

    /** One run of entries; the acknowledging side reaches it through {@link ReceivedRecord}. */
    static final class Chunk {
        final long[] offsets = new long[CHUNK];  // poll thread only
        final byte[] acked = new byte[CHUNK];    // release stores by any thread, acquire loads by the poll thread
        Chunk next;                              // poll thread only
    }

    final TopicPartition partition;
    /** The assignment this ledger belongs to: a new one for every assignment of the partition. */
    final long epoch;
    /** Set by the poll thread when the partition is revoked, lost, or the receiver closes; read by any thread. */
    private volatile boolean revoked;

    // poll thread only
    private Chunk head;
    private int headIndex;
    private Chunk tail;
    private int tailCount;
    private long lastDelivered = -1L;
    /** The offset last committed for this assignment, or -1. */
    long committed = -1L;

    PartitionAcks(TopicPartition partition, long epoch) {
        this.partition = partition;
        this.epoch = epoch;
        this.head = this.tail = new Chunk();
    }

    /** Appends {@code record}'s offset, unacknowledged, and wraps the record. Poll thread. */
    <K, V> ReceivedRecord<K, V> deliver(ConsumerRecord<K, V> record) {
        final Chunk chunk = tailForAppend();
        final int index = tailCount++;
        chunk.offsets[index] = record.offset();
        lastDelivered = record.offset();
        return new ReceivedRecord<>(record, this, chunk, index);
    }

    /** Appends {@code offset} as acknowledged: a record that was skipped (it could not be deserialized). Poll thread. */
    void skip(long offset) {
        final Chunk chunk = tailForAppend();
        final int index = tailCount++;
        chunk.offsets[index] = offset;
        FLAG.setRelease(chunk.acked, index, ACKED);
        lastDelivered = offset;
    }

    private Chunk tailForAppend() {
        if (tailCount == CHUNK) {
            final Chunk next = new Chunk();
            tail.next = next;
            tail = next;
            tailCount = 0;
        }
        return tail;
    }

    /** Marks an entry acknowledged. Idempotent; any thread; wait-free. */
    static void acknowledge(Chunk chunk, int index) {
        FLAG.setRelease(chunk.acked, index, ACKED); // pairs with getAcquire in commitOffset()
    }

    /**
     * Trims the acknowledged prefix. Poll thread.
     *
     * @return the offset to commit: that of the oldest delivered entry not yet acknowledged, or one past the last
     *         delivered entry when all are; -1 if nothing was delivered in this assignment
     */
    long commitOffset() {
        Chunk chunk = head;
        int index = headIndex;
        for (;;) {
            final int end = chunk == tail ? tailCount : CHUNK;
            while (index < end && (byte) FLAG.getAcquire(chunk.acked, index) == ACKED) {
                index++;
            }
            if (index < end) {
                head = chunk;
                headIndex = index;
                return chunk.offsets[index];
            }
            if (chunk == tail) {
                head = chunk;
                headIndex = index;
                return lastDelivered < 0 ? -1L : lastDelivered + 1L;
            }
            chunk = chunk.next; // the old head becomes garbage once its records are
            index = 0;
        }
    }

    /** @return whether every delivered entry is acknowledged. Poll thread. */
    boolean allAcknowledged() {
        final long offset = commitOffset();
        return offset < 0 || offset == lastDelivered + 1L;
    }

    /** Poll thread: from now on this ledger's acknowledgements move no committed offset. */
    void revoke() {
        revoked = true;
    }

    boolean isRevoked() {
        return revoked;
    }
}
