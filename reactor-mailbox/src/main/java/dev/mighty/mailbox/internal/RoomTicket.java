package dev.mighty.mailbox.internal;

import java.util.Objects;

import dev.mighty.mailbox.internal.RingWaiters.RoomWaiter;

/**
 * How a waiter that is a callback, not a parked thread, waits for room in a full mailbox: a withdrawable room
 * registration that keeps {@link RingWaiters}' token rule (every room wake-up is used or handed on) for its owner.
 * The owner is an adapter's send loop (a {@code MailboxSubscriber} flushing its buffer, a {@code Mono} send, the
 * Kafka receiver's poll loop); {@link Wakeable#wake()} of its {@code owner} runs that loop again.
 *
 * <p>The ticket's three methods are the three outcomes of a woken waiter, and the owner reports each attempt's
 * outcome through them:
 * <pre>{@code
 * long r = ring.trySendQuiet(m);
 * if (r >= 0)                 ticket.claimed();       // a woken registration's token is spent
 * else if (r == CLAIM_FULL)   ticket.await();         // registers (at the head if its woken retry lost the slot)
 * ...
 * nothing left to send, cancelled, finished:  ticket.withdraw();   // never outlives its need
 * }</pre>
 * Each {@link #await()} that registers queues a new node (a registration is per attempt), so a wake-up of an old
 * registration can never stand for a newer one; the owner's {@code wake()} carries no state and may come
 * spuriously (a registration that a waker took just as the owner withdrew it): it must tolerate finding nothing
 * to do.
 *
 * <h2>Threads</h2>
 * One owner, whose calls to {@link #await()}, {@link #claimed()} and {@link #withdraw()} are serial (its drain
 * loop: a WIP counter or a single thread); the node's state is the only field other threads touch (the waker's
 * CAS to WOKEN, the close's).
 *
 * <h2>Progress</h2>
 * Lock-free: a registration is an atomic add and a queue insert; a withdrawal a CAS and a queue removal (linear
 * in the queue's length, as {@code ConcurrentLinkedDeque.removeFirstOccurrence} is).
 *
 * <h2>Visibility</h2>
 * As {@link RingWaiters}' Dekker pair for room: the registration's count increment is a full fence before the
 * re-check of the room; a waker's room is published before its fence and its read of the count.
 */
public final class RoomTicket {
    private final MailboxRing<?> ring;
    private final Wakeable owner;
    /** The registration of the current attempt, or null. Owner-confined. */
    private RoomWaiter node;

    RoomTicket(MailboxRing<?> ring, Wakeable owner) {
        this.ring = ring;
        this.owner = Objects.requireNonNull(owner, "owner");
    }

    /**
     * The owner's claim found the mailbox full: makes sure a registration stands. One that is still waiting
     * stands; one that was woken means the owner's retry lost the slot to a sender that never waited, so the new
     * registration keeps its place at the head of the queue.
     *
     * @return true if a registration stands (a freed slot or the close wakes the owner once); false if room (or
     *         the close) appeared meanwhile: claim again now
     */
    public boolean await() {
        final RoomWaiter current = node;
        if (current != null && current.lvState() == RingWaiters.WAITING) {
            return true;
        }
        final boolean lostWokenRetry = current != null; // woken (a waiter's own withdrawal clears the field)
        final RingWaiters waiters = ring.waiters;
        final RoomWaiter fresh = new RoomWaiter(owner);
        node = fresh;
        waiters.enqueue(fresh, lostWokenRetry);
        // The add in enqueue() is a full fence: the re-check reads the consumer index and permits after our node is
        // counted. Pairs with the fence before a waker's read of roomWaiting (afterReceive, releaseReserved).
        if (!ring.isFullForSend()) {
            if (waiters.leave(fresh)) {
                node = null;
            }
            // else a waker took it first: it stays ours, WOKEN, and the claim that follows spends or re-queues it
            return false;
        }
        ring.countProducerPark();
        return true;
    }

    /**
     * The owner claimed a slot. A registration that was woken has its token spent (and, if room is left and others
     * wait, the next waiter is woken: the room a batch freed may outnumber the waiters woken for it). One that is
     * still waiting stays: the owner may need more room.
     */
    public void claimed() {
        final RoomWaiter current = node;
        if (current != null && current.lvState() != RingWaiters.WAITING) {
            node = null;
            ring.waiters.propagate(ring); // after our claim's CAS, a full fence
        }
    }

    /**
     * The owner needs no room now (its buffer emptied by any route, it was cancelled, it finished, the mailbox
     * closed): a waiting registration is taken out of the queue; a woken one that was not used hands its wake-up
     * to the next waiter. Idempotent.
     */
    public void withdraw() {
        final RoomWaiter current = node;
        if (current != null) {
            node = null;
            if (!ring.waiters.leave(current)) {
                ring.waiters.handOn(); // woken and not used: the slot's wake-up goes to the next waiter
            }
        }
    }

    @Override
    public String toString() {
        final RoomWaiter current = node;
        return "RoomTicket[" + (current == null ? "none" : current.lvState() == RingWaiters.WAITING ? "waiting"
                : "woken") + "]";
    }
}
