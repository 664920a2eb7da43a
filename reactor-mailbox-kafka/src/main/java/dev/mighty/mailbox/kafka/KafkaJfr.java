package dev.mighty.mailbox.kafka;

import jdk.jfr.FlightRecorder;

/**
 * The {@code jdk.jfr} side of the receiver: creates and commits its events. Loaded only when the receiver
 * calls it, which it does only behind {@code MailboxEvents.enabled()} and inside a
 * {@code catch (RuntimeException | LinkageError)} (see {@code Ledgers.recordUnacknowledged}), so
 * {@link KafkaMailboxReceiver} itself names no {@code jdk.jfr} type and links without the module.
 *
 * <h2>Cost</h2>
 * Called once per episode of a long-open record, never per record: while the Flight Recorder has never been
 * initialized in this JVM it returns after one static volatile read ({@link FlightRecorder#isInitialized()})
 * and allocates nothing (and does not initialize the recorder). Otherwise it allocates one event object, and
 * scans the partition's ledger for the unacknowledged count only if a recording enables the event.
 *
 * <h2>Threads</h2>
 * The poll thread only (it reads the partition's ledger).
 */
final class KafkaJfr {
    private KafkaJfr() {
    }

    /**
     * Commits an {@link UnacknowledgedRecordEvent} if a recording enables it.
     *
     * @param groupId the receiver's {@code group.id}
     * @param ledger the partition's ledger (poll thread)
     * @param offset the offset of its oldest unacknowledged record
     * @param age how long that record has been the oldest, in nanoseconds
     * @param atBound whether the partition is paused at {@code maxUnacknowledged}
     */
    static void unacknowledgedRecord(String groupId, PartitionAcks ledger, long offset, long age, boolean atBound) {
        if (!FlightRecorder.isInitialized()) {
            return;
        }
        final UnacknowledgedRecordEvent event = new UnacknowledgedRecordEvent();
        if (event.shouldCommit()) {
            event.groupId = groupId;
            event.topic = ledger.partition.topic();
            event.partition = ledger.partition.partition();
            event.offset = offset;
            event.age = age;
            event.unacknowledged = ledger.unacknowledged(); // a scan of the open span, as a stats() refresh does
            event.atBound = atBound;
            event.commit();
        }
    }
}
