package dev.mighty.mailbox.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.internal.Backoff;
import dev.mighty.mailbox.internal.MailboxDrain;
import dev.mighty.mailbox.internal.MailboxRing;
import org.reactivestreams.Subscriber;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.Fuseable;
import reactor.core.Scannable;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * The subscription of {@link MailboxFlux}: {@link MailboxDrain}'s loop (consumer role, demand, cancel,
 * termination, trampoline) with two ways to deliver.
 * <ul>
 *     <li><b>Unfused</b>: the loop takes batches of up to {@code min(demand, batchSize)} and calls
 *     {@code onNext}, exactly as {@code MailboxPublisher}'s subscription does.</li>
 *     <li><b>ASYNC-fused</b> ({@link #requestFusion} granted {@link Fuseable#ASYNC}): the downstream
 *     ({@code publishOn}, {@code concatMap}, a {@code flatMap} inner, {@code StepVerifier}) calls {@link #poll()}
 *     itself, which takes straight out of the mailbox. The loop only signals {@code onNext(null)} ("poll now"),
 *     {@code onComplete} and {@code onError}.</li>
 * </ul>
 *
 * <h2>The poll lock</h2>
 * In fused mode the consumer polls outside the loop, so the loop cannot hand the mailbox to a successor the
 * moment it sees a cancel: the downstream may be inside {@code poll()} on another thread. A four-state word
 * ({@code NO_ROLE -> IDLE <-> LOCKED -> RELEASED}) settles it. Every {@code poll()} (and {@code isEmpty()}, and
 * the loop when it looks at the mailbox) runs under {@code IDLE -> LOCKED} (a CAS) and ends with a release
 * store of {@code IDLE}; the loop releases the role with {@code IDLE -> RELEASED}, waiting (spinning: a poll
 * never waits for anything but a producer between its claim and its publish) while a poll is in progress. A
 * poll that finds {@code RELEASED}, or {@code NO_ROLE} (queued behind a cancelled holder), returns null and
 * touches nothing. So a cancel from any thread, at any moment, even while the downstream pauses between polls
 * for as long as it likes, hands the mailbox on without two threads ever polling it.
 * Why a CAS per poll and not per batch: a fused downstream may stop polling after any message (a
 * {@code concatMap} waiting for its inner) without telling us, and a lock held across that pause would keep a
 * cancelled subscription's successor waiting until the old pipeline polled again, which may be never.
 *
 * <h2>Threads</h2>
 * {@code request}, {@code cancel}, {@code wake} and the scan methods: any thread. {@link #poll()},
 * {@link #isEmpty()}, {@link #size()} and {@link #clear()}: the fused downstream, from its drain (Reactor's
 * contract); a concurrent {@code isEmpty}/{@code size} (a scan) only reads. {@link #requestFusion}: inside
 * {@code onSubscribe}. The loop ({@code drain}, {@code releaseRole}) runs as {@link MailboxDrain} says: on the
 * thread of the event that found it idle.
 *
 * <h2>Progress</h2>
 * {@code poll()} is wait-free while messages are published, apart from the lock CAS, which fails only while the
 * loop or a scan holds the lock for a bounded step; it spins when a producer has claimed a slot but not yet
 * published it (JCTools' {@code poll} does the same). Releasing the role spins while a poll is in progress.
 *
 * <h2>Visibility</h2>
 * The lock-holder state ({@code pending}, {@code credit}, {@code polled}) is written only under the lock; each
 * holder's release store of {@code IDLE} pairs with the next holder's acquiring CAS. A producer's writes
 * happen-before the {@code poll()} that returns its message (the ring's release/acquire pair).
 * No padding: in the steady state of a fused pipeline only the polling thread writes this object (the lock
 * word, the counters); the loop's fields change only on a wake-up, a request or a cancel.
 *
 * <h2>Waiting for data: the linger</h2>
 * A {@code poll()} that finds the mailbox empty registers for the next send and returns null; that send then pays a
 * wake-up (the drain pass on the producer's thread, an executor submit, an {@code unpark}, a context switch), and
 * under a steady stream the poller catches up and registers again every few dozen messages: the bimodal mode of a
 * fused flux on a real scheduler. So by default ({@code MailboxFlux.from(mailbox)} and
 * {@code from(mailbox, batchSize)}: no policy given) an empty poll first <b>lingers</b>: it watches the slot it
 * waits for ({@link MailboxRing#linger}) for as long as the budget its deliveries earned allows, and takes the
 * message if one comes. The budget:
 * <ul>
 *     <li>each message polled earns {@link #LINGER_NANOS_PER_MESSAGE}, banked up to {@link #LINGER_MAX_NANOS};</li>
 *     <li>a linger is taken only with at least {@link #LINGER_MIN_NANOS} banked (a producer that sent a handful of
 *     messages since the last wait is not "demonstrably active"), and spends what it waited.</li>
 * </ul>
 * <b>The bound on the borrowed thread</b>: over any stretch of a subscription, its lingers spin at most
 * {@code LINGER_NANOS_PER_MESSAGE} per message it delivered plus {@code LINGER_MAX_NANOS} (the bank), plus one clock
 * step per linger. An idle flux spins at most once, then holds no thread; a trickle slower than one message per
 * {@code LINGER_NANOS_PER_MESSAGE} drains the bank and falls back to one wake-up per message, as without the
 * linger; a linger that ends empty costs at most {@code LINGER_MAX_NANOS}, less than the wake-up it precedes.
 * The linger reads the slot and the clock, never {@code Thread.onSpinWait()} or {@code Thread.yield()} (BlockHound
 * flags those on Reactor's non-blocking threads), and ends early on a cancel or a close. An explicit
 * {@link WaitPolicy} ({@code from(mailbox, batchSize, policy)}) replaces it: {@link WaitPolicy#park()} then means
 * register at once.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> in fused mode, producers parked on a full mailbox are woken ({@link MailboxRing#afterReceive})
 * once per {@code min(batchSize, capacity)} polls (by the poll after them, before it takes), and at once when a
 * poll finds the mailbox empty, when {@code isEmpty()} is asked (publishOn and flatMap ask when their demand runs
 * out), when the polls use up the requested amount, and on cancel or termination. A downstream that pauses
 * between polls with demand left (a {@code concatMap} while its inner runs) may leave up to
 * {@code min(batchSize, capacity)} freed slots unannounced to producers that were already parked until it polls
 * again; new sends see the room at once.
 *
 * <p><b>Note:</b> a message returned by {@code poll()} counts as delivered. A downstream that discards it
 * because a cancel from another thread raced that poll ({@code publishOn}'s {@code checkTerminated}) loses
 * it. A cancel made on the polling thread loses nothing: inside {@code onNext} ({@code take},
 * {@code takeWhile}), every poll after it returns null; inside a poll, by the code its producer wake-ups run
 * (a room callback whose owner disposes the pipeline), the poll takes nothing after it, even a message sent
 * into the room it announced ({@link MailboxRing#poll(dev.mighty.mailbox.internal.ConsumerRole)}). The one
 * exception is the wake-up made when the polls use up the requested amount: it runs after the take, so a cancel
 * from inside it finds that last message already in hand, delivered, and discarded by a downstream that
 * cancelled ({@code doOnDiscard} sees it).
 *
 * <h2>Spec rules</h2>
 * As {@link MailboxDrain} (§1.3, §1.9, §3.3, §3.5–§3.7, §3.9, §3.13, §3.17). Fused mode follows Reactor's
 * ASYNC convention: {@code onNext(null)} means "poll", terminal signals come once the mailbox is closed and
 * drained, so a downstream that reads its done flag before polling never misses a message.
 *
 * @param <T> the message type
 */
final class MailboxFluxSubscription<T> extends MailboxDrain<T> implements Fuseable.QueueSubscription<T>, Scannable {
    /** Queued behind a cancelled holder: polls return null until the loop takes the role. */
    static final int NO_ROLE = 0;
    /** Holding the role, nobody polling. */
    static final int IDLE = 1;
    /** A poll (or isEmpty, or the loop's look) is in progress. */
    static final int LOCKED = 2;
    /** The role was given up (cancel or termination); polls return null for good. */
    static final int RELEASED = 3;

    /** What the loop's look at the mailbox decided. */
    private static final int SIGNAL = 0;
    private static final int WAIT = 1;
    private static final int END = 2;

    private final int batchSize;
    /** Polls between two producer wake-up checks in fused mode: {@code min(batchSize, capacity)}. */
    private final int flushLimit;

    /** Set by requestFusion, inside onSubscribe, before the loop's first pass (which reads it, loop-confined). */
    private boolean fused;
    /** Set by the loop's first pass: fusion can no longer be negotiated. */
    private boolean started;
    /** The downstream, for scans only; dropped when the role is released (§3.13). Racy reads are fine. */
    private Subscriber<? super T> actual;

    /** {@code NO_ROLE}, {@code IDLE}, {@code LOCKED} or {@code RELEASED}. */
    private volatile int state;
    private static final VarHandle STATE;

    // Lock-holder state: written only while holding the poll lock (see "Visibility").
    /**
     * The lock holder, from its winning CAS to its unlock, else null. Code under the lock that runs others' code
     * (the room wake-ups of afterReceive, and of poll() when it skips a placeholder) may come back into this
     * subscription on the same thread; releaseRole and lockSlow tell that case by this field. NOTE: read without
     * the lock by releaseRole and lockSlow, which only compare it with their own thread: a thread writes null
     * here before it unlocks, so it reads itself only while it holds the lock (it sees its own last write or
     * another thread's).
     */
    private Thread lockOwner;
    /** Set by a releaseRole that ran on the lock holder's own thread, inside its poll: unlock releases. */
    private boolean releaseOnUnlock;
    /** Polls since the last producer wake-up check. */
    private int pending;
    /** The cumulative demand seen last: polls below it need not look at {@code requested} again. */
    private long credit;
    /** Messages polled in fused mode, cumulative. Written under the lock (opaque, for scans). */
    private long polled;
    private static final VarHandle POLLED;
    /** A poll under the lock found the mailbox closed and drained: the loop must end the stream. */
    private boolean endSeen;
    /**
     * The downstream's last poll took a message and it still had credit: it will poll again, so a drain pass that
     * finds the mailbox empty need not register for it (see look()). Cleared by a poll that returns null, by
     * {@code isEmpty()} answering true and when the credit is used up.
     */
    private boolean pollPhase;

    /** For scans: the stream ended with onComplete/onError. */
    private volatile boolean terminated;
    /** For scans: the downstream cancelled. */
    private volatile boolean cancelledByDownstream;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            STATE = lookup.findVarHandle(MailboxFluxSubscription.class, "state", int.class);
            POLLED = lookup.findVarHandle(MailboxFluxSubscription.class, "polled", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** How the fused poller backs off on an empty mailbox before it registers: {@code park()} unless opted in. */
    private final WaitPolicy pollWaitPolicy;
    /** The default (no policy given): a poll that finds the mailbox empty may linger, on the budget it earned. */
    private final boolean lingers;

    // The linger (see "Waiting for data"): lock-holder state, like pending and polled.
    /** Nanoseconds of lingering earned and not yet spent, at most {@link #LINGER_MAX_NANOS}. */
    private long lingerBudget;
    /** {@code polled} when the budget was last credited. */
    private long lingerMark;

    /**
     * The most lingering banked, so the longest single linger: a few microseconds, below the cost of the wake-up an
     * empty linger precedes (a submit, an {@code unpark} and a context switch: 5-50 us on the machines of
     * docs/benchmarks.md) and far above the gap between two sends of a busy producer (tens of nanoseconds).
     */
    static final long LINGER_MAX_NANOS = 4_000L;
    /** Lingering earned per message polled: about what the poll and its delivery cost the thread. */
    static final long LINGER_NANOS_PER_MESSAGE = 64L;
    /** The least banked budget worth a linger. */
    static final long LINGER_MIN_NANOS = 500L;
    /** The downstream's context, for Reactor's hooks on an error that can be signalled to nobody. */
    private final Context context;

    MailboxFluxSubscription(MailboxRing<T> ring, Subscriber<? super T> downstream, int batchSize,
            WaitPolicy pollWaitPolicy) {
        super(ring, downstream, null); // the unfused batches run on signalling threads: they never spin
        this.lingers = pollWaitPolicy == null;
        this.pollWaitPolicy = lingers ? WaitPolicy.park() : pollWaitPolicy;
        this.batchSize = batchSize;
        this.flushLimit = Math.min(batchSize, ring.capacity());
        this.actual = downstream;
        this.context = downstream instanceof CoreSubscriber ? ((CoreSubscriber<?>) downstream).currentContext()
                : Context.empty();
    }

    /** Reactor's convention for an error that has nowhere to go: {@code Operators.onErrorDropped}. */
    @Override
    protected void dropped(Throwable ex) {
        try {
            Exceptions.throwIfJvmFatal(ex);
            Operators.onErrorDropped(ex, context);
        } catch (Throwable fatalOrHook) {
            super.dropped(fatalOrHook); // a JVM-fatal error, or a hook that threw: the thread's handler
        }
    }

    // ------------------------------------------------------------------ fusion negotiation

    /**
     * Grants {@link Fuseable#ASYNC} whenever it is asked for, with or without {@link Fuseable#THREAD_BARRIER}:
     * {@code poll()} runs no user code, so it may run on any thread (Reactor's {@code SinkManyUnicast} answers
     * the same). Never {@link Fuseable#SYNC}: the mailbox is live, an empty poll does not mean the end.
     */
    @Override
    public int requestFusion(int requestedMode) {
        if (!started && (requestedMode & Fuseable.ASYNC) != 0) {
            fused = true;
            return Fuseable.ASYNC;
        }
        return Fuseable.NONE;
    }

    // ------------------------------------------------------------------ the loop's part

    @Override
    protected void drain(Subscriber<? super T> downstream) {
        started = true;
        if (fused) {
            drainFused(downstream);
        } else {
            drainBatches(downstream, batchSize);
        }
    }

    /** Fused: tell the downstream to poll, end the stream, or register for the next send or the close. */
    private void drainFused(Subscriber<? super T> downstream) {
        // The loop only runs drain() while we hold the role: from now on polls may take.
        STATE.compareAndSet(this, NO_ROLE, IDLE);
        int next = SIGNAL;
        if (tryLock()) {
            try {
                next = look();
            } finally {
                unlock();
            }
        }
        // else: a poll is in progress; signal anyway. At worst the downstream polls once for nothing.
        if (next == WAIT) {
            return;
        }
        if (next == END) {
            if (checkEndOfStream()) {
                terminated = true;
            }
            return;
        }
        try {
            downstream.onNext(null); // ASYNC fusion: "poll now"
        } catch (Throwable ex) {
            cancelWithError(ex);
        }
    }

    /** Under the lock: wake parked producers, then decide whether the downstream has anything to poll. */
    private int look() {
        flush();
        final MailboxRing<T> ring = this.ring;
        if (ring.size() != 0) {
            return SIGNAL; // messages, or a send in flight that poll() will wait for
        }
        if (pollPhase) {
            // The downstream's last poll took a message and it has credit: it polls again (Reactor's ASYNC
            // convention: drain until null, or until demand runs out, which isEmpty() and creditUsed() see), and that
            // poll registers or sees the end. A registration here, typically on publishOn's replenishing request
            // in the middle of its loop, would only make the next send pay a wake-up for a poller that is running.
            return ring.isTerminated() ? END : WAIT;
        }
        if (ring.awaitData(this)) {
            return WAIT; // the next send, or the close, wakes us (wake() schedules the loop)
        }
        return ring.isTerminated() ? END : SIGNAL; // closed and drained, or a send raced the registration
    }

    @Override
    protected void onCancelled() {
        cancelledByDownstream = true;
    }

    @Override
    protected void onTerminated() {
        terminated = true;
    }

    /**
     * Gives the role up once no poll is in progress: at once if the lock is free, after the poll in progress
     * otherwise (spinning for it), or, if that poll is on this very thread (the loop ran inside it), when it
     * unlocks.
     */
    @Override
    protected void releaseRole() {
        actual = null; // §3.13
        for (int spins = 0; ; spins++) {
            final int s = state;
            if (s == RELEASED) {
                return;
            }
            if (s == LOCKED) {
                if (lockOwner == Thread.currentThread()) {
                    releaseOnUnlock = true; // we are inside our own locked section: its unlock() releases
                    return;
                }
                backOff(spins); // bounded: a poll waits for nothing but a producer mid-publish
                continue;
            }
            // NO_ROLE or IDLE. Pairs with the CAS in lock(): a poll that wins the lock after this CAS fails
            // sees our cancelled flag (written before releaseRole was called) and takes nothing.
            if (STATE.compareAndSet(this, s, RELEASED)) {
                detach();
                return;
            }
        }
    }

    /** With exclusive consumer access: wake parked producers, withdraw our wake-up, hand the mailbox on. */
    private void detach() {
        flush();
        withdrawDataWakeups();
        if (ring.consumerRole() == this) {
            ring.detachConsumer(this); // may run the successor's first pass here
        }
    }

    // ------------------------------------------------------------------ the poll lock

    private boolean lock() {
        return tryLock() || lockSlow();
    }

    /** One try at {@code IDLE -> LOCKED}; the winner records itself as the holder. */
    private boolean tryLock() {
        if (STATE.compareAndSet(this, IDLE, LOCKED)) {
            lockOwner = Thread.currentThread();
            return true;
        }
        return false;
    }

    private boolean lockSlow() {
        for (int spins = 0; ; spins++) {
            final int s = state;
            if (s == IDLE) {
                if (tryLock()) {
                    return true;
                }
                continue;
            }
            if (s != LOCKED || lockOwner == Thread.currentThread()) {
                // NO_ROLE (queued), RELEASED (cancelled, terminated), or re-entered from inside our own poll
                return false;
            }
            backOff(spins); // the loop's look or a scan's isEmpty: a bounded step
        }
    }

    private void unlock() {
        lockOwner = null; // before the release store below: the next holder's write comes after it
        if (releaseOnUnlock) {
            releaseOnUnlock = false;
            detach();
            STATE.setRelease(this, RELEASED);
        } else {
            STATE.setRelease(this, IDLE); // pairs with the CAS in lock(), drainFused(), isEmpty(), releaseRole()
        }
    }

    // ------------------------------------------------------------------ fused consumer side (lock held)

    /**
     * Counts one message taken, and checks the demand at the credit. The producer wake-up check every
     * {@code flushLimit} polls is made by the next poll, before it takes ({@link #poll()}): a wake-up runs others'
     * code on this thread, which may cancel us, and a message already in hand would then go to a downstream that
     * has cancelled.
     */
    private void taken() {
        pollPhase = true;
        pending++;
        final long polled = this.polled + 1L;
        POLLED.setOpaque(this, polled);
        if (polled >= credit) {
            creditUsed(polled);
        }
    }

    private void creditUsed(long polled) {
        final long requested = requested(); // cumulative in fused mode: nothing calls produced()
        if (requested > polled) {
            credit = requested; // Long.MAX_VALUE: never again
            return;
        }
        // The downstream took all it asked for and will pause. Wake the producers now, and if the mailbox is
        // empty register, so that a close reaches the downstream without new demand (onComplete needs none).
        pollPhase = false;
        flush();
        if (!ring.awaitData(this) && ring.isTerminated()) {
            endSeen = true;
        }
    }

    private void flush() {
        final int pending = this.pending;
        if (pending > 0) {
            this.pending = 0;
            // Runs others' code under the lock: afterReceive wakes parked producers, and a Wakeable (a
            // MailboxSubscriber asking its upstream for more) may come back into this subscription on this thread;
            // so may the ring's poll() when it skips a placeholder. lockOwner tells releaseRole and lockSlow that it
            // is us.
            ring.afterReceive(pending); // wakes producers parked on the room we made
        }
    }

    /** poll() found nothing: wake producers, register for the next send, or wait out a send in flight. */
    private T pollEmpty() {
        flush(); // others' code: takes below go through takeLive()
        final MailboxRing<T> ring = this.ring;
        if (lingers) {
            final T message = linger(ring);
            if (message != null) {
                return message;
            }
        } else if (!Backoff.parksAtOnce(pollWaitPolicy) && ring.idleUntilData(pollWaitPolicy, this)) {
            final T message = takeLive(ring); // arrived during the back-off (the user dedicated this poller's thread)
            if (message != null) {
                return message;
            }
        }
        for (int spins = 0; ; spins++) {
            if (ring.awaitData(this)) {
                return null; // the next send (or the close) wakes us; wake() signals onNext(null)
            }
            if (isCancelled()) {
                return null; // by the flush above, on this thread: the messages are the next consumer's
            }
            final T message = takeLive(ring);
            if (message != null) {
                return message;
            }
            if (ring.isTerminated()) {
                endSeen = true; // closed and drained: the loop signals onComplete/onError
                return null;
            }
            // a producer between its claim and its publish: it publishes without waiting for anyone
            backOff(spins);
        }
    }

    /**
     * The default's wait on an empty mailbox: spends the budget the delivered messages earned
     * ({@link #LINGER_NANOS_PER_MESSAGE} each, at most {@link #LINGER_MAX_NANOS} banked) spinning for the next one,
     * if at least {@link #LINGER_MIN_NANOS} is banked.
     *
     * @return the message that arrived, taken; or null: register
     */
    private T linger(MailboxRing<T> ring) {
        final long earned = Math.min(polled - lingerMark, LINGER_MAX_NANOS / LINGER_NANOS_PER_MESSAGE + 1L);
        lingerMark = polled;
        long budget = Math.min(LINGER_MAX_NANOS, lingerBudget + earned * LINGER_NANOS_PER_MESSAGE);
        T message = null;
        if (budget >= LINGER_MIN_NANOS) {
            budget -= ring.linger(budget, this);
            message = takeLive(ring);
        }
        lingerBudget = Math.max(0L, budget);
        return message;
    }

    /**
     * Takes the next message unless this subscription was cancelled: how {@link #pollEmpty()} takes after it has run
     * others' code (a {@link #flush()}, a placeholder's skip), which may have cancelled it on this very thread.
     * ({@link #poll()} does the same inline: its flush, then the cancel check, then the take.) Lock held.
     */
    private T takeLive(MailboxRing<T> ring) {
        if (isCancelled()) {
            return null;
        }
        final T message = ring.poll(this); // null also if a skip inside it ran a wake-up that cancelled us
        if (message != null) {
            taken();
        }
        return message;
    }

    /**
     * Takes the next message out of the mailbox, or returns null: empty (a send or the close will signal
     * {@code onNext(null)} or the terminal event), cancelled, terminated, or not yet holding the mailbox.
     */
    @Override
    public T poll() {
        if (!lock()) {
            return null;
        }
        T message = null;
        boolean end = false;
        try {
            if (pending >= flushLimit) {
                flush(); // the producer wake-up check, before the take (see taken())
            }
            // After the lock's CAS: pairs with the volatile write of cancelled before releaseRole's CAS.
            if (!isCancelled()) {
                message = ring.poll(this); // null also if a skip inside it ran a wake-up that cancelled us
                if (message != null) {
                    taken();
                } else if (isCancelled() || (message = pollEmpty()) == null) {
                    pollPhase = false; // registered, or the end, or cancelled: the next signal makes it poll again
                }
                end = endSeen;
                endSeen = false;
            }
        } finally {
            unlock();
        }
        if (end) {
            schedule(); // the loop ends the stream (maybe right here, re-entering the downstream's drain)
        }
        return message;
    }

    /**
     * Whether nothing is claimed in the mailbox. Asked by the downstream when it stops for lack of demand, so
     * it also wakes parked producers and registers for the next send or the close; a concurrent caller (a scan)
     * gets a plain snapshot.
     */
    @Override
    public boolean isEmpty() {
        final MailboxRing<T> ring = this.ring;
        if (!tryLock()) {
            return ring.size() == 0;
        }
        boolean empty;
        boolean end = false;
        try {
            flush();
            empty = ring.size() == 0;
            if (empty) {
                pollPhase = false; // the downstream stops here until signalled
            }
            if (empty && !isCancelled() && !ring.awaitData(this)) {
                end = ring.isTerminated();
                empty = end || ring.size() == 0;
            }
        } finally {
            unlock();
        }
        if (end) {
            schedule();
        }
        return empty;
    }

    /** @return the messages claimed in the mailbox now (a snapshot) */
    @Override
    public int size() {
        return ring.size();
    }

    /**
     * Does nothing: the messages belong to the mailbox, not to this subscription, and stay there for the next
     * subscriber. (Reactor calls {@code clear()} on cancel to discard a fused queue; our {@code poll()} already
     * returns null once cancelled, so a discard loop takes nothing either.)
     */
    @Override
    public void clear() {
        // never empties the mailbox
    }

    // ------------------------------------------------------------------ Scannable

    @Override
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    public Object scanUnsafe(Attr key) {
        if (key == Attr.CAPACITY) {
            return ring.capacity();
        }
        if (key == Attr.BUFFERED) {
            return ring.size();
        }
        if (key == Attr.PREFETCH) {
            return batchSize;
        }
        if (key == Attr.TERMINATED) {
            return terminated;
        }
        if (key == Attr.CANCELLED) {
            return cancelledByDownstream;
        }
        if (key == Attr.REQUESTED_FROM_DOWNSTREAM) {
            return outstanding();
        }
        if (key == Attr.ACTUAL) {
            return actual;
        }
        if (key == Attr.RUN_STYLE) {
            return Attr.RunStyle.ASYNC; // onNext runs on producers' or requesters' threads, or the downstream polls
        }
        return null;
    }

    /** @return the demand not yet served: in fused mode the cumulative request minus the polls (racy) */
    long outstanding() {
        final long requested = requested();
        if (!fused || requested == Long.MAX_VALUE) {
            return requested;
        }
        return Math.max(0L, requested - (long) POLLED.getOpaque(this));
    }

    /** @return whether the downstream negotiated ASYNC fusion */
    boolean isFused() {
        return fused;
    }

    @Override
    public String stepName() {
        return "source(MailboxFlux)";
    }


    @Override
    public String toString() {
        return "MailboxFluxSubscription[name=" + ring.name() + ", fused=" + fused + ", state=" + state + "]";
    }
}
