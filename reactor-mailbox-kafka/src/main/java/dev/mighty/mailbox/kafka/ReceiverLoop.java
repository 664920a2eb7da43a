package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxRing;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The receiver's poll thread: the loop that polls when {@link Admission} holds room for a poll, hands the records to
 * their {@link Ledgers ledger} and into the mailbox, lets the {@link Committer} commit, and the finish that ends it
 * all (the close's wait for acknowledgements, the final commit, the consumer's close, the mailbox's close). It owns
 * the {@code KafkaConsumer}: every call on it is made here, or by the parts it calls, on this one thread.
 * <p>Threads: {@link #run()} is the poll thread; {@link #start()} and {@link #stop} any thread (through
 * {@link ReceiverLifecycle}'s CASes). Progress: the poll thread blocks only in consumer calls, in bounded waits for
 * acknowledgements (revocation, close), and parked while the mailbox has no room for a poll. Visibility: what the
 * poll thread did before sending a record happens-before the consumer's receipt of it (the mailbox's guarantee).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class ReceiverLoop<K, V> {
    /** The timeout of a liveness poll made while every partition is paused. */
    private static final Duration PAUSED_POLL = Duration.ofMillis(10);
    private static final long FINISH_FLOOR_MILLIS = 500;
    /** The least time a close gives its final commit and the consumer's close, whatever its timeout. */
    static final Duration FINISH_FLOOR = Duration.ofMillis(FINISH_FLOOR_MILLIS);
    /** The budget of the final commit and the consumer's close after a fatal error. */
    static final Duration FATAL_FINISH = Duration.ofSeconds(5);
    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());

    final ReceiverSettings<K, V> settings;
    final org.apache.kafka.clients.consumer.Consumer<K, V> consumer;
    final Mailbox<ReceivedRecord<K, V>> mailbox;
    private final MailboxRing<ReceivedRecord<K, V>> ring;
    final ReceiverLifecycle lifecycle = new ReceiverLifecycle();
    final Thread pollThread;
    final Admission<ReceivedRecord<K, V>> admission;
    final ReceiverStatsCell stats;
    final Committer<K, V> committer;
    final Ledgers ledgers;
    final ConsumerTasks<org.apache.kafka.clients.consumer.Consumer<K, V>> tasks;
    private final DeferredFailure callbackFailure = new DeferredFailure();
    private final RebalanceHandler<K, V> rebalance;
    // ---- poll thread only
    private final ArrayDeque<PendingRun<K, V>> pending = new ArrayDeque<>();
    private final ArrayList<ReceivedRecord<K, V>> batch;
    private long lastPoll;
    /** When the current run of failing polls (authorization errors) began, or 0. */
    private long pollFailingSince;

    ReceiverLoop(ReceiverSettings<K, V> settings) {
        this.settings = settings;
        this.mailbox = Mailboxes.<ReceivedRecord<K, V>>builder().capacity(settings.capacity)
                .name("kafka-receiver-" + String.join(",", settings.topics)).build();
        this.ring = MailboxRing.of(mailbox);
        this.batch = new ArrayList<>(settings.pollThreshold);
        this.stats = new ReceiverStatsCell(settings.groupId, settings.topicsLabel);
        this.consumer = settings.newConsumer();
        this.pollThread = settings.newPollThread(this::run);
        this.admission = new Admission<>(ring, lifecycle, settings.pollThreshold, pollThread);
        this.committer = new Committer<>(consumer, settings.label, settings.commitIntervalNanos, pollThread,
                callbackFailure, stats);
        this.ledgers = new Ledgers(consumer, settings, committer, stats);
        this.tasks = new ConsumerTasks<>(consumer, pollThread, lifecycle, settings.label);
        this.rebalance = new RebalanceHandler<>(settings, consumer, ledgers, committer, admission, lifecycle,
                callbackFailure);
    }

    /** Starts the poll thread; if it cannot start, the receiver ends here (N9) and the error is rethrown. */
    void start() {
        if (!lifecycle.start()) {
            throw new IllegalStateException("receiver already started or closed: state=" + lifecycle.state());
        }
        try {
            pollThread.start();
        } catch (Throwable t) {
            // N9: no poll thread will ever run: end here, as a close before start does, and say why
            lifecycle.closedNow();
            endUnstarted(t);
            throw t;
        }
    }

    private void endUnstarted(Throwable failure) {
        try {
            consumer.close(CloseOptions.timeout(Duration.ZERO));
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        } finally {
            if (failure == null) {
                mailbox.close();
            } else {
                mailbox.closeExceptionally(failure);
            }
            terminated();
        }
    }

    private void terminated() {
        lifecycle.terminated.countDown();
        tasks.failAll();
        lifecycle.closed.complete(null);
    }

    /** The first close decides (N8); a close before start ends the receiver here. Any thread. */
    void stop(Duration timeout, boolean halt) {
        for (;;) {
            final ReceiverState s = lifecycle.state();
            if (s == ReceiverState.NEW) {
                if (lifecycle.closeUnstarted()) {
                    endUnstarted(null);
                    return;
                }
            } else if (s == ReceiverState.RUNNING) {
                if (lifecycle.requestClose(timeout, halt)) {
                    consumer.wakeup(); // a blocked poll returns at once (WakeupException)
                    LockSupport.unpark(pollThread);
                }
                return;
            } else {
                return; // stopping or closed already
            }
        }
    }

    /**
     * Ends the receiver as if its process died: no wait for acknowledgements and no final commit (what the commit
     * interval committed stays). The consumer is closed (leaving the group) and the mailbox closed. Tests of
     * redelivery.
     */
    void halt() {
        stop(Duration.ZERO, true);
        try {
            lifecycle.terminated.await(FATAL_FINISH.toNanos() * 2, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        Throwable failure = null;
        try {
            if (settings.topicPattern != null) {
                consumer.subscribe(settings.topicPattern, rebalance);
            } else if (settings.assignment != null) {
                consumer.assign(settings.assignment); // no group management: the listener is ours to call
                rebalance.onPartitionsAssigned(settings.assignment);
                callbackFailure.rethrow();
            } else {
                consumer.subscribe(settings.topics, rebalance);
            }
            lastPoll = System.nanoTime();
            committer.start(lastPoll);
            ledgers.start(lastPoll);
            final long pollTimeoutNanos = settings.pollTimeout.toNanos();
            while (lifecycle.isRunning()) {
                if (ring.isClosed()) {
                    break; // closed by someone else: stop as for close(ZERO)
                }
                tasks.runAll();
                if (drainPending() && admission.reserveForPoll()) {
                    if (admission.paused()) {
                        admission.resumeAll(consumer, ledgers.atBound());
                    }
                    ledgers.checkBounds(admission.paused());
                    poll(committer.pollTimeout(settings.pollTimeout));
                } else {
                    final long sinceLastPoll = System.nanoTime() - lastPoll;
                    if (sinceLastPoll >= pollTimeoutNanos) {
                        if (!admission.paused()) {
                            admission.pauseAll(consumer);
                        }
                        ledgers.checkBounds(admission.paused());
                        poll(PAUSED_POLL); // liveness: paused partitions return nothing
                    } else if (admission.awaitingRoom(pendingRecords())) {
                        LockSupport.parkNanos(this, pollTimeoutNanos - sinceLastPoll);
                    }
                }
                committer.commitIfDue(ledgers.all());
            }
        } catch (Throwable t) {
            failure = t;
            LOG.log(Level.ERROR, () -> "receiver " + settings.label + ": fatal error, closing", t);
        }
        finish(failure);
    }

    private void poll(Duration timeout) {
        final ConsumerRecords<K, V> records;
        try {
            records = consumer.poll(timeout);
        } catch (WakeupException e) {
            callbackFailure.rethrow(); // a fatal revocation commit that the wake-up raced is not lost
            return; // close() woke us
        } catch (RecordDeserializationException e) {
            lastPoll = System.nanoTime();
            callbackFailure.rethrow();
            if (settings.deserializationErrorHandler == null) {
                throw e;
            }
            skipPoisonRecord(e);
            return;
        } catch (AuthorizationException e) {
            // N12: the same grace as a commit's authorization error (an ACL being fixed), not fatal at once
            final long now = System.nanoTime();
            final long grace = committer.commitFailureGraceNanos;
            if (pollFailingSince == 0L) {
                pollFailingSince = now;
            }
            if (now - pollFailingSince >= grace) {
                throw e;
            }
            LOG.log(Level.WARNING, "receiver {0}: a poll failed ({1}); retrying for up to {2} s before that is fatal",
                    settings.label, e.toString(), TimeUnit.NANOSECONDS.toSeconds(grace));
            LockSupport.parkNanos(this, timeout.toNanos()); // not a hot loop; close() unparks
            return;
        }
        pollFailingSince = 0L;
        lastPoll = System.nanoTime();
        callbackFailure.rethrow();
        final Map<TopicPartition, OffsetAndMetadata> next = records.nextOffsets();
        final Set<TopicPartition> withRecords = records.partitions();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
            if (!withRecords.contains(e.getKey())) {
                // the position moved past offsets with no record for us (transaction markers, aborted records under
                // read_committed): nothing of this partition is pending (a poll runs only when nothing is)
                final PartitionAcks ledger = ledgers.get(e.getKey());
                if (ledger != null) {
                    ledger.advanceTo(e.getValue());
                }
            }
        }
        if (records.isEmpty()) {
            return;
        }
        for (TopicPartition partition : withRecords) {
            final List<ConsumerRecord<K, V>> run = records.records(partition);
            PartitionAcks ledger = ledgers.get(partition);
            if (ledger == null) {
                if (!consumer.assignment().contains(partition)) {
                    LOG.log(Level.WARNING, "receiver {0}: {1} records of {2}, which is not assigned, not delivered"
                            + " (the partition's owner gets them)", settings.label, run.size(), partition);
                    continue;
                }
                ledger = ledgers.newLedger(partition); // assigned without our listener seeing it: deliver, never drop
            } else if (!run.isEmpty() && run.get(0).offset() <= ledger.lastDelivered()) {
                // the position moved backwards (a seek): a new epoch, so no acknowledgement of the old entries
                // and none of the new ones can commit past the other's records
                LOG.log(Level.INFO, "receiver {0}: {1} went back from offset {2} to {3}: new assignment epoch",
                        settings.label, partition, ledger.lastDelivered(), run.get(0).offset());
                ledger = ledgers.newLedger(partition);
            }
            pending.add(new PendingRun<>(ledger, run, next.get(partition)));
        }
        drainPending();
    }

    private void skipPoisonRecord(RecordDeserializationException e) {
        // NOTE: records of this partition before the bad one were returned by an earlier poll and are delivered
        // already (a normal poll runs only once nothing is pending), so the skipped entry keeps the ledger's order.
        final TopicPartition partition = e.topicPartition();
        settings.deserializationErrorHandler.accept(e);
        final PartitionAcks ledger = ledgers.get(partition);
        if (ledger != null) {
            ledger.skip(e.offset());
        }
        consumer.seek(partition, e.offset() + 1L);
    }

    /** @return records polled and not yet sent (a poll overshot the room) */
    private long pendingRecords() {
        long left = 0L;
        for (PendingRun<K, V> run : pending) {
            left += run.records.size() - run.next;
        }
        return left;
    }

    /**
     * Sends what is pending, as far as the reservations go (reserving more as it goes). The one place records enter
     * the mailbox: a batched send of the whole batch with one claim, on reservations the poll thread holds, so it
     * never finds the mailbox full.
     *
     * @return true if nothing is pending any more
     */
    private boolean drainPending() {
        PendingRun<K, V> run;
        boolean flushed = true;
        if (!pending.isEmpty()) {
            admission.takeBanked();
        }
        while ((run = pending.peek()) != null) {
            if (run.ledger.isRevoked()) {
                pending.poll(); // not delivered, not in the ledger: the next owner (or the new epoch) gets these
                LOG.log(Level.DEBUG, "receiver {0}: {1} polled records of revoked {2} not delivered", settings.label,
                        run.records.size() - run.next, run.ledger.partition);
                continue;
            }
            final List<ConsumerRecord<K, V>> records = run.records;
            final PartitionAcks ledger = run.ledger;
            while (run.next < records.size()) {
                final int n = admission.take(records.size() - run.next);
                if (n == 0) {
                    flushed = false;
                    break;
                }
                for (int i = 0; i < n; i++) {
                    batch.add(ledger.deliver(records.get(run.next++))); // the entry exists before the send
                }
            }
            if (!flushed) {
                break;
            }
            if (run.nextOffset != null) {
                ledger.advanceTo(run.nextOffset); // every record up to the position is in the ledger now
            }
            pending.poll();
        }
        if (!batch.isEmpty()) {
            final int size = batch.size();
            final int sent = ring.sendReservedMany(batch, 0, size);
            batch.clear();
            if (sent < size) {
                // closed by someone else: the unsent entries stay unacknowledged, so nothing past them is committed
                pending.clear();
                return true;
            }
        }
        return flushed;
    }

    private void finish(Throwable failure) {
        lifecycle.stopping(); // a close() from now on only waits for us
        Throwable cause = failure;
        final ReceiverLifecycle.CloseRequest request = lifecycle.closeRequest();
        final boolean closing = failure == null && request != null;
        final boolean halted = request != null && request.halted;
        final long deadline = closing ? request.deadline : System.nanoTime() + FATAL_FINISH.toNanos();
        try {
            if (!halted) {
                if (closing && !ring.isClosed() && !ledgers.acknowledgedBy(request.closer)) {
                    committer.awaitBeforeClose(ledgers, request.ackDeadline, ring::size);
                }
                try {
                    committer.commitSync(ledgers.all(), remaining(deadline));
                    committer.completeRebalanceAndCommit(ledgers, deadline);
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, () -> "receiver " + settings.label + ": the final commit failed", e);
                    cause = addTo(cause, e);
                }
            }
            ledgers.revokeAll();
            pending.clear();
            try {
                // leave the group, as the docs say, static members (group.instance.id) too: their default is to stay
                consumer.close(CloseOptions.timeout(remaining(deadline))
                        .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
            } catch (RuntimeException e) {
                cause = addTo(cause, e);
            }
            final RuntimeException late = callbackFailure.take(); // e.g. a revocation commit inside consumer.close()
            if (late != null && late != cause) {
                cause = addTo(cause, late);
            }
        } finally {
            admission.releaseAll();
            stats.closed(); // nothing assigned any more
            lifecycle.closedNow();
            if (cause == null) {
                mailbox.close();
            } else {
                mailbox.closeExceptionally(cause);
            }
            admission.returnBanked(); // a wake-up that reserved before the close and banked after our take
            terminated();
            LOG.log(Level.INFO, "receiver {0}: closed{1}", settings.label, cause == null ? "" : " after " + cause);
        }
    }

    private static Throwable addTo(Throwable cause, Throwable e) {
        if (cause == null) {
            return e;
        }
        cause.addSuppressed(e);
        return cause;
    }

    /** @return the time left until {@code deadline}, at least {@link #FINISH_FLOOR} */
    static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(deadline - System.nanoTime(), FINISH_FLOOR.toNanos()));
    }

    /** Records of one partition polled but not yet sent (only when a poll overshoots the room). */
    private static final class PendingRun<K, V> {
        final PartitionAcks ledger;
        final List<ConsumerRecord<K, V>> records;
        /** The consumer's position after these records ({@code ConsumerRecords.nextOffsets()}), or null. */
        final OffsetAndMetadata nextOffset;
        int next;

        PendingRun(PartitionAcks ledger, List<ConsumerRecord<K, V>> records, OffsetAndMetadata nextOffset) {
            this.ledger = ledger;
            this.records = records;
            this.nextOffset = nextOffset;
        }
    }
}
