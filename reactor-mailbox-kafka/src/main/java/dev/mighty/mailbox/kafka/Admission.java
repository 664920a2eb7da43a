package dev.mighty.mailbox.kafka;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import dev.mighty.mailbox.internal.Wakeable;
import org.apache.kafka.common.TopicPartition;

/**
 * The receiver's admission: the mailbox reservations (<em>permits</em>) the poll thread holds, so that a poll's
 * records always fit and it never waits on a full mailbox, its wait for room while it has too few, and the pause of
 * every partition while it waits.
 * <p>The poll thread polls only while it holds permits for a whole poll ({@code pollThreshold}); without them it
 * pauses every assigned partition, parks, and keeps polling (paused) every {@code pollTimeout} for liveness. It is
 * woken when a poll's worth of room is free, not per freed slot (B11): see {@link RoomWait}.
 * <p>Threads: {@link #permits} is the poll thread's. {@link #banked} is added to by {@link RoomWait} turns (on the
 * threads that free room) and taken by the poll thread, or returned to the mailbox by whoever sees it closed after
 * banking, so no reservation leaks. {@link #paused} and {@link #roomWanted} are written by the poll thread only.
 *
 * @param <T> the mailbox's element type
 */
final class Admission<T> {
    /** How many times a room wake-up reserves again after losing its re-registration to a race, at most. */
    private static final int ROOM_ROUNDS = 4;

    private final MailboxRing<T> ring;
    private final ReceiverLifecycle lifecycle;
    /** Reservations wanted before a normal poll: {@code min(max.poll.records, capacity)}. */
    private final int pollThreshold;
    private final Thread pollThread;
    /** Mailbox reservations a {@link RoomWait} took on the poll thread's behalf while it was parked. */
    private final AtomicInteger banked = new AtomicInteger();
    /**
     * How many reservations, beyond its own {@link #permits}, the parked poll thread waits for: a poll's worth or what
     * is pending. Written by the poll thread before it parks, read by {@link RoomWait#wake()}.
     */
    private volatile int roomWanted;
    /** Whether every partition is paused for room. Written by the poll thread only. */
    private volatile boolean paused;
    /** The poll thread's registration for room, or null; written by the poll thread. */
    private volatile RoomWait roomWait;
    /** Room wake-ups that unparked the poll thread (tests). */
    private final AtomicLong roomWakeups = new AtomicLong();
    /** Room wake-ups that found less than {@link #roomWanted} and kept the poll thread parked (tests). */
    private final AtomicLong roomDeclined = new AtomicLong();
    /** Mailbox reservations held: each lets one record in without finding the mailbox full. Poll thread. */
    private int permits;

    Admission(MailboxRing<T> ring, ReceiverLifecycle lifecycle, int pollThreshold, Thread pollThread) {
        this.ring = ring;
        this.lifecycle = lifecycle;
        this.pollThreshold = pollThreshold;
        this.pollThread = pollThread;
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
            if (roomWait != null) {
                endRoomWait(); // polling again: a wait still registered is void
            }
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

    /** Poll thread: takes the reservations a {@link RoomWait} banked into its permits. */
    void takeBanked() {
        if (banked.get() != 0) {
            permits += banked.getAndSet(0);
        }
    }

    /**
     * Before the poll thread parks for room: publishes how much room it waits for ({@link #roomWanted}) and registers
     * a {@link RoomWait}, unless one is live (the poll thread woke for liveness, not for room: the registration it made
     * stays, so a stalled consumer does not grow the mailbox's waiter queue). Poll thread.
     *
     * @param pendingRecords records polled and not yet sent (when a poll overshot the room), or 0
     * @return false if the room is there already (banked by a wake-up, or free now): do not park
     */
    boolean awaitingRoom(long pendingRecords) {
        final int wanted = pendingRecords == 0L ? Math.max(1, pollThreshold - permits)
                : (int) Math.max(1L, Math.min(pendingRecords, pollThreshold) - permits);
        roomWanted = wanted; // volatile store, then the load of banked: pairs with RoomWait.wake()'s add, then load
        if (banked.get() >= wanted) {
            return false;
        }
        final RoomWait current = roomWait;
        if (current != null && current.live) {
            return true; // registered, not yet woken
        }
        final RoomWait w = new RoomWait();
        roomWait = w;
        w.wake(); // the first turn, here: reserves what is free, or registers
        if (!w.live) {
            roomWait = null; // room now (banked): the next turn takes it
            return false;
        }
        return true;
    }

    /** Poll thread: the registration (if any) is given up; its turn withdraws it (a wake-up of it is handed on). */
    private void endRoomWait() {
        final RoomWait w = roomWait;
        if (w != null) {
            roomWait = null;
            w.live = false;
            w.wake(); // the turn sees live == false and withdraws its ticket
        }
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
        endRoomWait();
        takeBanked();
        if (permits > 0) {
            ring.releaseReserved(permits);
            permits = 0;
        }
        paused = false;
    }

    /** Any thread, once the mailbox is closed: returns what was banked and not taken. */
    void returnBanked() {
        final int left = banked.getAndSet(0);
        if (left > 0) {
            ring.releaseReserved(left);
        }
    }

    long roomWakeups() {
        return roomWakeups.get();
    }

    long roomDeclined() {
        return roomDeclined.get();
    }

    boolean awaitingRoomNow() {
        final RoomWait w = roomWait;
        return w != null && w.live;
    }

    /**
     * The poll thread's wait for room. Registered with the mailbox's room queue, it is woken by whoever frees room
     * (the consumer's receive, on the consumer's thread) and then, on that thread: reserves the free room on the poll
     * thread's behalf ({@link #banked}); if {@code banked} now covers {@link #roomWanted}, unparks the poll thread;
     * else registers itself again and returns, leaving the poll thread parked. The mailbox's own waker thus pays a
     * reservation and a queue node per wake-up while the receiver is paused, instead of an unpark (a system call) and
     * a poll-thread turn per slot. (A batch receive of {@code k} records wakes the registration up to {@code k} times,
     * one per freed slot: the first wake-up reserves the batch's room, the others find none and register again.)
     * <p>Token rule: the registration is a {@link RoomTicket}, so a wake-up is a token that the wait either spends
     * on a reservation ({@link RoomTicket#claimed()}), or keeps by registering again ({@link RoomTicket#await()}, at
     * the head if its retry found no room), or hands on when the wait ends ({@link RoomTicket#withdraw()}): no wake-up
     * is lost, and none is owed to a wait that gave up. {@code roomWanted} and {@code banked} form a Dekker pair with
     * the poll thread (it stores {@code roomWanted} then loads {@code banked}; a turn adds to {@code banked} then loads
     * {@code roomWanted}), so either the turn sees what the poll thread wants or the poll thread sees what was banked
     * and does not park. The loop is bounded: after {@link #ROOM_ROUNDS} rounds that lost the room to a race the turn
     * unparks anyway.
     * <p>Threads: the turns are serial (a WIP counter): the poll thread runs the first one and the one that ends the
     * wait ({@link #endRoomWait()}), wakers the others; only a turn touches the ticket.
     */
    private final class RoomWait implements Wakeable {
        /** Cleared when the wait ends: a turn unparked the poll thread, or the poll thread gave it up. */
        volatile boolean live = true;
        private final RoomTicket ticket = ring.roomTicket(this);
        private final AtomicInteger wip = new AtomicInteger();
        /** The poll thread's first turn has run (turn-confined): later turns are wake-ups, counted for tests. */
        private boolean started;

        @Override
        public void wake() {
            if (wip.getAndIncrement() != 0) {
                return; // the running turn goes round again
            }
            int missed = 1;
            do {
                turn();
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }

        private void turn() {
            final boolean wakeUp = started; // the first turn is the poll thread's registration, not a wake-up
            started = true;
            if (!live) {
                ticket.withdraw(); // the wait is over: a wake-up that came too late goes to the next waiter
                return;
            }
            for (int round = 0; round < ROOM_ROUNDS && lifecycle.isRunning(); round++) {
                final int got = ring.reserve(ring.capacity());
                if (got > 0) {
                    ticket.claimed(); // the room a wake-up was for went into our reservation
                    banked.getAndAdd(got);
                    if (ring.isClosed()) {
                        returnBanked(); // the close's own returnBanked() may have run before our add
                        break;
                    }
                }
                if (banked.get() >= roomWanted) {
                    break; // a poll's worth: unpark
                }
                if (ticket.await()) {
                    if (wakeUp) {
                        roomDeclined.incrementAndGet();
                    }
                    return; // registered (again): the poll thread stays parked
                }
                // room appeared after our reservation (or the close): reserve it too
            }
            live = false;
            ticket.withdraw();
            if (wakeUp) {
                roomWakeups.incrementAndGet();
                LockSupport.unpark(pollThread);
            }
        }
    }
}
