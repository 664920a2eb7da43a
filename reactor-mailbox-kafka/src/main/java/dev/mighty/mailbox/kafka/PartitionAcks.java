package dev.mighty.mailbox.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
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
 * acknowledgement, or one that comes after the partition was revoked, cannot mark another record. A chunk the head
 * has passed is unlinked from the next one, and a revoked ledger unlinks them all, so a {@link ReceivedRecord} the
 * application keeps pins its own chunk (2.3 KB) and nothing after it.
 *
 * <p>Commit waiters ({@link #awaitCommit}) are queued by any thread and completed by the poll thread once a commit
 * covers their offset ({@link #committed(long)}), or failed when the ledger is revoked.
 */
final class PartitionAcks extends PartitionAcksPad {
    static final int CHUNK = 256;

    private static final VarHandle FLAG = MethodHandles.arrayElementVarHandle(byte[].class);
    private static final byte ACKED = 1;

    /** A leader epoch that is not known (a record without one, a skipped record). */
    static final int NO_EPOCH = -1;

    /** One run of entries; the acknowledging side reaches it through {@link ReceivedRecord}. */
    static final class Chunk {
        final long[] offsets = new long[CHUNK];  // poll thread only
        final byte[] acked = new byte[CHUNK];    // release stores by any thread, acquire loads by the poll thread
        Chunk next;                              // poll thread only; cleared once the head passed this chunk
        /** The leader epoch of every entry while they all share one (the usual case); poll thread only. */
        int epoch = NO_EPOCH;
        /** Per entry, once an entry's leader epoch differs from {@link #epoch} (a leader change); poll thread only. */
        int[] epochs;

        void epoch(int index, int leaderEpoch) {
            if (epochs != null) {
                epochs[index] = leaderEpoch;
            } else if (index == 0) {
                epoch = leaderEpoch;
            } else if (leaderEpoch != epoch) {
                epochs = new int[CHUNK];
                Arrays.fill(epochs, 0, index, epoch);
                epochs[index] = leaderEpoch;
            }
        }

        int epochAt(int index) {
            return epochs == null ? epoch : epochs[index];
        }
    }

    // poll thread only; behind PartitionAcksPad, away from the fields other threads read per record
    private Chunk head;
    private int headIndex;
    private Chunk tail;
    private int tailCount;
    private long lastDelivered = -1L;
    /** Entries appended, and entries the head has passed (all acknowledged): their difference is the open span. */
    private long appended;
    private long trimmed;
    /** {@code System.nanoTime()} when the current head entry became the oldest unacknowledged one. */
    private long headSince;
    /** The leader epoch of the last entry the head passed (the record before the commit offset), or NO_EPOCH. */
    private int passedEpoch = NO_EPOCH;
    /** The offset of that entry, or -1. */
    private long passedOffset = -1L;
    /** The leader epoch that goes with the offset {@link #commitOffset()} returned last. */
    private int pointEpoch = NO_EPOCH;
    /** The consumer's position past the delivered records ({@link #advanceTo}), or -1; and its leader epoch. */
    private long endOffset = -1L;
    private int endEpoch = NO_EPOCH;
    /** The offset last committed for this assignment, or -1. */
    long committed = -1L;

    PartitionAcks(TopicPartition partition, long epoch) {
        this(partition, epoch, (ledger, done) -> { });
    }

    /** How a queued commit waiter asks the receiver for a commit. */
    @FunctionalInterface
    interface CommitRequests {
        /**
         * A waiter ({@code done}) was queued on {@code ledger}: commit soon. Any thread (the acknowledging one).
         */
        void commitSoon(PartitionAcks ledger, CompletableFuture<Void> done);
    }

    PartitionAcks(TopicPartition partition, long epoch, CommitRequests commitRequest) {
        super(partition, epoch, commitRequest);
        this.head = this.tail = new Chunk();
    }

    /** Appends {@code record}'s offset, unacknowledged, and wraps the record. Poll thread. */
    <K, V> ReceivedRecord<K, V> deliver(ConsumerRecord<K, V> record) {
        final Chunk chunk = tailForAppend();
        final int index = tailCount++;
        chunk.offsets[index] = record.offset();
        chunk.epoch(index, record.leaderEpoch().orElse(NO_EPOCH));
        lastDelivered = record.offset();
        if (appended++ == trimmed) {
            headSince = System.nanoTime(); // the first open entry: it is the oldest now
        }
        return new ReceivedRecord<>(record, this, chunk, index);
    }

    /** @return the offset of the last entry appended, or -1. Poll thread. */
    long lastDelivered() {
        return lastDelivered;
    }

    /** Appends {@code offset} as acknowledged: a record that was skipped (it could not be deserialized). Poll thread. */
    void skip(long offset) {
        final Chunk chunk = tailForAppend();
        final int index = tailCount++;
        chunk.offsets[index] = offset;
        chunk.epoch(index, NO_EPOCH); // not known: a commit past it carries none
        FLAG.setRelease(chunk.acked, index, ACKED);
        lastDelivered = offset;
        appended++;
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
    void acknowledge(Chunk chunk, int index) {
        final Thread current = Thread.currentThread();
        if (lastAcknowledger != current) { // NOTE: racy by design: close() only uses it as a hint
            lastAcknowledger = current;
        }
        FLAG.setRelease(chunk.acked, index, ACKED); // pairs with getAcquire in commitOffset()
    }

    /**
     * Acknowledges the oldest unacknowledged entry on the application's behalf (its age passed
     * {@code maxUnacknowledgedAge} and a handler took it over). Poll thread.
     *
     * @return its offset, or -1 if every entry is acknowledged
     */
    long acknowledgeOldest() {
        final long offset = commitOffset(); // trims: head/headIndex is the oldest unacknowledged entry, if any
        if (appended == trimmed) {
            return -1L;
        }
        FLAG.setRelease(head.acked, headIndex, ACKED);
        return offset;
    }

    /** @return the thread that acknowledged last, or null: a hint for close(). Any thread. */
    Thread lastAcknowledger() {
        return lastAcknowledger;
    }

    /**
     * Queues {@code done} to complete once a commit of this assignment covers {@code offset} (is past it), and asks
     * the poll thread for a commit soon. Any thread.
     */
    void awaitCommit(long offset, CompletableFuture<Void> done) {
        commitWaiters.add(new CommitWaiter(offset, done));
        if (revoked) {
            failWaiters(); // NOTE: raced the poll thread's revoke(): whoever drains first fails it; completion is once
        } else {
            commitRequest.commitSoon(this, done);
        }
    }

    /** The poll thread committed {@code offset} for this assignment: completes the waiters it covers. */
    void committed(long offset) {
        this.committed = offset;
        if (commitWaiters.isEmpty()) {
            return;
        }
        for (Iterator<CommitWaiter> it = commitWaiters.iterator(); it.hasNext(); ) {
            final CommitWaiter waiter = it.next();
            if (waiter.offset < offset) {
                it.remove();
                waiter.done.complete(null);
            }
        }
    }

    /**
     * Completes the waiters that the last commit already covers: a waiter queued after that commit (a record
     * acknowledged, covered by a periodic commit, then asked to commit) would otherwise wait for a commit that never
     * comes, the offset having nothing left to move. Poll thread, before each commit turn.
     */
    void completeCovered() {
        if (!commitWaiters.isEmpty() && committed >= 0) {
            committed(committed);
        }
    }

    private void failWaiters() {
        CommitWaiter waiter;
        while ((waiter = commitWaiters.poll()) != null) {
            waiter.done.completeExceptionally(new IllegalStateException("partition " + partition
                    + " revoked before a commit covered offset " + waiter.offset + " (it is delivered again to the"
                    + " partition's next owner)"));
        }
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
        long position = trimmed;
        for (;;) {
            final int end = chunk == tail ? tailCount : CHUNK;
            final int from = index;
            while (index < end && (byte) FLAG.getAcquire(chunk.acked, index) == ACKED) {
                index++;
                position++;
            }
            if (index > from) {
                passedEpoch = chunk.epochAt(index - 1);
                passedOffset = chunk.offsets[index - 1];
            }
            if (index < end || chunk == tail) {
                if (position != trimmed) {
                    headSince = System.nanoTime(); // a new oldest unacknowledged entry (if any)
                    trimmed = position;
                }
                head = chunk;
                headIndex = index;
                if (index < end) {
                    final long offset = chunk.offsets[index];
                    // the position passed offsets with no record before this one (markers): the offset before it
                    // is a marker, whose epoch is the position's
                    pointEpoch = endOffset > passedOffset && endOffset <= offset ? endEpoch : passedEpoch;
                    return offset;
                }
                final long past = lastDelivered < 0 ? -1L : lastDelivered + 1L;
                if (endOffset > past) {
                    pointEpoch = endEpoch; // the consumer's position is past offsets that hold no record for us
                    return endOffset;
                }
                pointEpoch = passedEpoch;
                return past;
            }
            final Chunk passed = chunk;
            chunk = chunk.next;
            passed.next = null; // a record retained from the passed chunk must not pin the later ones
            index = 0;
        }
    }

    /**
     * @return the leader epoch to commit with the offset {@link #commitOffset()} returned last: that of the record
     *         before it (the last one the commit covers, as {@code KafkaConsumer}'s own commits carry the epoch of
     *         the last consumed record; or the position's epoch, see {@link #advanceTo}), or empty if not known (nothing acknowledged yet in this assignment, a
     *         record without an epoch, a skipped record). Call after {@code commitOffset()}. Poll thread.
     */
    Optional<Integer> commitEpoch() {
        return pointEpoch == NO_EPOCH ? Optional.empty() : Optional.of(pointEpoch);
    }

    /**
     * @return the open span: the entries from the oldest unacknowledged one to the newest, acknowledged or not (0
     *         when all are acknowledged); trims first. Amortised O(1). Poll thread.
     */
    long openSpan() {
        commitOffset();
        return appended - trimmed;
    }

    /**
     * @return how many delivered entries are not acknowledged, exactly (as of each flag's acquire load); trims
     *         first, then scans the open span (oldest unacknowledged entry to newest), one flag per entry. For the
     *         receiver's statistics, at most every 100 ms. Poll thread.
     */
    long unacknowledged() {
        commitOffset();
        if (appended == trimmed) {
            return 0L;
        }
        long open = 0L;
        Chunk chunk = head;
        int index = headIndex;
        while (chunk != null) {
            final int end = chunk == tail ? tailCount : CHUNK;
            for (; index < end; index++) {
                if ((byte) FLAG.getAcquire(chunk.acked, index) != ACKED) {
                    open++;
                }
            }
            chunk = chunk == tail ? null : chunk.next;
            index = 0;
        }
        return open;
    }

    /**
     * @return nanoseconds the oldest unacknowledged entry has been the oldest (at most since its delivery), or 0
     *         when all are acknowledged. Poll thread.
     */
    long oldestUnacknowledgedNanos(long now) {
        commitOffset();
        return appended == trimmed ? 0L : now - headSince;
    }

    /** @return whether every delivered entry is acknowledged. Poll thread. */
    boolean allAcknowledged() {
        commitOffset();
        return appended == trimmed;
    }

    /**
     * The consumer's position moved to {@code next} (from {@code ConsumerRecords.nextOffsets()}) once every record
     * it returned for this partition up to there is in this ledger: the offsets between the last delivered record
     * and {@code next} hold no record for this consumer (transaction markers, aborted records under
     * {@code read_committed}, compacted records). Once every entry is acknowledged, the commit point is
     * {@code next}, as {@code KafkaConsumer}'s own commit of its position would be, so the group's lag reaches 0
     * on a transactional topic. Poll thread.
     */
    void advanceTo(OffsetAndMetadata next) {
        if (next.offset() > endOffset) {
            endOffset = next.offset();
            endEpoch = next.leaderEpoch().orElse(NO_EPOCH);
        }
    }

    /** Poll thread: from now on this ledger's acknowledgements move no committed offset. */
    void revoke() {
        revoked = true;
        failWaiters();
        // unlink every chunk: records the application keeps pin only their own (and this ledger's tail)
        Chunk chunk = head;
        while (chunk != null) {
            final Chunk next = chunk.next;
            chunk.next = null;
            chunk = next;
        }
        head = tail;
        headIndex = tailCount;
        trimmed = appended;
    }

    boolean isRevoked() {
        return revoked;
    }

    static final class CommitWaiter {
        final long offset;
        final CompletableFuture<Void> done;

        CommitWaiter(long offset, CompletableFuture<Void> done) {
            this.offset = offset;
            this.done = done;
        }
    }
}

/**
 * The fields of {@link PartitionAcks} that threads other than the poll thread read for every record: the delivering
 * thread reads {@code revoked} ({@code receive()} skips revoked records) and {@code lastAcknowledger} (written only
 * when it changes) on each acknowledgement. They are read-mostly, and they sit on their own cache lines (see
 * {@link PartitionAcksPad}): next to the poll thread's per-record counters, each of those reads missed, and took the
 * line from the poll thread's next append.
 */
abstract class PartitionAcksFields {
    final TopicPartition partition;
    /** The assignment this ledger belongs to: a new one for every assignment of the partition. */
    final long epoch;
    /** Run (any thread) when a record asks for a commit; wakes the poll thread's next commit. */
    final PartitionAcks.CommitRequests commitRequest;
    /** Offsets waiting for a commit past them, with what to complete: any thread adds, the poll thread completes. */
    final ConcurrentLinkedQueue<PartitionAcks.CommitWaiter> commitWaiters = new ConcurrentLinkedQueue<>();
    /** Set by the poll thread when the partition is revoked, lost, or the receiver closes; read by any thread. */
    volatile boolean revoked;
    /** The thread that acknowledged last (written only when it changes): close() reads it. */
    volatile Thread lastAcknowledger;

    PartitionAcksFields(TopicPartition partition, long epoch, PartitionAcks.CommitRequests commitRequest) {
        this.partition = partition;
        this.epoch = epoch;
        this.commitRequest = commitRequest;
    }
}

/**
 * 128 bytes between {@link PartitionAcksFields} and the poll thread's fields of {@link PartitionAcks}: HotSpot lays
 * a superclass's fields out before its subclass's, so no cache line (nor the pair an adjacent-line prefetcher moves)
 * holds both (JCTools pads its queues the same way).
 */
abstract class PartitionAcksPad extends PartitionAcksFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007, b010, b011, b012, b013, b014, b015, b016, b017;
    byte b020, b021, b022, b023, b024, b025, b026, b027, b030, b031, b032, b033, b034, b035, b036, b037;
    byte b040, b041, b042, b043, b044, b045, b046, b047, b050, b051, b052, b053, b054, b055, b056, b057;
    byte b060, b061, b062, b063, b064, b065, b066, b067, b070, b071, b072, b073, b074, b075, b076, b077;
    byte b100, b101, b102, b103, b104, b105, b106, b107, b110, b111, b112, b113, b114, b115, b116, b117;
    byte b120, b121, b122, b123, b124, b125, b126, b127, b130, b131, b132, b133, b134, b135, b136, b137;
    byte b140, b141, b142, b143, b144, b145, b146, b147, b150, b151, b152, b153, b154, b155, b156, b157;
    byte b160, b161, b162, b163, b164, b165, b166, b167, b170, b171, b172, b173, b174, b175, b176, b177;

    PartitionAcksPad(TopicPartition partition, long epoch, PartitionAcks.CommitRequests commitRequest) {
        super(partition, epoch, commitRequest);
    }
}
