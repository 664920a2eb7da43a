package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;

import dev.mighty.mailbox.internal.MailboxEvents;
import org.apache.kafka.common.TopicPartition;

/**
 * The receiver's ledgers, one {@link PartitionAcks} per assigned partition and epoch, and their bounds: the open span
 * of a partition ({@code maxUnacknowledged}, N1), the warning and JFR event of a long-open oldest record, and the
 * figures of {@link KafkaReceiverStats} read from them.
 * <p>Threads: the poll thread only, except {@link #oldestUnacknowledgedNanos} and {@link #partitionsAtBound}
 * (volatile, written by the poll thread, read by any) and {@link #longOpenNanos} (tests may write it). The ledgers'
 * acknowledgement flags are written by any thread: see {@link PartitionAcks}.
 */
final class Ledgers {
    /**
     * How long a partition's oldest unacknowledged record stays open before a warning and an
     * {@link UnacknowledgedRecordEvent} (the default of {@link #longOpenNanos}).
     */
    static final long LONG_OPEN_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** The least time between two refreshes of the stats snapshot's ledger figures. */
    static final long STATS_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** The least time between two refreshes of the snapshot's lag (read from the consumer's fetch metrics). */
    static final long LAG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long ACK_WAIT_STEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());

    private final org.apache.kafka.clients.consumer.Consumer<?, ?> consumer;
    private final String label;
    private final String groupId;
    private final int maxUnacknowledged;
    private final long maxAgeNanos;
    private final BiConsumer<? super TopicPartition, ? super Long> onOverdue;
    private final PartitionAcks.CommitRequests commitRequests;
    private final ReceiverStatsCell stats;
    private final Map<TopicPartition, PartitionAcks> ledgers = new HashMap<>();
    /** Partitions paused because their open span reached {@code maxUnacknowledged}. */
    private final Set<TopicPartition> atBound = new HashSet<>();
    /** Partitions warned about (a long-open oldest record), until they recover. */
    private final Set<TopicPartition> warned = new HashSet<>();
    private long epochs;
    private long lastStatsRefresh;
    private long lastLagRefresh;
    /** The lag of the last refresh, -1 if not known. */
    private long lag = -1L;
    /** The age of the oldest unacknowledged record over all partitions, in nanos; written by the poll thread. */
    private volatile long oldestUnacknowledgedNanos;
    /** How many partitions are paused at maxUnacknowledged; written by the poll thread. */
    private volatile int partitionsAtBound;
    /**
     * {@link #LONG_OPEN_NANOS}, unless a test changes it: not API, no builder knob. Volatile so that a test may
     * change it while the receiver runs; read once per {@link #checkBounds}.
     */
    volatile long longOpenNanos = LONG_OPEN_NANOS;

    Ledgers(org.apache.kafka.clients.consumer.Consumer<?, ?> consumer, ReceiverSettings<?, ?> settings,
            PartitionAcks.CommitRequests commitRequests, ReceiverStatsCell stats) {
        this.consumer = consumer;
        this.label = settings.label;
        this.groupId = settings.groupId;
        this.maxUnacknowledged = settings.maxUnacknowledged;
        this.maxAgeNanos = settings.maxUnacknowledgedAgeNanos;
        this.onOverdue = settings.onOverdue;
        this.commitRequests = commitRequests;
        this.stats = stats;
    }

    /** Poll thread, before the first turn: the first {@link #checkBounds} refreshes every figure. */
    void start(long now) {
        lastStatsRefresh = lastLagRefresh = now - LAG_INTERVAL_NANOS;
    }

    PartitionAcks get(TopicPartition partition) {
        return ledgers.get(partition);
    }

    /** @return the current ledgers (a live view: copy it before a call that may rebalance) */
    Collection<PartitionAcks> all() {
        return ledgers.values();
    }

    /** @return the partitions paused at their bound (the room pause's resume leaves them paused) */
    Set<TopicPartition> atBound() {
        return atBound;
    }

    /** Makes the ledger of a new epoch of {@code partition}; the old one, if any, is revoked. */
    PartitionAcks newLedger(TopicPartition partition) {
        final PartitionAcks ledger = new PartitionAcks(partition, ++epochs, commitRequests);
        final PartitionAcks previous = ledgers.put(partition, ledger);
        if (previous != null) {
            previous.revoke();
        }
        return ledger;
    }

    /** The assignment of {@code partitions} ended (revoked or lost): their ledgers are revoked and dropped. */
    void endAssignment(Collection<TopicPartition> partitions) {
        for (TopicPartition partition : partitions) {
            atBound.remove(partition);
            warned.remove(partition);
            final PartitionAcks ledger = ledgers.remove(partition);
            if (ledger != null) {
                ledger.revoke();
            }
        }
    }

    /** At the finish: every ledger revoked and dropped, the figures zero. */
    void revokeAll() {
        for (PartitionAcks ledger : ledgers.values()) {
            ledger.revoke();
        }
        ledgers.clear();
        atBound.clear();
        oldestUnacknowledgedNanos = 0L;
        partitionsAtBound = 0;
    }

    long oldestUnacknowledgedNanos() {
        return oldestUnacknowledgedNanos;
    }

    int partitionsAtBound() {
        return partitionsAtBound;
    }

    /**
     * Pauses the partitions whose open span reached {@code maxUnacknowledged}, resumes those back under it (unless all
     * are paused for room), publishes the oldest-unacknowledged age, and refreshes the stats snapshot when it is due.
     * Poll thread, before each poll: a partition under the bound gets at most one poll's records more.
     *
     * @param paused whether every partition is paused for room
     */
    void checkBounds(boolean paused) {
        final long now = System.nanoTime();
        final boolean refresh = now - lastStatsRefresh >= STATS_INTERVAL_NANOS;
        final long longOpen = longOpenNanos;
        long oldest = 0L;
        long open = 0L;
        List<TopicPartition> toPause = null;
        List<TopicPartition> toResume = null;
        for (PartitionAcks ledger : ledgers.values()) {
            final TopicPartition partition = ledger.partition;
            if (refresh) {
                // exact, a scan of the open span, which the bound below keeps to maxUnacknowledged plus one poll
                open += ledger.unacknowledged();
            }
            // N1: the open span (oldest unacknowledged to newest), O(1): not the count of unacknowledged records,
            // which one record dropped without an ack among acknowledged ones never brings to the bound
            final boolean over = ledger.openSpan() >= maxUnacknowledged;
            if (over && atBound.add(partition)) {
                (toPause == null ? toPause = new ArrayList<>() : toPause).add(partition);
            } else if (!over && atBound.remove(partition)) {
                (toResume == null ? toResume = new ArrayList<>() : toResume).add(partition);
            }
            long age = ledger.oldestUnacknowledgedNanos(now);
            if (age >= maxAgeNanos) {
                age = overdue(ledger, age, now);
            }
            oldest = Math.max(oldest, age);
            if (age >= longOpen) {
                if (warned.add(partition)) {
                    warnLongOpen(ledger, age, over);
                }
            } else if (age == 0L) {
                warned.remove(partition);
            }
        }
        if (toPause != null) {
            consumer.pause(toPause);
            LOG.log(Level.DEBUG, "receiver {0}: paused at maxUnacknowledged={1}: {2}", label, maxUnacknowledged,
                    toPause);
        }
        if (toResume != null && !paused) {
            consumer.resume(toResume); // while paused for room, the room's resume resumes them
        }
        oldestUnacknowledgedNanos = oldest;
        partitionsAtBound = atBound.size();
        if (refresh) {
            lastStatsRefresh = now;
            if (now - lastLagRefresh >= LAG_INTERVAL_NANOS) {
                lastLagRefresh = now;
                lag = ReceiverStatsCell.lag(consumer, ledgers.keySet());
            }
            final int assigned = ledgers.size();
            stats.refresh(assigned, paused ? assigned : atBound.size(), atBound.size(), open, oldest, lag);
        }
    }

    /**
     * N1's escalation: the partition's oldest unacknowledged record passed {@code maxUnacknowledgedAge}. Without a
     * handler that is fatal (the receiver ends with {@link UnacknowledgedRecordException}, committing what is
     * acknowledged, so the record goes to the partition's next owner); with one, the handler is told and the record
     * counts as acknowledged, so the partition moves on.
     *
     * @return the partition's oldest-unacknowledged age after the escalation
     */
    private long overdue(PartitionAcks ledger, long age, long now) {
        if (onOverdue == null) {
            throw new UnacknowledgedRecordException(ledger.partition, ledger.commitOffset(),
                    Duration.ofNanos(age), Duration.ofNanos(maxAgeNanos));
        }
        final long offset = ledger.acknowledgeOldest();
        LOG.log(Level.WARNING, "receiver {0}: partition {1}: the record at offset {2} was not acknowledged within {3}"
                + " ms; acknowledged on the application''s behalf (maxUnacknowledgedAge handler)", label,
                ledger.partition, offset, TimeUnit.NANOSECONDS.toMillis(maxAgeNanos));
        onOverdue.accept(ledger.partition, offset);
        return ledger.oldestUnacknowledgedNanos(now);
    }

    private void warnLongOpen(PartitionAcks ledger, long age, boolean over) {
        final long offset = ledger.commitOffset();
        LOG.log(Level.WARNING, "receiver {0}: partition {1}: the oldest unacknowledged record (offset {2}) has been"
                + " open for {3} s{4}; its committed offset cannot move past it", label, ledger.partition, offset,
                TimeUnit.NANOSECONDS.toSeconds(age),
                over ? ", and the partition is paused at maxUnacknowledged=" + maxUnacknowledged : "");
        if (MailboxEvents.enabled()) {
            recordUnacknowledged(ledger, offset, age, over);
        }
    }

    /**
     * The {@link UnacknowledgedRecordEvent} of the warning just logged, through {@link KafkaJfr} (so that this class
     * names no {@code jdk.jfr} type). A JFR call that throws switches this library's events off for good
     * ({@link MailboxEvents#recordingFailed()}): observability never fails the poll loop.
     */
    private void recordUnacknowledged(PartitionAcks ledger, long offset, long age, boolean atBound) {
        try {
            KafkaJfr.unacknowledgedRecord(groupId, ledger, offset, age, atBound);
        } catch (RuntimeException | LinkageError e) {
            MailboxEvents.recordingFailed();
        }
    }

    /** Waits until every ledger in {@code which} is acknowledged, or the deadline. Poll thread. */
    static void awaitAcknowledged(Collection<PartitionAcks> which, long deadline) {
        for (;;) {
            boolean all = true;
            for (PartitionAcks ledger : which) {
                if (!ledger.allAcknowledged()) {
                    all = false;
                    break;
                }
            }
            if (all || System.nanoTime() - deadline >= 0) {
                return;
            }
            LockSupport.parkNanos(Ledgers.class, ACK_WAIT_STEP_NANOS);
        }
    }

    /**
     * The close's wait for acknowledgements (N7): only for the records handed out (taken from the mailbox), not for
     * those still in it, which nobody may take any more. Poll thread.
     * <p>NOTE: it parks between its looks and does not poll. A poll here would let a rebalance begin in the middle
     * of the close; the final commit then fails with {@code RebalanceInProgressException} and the records
     * acknowledged meanwhile go again to the next owner (seen once in {@code KafkaRebalanceProtocolsTest} under
     * {@code CooperativeStickyAssignor}). The wait is bounded by the close's acknowledgement deadline.
     *
     * @param inMailbox how many records are still in the mailbox (delivered into the ledgers, not handed out)
     */
    void awaitHandedOutAcknowledged(long deadline, LongSupplier inMailbox) {
        for (;;) {
            long open = 0L;
            for (PartitionAcks ledger : ledgers.values()) {
                open += ledger.unacknowledged();
            }
            if (open <= inMailbox.getAsLong() || System.nanoTime() - deadline >= 0) {
                return;
            }
            LockSupport.parkNanos(this, ACK_WAIT_STEP_NANOS);
        }
    }

    /**
     * @return whether {@code closer} acknowledged records of a ledger that is still open: the acknowledgements it
     *         would make cannot come while it waits for the close
     */
    boolean acknowledgedBy(Thread closer) {
        if (closer == null) {
            return false;
        }
        for (PartitionAcks ledger : ledgers.values()) {
            if (ledger.lastAcknowledger() == closer && !ledger.allAcknowledged()) {
                return true;
            }
        }
        return false;
    }
}
