package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * <b>Not API.</b> A wait for room that reserves on its owner's behalf: while the owner (a thread that sends only on
 * reservations it holds, such as the Kafka receiver's poll thread) is parked for room, the threads that free room
 * reserve it for the owner into {@code banked}, and the owner is woken only once {@code banked} covers the room it
 * asked for ({@code wanted}), not once per freed slot. A receive that frees one slot at a time thus costs the owner
 * a reservation and a queue node per slot instead of an unpark (a system call) and a turn per slot.
 *
 * <p>The owner's side, semantically similar to:
 * <pre>{@code
 * permits += reserve.takeBanked();                       // what turns reserved for us while we were away
 * if (permits < k) permits += ring.reserve(k - permits);
 * if (permits >= k) { reserve.end(); send k on permits; } // a registration still standing is void now
 * else if (reserve.awaitingRoom(k - permits)) park();     // woken once banked + permits >= k
 * ...
 * at the finish: reserve.end(); release(permits + reserve.takeBanked()); ring.close(); reserve.returnBanked();
 * }</pre>
 *
 * <h2>How a registration works</h2>
 * {@link #awaitingRoom(int)} makes a <em>registration</em> (one per wait, not per owner): a {@link Wakeable} with
 * its own {@link RoomTicket} in the mailbox's room queue. Each wake-up runs a <em>turn</em> on the waker's thread
 * (the consumer whose receive freed a slot, a permit holder releasing, the closer): it reserves what is free into
 * {@code banked}; if {@code banked} now covers {@code wanted}, it ends the registration and wakes the owner; else it
 * registers again and returns, leaving the owner parked. The owner runs the first turn itself (it reserves what is
 * free, or registers) and the one that ends the wait ({@link #end()}). A turn that lost the room it saw to a race
 * reserves again, at most {@link #ROUNDS} times, then wakes the owner anyway.
 *
 * <h2>The token rule: who wakes whom</h2>
 * A waker that takes the registration's queue node wakes it: the wake-up is a token for one freed slot (see
 * {@link RingWaiters}). The registration's turn, and nothing else, holds its ticket, and spends the token in
 * exactly one of three ways: on a reservation ({@link RoomTicket#claimed()}: the room went into {@code banked});
 * by registering again ({@link RoomTicket#await()}, at the head of the queue if its retry found no room); or by
 * handing it on when the wait is over ({@link RoomTicket#withdraw()}: a turn that wakes the owner, and the turn
 * that {@link #end()} runs). The owner never touches the ticket, so it cannot swallow a wake-up: an owner that gives
 * the wait up (it got the room by other means, it stops, the mailbox closed) calls {@link #end()}, whose turn
 * withdraws the registration and hands on a wake-up that came too late for it. The owner's own wake-up (the unpark)
 * carries no token and may come spuriously (a liveness timeout, a turn racing {@link #end()}): the owner re-checks.
 * Room a turn banks after the owner's last {@link #takeBanked()} stays banked for the next one; once the mailbox is
 * closed, {@link #returnBanked()} (by the owner, after the close) and the banking turn (which looks at the close
 * after its add) between them give every banked reservation back, so none leaks.
 *
 * <h2>The Dekker pair</h2>
 * {@code wanted} and {@code banked}: the owner stores {@code wanted} (volatile) and then loads {@code banked}; a
 * turn adds to {@code banked} (a full fence) and then loads {@code wanted}. Either the turn sees what the owner now
 * wants (and wakes it if {@code banked} covers it), or the owner sees what was banked and does not park. Below that,
 * the ticket's own pair ({@link RingWaiters}: a waiter counts itself, then re-checks the room; a waker publishes
 * room, fences, then reads the count) makes sure a registration that stands is woken by the next freed slot.
 * jcstress pins both ({@code RoomReserveStress}).
 *
 * <h2>Threads</h2>
 * One owner: {@link #awaitingRoom(int)}, {@link #takeBanked()} and {@link #end()} are the owner's, and serial.
 * {@link #returnBanked()} and the counters are any thread's. The turns of one registration are serial (a WIP
 * counter: the owner runs the first and the last, wakers those in between) and only a turn touches its ticket;
 * turns of an ended registration and of its successor may overlap (separate tickets, only {@code banked} shared).
 *
 * <h2>Progress</h2>
 * Lock-free: a turn is at most {@link #ROUNDS} reservations and registrations ({@link RoomTicket}'s progress); a
 * waker whose wake-up finds a turn running only increments the WIP counter, and the running turn goes round again.
 *
 * <h2>Visibility</h2>
 * A turn's reservation is published by its add to {@code banked}, which the owner's {@link #takeBanked()} reads
 * (getAndSet): room a turn reserved is the owner's to send on after it took it. The wake-up ({@code wakeUp}) comes
 * after the add and after {@code live} is cleared.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> the owner may be woken with less than {@code wanted} banked (the owner changed {@code wanted}, a
 * turn lost the room {@link #ROUNDS} times, the owner stopped running, the close), and a wake-up may come after
 * the owner stopped waiting. <b>Note:</b> a turn reserves all free room, not just {@code wanted}; {@code banked} may
 * exceed it.
 */
public final class RoomReserve {
    /** How many times a turn reserves again after losing its re-registration to a race, at most. */
    static final int ROUNDS = 4;

    private final MailboxRing<?> ring;
    /** What wakes the owner; must not block or throw. */
    private final Runnable wakeUp;
    /** Whether the owner still runs; a turn that sees false ends the registration and wakes the owner. */
    private final BooleanSupplier running;

    /** Reservations a turn took on the owner's behalf and the owner did not take yet. */
    private volatile int banked;
    private static final VarHandle BANKED;
    /** How many reservations the parked owner waits for; written by the owner before it parks, read by turns. */
    private volatile int wanted;
    /** The current registration, or null. Written by the owner. */
    private volatile Registration current;
    /** Turns that woke the owner on a wake-up (tests). */
    private volatile long wakeups;
    private static final VarHandle WAKEUPS;
    /** Turns on a wake-up that found less than {@code wanted} and left the owner parked (tests). */
    private volatile long declined;
    private static final VarHandle DECLINED;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            BANKED = lookup.findVarHandle(RoomReserve.class, "banked", int.class);
            WAKEUPS = lookup.findVarHandle(RoomReserve.class, "wakeups", long.class);
            DECLINED = lookup.findVarHandle(RoomReserve.class, "declined", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * @param ring the mailbox the owner sends into on reservations
     * @param wakeUp wakes the owner (an unpark); runs on a waker's thread. <b>WARNING:</b> must not block or throw
     * @param running whether the owner still runs (any thread reads it); once false, turns stop reserving
     */
    public RoomReserve(MailboxRing<?> ring, Runnable wakeUp, BooleanSupplier running) {
        this.ring = Objects.requireNonNull(ring, "ring");
        this.wakeUp = Objects.requireNonNull(wakeUp, "wakeUp");
        this.running = Objects.requireNonNull(running, "running");
    }

    /** @return a reserve whose wake-up unparks {@code owner} */
    public static RoomReserve unparking(MailboxRing<?> ring, Thread owner, BooleanSupplier running) {
        Objects.requireNonNull(owner, "owner");
        return new RoomReserve(ring, () -> LockSupport.unpark(owner), running);
    }

    /**
     * Before the owner parks for room: publishes how many reservations it waits for, and registers unless a live
     * registration stands (the owner woke for liveness, not for room: the registration it made stays, so a stalled
     * consumer does not grow the room queue). The first turn of a new registration runs here: it reserves what is
     * free, or registers. Owner.
     *
     * @param wanted reservations wanted beyond those the owner holds, {@code >= 1}
     * @return true if the owner may park: a live registration stands and will wake it once {@code banked} covers
     *         {@code wanted} (or the wait ends otherwise); false if the room is here (banked; take it) or the wait
     *         ended at once (the mailbox closed, the owner stopped running): do not park
     */
    public boolean awaitingRoom(int wanted) {
        if (wanted < 1) {
            throw new IllegalArgumentException("wanted: " + wanted + " (expected: >= 1)");
        }
        this.wanted = wanted; // volatile store, then the load of banked: pairs with a turn's add, then load
        if (lvBanked() >= wanted) {
            return false;
        }
        final Registration registration = current;
        if (registration != null && registration.live) {
            return true; // registered, not yet woken
        }
        final Registration fresh = new Registration();
        current = fresh;
        fresh.wake(); // the first turn, here: reserves what is free, or registers
        if (!fresh.live) {
            current = null; // the room is banked (or the wait is over): the owner takes it
            return false;
        }
        return true;
    }

    /**
     * Owner: takes what turns banked for it.
     *
     * @return the reservations taken, now the owner's (0 if none)
     */
    public int takeBanked() {
        return lvBanked() == 0 ? 0 : xchgBanked(0);
    }

    /**
     * Owner: it waits for room no more (it got the room itself, it stops). The registration, if any, is ended; its
     * turn withdraws the ticket and hands on a wake-up that came too late. Room a turn banks meanwhile stays in
     * {@code banked}. Idempotent.
     */
    public void end() {
        final Registration registration = current;
        if (registration != null) {
            current = null;
            registration.live = false;
            registration.wake(); // the turn sees live == false and withdraws its ticket
        }
    }

    /**
     * Once the mailbox is closed: gives what was banked and not taken back to the mailbox. With the close, this is
     * what guarantees that no banked reservation leaks: a turn that banks after it sees the close and returns what it
     * banked itself. Any thread.
     *
     * @throws IllegalStateException if the mailbox is not closed (a turn could still bank after this)
     */
    public void returnBanked() {
        if (!ring.isClosed()) {
            throw new IllegalStateException("returnBanked before the close: name=" + ring.name() + ", banked="
                    + lvBanked());
        }
        final int left = xchgBanked(0);
        if (left > 0) {
            ring.releaseReserved(left);
        }
    }

    /** @return reservations banked and not taken (tests, diagnostics) */
    public int banked() {
        return lvBanked();
    }

    /** @return what the owner last asked for in {@link #awaitingRoom(int)} (tests, diagnostics) */
    public int wanted() {
        return wanted;
    }

    /** @return whether a live registration stands (tests): the owner waits to be woken */
    public boolean awaiting() {
        final Registration registration = current;
        return registration != null && registration.live;
    }

    /** @return turns that woke the owner on a wake-up (tests) */
    public long wakeups() {
        return wakeups;
    }

    /** @return turns on a wake-up that found less than was wanted and left the owner parked (tests) */
    public long declined() {
        return declined;
    }

    private int lvBanked() {
        return banked;
    }

    private int xchgBanked(int update) {
        return (int) BANKED.getAndSet(this, update);
    }

    private void xaddBanked(int delta) {
        BANKED.getAndAdd(this, delta);
    }

    @Override
    public String toString() {
        return "RoomReserve[banked=" + banked + ", wanted=" + wanted + ", awaiting=" + awaiting() + ", wakeups="
                + wakeups + ", declined=" + declined + "]";
    }

    /** One wait's registration: its ticket and its serial turns (see the class comment). */
    private final class Registration implements Wakeable {
        /** Cleared when the wait ends: a turn woke the owner, or the owner ended it. */
        volatile boolean live = true;
        private final RoomTicket ticket = ring.roomTicket(this);
        /** Turns asked for and not yet run: the serial turns' WIP counter. */
        private volatile int wip;
        private static final VarHandle WIP;
        /** The owner's first turn has run (turn-confined): later turns are wake-ups, counted for tests. */
        private boolean started;

        static {
            try {
                WIP = MethodHandles.lookup().findVarHandle(Registration.class, "wip", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        @Override
        public void wake() {
            if ((int) WIP.getAndAdd(this, 1) != 0) {
                return; // the running turn goes round again
            }
            int missed = 1;
            do {
                turn();
                missed = (int) WIP.getAndAdd(this, -missed) - missed;
            } while (missed != 0);
        }

        private void turn() {
            final boolean wakeUpTurn = started; // the first turn is the owner's registration, not a wake-up
            started = true;
            if (!live) {
                ticket.withdraw(); // the wait is over: a wake-up that came too late goes to the next waiter
                return;
            }
            for (int round = 0; round < ROUNDS && running.getAsBoolean(); round++) {
                final int got = ring.reserve(ring.capacity());
                if (got > 0) {
                    ticket.claimed(); // the room a wake-up was for went into our reservation
                    xaddBanked(got);  // a full fence before the load of wanted: the Dekker pair
                    if (ring.isClosed()) {
                        returnBanked(); // the owner's returnBanked() after the close may have run before our add
                        break;
                    }
                }
                if (lvBanked() >= wanted) {
                    break; // enough: wake the owner
                }
                if (ticket.await()) {
                    if (wakeUpTurn) {
                        DECLINED.getAndAdd(RoomReserve.this, 1L);
                    }
                    return; // registered (again): the owner stays parked
                }
                // room appeared after our reservation (or the close): reserve it too
            }
            live = false;
            ticket.withdraw();
            if (wakeUpTurn) {
                WAKEUPS.getAndAdd(RoomReserve.this, 1L);
                wakeUp.run();
            }
        }
    }

}
