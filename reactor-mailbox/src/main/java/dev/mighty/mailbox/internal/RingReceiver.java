package dev.mighty.mailbox.internal;

import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.WaitPolicy;

/**
 * The receive half of {@link MailboxRing}: the consumer's side of the ring protocol (poll by the subclass, the
 * receive loops {@code recv}, {@code tryRecvMany} and {@code recvMany}, the consumer mark, the wake-up of room
 * waiters after a batch, the wait for data, the end-of-stream check) and the
 * consumer-role slot the adapters share. {@code MailboxRing} extends it and keeps the claim protocol; a class of
 * its own so each file holds one side. Consumer only, unless a method says otherwise; progress and visibility as
 * {@code MailboxRing}'s class comment says.
 *
 * @param <E> the message type
 */
abstract class RingReceiver<E> extends RingL5Pad {
    static final long CLOSED = 1L;
    static final int INDEX_SHIFT = 7;
    /**
     * A consumer backing off on an empty mailbox looks at the close state once per this many steps (a power of
     * two), so that its wait does not keep pulling a line producers write. Delays the sight of a close by at most
     * that many spin or yield steps; the back-off's end (park) always looks.
     */
    static final int CLOSE_CHECK_STEPS = 32;
    /** A deadline meaning "no deadline". */
    protected static final long NO_DEADLINE = Long.MIN_VALUE;

    /** @return the slot index held in a producer word */
    static long indexOf(long word) {
        return word >>> INDEX_SHIFT;
    }

    /** @return whether a producer word has the closed bit */
    static boolean isClosed(long word) {
        return (word & CLOSED) != 0;
    }

    RingReceiver(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }

    /** @return whether slot {@code index} is published (acquire). Consumer. */
    protected abstract boolean isPublished(long index);

    /**
     * Takes the message at the consumer index if it is published, frees its slot and advances the consumer
     * index (release). Does not wake parked producers: call {@link #afterReceive(int)} once per batch.
     * Consumer only.
     *
     * @return the message, or null if the slot is not published (empty, or a producer is mid-publish); a
     *         placeholder from {@link #publishSkip} is freed and skipped, never returned
     */
    public final E poll() {
        return poll(null);
    }

    /**
     * As {@link #poll()}, for a drain that can be cancelled. Skipping a placeholder announces the room it frees
     * ({@link #afterSkip}), which runs others' code on this thread: a room wake-up whose callback cancels
     * {@code owner}, and may then send into that room. A poll that went on after such a skip would take the next
     * message for a subscription that has given the mailbox up, which drops it; so this one returns null once a
     * skip finds {@code owner} cancelled, and the message stays for the next consumer. Consumer only.
     *
     * @param owner the drain polling, or null (nothing to cancel: the raw consumer)
     * @return as {@link #poll()}; also null when a skipped placeholder's wake-ups cancelled {@code owner}
     */
    public abstract E poll(ConsumerRole owner);

    // ------------------------------------------------------------------ consumer side

    /**
     * Ends a receive that took {@code n >= 1} messages: samples the high-water mark and wakes producers
     * parked on a full mailbox. Once per batch. Consumer only.
     */
    public final void afterReceive(int n) {
        if (n > lvHighWaterMark()) {
            sampleOccupancy(n);
        }
        // StoreLoad: the consumerIndex store in poll() must be visible before we look for waiters; pairs with the
        // waiter's count increment followed by its re-check of the room (RingWaiters). One wake per freed slot.
        VarHandle.fullFence();
        if (waiters.mayHaveRoomWaiters()) {
            waiters.wakeRoom(n);
        }
        if (closing()) {
            waiters.wakeIfTerminated(this); // the receive that drains a closed mailbox: see onTerminated
        }
    }

    /**
     * Announces the room freed by skipping a placeholder (see {@code MailboxRing.publishSkip}): a receive that frees only
     * placeholders returns nothing, so {@link #afterReceive} is not called for it. Consumer only; rare.
     *
     * @param owner the drain polling, or null
     * @return whether the poll may go on to the next slot: false once the wake-ups (others' code, run here) have
     *         cancelled {@code owner}
     */
    protected final boolean afterSkip(ConsumerRole owner) {
        VarHandle.fullFence(); // as in afterReceive: our consumerIndex store before the waiter check
        if (waiters.mayHaveRoomWaiters()) {
            waiters.wakeRoom(1);
        }
        if (closing()) {
            waiters.wakeIfTerminated(this);
        }
        return owner == null || !owner.isCancelled(); // what the wake-ups ran may have cancelled the poller
    }

    /** Receives without waiting; null if nothing is published now. Consumer only. */
    public final E tryRecv() {
        final E e = poll();
        if (e != null) {
            afterReceive(1);
        }
        return e;
    }

    /** Receives, parking while empty; null once closed normally and drained. Consumer only. */
    public final E recv() throws InterruptedException {
        return recv0(NO_DEADLINE);
    }

    /** Receives, parking at most {@code timeout}; null on timeout or end of stream. Consumer only. */
    public final E recv(Duration timeout) throws InterruptedException {
        return recv0(deadline(timeout));
    }

    /** {@code recv}: polls, and waits for data (see {@link RingWaiters}) until a message, the end, or the deadline. */
    private E recv0(long deadline) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        for (;;) {
            final E e = poll();
            if (e != null) {
                afterReceive(1);
                return e;
            }
            if (endOfStream() || !awaitData(deadline)) {
                return null;
            }
        }
    }

    /** Hands up to {@code max} messages present now to {@code sink}. Consumer only. */
    public final int tryRecvMany(Consumer<? super E> sink, int max) {
        Objects.requireNonNull(sink, "sink");
        checkMax(max);
        return drain(sink, max);
    }

    /** {@code tryRecvMany}: up to {@code max} published messages, then one {@code afterReceive} for the batch. */
    private int drain(Consumer<? super E> sink, int max) {
        final Thread previous = enterConsumer();
        int n = 0;
        try {
            E e;
            while (n < max && (e = poll()) != null) {
                n++;
                sink.accept(e);
            }
        } finally {
            exitConsumer(previous);
            if (n > 0) {
                afterReceive(n);
            }
        }
        return n;
    }

    /** Parks until a message is present, then as {@link #tryRecvMany}; 0 at end of stream. Consumer only. */
    public final int recvMany(Consumer<? super E> sink, int max) throws InterruptedException {
        Objects.requireNonNull(sink, "sink");
        checkMax(max);
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (max == 0) {
            return 0;
        }
        for (;;) {
            final int n = drain(sink, max);
            if (n > 0 || endOfStream()) {
                return n;
            }
            awaitData(NO_DEADLINE);
        }
    }

    /**
     * Marks the current thread as the consumer for the duration of a batch, so that a blocking send made from
     * inside the batch on a full mailbox fails instead of waiting forever, and a second thread entering a batch
     * at the same time is reported (best effort). Consumer only.
     *
     * @throws IllegalStateException if another thread's batch is under way
     *
     * @return the previous mark, to give to {@link #exitConsumer}
     */
    public final Thread enterConsumer() {
        final Thread self = Thread.currentThread();
        final Thread previous = lpConsumerThread();
        if (previous != null && previous != self) {
            // NOTE: best effort, at no cost: the field is plain, so two racing consumers may miss each other, but a
            // consumer that finds another thread's mark knows the one-consumer rule is broken.
            throw new IllegalStateException("two consumers at once: " + self.getName() + " entered a receive while "
                    + previous.getName() + " is in one: name=" + name);
        }
        spConsumerThread(self);
        return previous;
    }

    /** Restores the mark saved by {@link #enterConsumer()}. Consumer only. */
    public final void exitConsumer(Thread previous) {
        spConsumerThread(previous);
    }

    protected static void checkMax(int max) {
        if (max < 0) {
            throw new IllegalArgumentException("max: " + max + " (expected: >= 0)");
        }
    }

    /** @return whether the mailbox is closed with nothing admitted past {@code cIndex}. Consumer only. */
    final boolean endOfStreamAt(long cIndex) {
        final long word = lvProducerIndex();
        return (word >>> INDEX_SHIFT) == cIndex && (word & CLOSED) != 0;
    }

    /**
     * Called by the consumer after {@link #poll()} found nothing.
     *
     * @return true if the mailbox is closed normally and drained
     * @throws MailboxClosedException if it is closed exceptionally and drained
     */
    public final boolean endOfStream() {
        // NOTE: the close state is set before the CLOSED bit and lives on the read-mostly signals line: while the
        // mailbox is open this check leaves the producer word's line alone (see RingWaiters.awaitData).
        if (!closing()) {
            return false;
        }
        final long word = lvProducerIndex();
        if (!isClosed(word) || indexOf(word) != lvConsumerIndex()) {
            return false;
        }
        final Throwable cause = closeCause();
        if (cause != null) {
            throw new MailboxClosedException("mailbox closed exceptionally and drained: name=" + name, cause);
        }
        return true;
    }

    /**
     * Parks the consumer until the slot at the consumer index is published, the mailbox is closed and drained, or
     * the deadline passes (see {@link RingWaiters}). Consumer only.
     *
     * @return false only if the deadline passed
     */
    protected final boolean awaitData(long deadline) throws InterruptedException {
        return waiters.awaitData(this, deadline);
    }

    /** @return whether a close has been decided: the read-mostly close state, not the producer word */
    final boolean closing() {
        return lvCloseState() != null;
    }

    /**
     * Backs off on the consumer's own thread, as {@code policy} says, until the slot at the consumer index is
     * published, the mailbox is closing, {@code role} is cancelled, or the back-off is spent (see
     * {@link RingWaiters}). For a drain running on a thread the user dedicated to consuming, before it registers
     * with {@link #awaitData(Wakeable)}. Consumer only.
     *
     * @param role the subscription waiting, or null; its cancel ends the wait early
     * @return true if a message (or the close) arrived: poll again; false if the back-off was spent or the
     *         role cancelled
     */
    public final boolean idleUntilData(WaitPolicy policy, ConsumerRole role) {
        return waiters.idleUntilData(this, policy, role);
    }

    /**
     * Spins on the consumer's thread for at most about {@code maxNanos} until the slot at the consumer index is
     * published, the mailbox is closing or {@code role} is cancelled (see {@link RingWaiters#linger}). For a fused
     * poller on a borrowed thread that has earned a linger; it must register with {@link #awaitData(Wakeable)}
     * afterwards if {@code poll()} still finds nothing. Consumer only.
     *
     * @param role the subscription waiting, or null; its cancel ends the wait early
     * @return the nanoseconds spent
     */
    public final long linger(long maxNanos, ConsumerRole role) {
        return waiters.linger(this, maxNanos, role);
    }

    /** Sets how {@code recv}/{@code recvMany} wait before parking; call before the mailbox is shared. */
    public final void waitPolicy(WaitPolicy policy) {
        waiters.consumerPolicy(policy);
    }

    /** @return how {@code recv}/{@code recvMany} wait before parking */
    public final WaitPolicy waitPolicy() {
        return waiters.consumerPolicy();
    }

    /**
     * Registers {@code w} to be woken once when a message may be present or the mailbox closes: the
     * non-blocking counterpart of a parking receive, for a drain loop that must not park. Consumer only.
     *
     * @return false if a message is present (or in flight) or the mailbox is closed already: drain again now.
     *         <b>Note:</b> {@code w} may still be woken once after a false return (a producer took the
     *         registration just before it was withdrawn), so a wake must tolerate finding nothing to do. A message
     *         in flight (claimed, not yet published) is answered with false rather than a registration: its
     *         producer may have looked for a waiter before our registration was visible.
     */
    public final boolean awaitData(Wakeable w) {
        return waiters.awaitData(this, w);
    }

    /** Withdraws a registration made by {@link #awaitData(Wakeable)}, if it has not fired. */
    public final void cancelAwaitData(Wakeable w) {
        waiters.cancelAwaitData(w);
    }

    /**
     * Registers {@code w} for data until it is withdrawn: every later publish wakes its owner (see
     * {@link RingWaiters.StandingWaiter}); a renewal while it is still in place costs a plain read. Consumer only.
     *
     * @return false if a message is present (or in flight) or the mailbox is closed: drain again now
     */
    public final boolean awaitDataStanding(RingWaiters.StandingWaiter w) {
        return waiters.awaitDataStanding(this, w);
    }

    /** Withdraws a registration made by {@link #awaitDataStanding}, if it is in place. */
    public final void cancelAwaitData(RingWaiters.StandingWaiter w) {
        waiters.cancelAwaitData(w);
    }

    // ------------------------------------------------------------------ consumer role (adapters)

    /** {@link #attachConsumer} result: the role is yours; poll now. */
    public static final int ROLE_ACQUIRED = 0;
    /** {@link #attachConsumer} result: accepted behind a cancelled holder; {@code wake()} hands you the role. */
    public static final int ROLE_QUEUED = 1;
    /** {@link #attachConsumer} result: a live holder has the role; refuse the subscriber. */
    public static final int ROLE_REFUSED = 2;

    /**
     * Asks for the consumer role: one subscription at a time may poll, whichever face it uses. A holder that
     * is cancelled but still finishing its last delivery does not refuse a newcomer: the newcomer is queued
     * and handed the role by {@link #detachConsumer} when the holder's drain exits. Any thread.
     *
     * @return {@link #ROLE_ACQUIRED}, {@link #ROLE_QUEUED} or {@link #ROLE_REFUSED}
     */
    public final int attachConsumer(ConsumerRole role) {
        return roles.attach(role);
    }

    /**
     * Gives up the consumer role; call once the drain loop has exited for good (no poll can follow), on the
     * thread that ran it. Hands the role to a queued successor and wakes it. Any thread.
     */
    public final void detachConsumer(ConsumerRole role) {
        roles.detach(role);
    }

    /** @return the role holder now, or null */
    public final ConsumerRole consumerRole() {
        return roles.lvHolder();
    }

    /** @return whether closed and every admitted message has been received. Any thread. */
    public final boolean isTerminated() {
        final long word = lvProducerIndex();
        return (word & CLOSED) != 0 && (word >>> INDEX_SHIFT) == lvConsumerIndex();
    }

    /** @return the cause of an exceptional close, or null */
    public final Throwable closeCause() {
        final Object state = lvCloseState();
        return state instanceof Throwable ? (Throwable) state : null;
    }

    /**
     * @return a {@link System#nanoTime()} deadline for {@code timeout}, or {@link #NO_DEADLINE} if it is too far
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    protected static long deadline(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
        final long nanos = java.util.concurrent.TimeUnit.NANOSECONDS.convert(timeout);
        return nanos >= Long.MAX_VALUE / 2 ? NO_DEADLINE : System.nanoTime() + nanos;
    }
}
