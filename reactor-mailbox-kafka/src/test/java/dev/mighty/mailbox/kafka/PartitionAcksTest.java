package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.ref.WeakReference;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The acknowledgement ledger on its own: what may be committed, whatever the order of acknowledgements. */
@Tag("kafka")
@Timeout(30)
class PartitionAcksTest {
    private static final TopicPartition TP = new TopicPartition("t", 0);

    private static ConsumerRecord<String, String> record(long offset) {
        return new ConsumerRecord<>("t", 0, offset, null, "v" + offset);
    }

    private static ConsumerRecord<String, String> record(long offset, int leaderEpoch) {
        return new ConsumerRecord<>("t", 0, offset, 0L, TimestampType.CREATE_TIME, 0, 0, null, "v" + offset,
                new RecordHeaders(), Optional.of(leaderEpoch));
    }

    @Test
    void shouldCommitWithTheLeaderEpochOfTheLastRecordTheCommitCovers() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        final List<ReceivedRecord<String, String>> delivered = new ArrayList<>();
        final long count = 2L * PartitionAcks.CHUNK + 10;
        for (long offset = 0; offset < count; offset++) {
            // a leader change at offset 300: the second chunk holds both epochs
            delivered.add(acks.deliver(record(offset, offset < 300 ? 3 : 4)));
        }
        assertThat(acks.commitOffset()).isZero();
        assertThat(acks.commitEpoch()).as("nothing covered yet").isEmpty();
        delivered.get(0).acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(1L);
        assertThat(acks.commitEpoch()).contains(3);
        for (int i = 1; i < 300; i++) {
            delivered.get(i).acknowledge();
        }
        assertThat(acks.commitOffset()).isEqualTo(300L);
        assertThat(acks.commitEpoch()).as("the epoch of offset 299, not of 300").contains(3);
        delivered.get(300).acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(301L);
        assertThat(acks.commitEpoch()).contains(4);
        delivered.forEach(ReceivedRecord::acknowledge);
        assertThat(acks.commitOffset()).isEqualTo(count);
        assertThat(acks.commitEpoch()).contains(4);
        acks.skip(count); // a poison record: its epoch is not known
        assertThat(acks.commitOffset()).isEqualTo(count + 1);
        assertThat(acks.commitEpoch()).isEmpty();
    }

    @Test
    void shouldCommitTheConsumersPositionPastMarkersOnlyOnceEveryDeliveredRecordIsAcknowledged() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        acks.advanceTo(new OffsetAndMetadata(3L, Optional.of(7), "")); // only markers so far
        assertThat(acks.commitOffset()).isEqualTo(3L);
        assertThat(acks.commitEpoch()).contains(7);
        final ReceivedRecord<String, String> first = acks.deliver(record(3, 7));
        final ReceivedRecord<String, String> second = acks.deliver(record(4, 7));
        acks.advanceTo(new OffsetAndMetadata(6L, Optional.of(8), "")); // a commit marker at 5
        assertThat(acks.commitOffset()).isEqualTo(3L);
        assertThat(acks.allAcknowledged()).isFalse();
        second.acknowledge();
        assertThat(acks.commitOffset()).as("3 still open: the position does not count").isEqualTo(3L);
        first.acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(6L);
        assertThat(acks.commitEpoch()).contains(8);
        assertThat(acks.allAcknowledged()).isTrue();
        final ReceivedRecord<String, String> third = acks.deliver(record(6, 8));
        assertThat(acks.commitOffset()).isEqualTo(6L);
        assertThat(acks.commitEpoch()).contains(8);
        third.acknowledge();
        assertThat(acks.commitOffset()).as("past the last record now").isEqualTo(7L);
    }

    @Test
    void shouldCommitNothingWhenNothingWasDelivered() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        assertThat(acks.commitOffset()).isEqualTo(-1L);
        assertThat(acks.allAcknowledged()).isTrue();
    }

    @Test
    void shouldCommitTheOldestUnacknowledgedOffsetWhenAcksComeOutOfOrder() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        final List<ReceivedRecord<String, String>> delivered = new ArrayList<>();
        for (long offset = 10; offset < 15; offset++) {
            delivered.add(acks.deliver(record(offset)));
        }
        assertThat(acks.commitOffset()).isEqualTo(10L);
        delivered.get(3).acknowledge();
        delivered.get(1).acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(10L); // 10 still open
        delivered.get(0).acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(12L);
        delivered.get(2).acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(14L);
        assertThat(acks.allAcknowledged()).isFalse();
        delivered.get(4).acknowledge();
        delivered.get(4).acknowledge(); // idempotent
        assertThat(acks.commitOffset()).isEqualTo(15L); // one past the last delivered
        assertThat(acks.allAcknowledged()).isTrue();
    }

    @Test
    void shouldCommitPastSkippedRecordsAndGapsInTheOffsets() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        final ReceivedRecord<String, String> first = acks.deliver(record(0));
        acks.skip(1);                                                       // a poison record
        final ReceivedRecord<String, String> third = acks.deliver(record(5)); // a gap (compaction, markers)
        first.acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(5L);
        third.acknowledge();
        assertThat(acks.commitOffset()).isEqualTo(6L);
    }

    @Test
    void shouldNotLetAStaleRecordsAckMoveTheNextAssignmentsOffset() {
        final PartitionAcks first = new PartitionAcks(TP, 1);
        final ReceivedRecord<String, String> stale = first.deliver(record(0));
        first.revoke();
        assertThat(stale.isRevoked()).isTrue();
        final PartitionAcks second = new PartitionAcks(TP, 2); // the partition assigned again, from offset 0
        final ReceivedRecord<String, String> fresh = second.deliver(record(0));
        stale.acknowledge();
        assertThat(second.commitOffset()).as("the stale ack is not the fresh record's").isEqualTo(0L);
        assertThat(fresh.isRevoked()).isFalse();
        assertThat(fresh.assignmentEpoch()).isNotEqualTo(stale.assignmentEpoch());
        fresh.acknowledge();
        assertThat(second.commitOffset()).isEqualTo(1L);
    }

    @Test
    void shouldNeverCommitPastAnUnacknowledgedRecordWhileTwoThreadsAcknowledgeInRandomOrder() throws Exception {
        final int count = 10 * PartitionAcks.CHUNK + 17; // several chunks, the last one partly used
        final Random random = new Random(42);
        for (int round = 0; round < 20; round++) {
            final PartitionAcks acks = new PartitionAcks(TP, round);
            final List<ReceivedRecord<String, String>> delivered = new ArrayList<>();
            for (long offset = 0; offset < count; offset++) {
                delivered.add(acks.deliver(record(offset)));
            }
            final List<ReceivedRecord<String, String>> shuffled = new ArrayList<>(delivered);
            Collections.shuffle(shuffled, random);
            final boolean[] acked = new boolean[count]; // written before each ack, by the acking thread
            final Object lock = new Object();
            final CyclicBarrier start = new CyclicBarrier(3);
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            final List<Thread> ackers = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                final int from = t * count / 2;
                final int to = (t + 1) * count / 2;
                final Thread acker = new Thread(() -> {
                    try {
                        start.await(10, TimeUnit.SECONDS);
                        for (ReceivedRecord<String, String> r : shuffled.subList(from, to)) {
                            synchronized (lock) {
                                acked[(int) r.record().offset()] = true;
                            }
                            r.acknowledge();
                        }
                    } catch (Throwable e) {
                        failure.set(e);
                    }
                });
                acker.start();
                ackers.add(acker);
            }
            start.await(10, TimeUnit.SECONDS);
            long previous = 0;
            while (previous < count) {
                final long offset = acks.commitOffset(); // the poll thread's view, raced with the acks
                assertThat(offset).isGreaterThanOrEqualTo(previous);
                synchronized (lock) {
                    for (long o = previous; o < offset; o++) {
                        assertThat(acked[(int) o]).as("committed past %s, which was not acknowledged", o).isTrue();
                    }
                }
                previous = offset;
                if (failure.get() != null) {
                    break;
                }
            }
            for (Thread acker : ackers) {
                acker.join(10_000);
            }
            assertThat(failure.get()).isNull();
            assertThat(acks.commitOffset()).isEqualTo(count);
        }
    }

    /** The bound of {@code maxUnacknowledged} is the open span: one record never acknowledged keeps it growing. */
    @Test
    void shouldMeasureTheOpenSpanFromTheOldestUnacknowledgedRecordWhateverIsAcknowledgedAfterIt() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        assertThat(acks.openSpan()).isZero();
        final List<ReceivedRecord<String, String>> delivered = new ArrayList<>();
        for (long offset = 0; offset < 3 * PartitionAcks.CHUNK; offset++) {
            delivered.add(acks.deliver(record(offset)));
        }
        final int all = delivered.size();
        assertThat(acks.openSpan()).isEqualTo(all);
        // acknowledge every record but the first: one open record, the span stays whole (N1: it used to count 1)
        for (int i = 1; i < all; i++) {
            delivered.get(i).acknowledge();
        }
        assertThat(acks.unacknowledged()).isEqualTo(1);
        assertThat(acks.openSpan()).isEqualTo(all);
        for (long offset = all; offset < all + 50; offset++) {
            delivered.add(acks.deliver(record(offset)));
        }
        assertThat(acks.openSpan()).isEqualTo(all + 50);
        delivered.get(0).acknowledge(); // the head moves past everything acknowledged behind it
        assertThat(acks.openSpan()).isEqualTo(50);
        assertThat(acks.unacknowledged()).isEqualTo(50);
        delivered.subList(all, all + 50).forEach(ReceivedRecord::acknowledge);
        assertThat(acks.openSpan()).isZero();
        assertThat(acks.oldestUnacknowledgedNanos(System.nanoTime())).isZero();
    }

    @Test
    void shouldCountTheUnacknowledgedExactlyForTheStatsWhenAcksComeOutOfOrder() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        assertThat(acks.unacknowledged()).isZero();
        final List<ReceivedRecord<String, String>> delivered = new ArrayList<>();
        for (long offset = 0; offset < 3 * PartitionAcks.CHUNK + 7; offset++) {
            delivered.add(acks.deliver(record(offset)));
        }
        final int all = delivered.size();
        assertThat(acks.unacknowledged()).isEqualTo(all);
        for (int i = 1; i < all; i += 2) { // every odd one: the open span stays whole
            delivered.get(i).acknowledge();
        }
        assertThat(acks.unacknowledged()).isEqualTo((all + 1) / 2);
        assertThat(acks.openSpan()).as("the bound check's O(1) figure: the open span").isEqualTo(all);
        delivered.get(0).acknowledge(); // the head moves past 0 and 1
        delivered.get(0).acknowledge(); // idempotent
        assertThat(acks.unacknowledged()).isEqualTo((all + 1) / 2 - 1);
        for (int i = 0; i < all; i += 2) {
            delivered.get(i).acknowledge();
        }
        assertThat(acks.unacknowledged()).isZero();
        assertThat(acks.commitOffset()).isEqualTo(all);
    }

    @Test
    void shouldReportTheOldestUnacknowledgedAgeUntilItIsAcknowledged() throws Exception {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        assertThat(acks.oldestUnacknowledgedNanos(System.nanoTime())).isZero();
        final ReceivedRecord<String, String> first = acks.deliver(record(0));
        TimeUnit.MILLISECONDS.sleep(5);
        assertThat(acks.oldestUnacknowledgedNanos(System.nanoTime())).isPositive();
        first.acknowledge();
        assertThat(acks.oldestUnacknowledgedNanos(System.nanoTime())).isZero();
    }

    @Test
    void shouldNotPinLaterChunksWhenTheApplicationKeepsOneRecord() throws Exception {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        final ReceivedRecord<String, String> kept = acks.deliver(record(0));
        kept.acknowledge();
        WeakReference<PartitionAcks.Chunk> second = null;
        for (long offset = 1; offset < 3 * PartitionAcks.CHUNK; offset++) {
            final ReceivedRecord<String, String> r = acks.deliver(record(offset));
            if (offset == PartitionAcks.CHUNK) {
                second = new WeakReference<>(chunkOf(r));
            }
            r.acknowledge();
        }
        assertThat(acks.commitOffset()).isEqualTo(3L * PartitionAcks.CHUNK); // the head is past the first two
        assertThat(chunkOf(kept).next).as("the kept record's chunk is unlinked").isNull();
        for (int i = 0; i < 50 && second.get() != null; i++) {
            System.gc();
            TimeUnit.MILLISECONDS.sleep(10);
        }
        assertThat(second.get()).as("the second chunk, reachable only through the kept record's chunk before")
                .isNull();
        assertThat(kept.offset()).isZero();
    }

    @Test
    void shouldUnlinkEveryChunkAndFailTheCommitWaitersWhenRevoked() {
        final PartitionAcks acks = new PartitionAcks(TP, 1);
        final ReceivedRecord<String, String> first = acks.deliver(record(0));
        for (long offset = 1; offset < 2 * PartitionAcks.CHUNK; offset++) {
            acks.deliver(record(offset));
        }
        final CompletableFuture<Void> covered = new CompletableFuture<>();
        final CompletableFuture<Void> open = new CompletableFuture<>();
        acks.awaitCommit(0, covered);
        acks.awaitCommit(5, open);
        acks.committed(1);
        assertThat(covered).isCompleted();
        assertThat(open).isNotDone();
        acks.revoke();
        assertThat(open).isCompletedExceptionally();
        assertThat(chunkOf(first).next).isNull();
        final CompletableFuture<Void> late = new CompletableFuture<>();
        acks.awaitCommit(7, late);
        assertThat(late).as("a waiter after the revocation fails at once").isCompletedExceptionally();
    }

    private static PartitionAcks.Chunk chunkOf(ReceivedRecord<?, ?> r) {
        try {
            final Field field = ReceivedRecord.class.getDeclaredField("chunk");
            field.setAccessible(true);
            return (PartitionAcks.Chunk) field.get(r);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }
}
