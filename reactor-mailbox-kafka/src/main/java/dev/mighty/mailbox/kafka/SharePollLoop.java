package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The poll thread of a {@link KafkaShareReceiver}: it owns the {@code KafkaShareConsumer} and every field below
 * that is not marked otherwise.
 *
 * <h2>One turn</h2>
 * <ol>
 *   <li>Apply the queued requests ({@link ShareAcks}): an outcome or renewal of a record the consumer holds
 *       ({@link ShareAcks#HELD}) is handed to {@code consumer.acknowledge}; a request for a record being renewed waits
 *       until a poll hands the record back.</li>
 *   <li>Poll, if the consumer allows it and it is worth it: no record held unacknowledged, and either no renewal
 *       outstanding or a request waiting for a renewed record; and if a poll's worth of mailbox room is reserved
 *       (else wait for room, below).</li>
 *   <li>Otherwise send what was applied ({@code commitAsync}: at once after a renewal, else at most every
 *       {@code pollTimeout}) and park until a request, room, the close, or {@code pollTimeout}.</li>
 * </ol>
 *
 * <h2>The wait for room: a token rule</h2>
 * The registration is a {@link RoomTicket} whose owner's {@code wake()} (run by the thread that frees a slot, or by
 * the closer) only unparks this thread. A wake-up is a token for one freed slot, and this thread, at its next turn,
 * either spends it ({@code reserve} got room: {@link RoomTicket#claimed()}), keeps it by registering again
 * ({@link RoomTicket#await()}, at the head of the queue if its retry lost the room), or hands it on when it gives the
 * wait up ({@link RoomTicket#withdraw()}: it has a poll's worth by other means, or it stops). Only this thread calls
 * the ticket, so its calls are serial as the ticket requires. The receiver is the mailbox's only sender, so the room
 * freed is ours; the wait is short in practice (a poll is due only when every record of the last one was taken from
 * the mailbox), but a batch receive frees its slots only when it ends, after the acknowledgements it carried.
 *
 * <h2>Renewals with kafka-clients 4.4</h2>
 * A renewal takes the record out of the consumer's fetch (it can no longer be acknowledged) until a poll, after the
 * broker's answer, hands it back; the same {@code ConsumerRecord} object comes back. Such records wait in
 * {@link #renewing}; a poll that returns one marks it held again and applies its waiting request. A renewal the
 * broker refused (the acknowledgement callback, with an error) never comes back: the record is given up.
 */
final class SharePollLoop<K, V> implements Runnable {
    private static final Logger LOG = System.getLogger(KafkaShareReceiver.class.getName());
    /** The budget of the final commit and the consumer's close after a fatal error. */
    private static final long FATAL_FINISH_NANOS = TimeUnit.SECONDS.toNanos(5);
    /** The least time the final commit and the consumer's close get, whatever the close's timeout. */
    private static final long FINISH_FLOOR_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final KafkaShareReceiver<K, V> receiver;
    private final KafkaShareConsumer<K, V> consumer;
    private final Mailbox<ReceivedShareRecord<K, V>> mailbox;
    private final MailboxRing<ReceivedShareRecord<K, V>> ring;
    private final List<String> topics;
    private final String groupId;
    private final String topicsLabel;
    /** Reservations held before a poll: {@code max.poll.records}, at most the capacity. */
    private final int pollThreshold;
    private final Duration pollTimeout;
    private final long flushIntervalNanos;
    private final ShareAcks<K, V> acks = new ShareAcks<>();
    /** The room registration: owned by this thread; its wake-up, run by whoever frees room, unparks this thread. */
    private final RoomTicket ticket;
    private Thread pollThread;

    /** The last snapshot: written by this thread (volatile store), read by any. */
    private volatile KafkaShareReceiverStats stats;

    // ---- poll thread only
    /** The records of the last poll (new and handed back): each HELD, RENEWING or DONE. */
    private final ArrayList<ReceivedShareRecord<K, V>> fetch = new ArrayList<>();
    /** Records whose renewal the consumer took and has not handed back, by topic, partition and offset. */
    private final Map<RecordKey, ReceivedShareRecord<K, V>> renewing = new HashMap<>();
    private final ArrayList<ReceivedShareRecord<K, V>> batch = new ArrayList<>();
    /** Records of {@link #fetch} still HELD: the consumer refuses to poll while this is not 0. */
    private int held;
    /** Mailbox reservations held: each lets one record in without finding the mailbox full. */
    private int permits;
    /** Acknowledgements handed to the consumer and not yet sent (by a poll or a commit). */
    private boolean unsent;
    private boolean renewApplied;
    private long lastFlush;
    private boolean changed = true;
    private long polls;
    private long delivered;
    private long accepted;
    private long released;
    private long rejected;
    private long renewals;
    private long failed;

    SharePollLoop(KafkaShareReceiver<K, V> receiver, KafkaShareConsumer<K, V> consumer,
            Mailbox<ReceivedShareRecord<K, V>> mailbox, List<String> topics, String groupId, String topicsLabel,
            int pollThreshold, Duration pollTimeout) {
        this.receiver = receiver;
        this.consumer = consumer;
        this.mailbox = mailbox;
        this.ring = MailboxRing.of(mailbox);
        this.topics = topics;
        this.groupId = groupId;
        this.topicsLabel = topicsLabel;
        this.pollThreshold = Math.min(pollThreshold, ring.capacity());
        this.pollTimeout = pollTimeout;
        this.flushIntervalNanos = pollTimeout.toNanos();
        this.ticket = ring.roomTicket(acks::wake); // wake() must not block or throw: an unpark
        this.stats = snapshot(0);
    }

    void pollThread(Thread thread) {
        this.pollThread = thread;
        acks.pollThread(thread);
    }

    KafkaShareReceiverStats stats() {
        return stats;
    }

    /** Any thread (a close): ends a poll in progress and the poll thread's park. */
    void wakeUp() {
        if (Thread.currentThread() != pollThread) {
            consumer.wakeup(); // thread-safe; a poll running now throws WakeupException, else the next call does
        }
        acks.wake();
    }

    @Override
    public void run() {
        Throwable failure = null;
        try {
            consumer.setAcknowledgementCommitCallback(this::acknowledged);
            consumer.subscribe(topics);
            lastFlush = System.nanoTime();
            while (receiver.isRunning() && !ring.isClosed()) {
                applyRequests();
                if (held == 0 && (renewing.isEmpty() || requestForRenewed()) && reserveForPoll()) {
                    poll();
                    publishStats();
                } else {
                    flush();
                    publishStats();
                    acks.renewing(unsettledRenewing());
                    acks.park(flushIntervalNanos);
                }
            }
        } catch (Throwable t) {
            failure = t;
            LOG.log(Level.ERROR, () -> "share receiver " + receiver.label() + ": fatal error, closing", t);
        }
        finish(failure);
    }

    // ------------------------------------------------------------------ acknowledgements

    /** Takes the queued requests and applies each to the consumer where it can. */
    private void applyRequests() {
        acks.taking();
        ReceivedShareRecord<K, V> r;
        while ((r = acks.take()) != null) {
            r.dequeued(); // a request from now on queues the record again; the reads in apply() come after
            apply(r);
        }
        if (renewApplied) {
            renewApplied = false;
            commitAsync(); // a renewal goes out now, not with a poll that may be far off
        }
    }

    /**
     * Hands a HELD record's outcome, or else its renewal, to the consumer; a RENEWING or DONE record is left as is
     * (its request waits in the record until the record is handed back).
     */
    private void apply(ReceivedShareRecord<K, V> r) {
        if (r.stage != ShareAcks.HELD) {
            return;
        }
        final AcknowledgeType outcome = r.lvOutcome(); // after dequeued(): see the order argued there
        final AcknowledgeType type = outcome != null ? outcome : r.takeRenewRequest() ? AcknowledgeType.RENEW : null;
        if (type == null) {
            return; // a spurious turn: a renewal request already taken
        }
        held--;
        changed = true;
        try {
            consumer.acknowledge(r.record(), type);
        } catch (IllegalStateException e) {
            // the consumer no longer holds the record (it cannot happen while our stages mirror the consumer's; a
            // guard, not a path): nothing to acknowledge, the broker's lock decides
            r.stage = ShareAcks.DONE;
            failed++;
            LOG.log(Level.WARNING, "share receiver {0}: {1} of {2} refused by the consumer: {3}", receiver.label(),
                    type, r, e.getMessage());
            return;
        }
        unsent = true;
        switch (type) {
            case ACCEPT -> accepted++;
            case RELEASE -> released++;
            case REJECT -> rejected++;
            default -> {
                renewals++;
                r.stage = ShareAcks.RENEWING;
                renewing.put(RecordKey.of(r.record()), r);
                renewApplied = true;
                return;
            }
        }
        r.stage = ShareAcks.DONE;
    }

    /** {@return how many records being renewed have no outcome}: the settled-count's wait does not wait for them */
    private int unsettledRenewing() {
        if (renewing.isEmpty()) {
            return 0;
        }
        int n = 0;
        for (ReceivedShareRecord<K, V> r : renewing.values()) {
            if (!r.isSettled()) {
                n++;
            }
        }
        return n;
    }

    /** {@return whether a record being renewed has a request waiting}: then a poll is worth it (it hands them back) */
    private boolean requestForRenewed() {
        for (ReceivedShareRecord<K, V> r : renewing.values()) {
            if (r.isSettled() || r.lvRenewRequested()) {
                return true;
            }
        }
        return false;
    }

    /** Sends what was applied when no poll is due: a renewal at once (see applyRequests), the rest periodically. */
    private void flush() {
        if ((unsent && System.nanoTime() - lastFlush >= flushIntervalNanos) || !renewing.isEmpty()) {
            commitAsync(); // with renewals outstanding: also runs the callback that reports a refused renewal
        }
    }

    private void commitAsync() {
        consumer.commitAsync();
        unsent = false;
        lastFlush = System.nanoTime();
    }

    /**
     * The consumer's acknowledgement callback (run on this thread, inside a poll or commit): counts refusals, and
     * gives up a record whose renewal was refused (the consumer never hands it back).
     */
    private void acknowledged(Map<TopicIdPartition, Set<Long>> offsets, Exception exception) {
        if (exception == null) {
            return;
        }
        int refused = 0;
        for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
            refused += e.getValue().size();
            for (Long offset : e.getValue()) {
                final ReceivedShareRecord<K, V> r = renewing.remove(
                        new RecordKey(e.getKey().topic(), e.getKey().partition(), offset));
                if (r != null) {
                    r.stage = ShareAcks.DONE;
                }
            }
        }
        failed += refused;
        changed = true;
        LOG.log(Level.INFO, "share receiver {0}: {1} acknowledgements refused ({2}); the broker delivers those records"
                + " again", receiver.label(), refused, exception.toString());
    }

    // ------------------------------------------------------------------ polling

    /** @return whether a poll's worth of room is reserved; if not, a registration for room stands */
    private boolean reserveForPoll() {
        for (;;) {
            if (permits < pollThreshold) {
                final int got = ring.reserve(pollThreshold - permits);
                if (got > 0) {
                    permits += got;
                    ticket.claimed(); // a wake-up's token, if we had one, is spent on this reservation
                }
            }
            if (permits >= pollThreshold) {
                ticket.withdraw(); // a registration still waiting leaves the queue (a woken unused one hands on)
                return true;
            }
            if (ticket.await()) {
                return false; // registered: the slot the consumer frees next wakes us (acks.wake)
            }
            // room appeared between the reservation and the registration: reserve again
        }
    }

    private void poll() {
        final ConsumerRecords<K, V> records;
        try {
            records = consumer.poll(pollTimeout); // sends the applied acknowledgements with its fetch
        } catch (WakeupException e) {
            return; // the close (the loop sees it), or a wake-up that came after the previous call
        }
        polls++;
        unsent = false;
        lastFlush = System.nanoTime();
        changed = true;
        if (records.isEmpty()) {
            return;
        }
        fetch.clear(); // every record of the previous poll is DONE or RENEWING (the consumer polled, so it agreed)
        for (ConsumerRecord<K, V> record : records) {
            final RecordKey key = RecordKey.of(record);
            final ReceivedShareRecord<K, V> back = renewing.remove(key);
            if (back != null && back.record() == record) {
                back.stage = ShareAcks.HELD; // handed back after its renewal: the application holds it already
                held++;
                fetch.add(back);
                apply(back); // an outcome or a renewal that waited for it
                continue;
            }
            if (back != null) {
                back.stage = ShareAcks.DONE; // a new delivery of the same offset: the renewed one lost its lock
                failed++;
            }
            final ReceivedShareRecord<K, V> r = new ReceivedShareRecord<>(record, acks);
            held++;
            fetch.add(r);
            batch.add(r);
        }
        if (renewApplied) {
            renewApplied = false;
            commitAsync();
        }
        deliver();
    }

    /** Sends the new records into the mailbox on the reservations held (a poll returns at most a poll's worth). */
    private void deliver() {
        if (batch.isEmpty()) {
            return;
        }
        if (batch.size() > permits) {
            permits += ring.reserve(batch.size() - permits); // a guard: record_limit keeps a poll within the room
        }
        final int n = Math.min(batch.size(), permits);
        for (int i = n; i < batch.size(); i++) {
            final ReceivedShareRecord<K, V> r = batch.get(i); // no room: back to the group, now
            r.releaseOnClose();
            apply(r);
        }
        permits -= n;
        delivered += n;
        acks.handedOut(n); // before the send: a consumer's outcome (after its receipt) finds them counted
        final int sent = ring.sendReservedMany(batch, 0, n); // may run subscriber code (a subscriber on this thread)
        if (sent < n) {
            // closed by someone else: nobody will take these; release them with the rest at the finish
            delivered -= n;
        }
        batch.clear();
    }

    // ------------------------------------------------------------------ the end

    /** A close before the poll thread started (or a start that failed): no consumer work, just closing. */
    void closeUnstarted(Throwable cause) {
        try {
            consumer.close(Duration.ZERO);
        } catch (RuntimeException e) {
            if (cause != null) {
                cause.addSuppressed(e);
            }
        } finally {
            if (cause == null) {
                mailbox.close();
            } else {
                mailbox.closeExceptionally(cause);
            }
        }
    }

    /**
     * Releases what is not settled, commits, closes the consumer and the mailbox, each step bounded by the deadline
     * (the close's, or {@link #FATAL_FINISH_NANOS} after a failure); every step runs whatever the one before did.
     */
    private void finish(Throwable failure) {
        final Long closeDeadline = receiver.stopping();
        final long deadline = failure == null && closeDeadline != null ? closeDeadline
                : System.nanoTime() + FATAL_FINISH_NANOS;
        Throwable cause = failure;
        try {
            applyRequests(); // outcomes the application gave before the close count
            for (ReceivedShareRecord<K, V> r : fetch) {
                if (r.stage == ShareAcks.HELD) {
                    r.releaseOnClose(); // loses to an outcome set before: then that one is applied
                    apply(r);
                }
            }
            commitSync(deadline);
        } catch (RuntimeException e) {
            cause = suppress(cause, e);
            LOG.log(Level.WARNING, () -> "share receiver " + receiver.label() + ": the final commit failed", e);
        }
        for (ReceivedShareRecord<K, V> r : renewing.values()) {
            r.releaseOnClose(); // settled for the application; the broker releases it when we leave the group
            r.stage = ShareAcks.DONE;
        }
        renewing.clear();
        try {
            consumer.close(remaining(deadline));
        } catch (RuntimeException e) {
            cause = suppress(cause, e);
        } finally {
            ticket.withdraw();
            if (permits > 0) {
                ring.releaseReserved(permits);
                permits = 0;
            }
            held = 0;
            changed = true;
            publishStats();
            if (cause == null) {
                mailbox.close();
            } else {
                mailbox.closeExceptionally(cause);
            }
            receiver.terminated();
            LOG.log(Level.INFO, "share receiver {0}: closed{1}", receiver.label(), cause == null ? "" : " after "
                    + cause);
        }
    }

    /** The final commit; a wake-up left over from the close's {@code consumer.wakeup()} is retried once. */
    private void commitSync(long deadline) {
        for (int attempt = 0; ; attempt++) {
            try {
                final Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(remaining(deadline));
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : result.entrySet()) {
                    if (e.getValue().isPresent()) {
                        failed++;
                        LOG.log(Level.INFO, "share receiver {0}: the final acknowledgements of {1} refused ({2})",
                                receiver.label(), e.getKey(), e.getValue().get().toString());
                    }
                }
                return;
            } catch (WakeupException e) {
                if (attempt > 0) {
                    throw e;
                }
            }
        }
    }

    private static Throwable suppress(Throwable cause, RuntimeException e) {
        if (cause == null) {
            return e;
        }
        cause.addSuppressed(e);
        return cause;
    }

    private static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(deadline - System.nanoTime(), FINISH_FLOOR_NANOS));
    }

    private void publishStats() {
        if (changed) {
            changed = false;
            stats = snapshot(held + renewing.size()); // HELD counts the records in the mailbox too
        }
    }

    private KafkaShareReceiverStats snapshot(int outstanding) {
        return new KafkaShareReceiverStats(groupId, topicsLabel, polls, delivered, outstanding, accepted, released,
                rejected, renewals, failed);
    }

    /** A record's identity within the group's topics: topic, partition, offset. */
    private record RecordKey(String topic, int partition, long offset) {
        static RecordKey of(ConsumerRecord<?, ?> record) {
            return new RecordKey(Objects.requireNonNull(record.topic()), record.partition(), record.offset());
        }
    }
}
