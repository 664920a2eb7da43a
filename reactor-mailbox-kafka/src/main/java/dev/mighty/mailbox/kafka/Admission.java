package dev.mighty.mailbox.kafka;

import java.util.HashSet;
import java.util.Set;

import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomReserve;
import org.apache.kafka.common.TopicPartition;

/**
 * The receiver's admission: the mailbox reservations (<em>permits</em>) the poll thread holds, so that a poll's
 * records always fit and it never waits on a full mailbox, its wait for room while it has too few, and the pause of
 * every partition while it waits.
 * <p>The poll thread polls only while it holds permits for a whole poll ({@code pollThreshold}); without them it
 * pauses every assigned partition, parks, and keeps polling (paused) every {@code pollTimeout} for liveness. It is
 * woken when a poll's worth of room is free, not per freed slot (B11): the wait is the core's {@link RoomReserve},
 * whose turns (on the threads that free room) reserve room on the poll thread's behalf and unpark it once what they
 * banked covers what it wants; its class comment states the token rule and the Dekker pair it keeps.
 * <p>Threads: {@link #permits} and {@link #paused} are written by the poll thread only; the reserve's owner is the
 * poll thread, and whoever sees the mailbox closed after banking returns the banked room, so no reservation leaks.
 *
 * @param <T> the mailbox's element type
 */
final class Admission<T> {
    private final MailboxRing<T> ring;
    /** Reservations wanted before a normal poll: {@code min(max.poll.records, capacity)}. */
    private final int pollThreshold;
    /** The poll thread's wait for room: reserves on its behalf while it is parked, unparks it once enough is in. */
    private final RoomReserve room;
    /** Whether every partition is paused for room. Written by the poll thread only. */
    private volatile boolean paused;
    /** Mailbox reservations held: each lets one record in without finding the mailbox full. Poll thread. */
    private int permits;

    Admission(MailboxRing<T> ring, ReceiverLifecycle lifecycle, int pollThreshold, Thread pollThread) {
        this.ring = ring;
        this.pollThreshold = pollThreshold;
        this.room = RoomReserve.unparking(ring, pollThread, lifecycle::isRunning);
    }

    /** @return whether every partition is paused for room (any thread; a snapshot) */
    boolean paused() {
        return paused;
    }

    /** @return whether the poll thread holds room for a whole poll, reserving more if needed. Poll thread. */
    boolean reserveForPoll() {
        if (permits < pollThreshold) {
            takeBanked();
            if (permits < pollThreshold) {
                permits += ring.reserve(ring.capacity() - permits);
            }
        }
        if (permits >= pollThreshold) {
            room.end(); // polling again: a wait still registered is void
            return true;
        }
        return false;
    }

    /**
     * Poll thread, before sending: takes up to {@code wanted} permits, reserving what is free when none is held.
     *
     * @return how many it took, 0 if the mailbox has no room
     */
    int take(int wanted) {
        if (permits == 0 && (permits = ring.reserve(ring.capacity())) == 0) {
            return 0;
        }
        final int n = Math.min(permits, wanted);
        permits -= n;
        return n;
    }

    /** Poll thread: takes the reservations the room wait banked into its permits. */
    void takeBanked() {
        permits += room.takeBanked();
    }

    /**
     * Before the poll thread parks for room: publishes how much room it waits for and registers, unless a
     * registration is live (the poll thread woke for liveness, not for room: the registration it made stays, so a
     * stalled consumer does not grow the mailbox's waiter queue). Poll thread.
     *
     * @param pendingRecords records polled and not yet sent (when a poll overshot the room), or 0
     * @return false if the room is there already (banked by a wake-up, or free now): do not park
     */
    boolean awaitingRoom(long pendingRecords) {
        final int wanted = pendingRecords == 0L ? Math.max(1, pollThreshold - permits)
                : (int) Math.max(1L, Math.min(pendingRecords, pollThreshold) - permits);
        return room.awaitingRoom(wanted);
    }

    /** Poll thread: pauses every assigned partition (no room for a poll). */
    void pauseAll(org.apache.kafka.clients.consumer.Consumer<?, ?> consumer) {
        consumer.pause(consumer.assignment());
        paused = true;
    }

    /** Poll thread: resumes the paused partitions, except those at their unacknowledged bound. */
    void resumeAll(org.apache.kafka.clients.consumer.Consumer<?, ?> consumer, Set<TopicPartition> atBound) {
        final Set<TopicPartition> resume = new HashSet<>(consumer.paused());
        resume.removeAll(atBound); // those stay paused until their acknowledgements come
        consumer.resume(resume);
        paused = false;
    }

    /** Poll thread, at the finish: ends the wait and gives every reservation back. */
    void releaseAll() {
        room.end();
        takeBanked();
        if (permits > 0) {
            ring.releaseReserved(permits);
            permits = 0;
        }
        paused = false;
    }

    /** Any thread, once the mailbox is closed: returns what was banked and not taken. */
    void returnBanked() {
        room.returnBanked();
    }

    /** @return room wake-ups that unparked the poll thread (tests) */
    long roomWakeups() {
        return room.wakeups();
    }

    /** @return room wake-ups that found less than a poll's worth and kept the poll thread parked (tests) */
    long roomDeclined() {
        return room.declined();
    }

    /** @return whether the poll thread's room registration is live (tests) */
    boolean awaitingRoomNow() {
        return room.awaiting();
    }
}
