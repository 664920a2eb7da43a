package dev.mighty.mailbox.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Optional;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Headers;
import org.jspecify.annotations.Nullable;

/**
 * A record a {@link KafkaShareReceiver} delivered into its mailbox, with the handle that settles it with the share
 * group: {@link #accept()} (processed), {@link #release()} (give it back for another delivery), {@link #reject()}
 * (unprocessable, never deliver again) or, while processing goes on, {@link #renew()} (extend the record's
 * acquisition lock).
 *
 * <h2>Outcome</h2>
 * The first of {@code accept}, {@code release} and {@code reject} wins and returns {@code true}; a later one, from
 * any thread, changes nothing and returns {@code false}, and so does {@code renew} once an outcome is set. A receiver
 * that closes first settles the record itself with {@code release} (see {@link KafkaShareReceiver#close(java.time.Duration)}):
 * an outcome given after that returns {@code false}. {@link #isSettled()} says whether an outcome is set, by
 * whichever party. {@code renew} may be called any number of times before the outcome.
 * <p>An outcome is a request: the receiver's poll thread hands it to the share consumer and the broker applies it
 * with the next poll or acknowledgement commit. The broker refuses it when the record's acquisition lock has expired
 * meanwhile (the record was, or will be, delivered again, possibly to another consumer); the receiver then counts
 * it in {@link KafkaShareReceiverStats#failedAcknowledgements()}.
 *
 * <h2>Ordering</h2>
 * None. A share group hands the records of one partition to many consumers at once, redelivers released and
 * timed-out records after later ones, and this receiver settles records in whatever order they are settled.
 * Records reach the mailbox in the order the consumer's poll returned them, and nothing more is promised.
 *
 * <h2>Threads</h2>
 * Immutable apart from the outcome; every method may be called from any thread. {@code accept}, {@code release},
 * {@code reject} and {@code renew} are lock-free (a CAS, then at most one queue insert and one unpark of the poll
 * thread).
 *
 * <h2>Visibility</h2>
 * What a thread did before it set the outcome happens-before the poll thread hands that outcome to the consumer
 * (the outcome is a CAS, the renewal a volatile store, each read with a volatile read by the poll thread).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class ReceivedShareRecord<K, V> {
    private final ConsumerRecord<K, V> record;
    private final ShareAcks<K, V> owner;

    /** The outcome: null until the first of accept, release, reject (or the close's release) CASes it. */
    private volatile AcknowledgeType outcome;
    private static final VarHandle OUTCOME;
    /** Set by {@link #renew()}; taken (cleared) by the poll thread when it sends the renewal. */
    private volatile boolean renewRequested;
    private static final VarHandle RENEW_REQUESTED;
    /** Whether this record is in the poll thread's queue: a request enqueues it only on the false-to-true edge. */
    private volatile boolean queued;
    private static final VarHandle QUEUED;

    // ---- poll thread only (see SharePollLoop)
    /** Where the record stands with the share consumer: {@link ShareAcks#HELD}, {@code RENEWING} or {@code DONE}. */
    int stage = ShareAcks.HELD;

    static {
        try {
            final MethodHandles.Lookup l = MethodHandles.lookup();
            OUTCOME = l.findVarHandle(ReceivedShareRecord.class, "outcome", AcknowledgeType.class);
            RENEW_REQUESTED = l.findVarHandle(ReceivedShareRecord.class, "renewRequested", boolean.class);
            QUEUED = l.findVarHandle(ReceivedShareRecord.class, "queued", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    ReceivedShareRecord(ConsumerRecord<K, V> record, ShareAcks<K, V> owner) {
        this.record = record;
        this.owner = owner;
    }

    /** {@return the record as the share consumer returned it} */
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

    /** {@return {@code record().offset()}: with the topic and partition, the record's identity in the share group} */
    public long offset() {
        return record.offset();
    }

    /** {@return {@code record().headers()}} */
    public Headers headers() {
        return record.headers();
    }

    /**
     * How many times the share group has delivered this record, this delivery included: 1 the first time, one more
     * for each delivery after a release, a lock timeout or a consumer's departure. The broker counts every
     * acquisition and stops delivering the record at the group's {@code share.delivery.count.limit} (it is then
     * archived as rejected).
     *
     * @return the delivery count, {@code >= 1}; {@code -1} only for a record without one, which a share consumer
     *         never returns (a primitive, so that reading it allocates nothing)
     */
    public short deliveryCount() {
        final Optional<Short> count = record.deliveryCount();
        return count.isPresent() ? count.get() : -1;
    }

    /**
     * Settles the record as processed: the group never delivers it again (unless the broker refuses the
     * acknowledgement because the lock expired first; see the class comment).
     *
     * @return true if this call set the outcome; false if an outcome was set already (nothing changes)
     */
    public boolean accept() {
        return settle(AcknowledgeType.ACCEPT);
    }

    /**
     * Gives the record back: the group delivers it again (to any of its consumers) with
     * {@link #deliveryCount()} one higher, until the delivery count limit.
     *
     * @return true if this call set the outcome; false if an outcome was set already (nothing changes)
     */
    public boolean release() {
        return settle(AcknowledgeType.RELEASE);
    }

    /**
     * Settles the record as unprocessable: the group never delivers it again (it is archived).
     *
     * @return true if this call set the outcome; false if an outcome was set already (nothing changes)
     */
    public boolean reject() {
        return settle(AcknowledgeType.REJECT);
    }

    /**
     * Asks for the record's acquisition lock to be extended (KIP-1222's {@code RENEW}): the broker restarts the
     * lock's clock (the group's {@code share.record.lock.duration.ms}) when the renewal reaches it. The poll thread
     * sends a renewal as soon as it sees it, without waiting for a poll; call this again before each lock period
     * ends, for as long as processing lasts, then set the outcome. Requests made while a renewal is on its way are
     * folded into one more renewal, sent once the share consumer hands the record back (see
     * {@link KafkaShareReceiver}, "Renewals").
     *
     * @return true if the request was taken; false if the outcome is set (nothing to renew)
     */
    public boolean renew() {
        if (outcome != null) {
            return false;
        }
        RENEW_REQUESTED.setVolatile(this, true); // volatile, not release: see dequeued()
        // NOTE: an outcome CASed between our check and here wins: the poll thread reads the outcome first and then
        // drops the renewal.
        signal();
        owner.renewRequested(); // at once, even when the record was queued already
        return true;
    }

    /** {@return whether an outcome is set (by the application, or by the receiver's close, which releases)} */
    public boolean isSettled() {
        return outcome != null;
    }

    @Override
    public String toString() {
        final AcknowledgeType o = outcome;
        return "ReceivedShareRecord{" + record.topic() + "-" + record.partition() + "@" + record.offset()
                + ", deliveryCount=" + deliveryCount() + ", outcome=" + (o == null ? "none" : o) + "}";
    }

    // ------------------------------------------------------------------ the receiver's side

    private boolean settle(AcknowledgeType type) {
        if (!OUTCOME.compareAndSet(this, (AcknowledgeType) null, type)) {
            return false;
        }
        owner.settled(); // the count first, then the queue (whose offer checks the wait), or the check alone
        if (!signal()) {
            owner.wakeIfOver(); // queued already (a renewal not yet taken): the outcome may end the wait
        }
        return true;
    }

    /**
     * The close's release: sets the outcome unless one is set. Does not signal: the caller (the poll thread)
     * applies it itself.
     *
     * @return true if the release won
     */
    boolean releaseOnClose() {
        return OUTCOME.compareAndSet(this, (AcknowledgeType) null, AcknowledgeType.RELEASE);
    }

    /**
     * Enqueues this record for the poll thread unless it is queued already (one queue node per pending turn).
     *
     * @return whether this call enqueued it
     */
    private boolean signal() {
        if (!(boolean) QUEUED.getAndSet(this, true)) {
            owner.requested(this);
            return true;
        }
        return false;
    }

    /**
     * Poll thread, before it reads the requests: a request made from now on queues the record again.
     * <p>No request is lost: a requester writes its request (the outcome's CAS, or the renewal flag), then
     * {@code getAndSet(queued, true)}; we write {@code queued = false}, then read the requests. All four are
     * volatile-mode accesses, so they are in one total order: if the requester's {@code getAndSet} came first (it
     * saw {@code true} and enqueued nothing), its request is before our reads and we see it; otherwise it saw our
     * {@code false} and enqueued the record again.
     */
    void dequeued() {
        QUEUED.setVolatile(this, false);
    }

    /** {@return the outcome, or null}: poll thread; a volatile read, for the order in {@link #dequeued()} */
    AcknowledgeType lvOutcome() {
        return (AcknowledgeType) OUTCOME.getVolatile(this);
    }

    /** {@return whether a renewal was requested since the last take}, clearing the request: poll thread */
    boolean takeRenewRequest() {
        return renewRequested && (boolean) RENEW_REQUESTED.getAndSet(this, false);
    }

    /** {@return whether a renewal is requested and not yet taken}: poll thread */
    boolean lvRenewRequested() {
        return renewRequested;
    }
}
