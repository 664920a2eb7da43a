package dev.mighty.mailbox.internal;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.SendResult;

/**
 * <b>Not API</b>: public because the adapters in other packages drive it; the module does not export this package.
 *
 * <p>The bounded ring behind every {@link Mailbox}: the claim protocol (the producer word, single, batched and
 * reserved claims, close). Its superclass {@link RingReceiver} is the receive half; the waiting protocol is
 * {@link RingWaiters}, the field chain {@code RingFields}, the batched and reserved claims {@link RunClaim} and
 * {@link RingReservations}. Subclasses supply the slot storage ({@link #publishQuiet}, {@link #poll},
 * {@link #isPublished}).
 *
 * <p>The claiming algorithm is the JCTools {@code MpscArrayQueue} one (CAS on the producer index, a cached
 * producer limit so producers rarely read the consumer's cache line, a release store per slot), with
 * three state bits folded into the producer word so that one CAS validates everything a send depends on:
 * <pre>
 *   63                                   7 6            1   0
 *  +--------------------------------------+--------------+---+
 *  |               slot index             | reserve epoch| C |   C = closed
 *  +--------------------------------------+--------------+---+
 * </pre>
 *
 * <h2>Threads</h2>
 * Any thread may call the send side ({@link #trySend}, {@link #send}, {@link #trySendMany(List, int, int)},
 * {@link #sendMany(List, int, int)}, {@link #reserve},
 * {@link #sendReserved}, {@link #releaseReserved}), {@link #close()}, {@link #closeExceptionally} and the
 * read-only methods. The receive side ({@link #poll}, {@link #tryRecv}, {@link #recv}, {@link #tryRecvMany},
 * {@link #recvMany}, {@link #afterReceive}, {@link #awaitData(Wakeable)}) belongs to one consumer at a time.
 *
 * <h2>Progress</h2>
 * Claims are lock-free: a CAS fails only because another producer claimed, a reservation was granted or
 * the mailbox closed. A batched send ({@link RunClaim}) claims its run, as much of it as fits, with one CAS: a
 * run is admitted whole before a close or refused whole after it, contiguous in the ring. The consumer's
 * receive is wait-free while a slot is published; a receive that finds
 * a slot claimed but not yet published spins (yielding) until its producer publishes, as JCTools'
 * {@code poll} does. Blocking methods back off as a {@link dev.mighty.mailbox.WaitPolicy} says, then park in
 * {@link RingWaiters}' queue (a producer) or its consumer slot (the consumer).
 *
 * <h2>Visibility</h2>
 * A producer's writes to a slot happen-before the consumer's read of it: the slot's publication is a
 * release store paired with the consumer's acquire load ({@code isPublished}/{@code poll}). The consumer
 * frees a slot with plain stores followed by the release store of {@code consumerIndex}, paired with the
 * producers' acquire of {@code consumerIndex} when they refresh {@code producerLimit}; so a producer
 * never writes a slot the consumer is still reading.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> "full" is {@code occupied + reserved >= capacity}, and the reserved count includes a
 * reserved send that has claimed its slot but not yet returned its permit, so a send may be refused
 * while {@code size() < capacity()}. {@link #size()} counts claimed slots, including ones whose producer
 * has not yet published.
 *
 * @param <E> the message type
 */
public abstract class MailboxRing<E> extends RingReceiver<E> {
    /** Largest capacity: 2^30. */
    public static final int MAX_CAPACITY = 1 << 30;
    /** {@link #claim()} result: no room. */
    public static final long CLAIM_FULL = -1L;
    /** {@link #claim()} result: the mailbox is closed. */
    public static final long CLAIM_CLOSED = -2L;

    static final long EPOCH_ONE = 2L;
    static final long EPOCH_MASK = 0x7EL;
    /** The close state of a normal close. */
    static final Object NORMAL_CLOSE = new Object();

    private static volatile RingAccess access;

    @SuppressWarnings("this-escape") // the registry reads only fields the superclass constructors have set
    protected MailboxRing(int capacity, boolean singleProducer, String name) {
        super(checkCapacity(capacity), singleProducer, Objects.requireNonNull(name, "name"));
        MailboxEvents.register(this); // weakly, for the JFR consumer-stall check: see MailboxEvents.MODE
    }

    /** How {@link #of} reaches the ring of a mailbox that wraps one instead of being one. */
    public interface RingAccess {
        /** @return the ring behind {@code mailbox} */
        MailboxRing<?> ring(Mailbox<?> mailbox);
    }

    /** Installed once by the mailbox package (the JDK's SharedSecrets pattern). */
    public static void installAccess(RingAccess ringAccess) {
        access = ringAccess;
    }

    /**
     * @return the ring behind {@code mailbox}; every {@code Mailbox} has one (the interface is sealed)
     */
    @SuppressWarnings("unchecked")
    public static <T> MailboxRing<T> of(Mailbox<T> mailbox) {
        Objects.requireNonNull(mailbox, "mailbox");
        if (mailbox instanceof MailboxRing) {
            return (MailboxRing<T>) mailbox;
        }
        return (MailboxRing<T>) access.ring(mailbox);
    }

    /**
     * @return {@code capacity} rounded up to a power of two
     * @throws IllegalArgumentException unless {@code 1 <= capacity <= 2^30}
     */
    public static int checkCapacity(int capacity) {
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity: " + capacity + " (expected: 1 .. " + MAX_CAPACITY + ")");
        }
        return capacity == 1 ? 1 : Integer.highestOneBit(capacity - 1) << 1;
    }

    // ------------------------------------------------------------------ slot storage (subclasses)

    /** Checks a message before anything is claimed; throws on bad input. Any thread. */
    protected abstract void validate(E msg);

    /**
     * Writes {@code msg} into the claimed slot {@code index} and publishes it (release), without waking the
     * consumer: the caller does ({@link #publishClaimed} for a single send, once per run for a batched send). May
     * throw only before its release store. Producer.
     */
    protected abstract void publishQuiet(long index, E msg);

    /**
     * Publishes {@code msg} into the claimed slot {@code index} and wakes the consumer: every single send goes
     * through here. No hole survives a throw: if the write throws (an {@code OutOfMemoryError} from a spill buffer, a
     * payload whose memory went away under the copy), the slot becomes a placeholder the consumer skips, the consumer
     * is woken as for a message, and the throw goes on to the caller, whose message was not admitted. Without it
     * the consumer would wait for that slot forever, and every later message, the close and the end of stream
     * behind it. Producer.
     */
    protected final void publishClaimed(long index, E msg) {
        try {
            publishQuiet(index, msg);
        } catch (Throwable t) {
            publishSkip(index); // wakes the consumer itself
            throw t;
        }
        signalConsumer();
    }

    /**
     * Publishes a placeholder into the claimed slot {@code index}: {@link #poll()} frees it and moves on without
     * returning it. Used by {@link #reserve} to reset a saturated epoch (at most once per 63 grants without a
     * send), so {@link #admitted()} and {@link #received()} count these rare slots too.
     */
    protected abstract void publishSkip(long index);

    // ------------------------------------------------------------------ producer side

    /**
     * Claims the next slot for an unreserved send. Any thread.
     *
     * @return the slot index, {@link #CLAIM_FULL} or {@link #CLAIM_CLOSED}
     */
    protected final long claim() {
        final int capacity = this.capacity;
        long limit = lvProducerLimit();
        for (;;) {
            final long word = lvProducerIndex();
            if ((word & CLOSED) != 0) {
                return CLAIM_CLOSED;
            }
            final long index = word >>> INDEX_SHIFT;
            // NOTE: 'reserved' is read after 'word'. reserve() raises 'reserved' before it bumps the epoch in the
            // word, so either this read sees the new reservation or the CAS below fails and we read again.
            // NOTE: clamped at 0: a caller that spends permits it does not hold (an upstream breaking §1.3 into a
            // MailboxSubscriber) can drive 'reserved' below 0, and must not make us claim past the capacity.
            final long wanted = index + Math.max(0L, lvReserved());
            if (wanted >= limit) {
                // pairs with soConsumerIndex in poll(): the slot we may claim has been freed by the consumer
                final long cIndex = lvConsumerIndex();
                limit = cIndex + capacity;
                sampleOccupancy(index - cIndex);
                if (wanted >= limit) {
                    return CLAIM_FULL;
                }
                // NOTE: racing producers may store an older (smaller) limit over a newer one: only conservative.
                soProducerLimit(limit);
            }
            if (casProducerIndex(word, (index + 1) << INDEX_SHIFT)) {
                return index;
            }
        }
    }

    /**
     * Sends without waiting.
     *
     * @return false if full
     * @throws MailboxClosedException if closed
     */
    public final boolean trySend(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        final long index = claim();
        if (index < 0) {
            return refused(index, "trySend");
        }
        publishClaimed(index, msg);
        return true;
    }

    /**
     * As {@link #trySend}, answering instead of throwing: one claim, one publish, no allocation. Any thread.
     *
     * @return {@code OK}, {@code FULL} (counted as refused) or {@code CLOSED} (counted as rejected closed)
     */
    public final SendResult offer(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        final long index = claim();
        if (index >= 0) {
            publishClaimed(index, msg);
            return SendResult.OK;
        }
        if (index == CLAIM_CLOSED) {
            xaddRejectedClosed(1L);
            return SendResult.CLOSED;
        }
        countRefused();
        return SendResult.FULL;
    }

    /**
     * As {@link #trySend}, for an adapter that keeps a refused message and retries: counts nothing and throws nothing
     * for a full or closed mailbox. Any thread.
     *
     * @return the slot index the message was published at (&ge; 0), {@link #CLAIM_FULL} or {@link #CLAIM_CLOSED}
     * @throws NullPointerException if {@code msg} is null
     * @throws IllegalArgumentException if the mailbox rejects {@code msg} (nothing is claimed)
     */
    public final long trySendQuiet(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        final long index = claim();
        if (index >= 0L) {
            publishClaimed(index, msg);
        }
        return index;
    }

    /** Counts {@code n} messages an adapter held and could not admit because the mailbox closed. Any thread. */
    public final void countRejectedClosed(long n) {
        xaddRejectedClosed(n);
    }

    /** Sends, parking while full. */
    public final void send(E msg) throws InterruptedException {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        publishClaimed(claimBlocking(NO_DEADLINE, "send"), msg);
    }

    /** Sends, parking at most {@code timeout} while full; false on timeout. */
    public final boolean send(E msg, Duration timeout) throws InterruptedException {
        Objects.requireNonNull(msg, "msg");
        final long deadline = deadline(timeout);
        validate(msg);
        final long index = claimBlocking(deadline, "send");
        if (index < 0) {
            return false;
        }
        publishClaimed(index, msg);
        return true;
    }

    // ------------------------------------------------------------------ batched send (runs: see RunClaim)

    /** {@link Mailbox#trySendMany(List, int, int)}: one claim of as much of the run as fits. Any thread. */
    public final int trySendMany(List<? extends E> batch, int from, int to) {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return n == 0 ? 0 : RunClaim.trySendRun(this, batch, null, null, from, n);
    }

    /** {@link Mailbox#trySendMany(Object[], int, int)}. Any thread. */
    public final int trySendMany(E[] batch, int from, int to) {
        final int n = RunClaim.checkRun(this, null, batch, from, to);
        return n == 0 ? 0 : RunClaim.trySendRun(this, null, batch, null, from, n);
    }

    /** {@link Mailbox#sendMany(List, int, int)}: claims runs, waiting for room, until all is in. Any thread. */
    public final int sendMany(List<? extends E> batch, int from, int to) throws InterruptedException {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return RunClaim.sendRunBlocking(this, batch, null, null, from, n, NO_DEADLINE);
    }

    /** {@link Mailbox#sendMany(Object[], int, int)}. Any thread. */
    public final int sendMany(E[] batch, int from, int to) throws InterruptedException {
        final int n = RunClaim.checkRun(this, null, batch, from, to);
        return RunClaim.sendRunBlocking(this, null, batch, null, from, n, NO_DEADLINE);
    }

    /** {@link Mailbox#sendMany(List, int, int, Duration)}: as above, waiting at most {@code timeout} in all. */
    public final int sendMany(List<? extends E> batch, int from, int to, Duration timeout)
            throws InterruptedException {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return RunClaim.sendRunBlocking(this, batch, null, null, from, n, deadline(timeout));
    }

    /** {@link Mailbox#sendMany(Object[], int, int, Duration)}. Any thread. */
    public final int sendMany(E[] batch, int from, int to, Duration timeout) throws InterruptedException {
        final int n = RunClaim.checkRun(this, null, batch, from, to);
        return RunClaim.sendRunBlocking(this, null, batch, null, from, n, deadline(timeout));
    }

    /**
     * Publishes element {@code i} of {@code run}, a batch of the subclass's own kind (see {@link #trySendRun}), into
     * the claimed slot {@code index}, as {@link #publishQuiet} does. Producer; only subclasses that send such runs
     * override it.
     */
    protected void publishRunElement(Object run, int i, long index) {
        throw new UnsupportedOperationException(getClass().getName() + " sends no runs of its own");
    }

    /**
     * Checks {@code from .. to} against a batch of {@code length} elements, as {@code List.subList} does.
     *
     * @throws IllegalArgumentException if {@code from > to}
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > length}
     */
    protected static void checkRunRange(int length, int from, int to) {
        RunClaim.checkRange(length, from, to);
    }

    /**
     * {@link #trySendMany(Object[], int, int)} for a batch of the subclass's own kind, whose elements
     * {@link #publishRunElement} writes: one claim of as much of {@code run[from .. from + n)} as fits. The caller has
     * checked the range and every element. Any thread.
     *
     * @return how many were admitted, a prefix
     * @throws MailboxClosedException if closed
     */
    protected final int trySendRun(Object run, int from, int n) {
        return n == 0 ? 0 : RunClaim.trySendRun(this, null, null, Objects.requireNonNull(run, "run"), from, n);
    }

    /** {@link #sendMany(Object[], int, int, Duration)} for a batch of the subclass's own kind, as {@link #trySendRun}. */
    protected final int sendRun(Object run, int from, int n, long deadline) throws InterruptedException {
        return RunClaim.sendRunBlocking(this, null, null, Objects.requireNonNull(run, "run"), from, n, deadline);
    }

    /** Counts a refused or rejected claim: false when full, throws when closed. */
    protected final boolean refused(long claimResult, String op) {
        if (claimResult == CLAIM_CLOSED) {
            throw rejectClosed(op);
        }
        countRefused();
        return false;
    }

    /** Counts a send rejected because the mailbox is closed and returns the exception to throw. */
    protected final MailboxClosedException rejectClosed(String op) {
        xaddRejectedClosed(1L);
        return new MailboxClosedException(op + " on a closed mailbox: name=" + name, closeCause());
    }

    /**
     * Claims a slot, parking while full.
     *
     * @param deadline a {@link System#nanoTime()} deadline, or {@link #NO_DEADLINE}
     * @return the slot index, or {@link #CLAIM_FULL} if the deadline passed
     */
    protected final long claimBlocking(long deadline, String op) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        boolean woken = false;
        for (int step = 0; ; step++) {
            final long index = claim();
            if (index >= 0) {
                if (woken) {
                    waiters.propagate(this); // the token rule: a woken waiter that claimed passes extra room on
                }
                return index;
            }
            if (index == CLAIM_CLOSED) {
                throw rejectClosed(op);
            }
            checkNotSelfBlocking(deadline, op, -1, 1);
            final int waited = waiters.parkForRoom(this, step, woken, deadline); // hands a wake-up on if it throws
            if (waited == RingWaiters.TIMED_OUT) {
                countRefused();
                return CLAIM_FULL;
            }
            woken |= waited == RingWaiters.RETRY_WOKEN;
        }
    }

    /**
     * Fails an untimed blocking send made by the consumer's own thread inside a receive: it would wait forever. A
     * timed one waits out its timeout and returns false, as anywhere else (room may still come from reservations a
     * subscriber releases).
     *
     * @param admitted how much of a run is in already, or -1 for a single send
     * @param of the run's length
     */
    final void checkNotSelfBlocking(long deadline, String op, int admitted, int of) {
        if (deadline == NO_DEADLINE && lpConsumerThread() == Thread.currentThread()) {
            throw new IllegalStateException(op + " would wait forever: the mailbox is full and the caller is its "
                    + "consumer, the only thread that can make room: name=" + name + ", capacity=" + capacity
                    + (admitted >= 0 ? ", admitted=" + admitted + " of " + of : ""));
        }
    }

    /**
     * @return whether a plain send would find no room now: occupied + reserved &ge; capacity, and not closed (a
     *         closed mailbox answers false: the caller's retry sees the close). For waiters' re-checks.
     */
    final boolean isFullForSend() {
        final long word = lvProducerIndex();
        return (word & CLOSED) == 0
                && (word >>> INDEX_SHIFT) + Math.max(0L, lvReserved()) >= lvConsumerIndex() + capacity;
    }

    /** Wakes the consumer if it waits for data; called by producers after each publish. */
    protected final void signalConsumer() {
        waiters.signalConsumer();
    }

    // ------------------------------------------------------------------ reservations (the subscriber side)

    /**
     * Reserves up to {@code n} slots for later {@link #sendReserved} calls, which then never find the mailbox
     * full (see {@link RingReservations}). Any thread.
     *
     * @return how many were granted, 0 .. n (0 when full, closed, or {@code n <= 0}); once it returns, occupied +
     *         reserved never exceeds the capacity on its account
     */
    public final int reserve(int n) {
        return RingReservations.reserve(this, n);
    }

    /**
     * Sends using one reserved slot. Any thread holding a permit from {@link #reserve}.
     *
     * @return false if the mailbox is closed (the permit is returned)
     * @throws IllegalStateException if nothing is reserved (the caller held no permit)
     * @throws ReservationInvariantException if permits are outstanding but no slot is free: nothing is claimed
     */
    public final boolean sendReserved(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        return RingReservations.sendReserved(this, msg);
    }

    /**
     * Sends the run {@code batch.get(from) .. batch.get(to - 1)} using {@code to - from} reserved slots: one claim CAS
     * and one permit update for the run, admitted whole before a close or refused whole after it. Any thread holding
     * that many permits.
     *
     * @return {@code to - from}, or 0 if the mailbox is closed (the run's permits are returned)
     * @throws IllegalStateException if fewer than {@code to - from} slots are reserved
     * @throws ReservationInvariantException if that many are reserved but not that many are free
     */
    public final int sendReservedMany(List<? extends E> batch, int from, int to) {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return n == 0 ? 0 : RingReservations.sendReservedMany(this, batch, from, n);
    }

    /** Removes up to {@code n} permits, never below zero: every decrement of {@code reserved} goes through here. */
    final void takePermits(long n) {
        RingReservations.takePermits(this, n);
    }

    /** Returns {@code n} unused permits and wakes about {@code n} producers waiting for room. Any thread. */
    public final void releaseReserved(long n) {
        RingReservations.release(this, n);
    }

    /** @return slots reserved and not yet used */
    public final long reserved() {
        return lvReserved();
    }

    /**
     * A room registration for {@code owner}, a send loop that is a callback rather than a parked thread: its
     * {@link RoomTicket#await()} registers {@code owner} to be woken (once per registration) when the consumer frees
     * room, permits are released, or the mailbox closes; room waiters are woken in arrival order, about one per
     * freed slot, and the ticket keeps the token rule (see {@link RingWaiters}). Any thread; the ticket belongs to
     * its owner's loop.
     *
     * @param owner what a wake-up runs: the owner's send loop (must not throw or block)
     * @return a ticket for {@code owner}; allocate one per owner and keep it
     */
    public final RoomTicket roomTicket(Wakeable owner) {
        return new RoomTicket(this, owner);
    }

    /** Registers {@code w} to be woken once when the mailbox closes (at once if it is closed). Any thread. */
    public final void onClose(Wakeable w) {
        waiters.onClose(this, w);
    }

    /**
     * Registers {@code w} to be woken once when the mailbox is closed and drained (at once if it is), by the
     * closer or by the receive that takes the last message. Any thread.
     */
    public final void onTerminated(Wakeable w) {
        waiters.onTerminated(this, w);
    }

    // ------------------------------------------------------------------ close

    /** Closes; idempotent. */
    public final void close() {
        close0(NORMAL_CLOSE);
    }

    /** Closes recording {@code cause}; the first close decides. */
    public final void closeExceptionally(Throwable cause) {
        close0(Objects.requireNonNull(cause, "cause"));
    }

    private void close0(Object state) {
        if (casCloseState(null, state) && state != NORMAL_CLOSE) { // the first closer decides
            MailboxEvents.closedExceptionally(this, (Throwable) state); // JFR ClosedExceptionally, if recorded
        }
        for (;;) {
            // every closer sees the bit set before it returns, so isClosed() is true after close() returns
            final long word = lvProducerIndex();
            if ((word & CLOSED) != 0) {
                return;
            }
            if (casProducerIndex(word, word | CLOSED)) {
                break;
            }
        }
        // The CAS above is a full fence: a waiter that registered before it is woken here; one that registers
        // after it re-reads the word and sees CLOSED.
        waiters.wakeAllOnClose();
        waiters.wakeIfTerminated(this); // closed with nothing left to receive: see onTerminated
    }

    /** @return whether closed */
    public final boolean isClosed() {
        return (lvProducerIndex() & CLOSED) != 0;
    }

    // ------------------------------------------------------------------ introspection

    /** @return the capacity */
    public final int capacity() {
        return capacity;
    }

    /** @return whether built single-producer */
    public final boolean isSingleProducer() {
        return singleProducer;
    }

    /** @return the name given at build time */
    public final String name() {
        return name;
    }

    /** @return claimed and not yet received, clamped to 0 .. capacity */
    public final int size() {
        final long cIndex = lvConsumerIndex();
        final long size = (lvProducerIndex() >>> INDEX_SHIFT) - cIndex;
        return (int) Math.max(0L, Math.min(capacity, size));
    }

    /** @return messages claimed since creation */
    public final long admitted() {
        return lvProducerIndex() >>> INDEX_SHIFT;
    }

    /** @return messages received since creation */
    public final long received() {
        return lvConsumerIndex();
    }

    /** @return a snapshot of the counters */
    public final MailboxStats stats() {
        final long received = lvConsumerIndex();
        final long admitted = admitted();
        return new MailboxStats(name, capacity, (int) Math.max(0L, Math.min(capacity, admitted - received)),
                admitted, received, lvRefused(), lvRejectedClosed(), lvHighWaterMark(), lvReserved(),
                waiters.parkedProducers(), waiters.consumerWaiting(), lvProducerParks(), loConsumerParks());
    }

    /**
     * Starts a new high-water window: the mark becomes the current size. Any thread; a sample racing the reset
     * may land on either side of it (the mark stays a lower bound of the true peak).
     *
     * @return the mark before the reset: the highest size seen since the previous reset (or creation)
     */
    public final int resetHighWaterMark() {
        final int size = (int) Math.max(0L, Math.min(capacity, admitted() - lvConsumerIndex()));
        return xchgHighWaterMark(size);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[name=" + name + ", capacity=" + capacity + ", size=" + size()
                + ", closed=" + isClosed() + "]";
    }
}
