package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.WaitPolicy;

/*
 * The padded field chain (JCTools style): WaitersL0Pad -> WaitersFields -> WaitersL1Pad -> RingWaiters. The
 * fields are written only when someone waits (a consumer parks, a producer parks, a subscriber registers) and read
 * by every publish (consumerWaiter) and every receive batch (roomWaiting), so they get lines of their own, away from
 * the ring's producer and consumer lines.
 */

@SuppressWarnings("unused")
abstract class WaitersL0Pad {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b
}

abstract class WaitersFields extends WaitersL0Pad {
    /** The parked consumer: a {@link Thread} or a {@link Wakeable}; null when nobody waits for data. */
    private volatile Object consumerWaiter;
    private static final VarHandle CONSUMER_WAITER;
    /**
     * Room waiters queued and not yet woken or cancelled. Counted before a waiter is queued (the increment is the
     * waiter's fence) and after it leaves (by whoever moves it out of WAITING), so a waker that reads 0 after its own
     * fence knows every later waiter will see the room it made.
     */
    private volatile int roomWaiting;
    private static final VarHandle ROOM_WAITING;
    /** Producer threads parked for room now (stats only). */
    private volatile int parkedProducers;
    private static final VarHandle PARKED_PRODUCERS;
    /** Stack of wakeables to call once, on close. */
    private volatile WaiterNode closeListeners;
    private static final VarHandle CLOSE_LISTENERS;
    /** Stack of wakeables to call once, when the mailbox is closed and drained. */
    private volatile WaiterNode terminationListeners;
    private static final VarHandle TERMINATION_LISTENERS;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            CONSUMER_WAITER = lookup.findVarHandle(WaitersFields.class, "consumerWaiter", Object.class);
            ROOM_WAITING = lookup.findVarHandle(WaitersFields.class, "roomWaiting", int.class);
            PARKED_PRODUCERS = lookup.findVarHandle(WaitersFields.class, "parkedProducers", int.class);
            CLOSE_LISTENERS = lookup.findVarHandle(WaitersFields.class, "closeListeners", WaiterNode.class);
            TERMINATION_LISTENERS = lookup.findVarHandle(WaitersFields.class, "terminationListeners",
                    WaiterNode.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Object lvConsumerWaiter() {
        return CONSUMER_WAITER.getVolatile(this);
    }

    final void svConsumerWaiter(Object waiter) {
        CONSUMER_WAITER.setVolatile(this, waiter);
    }

    final boolean casConsumerWaiter(Object expect, Object update) {
        return CONSUMER_WAITER.compareAndSet(this, expect, update);
    }

    final Object xchgConsumerWaiter(Object update) {
        return CONSUMER_WAITER.getAndSet(this, update);
    }

    final int lvRoomWaiting() {
        return (int) ROOM_WAITING.getVolatile(this);
    }

    final void xaddRoomWaiting(int delta) {
        ROOM_WAITING.getAndAdd(this, delta);
    }

    final int lvParkedProducers() {
        return (int) PARKED_PRODUCERS.getVolatile(this);
    }

    final void xaddParkedProducers(int delta) {
        PARKED_PRODUCERS.getAndAdd(this, delta);
    }

    final WaiterNode xchgCloseListeners(WaiterNode update) {
        return (WaiterNode) CLOSE_LISTENERS.getAndSet(this, update);
    }

    final void pushCloseListener(Wakeable w) {
        push(CLOSE_LISTENERS, w);
    }

    final WaiterNode xchgTerminationListeners(WaiterNode update) {
        return (WaiterNode) TERMINATION_LISTENERS.getAndSet(this, update);
    }

    final WaiterNode lvTerminationListeners() {
        return (WaiterNode) TERMINATION_LISTENERS.getVolatile(this);
    }

    final void pushTerminationListener(Wakeable w) {
        push(TERMINATION_LISTENERS, w);
    }

    private void push(VarHandle stack, Wakeable w) {
        for (;;) {
            final WaiterNode head = (WaiterNode) stack.getVolatile(this);
            if (stack.compareAndSet(this, head, new WaiterNode(w, head))) {
                return;
            }
        }
    }
}

@SuppressWarnings("unused")
abstract class WaitersL1Pad extends WaitersFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b
}

/**
 * The waiting protocol of one {@link MailboxRing}: who waits for what, and who wakes whom. The ring keeps the claim
 * protocol; everything that parks, spins, yields or registers a wake-up goes through here (the Disruptor's
 * {@code WaitStrategy} held by its sequencer is the model).
 *
 * <h2>The three waits</h2>
 * <ul>
 *     <li><b>The consumer waits for data</b> ({@link #awaitData(MailboxRing, long)}, {@link #awaitData(MailboxRing,
 *     Wakeable)}): one waiter at most, in {@code consumerWaiter}; a producer's {@link #signalConsumer()} after each
 *     publish takes it (CAS to null) and wakes it. Dekker pair: the consumer stores itself (volatile) and then reads
 *     the producer word; the producer's claim CAS comes before its read of {@code consumerWaiter}. Either the
 *     consumer sees the claim, or the producer sees the consumer.</li>
 *     <li><b>Producers wait for room</b> ({@link #parkForRoom} for a parked thread, {@link RoomTicket} for a
 *     waiter that is a callback): a FIFO queue ({@link ConcurrentLinkedDeque}, lock-free) of {@link RoomWaiter}
 *     nodes, one per attempt, each WAITING, then WOKEN (by a waker) or CANCELLED (withdrawn by its waiter) exactly
 *     once: a CAS decides. A waker that made {@code k} slots of room wakes the first {@code k} WAITING nodes, not
 *     all ({@link #wakeRoom(int)}); a close wakes all. Dekker pair: a waiter counts itself in {@code roomWaiting}
 *     (an atomic add: a full fence), queues its node, then re-checks the room; a waker publishes the room (the
 *     consumer index, or a permit release), then a full fence, then reads {@code roomWaiting}. Either the waker
 *     sees the waiter (and, the node being queued before the waiter's re-check, finds it in the queue), or the
 *     waiter's re-check sees the room.</li>
 *     <li><b>Listeners wait for the close</b> ({@link #onClose}): a stack, drained whole by the close.</li>
 * </ul>
 *
 * <h2>The token rule: every room wake-up is used or handed on</h2>
 * A waker counts a wake-up as spent once it has moved a node from WAITING to WOKEN, so the wake-up is a token for
 * one freed slot that now belongs to the woken waiter. A woken waiter does exactly one of three things:
 * <ol>
 *     <li><b>claims</b>: the token is spent; if room is left and others wait, it wakes the next one
 *     ({@link #propagate}: the room a batch freed may outnumber the waiters woken for it);</li>
 *     <li><b>finds the mailbox full again</b>: a sender that never waited took the slot (barging), so nothing is
 *     stranded; it queues again at the <b>head</b>, keeping its place;</li>
 *     <li><b>gives up</b> (timed out, interrupted, cancelled, no longer has anything to send): it hands the token on
 *     ({@link #handOn()}).</li>
 * </ol>
 * A waiter that is still WAITING when it gives up withdraws its node (CANCELLED): no waker counts it. The rule is
 * enforced where the waiting happens, not by each caller: a parked thread keeps it inside {@link #parkForRoom} and
 * its callers' claim loops; a callback keeps it through its {@link RoomTicket}, whose three methods are the three
 * outcomes and which a callback cannot bypass (the queue is reachable only through a ticket). A registration that
 * outlives its need is withdrawn by the ticket's {@link RoomTicket#withdraw()}, which hands the token on if it was
 * already woken.
 *
 * <h2>Fairness</h2>
 * Room waiters are woken in the order they queued, and a woken waiter that lost its slot keeps its place at the
 * head, so a waiter is never overtaken by one that queued after it. It can still lose to senders that never waited
 * (they claim without queueing: barging, as with a non-fair lock), which keeps the fast path free of any queue.
 *
 * <h2>Back-off</h2>
 * Every spin and yield of the library is a {@link WaitPolicy} step: the consumer's policy (set by the builder),
 * {@link #SEND_POLICY} for a producer before it queues, and {@link Backoff#idleAlways(int)} while a producer is
 * between its claim and its publish.
 */
public final class RingWaiters extends WaitersL1Pad {
    /**
     * A send on a full mailbox: spins, then yields, before it queues. The yields matter for a consumer that receives
     * one message at a time: each receive frees one slot, and a producer that parked at once would pay a park/unpark
     * round trip per message.
     */
    public static final WaitPolicy SEND_POLICY = WaitPolicy.backoff(64, 64);
    /** Steps of {@link #linger} between two looks at the close state and the cancel flag. */
    static final int LINGER_CHECK_STEPS = 16;

    /** A node's state: queued, not yet woken. */
    static final int WAITING = 0;
    /** A node's state: taken by a waker, which wakes its waiter. */
    static final int WOKEN = 1;
    /** A node's state: given up by its waiter (timeout, interrupt, room found on the re-check). */
    static final int CANCELLED = 2;

    /** A queued room waiter: a parked {@link Thread} or a {@link Wakeable}. */
    static final class RoomWaiter {
        final Object waiter;
        private volatile int state;
        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(RoomWaiter.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        RoomWaiter(Object waiter) {
            this.waiter = waiter;
        }

        int lvState() {
            return state;
        }

        boolean casState(int expect, int update) {
            return STATE.compareAndSet(this, expect, update);
        }
    }

    private final ConcurrentLinkedDeque<RoomWaiter> roomQueue = new ConcurrentLinkedDeque<>();
    /** How the consumer backs off on an empty mailbox before it parks; set before the mailbox is shared. */
    private volatile WaitPolicy consumerPolicy = WaitPolicy.defaults();

    RingWaiters() {
    }

    // ------------------------------------------------------------------ the consumer waits for data

    /** @return how the consumer backs off before it parks */
    WaitPolicy consumerPolicy() {
        return consumerPolicy;
    }

    void consumerPolicy(WaitPolicy policy) {
        this.consumerPolicy = Objects.requireNonNull(policy, "policy");
    }

    /** @return whether the consumer is parked or registered for data (stats) */
    boolean consumerWaiting() {
        return lvConsumerWaiter() != null;
    }

    /** Wakes the consumer if it waits for data; producers call it after each publish. */
    void signalConsumer() {
        // NOTE: a read of a line that changes only when the consumer parks: cheap while it is busy.
        final Object waiter = lvConsumerWaiter();
        if (waiter != null) {
            if (waiter instanceof StandingWaiter) {
                ((StandingWaiter) waiter).owner.wake(); // stays registered: see awaitDataStanding
            } else if (casConsumerWaiter(waiter, null)) {
                WaiterNode.wake(waiter);
            }
        }
    }

    /**
     * Parks the consumer until the slot at its index is published, the mailbox is closed and drained, or the
     * deadline passes: the consumer's policy first, then a yield while a send is in flight, else a park.
     *
     * @return false only if the deadline passed
     */
    <E> boolean awaitData(RingReceiver<E> ring, long deadline) throws InterruptedException {
        final long cIndex = ring.lpConsumerIndex();
        final WaitPolicy policy = consumerPolicy;
        for (int step = 0; ; ) {
            if (ring.isPublished(cIndex)) {
                return true;
            }
            // NOTE: while backing off we read the slot we wait for, and the close state only every CLOSE_CHECK_STEPS
            // steps; never the producer word. Every read of a line a producer writes makes its next write fetch the
            // line back: a cross-core round trip per message when the two threads run in step.
            if ((step & (MailboxRing.CLOSE_CHECK_STEPS - 1)) == 0 && ring.closing() && ring.endOfStreamAt(cIndex)) {
                return true;
            }
            if (step >= 0 && Backoff.idle(policy, step)) {
                step++;
                continue;
            }
            step = -1; // the back-off is spent: from now on, yield while a send is in flight, else park
            final long word = ring.lvProducerIndex();
            final long index = MailboxRing.indexOf(word);
            if (index == cIndex && MailboxRing.isClosed(word)) {
                return true;
            }
            if (index != cIndex) {
                // NOTE: a producer is between its claim and its publish. It publishes without waiting for anyone,
                // so we yield instead of parking.
                Backoff.idleAlways(Integer.MAX_VALUE);
                continue;
            }
            long remaining = 0L;
            if (deadline != MailboxRing.NO_DEADLINE && (remaining = deadline - System.nanoTime()) <= 0L) {
                return false;
            }
            final Thread self = Thread.currentThread();
            // Volatile store, then a fresh read of the producer word: pairs with the claim CAS followed by
            // lvConsumerWaiter() in signalConsumer(). Either the producer sees us or we see its claim.
            svConsumerWaiter(self);
            final long again = ring.lvProducerIndex();
            if (MailboxRing.indexOf(again) == cIndex && !MailboxRing.isClosed(again)) {
                ring.countConsumerPark();
                if (deadline == MailboxRing.NO_DEADLINE) {
                    LockSupport.park(ring);
                } else {
                    LockSupport.parkNanos(ring, remaining);
                }
            }
            casConsumerWaiter(self, null);
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
    }

    /**
     * Backs off as {@code policy} says until the slot at the consumer index is published, the mailbox is closing,
     * {@code role} is cancelled, or the back-off is spent. Reads only the slot and the read-mostly close state.
     *
     * @return true if a message (or the close) arrived; false if the back-off was spent or the role cancelled
     */
    <E> boolean idleUntilData(RingReceiver<E> ring, WaitPolicy policy, ConsumerRole role) {
        final long cIndex = ring.lpConsumerIndex();
        for (int step = 0; ; step++) {
            if (ring.isPublished(cIndex)) {
                return true;
            }
            if ((step & (MailboxRing.CLOSE_CHECK_STEPS - 1)) == 0 && ring.closing()) {
                return true; // see awaitData(ring, long): the close state is looked at only every few steps
            }
            if ((role != null && role.isCancelled()) || !Backoff.idle(policy, step)) {
                return false;
            }
        }
    }

    /** The longest pause of {@link #busyStep}, in nanoseconds. */
    static final long BUSY_STEP_MAX_NANOS = 1_000L;

    /**
     * One step of a wait that ends by itself soon (a producer between its claim and its publish, which publishes
     * without waiting for anyone; a lock held for a bounded step) on a thread the library does not own: the
     * scheduler workers and signalling threads that drains and fused polls run on. It reads the clock until a pause
     * has passed that grows with {@code step} (32 ns per step, at most {@link #BUSY_STEP_MAX_NANOS}), so the caller's
     * re-check of the shared word is paced rather than hammering the line its producer needs. No
     * {@link Thread#onSpinWait()} and no {@link Thread#yield()}: BlockHound reports both on Reactor's non-blocking
     * threads and its default callback throws from them; reactor-core's own queues wait for an in-flight producer
     * with a plain re-read loop the same way. On the library's own waits (a thread blocked in {@code recv} or
     * {@code send}) {@link Backoff#idleAlways(int)} yields instead.
     *
     * @param step how many steps this wait has taken so far
     */
    public static void busyStep(int step) {
        final long pause = Math.min(32L * (step + 1L), BUSY_STEP_MAX_NANOS);
        final long start = System.nanoTime();
        while (System.nanoTime() - start < pause) {
            // the clock paces the loop: see above
        }
    }

    /**
     * A consumer's bounded linger on a thread it borrows (a scheduler's worker): polls the slot at the consumer index
     * until it is published, the mailbox is closing, {@code role} is cancelled, or {@code maxNanos} have passed. Reads
     * the slot and the clock each step and, every {@link #LINGER_CHECK_STEPS} steps, the read-mostly close state and
     * the cancel flag; never the producer word. The caller decides whether a linger is worth it and how long it may
     * be (a budget earned by the messages it delivered: see {@code MailboxFluxSubscription}); this method keeps to
     * the bound.
     *
     * <p>No {@link Thread#onSpinWait()} and no {@link Thread#yield()}: BlockHound reports both as blocking calls on
     * Reactor's non-blocking threads, where this runs. The clock read between two looks at the slot (a vDSO call,
     * ~20 ns) paces the loop instead.
     *
     * @return the nanoseconds spent (at most {@code maxNanos} and one step more)
     */
    <E> long linger(RingReceiver<E> ring, long maxNanos, ConsumerRole role) {
        final long cIndex = ring.lpConsumerIndex();
        final long start = System.nanoTime();
        for (int step = 1; ; step++) {
            final long spent = System.nanoTime() - start;
            if (ring.isPublished(cIndex) || spent >= maxNanos) {
                return spent;
            }
            if ((step & (LINGER_CHECK_STEPS - 1)) == 0 && (ring.closing() || (role != null && role.isCancelled()))) {
                return spent;
            }
        }
    }

    /**
     * Registers {@code w} to be woken once when a message may be present or the mailbox closes.
     *
     * @return false if a message is present (or in flight) or the mailbox is closed already: drain again now
     */
    <E> boolean awaitData(RingReceiver<E> ring, Wakeable w) {
        final boolean renewal = lvConsumerWaiter() == Objects.requireNonNull(w, "w"); // the same wait, asked again
        return register(ring, w, !renewal);
    }

    /**
     * Stores {@code w} as the consumer's data waiter, then re-reads the producer word (pairs with
     * {@link #signalConsumer()}, as in {@code awaitData(ring, long)}): withdraws it and answers false if a message
     * is present or in flight, or the mailbox is closed.
     */
    private <E> boolean register(RingReceiver<E> ring, Object w, boolean countPark) {
        svConsumerWaiter(w);
        final long word = ring.lvProducerIndex();
        if (MailboxRing.indexOf(word) != ring.lvConsumerIndex() || MailboxRing.isClosed(word)) {
            casConsumerWaiter(w, null);
            return false;
        }
        if (countPark) {
            ring.countConsumerPark();
        }
        return true;
    }

    /**
     * A data registration that stays until it is withdrawn ({@link #cancelAwaitData}) or a close takes it: every
     * publish wakes its owner, none clears it. For a trampolined drain ({@code MailboxDrain} without an executor),
     * whose {@code wake()} is a counter increment that runs the drain inline when it is idle: re-registering after
     * every pass would cost it two fenced writes per message (the producer's CAS that takes the registration and the
     * drain's volatile store that renews it), where a standing one costs nothing once made. Allocated once per drain.
     */
    public static final class StandingWaiter {
        final Wakeable owner;

        /** @param owner what every publish wakes while this registration stands */
        public StandingWaiter(Wakeable owner) {
            this.owner = Objects.requireNonNull(owner, "owner");
        }
    }

    /**
     * As {@link #awaitData(RingReceiver, Wakeable)} with a registration that stays ({@link StandingWaiter}).
     * Renewing one that is still in place costs a plain read and returns true: since its store, which was followed
     * by a re-check of the producer word, it has stayed in {@code consumerWaiter} (only its owner stores it; a close or
     * a withdrawal that cleared it makes the comparison fail), so every claim the re-check did not see was made after
     * the store and is followed, in its producer, by a read of {@code consumerWaiter} that finds it and wakes the owner.
     *
     * @return false if a message is present (or in flight) or the mailbox is closed: drain again now
     */
    <E> boolean awaitDataStanding(RingReceiver<E> ring, StandingWaiter w) {
        return lvConsumerWaiter() == w || register(ring, w, true); // still in place: see above
    }

    /** Withdraws a registration made by {@link #awaitData(MailboxRing, Wakeable)}, if it has not fired. */
    void cancelAwaitData(Object w) {
        if (lvConsumerWaiter() == w) {
            casConsumerWaiter(w, null);
        }
    }

    // ------------------------------------------------------------------ producers wait for room

    /** @return producer threads parked for room now */
    int parkedProducers() {
        return lvParkedProducers();
    }

    /**
     * One step of a producer's wait for room: a {@link #SEND_POLICY} back-off step while the budget lasts, then a
     * park in the room queue until woken, the deadline, an interrupt, or the close. The caller retries its claim
     * after each call.
     *
     * @param step how many times this send has waited so far (0-based)
     * @param wokenBefore whether an earlier call of this send was woken (its retry lost the room): it queues at the
     *        head, keeping its place
     * @return {@link #RETRY}, {@link #RETRY_WOKEN} (woken by a waker: the caller's next wait passes
     *         {@code wokenBefore}) or {@link #TIMED_OUT}
     * @throws InterruptedException if interrupted while parked (a wake-up it got is handed on)
     */
    <E> int parkForRoom(MailboxRing<E> ring, int step, boolean wokenBefore, long deadline)
            throws InterruptedException {
        long remaining = 0L;
        if (deadline != MailboxRing.NO_DEADLINE && (remaining = deadline - System.nanoTime()) <= 0L) {
            return TIMED_OUT;
        }
        if (Backoff.idle(SEND_POLICY, step)) {
            return RETRY;
        }
        final RoomWaiter node = new RoomWaiter(Thread.currentThread());
        enqueue(node, wokenBefore);
        // The add in enqueue() is a full fence: the re-check below reads the consumer index and permits after our
        // node is counted. Pairs with the fence in wakeRoomAfterFence()'s callers.
        if (!ring.isFullForSend()) {
            return leave(node) ? RETRY : RETRY_WOKEN; // room (or the close) appeared: retry now
        }
        xaddParkedProducers(1);
        ring.countProducerPark();
        final Object parkEvent = MailboxEvents.producerParking(); // JFR ProducerParked; null unless recorded
        boolean interrupted = false;
        try {
            while (node.lvState() == WAITING) {
                if (deadline == MailboxRing.NO_DEADLINE) {
                    LockSupport.park(ring);
                } else {
                    if ((remaining = deadline - System.nanoTime()) <= 0L) {
                        break;
                    }
                    LockSupport.parkNanos(ring, remaining);
                }
                if (Thread.interrupted()) {
                    interrupted = true;
                    break;
                }
            }
        } finally {
            xaddParkedProducers(-1);
            MailboxEvents.producerParked(parkEvent, ring);
        }
        // Out of the loop: woken, timed out or interrupted (a spurious unpark parks again).
        final boolean woken = !leave(node);
        if (interrupted) {
            if (woken) {
                handOn(); // we give up a wake-up meant for a slot: hand it on, so none is lost
            }
            throw new InterruptedException();
        }
        // A wake-up racing the timeout is used, not handed on: the caller claims once more before it times out.
        return woken ? RETRY_WOKEN : TIMED_OUT;
    }

    /** {@link #parkForRoom} result: claim again. */
    static final int RETRY = 0;
    /** {@link #parkForRoom} result: claim again; this waiter was woken for a slot. */
    static final int RETRY_WOKEN = 1;
    /** {@link #parkForRoom} result: the deadline passed. */
    static final int TIMED_OUT = 2;

    /** Counts {@code node} in, then queues it at the head (a woken waiter keeping its place) or the tail. */
    void enqueue(RoomWaiter node, boolean head) {
        xaddRoomWaiting(1); // before the node is visible: a waker that sees it in the queue has counted it
        if (head) {
            roomQueue.offerFirst(node);
        } else {
            roomQueue.offerLast(node);
        }
    }

    /**
     * Takes {@code node} out of WAITING for its own waiter.
     *
     * @return true if it was still waiting (now cancelled and unqueued); false if a waker took it first (woken)
     */
    boolean leave(RoomWaiter node) {
        if (node.casState(WAITING, CANCELLED)) {
            xaddRoomWaiting(-1);
            roomQueue.removeFirstOccurrence(node);
            return true;
        }
        return false;
    }

    /** @return whether a room waiter may be queued; read after the caller's full fence */
    boolean mayHaveRoomWaiters() {
        return lvRoomWaiting() != 0;
    }

    /**
     * Wakes up to {@code k} room waiters, oldest first. The caller made {@code k} slots of room and then issued a
     * full fence (see the class comment). Any thread.
     */
    void wakeRoom(int k) {
        while (k > 0 && lvRoomWaiting() != 0) {
            final RoomWaiter node = roomQueue.pollFirst();
            if (node == null) {
                return; // counted but not queued yet: its re-check comes after our fence and sees the room
            }
            if (node.casState(WAITING, WOKEN)) {
                xaddRoomWaiting(-1);
                WaiterNode.wake(node.waiter); // the token is the waiter's now: it claims, queues again or hands on
                k--;
            }
            // else withdrawn by its waiter, which unqueues it and does not count for k
        }
    }

    /**
     * A woken waiter gives up its token without claiming (timed out, interrupted, withdrawn, no longer needing
     * room): the wake-up goes to the next waiter, so the slot it was meant for is not stranded. Any thread.
     */
    void handOn() {
        wakeRoom(1);
    }

    /** Wakes every room waiter: the mailbox closed. */
    void wakeAllRoom() {
        RoomWaiter node;
        while ((node = roomQueue.pollFirst()) != null) {
            if (node.casState(WAITING, WOKEN)) {
                xaddRoomWaiting(-1);
                WaiterNode.wake(node.waiter);
            }
        }
    }

    /**
     * A woken producer got its slot: if room is left and others wait, wake the next one, so a batch's room is not
     * stranded behind waiters that were cancelled after the waker counted them.
     */
    <E> void propagate(MailboxRing<E> ring) {
        // our claim CAS was a full fence: this read is after it
        if (lvRoomWaiting() != 0 && !ring.isFullForSend()) {
            wakeRoom(1);
        }
    }

    // ------------------------------------------------------------------ the close

    /** Registers {@code w} to be woken once when the mailbox closes (at once if it is closed). */
    <E> void onClose(MailboxRing<E> ring, Wakeable w) {
        pushCloseListener(Objects.requireNonNull(w, "w"));
        if (ring.isClosed()) {
            WaiterNode.wakeAll(xchgCloseListeners(null));
        }
    }

    /**
     * Registers {@code w} to be woken once when the mailbox is closed and drained (at once if it is). The close
     * and the consumer's receives after it both look: the closer after its CAS of the closed bit (a full fence)
     * reads the consumer index; the consumer after its receive's fence reads the close state, which is set before
     * that bit. Either the closer sees the last receive, or that receive sees the close.
     */
    <E> void onTerminated(RingReceiver<E> ring, Wakeable w) {
        pushTerminationListener(Objects.requireNonNull(w, "w"));
        if (ring.isTerminated()) {
            WaiterNode.wakeAll(xchgTerminationListeners(null));
        }
    }

    /** Wakes the termination listeners if the mailbox is closed and drained; after a fence. */
    <E> void wakeIfTerminated(RingReceiver<E> ring) {
        if (lvTerminationListeners() != null && ring.isTerminated()) {
            WaiterNode.wakeAll(xchgTerminationListeners(null));
        }
    }

    /** Wakes everyone: the consumer, every room waiter, every close listener. After the CLOSED bit is set. */
    void wakeAllOnClose() {
        final Object consumer = xchgConsumerWaiter(null);
        if (consumer != null) {
            WaiterNode.wake(consumer);
        }
        wakeAllRoom();
        WaiterNode.wakeAll(xchgCloseListeners(null));
    }
}
