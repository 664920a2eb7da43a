package dev.mighty.mailbox.internal;

import static dev.mighty.mailbox.internal.RefArray.laRefElement;
import static dev.mighty.mailbox.internal.RefArray.soRefElement;
import static dev.mighty.mailbox.internal.RefArray.spRefElement;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Objects;

import dev.mighty.mailbox.MailboxClosedException;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * <b>Not API</b>: the implementation of {@code dev.mighty.mailbox.rs.MailboxSubscriber} (whose javadoc is the
 * contract), and of {@code MailboxFlux.sendAll}, which listens to its outcome ({@link FeedListener}). Semantically
 * similar to:
 * <pre>{@code
 * onSubscribe(s):  s.request(prefetch);
 * onNext(m):       if (buffer.isEmpty() && mailbox.trySend(m)) admitted++;   // one claim: the fast path
 *                  else buffer.add(m);          // full: flushed in order when the consumer frees room
 *                  if (prefetch - (requested - admitted) >= limit) s.request(prefetch - (requested - admitted));
 * onComplete():    flush the buffer; then mailbox.close()   (or leave it open: sharing)
 * onError(e):      flush the buffer; then mailbox.closeExceptionally(e)
 * }</pre>
 *
 * <h2>Waiting for room: one ticket</h2>
 * A buffered message that finds the mailbox full waits through the feed's {@link RoomTicket}, which keeps the token
 * rule of {@link RingWaiters}: each admission reports {@link RoomTicket#claimed()}, each full claim
 * {@link RoomTicket#await()}, and every route by which the buffer empties or the feed stops (the flush admitted
 * everything, the upstream's own {@code onNext} flushed into room the consumer had not announced, the finish, a
 * close, a quit) ends in {@link RoomTicket#withdraw()}, which hands a wake-up that came too late on to the next
 * waiter. Only the loop touches the ticket.
 *
 * <h2>Threads</h2>
 * The upstream signals it, serially (§1.3), from any thread. The feed calls {@code request} and {@code cancel} on
 * the upstream from a small trampolined loop (a WIP counter, so the calls are serial, §2.7, and a {@code request}
 * whose {@code onNext} arrives synchronously does not recurse, §3.3). That loop runs on the thread that needs it:
 * the {@code onSubscribe} thread (the first request), the upstream's {@code onNext} thread (replenishing after
 * {@code limit} admitted messages, or buffering), the <b>consumer's</b> thread (when the mailbox was full, the
 * consumer's receive frees room and wakes the ticket's registration, which admits the buffered messages and
 * requests more from inside that receive, so a synchronous upstream may run its {@code onNext} there too), or the
 * thread that closes the mailbox (to cancel the upstream).
 *
 * <p>Single writers: {@code overflowTail}, {@code admittedDirect} and the signal-side fields are written by the
 * signal side only; {@code overflowHead}, {@code requested}, the ticket and the loop fields by the loop only.
 *
 * <h2>Progress</h2>
 * {@code onNext} is lock-free and never waits: one {@code trySend} when nothing is buffered, else one buffer
 * store. No thread spins or parks waiting for room.
 *
 * <h2>Visibility</h2>
 * What the upstream wrote before {@code onNext(m)} happens-before the consumer's receipt of {@code m} (a buffered
 * message is stored into its slot with a release store, paired with the loop's acquire load; the mailbox's
 * publication does the rest); {@code onComplete} happens-before the consumer sees end of stream. Messages of one
 * upstream are admitted in the order of its {@code onNext}s: the fast path is taken only when the buffer is seen
 * empty, and the loop empties it only after the last buffered message was admitted.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> when someone else closes the mailbox, the buffered messages (at most {@code prefetch}, only while the
 * mailbox was full) and every later {@code onNext} cannot be admitted: each is counted once in the mailbox's
 * {@code rejectedClosed}, handed to {@link FeedListener#discarded}, and its reference dropped; the upstream is
 * cancelled unless it has already signalled its end (§2.3: no call on a subscription from inside
 * {@code onComplete}/{@code onError}).
 *
 * <h2>Spec rules</h2>
 * §2.1, §2.3, §2.5, §2.7, §2.8, §2.13, §3.3: see {@code MailboxSubscriber}.
 *
 * @param <T> the message type
 */
public final class MailboxFeed<T> implements Subscriber<T> {
    private final MailboxRing<T> ring;
    /** Messages requested and not yet admitted, at most (in flight upstream or buffered here). */
    private final int prefetch;
    /** Request more once this many are admitted: 75% of {@code prefetch}, as Reactor's prefetching operators. */
    private final int limit;
    /** Whether {@code onComplete} closes the mailbox. */
    private final boolean closeOnComplete;
    /** The private buffer: messages that found the mailbox full, in order. A power of two, at least prefetch. */
    private final Object[] overflow;
    private final int overflowMask;
    /** Told what becomes of the messages: discards and the outcome. */
    private final FeedListener listener;
    /** Registered with the mailbox for its close; allocated once. */
    private final Wakeable wakeup = this::drain;
    /** The loop's room registration (see the class comment). */
    private final RoomTicket ticket;

    /** The upstream; set once by the first onSubscribe (§2.5). */
    private volatile Subscription upstream;
    private static final VarHandle UPSTREAM;
    /** Ownership and missed-signal count of the loop. */
    private volatile int wip;
    private static final VarHandle WIP;
    /** Requested since subscription. Written by the loop (release, before request()), read by onNext (acquire). */
    private volatile long requested;
    private static final VarHandle REQUESTED;
    /** Admitted by onNext's fast path. Written by the signal side (release), read by the loop (acquire). */
    private volatile long admittedDirect;
    private static final VarHandle ADMITTED_DIRECT;
    /** Buffer slots claimed. Advanced by the signal side (CAS, then the slot's release store), read by the loop. */
    private volatile long overflowTail;
    private static final VarHandle OVERFLOW_TAIL;
    /** Buffer slots admitted and cleared. Written by the loop (release), read by the signal side (acquire). */
    private volatile long overflowHead;
    private static final VarHandle OVERFLOW_HEAD;
    /** Set by the signal side when no onNext will be handled again: upstream terminated, or we quit. */
    private volatile boolean done;
    /** Set before {@code done} when we gave up (closed by someone else, bad input): the loop cancels upstream. */
    private volatile boolean quit;
    /** The upstream's error, or the cause we quit with; written before {@code done}. */
    private Throwable error;

    // Signal-side state (onNext/onComplete/onError, serial by §1.3).
    private long delivered;
    private long requestedSeen;
    private long nextReplenish;
    // Loop-confined state.
    private long admittedBuffered;
    private boolean upstreamCancelled;
    /** The listener was told the outcome (once). */
    private boolean reported;
    /** Buffered messages dropped because the mailbox closed under us. */
    private long droppedTotal;
    private boolean finished;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            UPSTREAM = lookup.findVarHandle(MailboxFeed.class, "upstream", Subscription.class);
            WIP = lookup.findVarHandle(MailboxFeed.class, "wip", int.class);
            REQUESTED = lookup.findVarHandle(MailboxFeed.class, "requested", long.class);
            ADMITTED_DIRECT = lookup.findVarHandle(MailboxFeed.class, "admittedDirect", long.class);
            OVERFLOW_TAIL = lookup.findVarHandle(MailboxFeed.class, "overflowTail", long.class);
            OVERFLOW_HEAD = lookup.findVarHandle(MailboxFeed.class, "overflowHead", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * @param ring the mailbox to feed
     * @param prefetch the most messages requested and not yet admitted, {@code 1 .. capacity}
     * @param closeOnComplete whether the upstream's {@code onComplete} closes the mailbox
     * @param listener told of discarded messages and of the outcome; {@link FeedListener#NONE} for none
     * @throws IllegalArgumentException if {@code prefetch} is out of range
     */
    public MailboxFeed(MailboxRing<T> ring, int prefetch, boolean closeOnComplete, FeedListener listener) {
        this.ring = Objects.requireNonNull(ring, "ring");
        if (prefetch < 1 || prefetch > ring.capacity()) {
            throw new IllegalArgumentException("prefetch: " + prefetch + " (expected: 1 .. " + ring.capacity() + ")");
        }
        this.prefetch = prefetch;
        this.limit = prefetch - (prefetch >> 2);
        this.nextReplenish = limit;
        this.closeOnComplete = closeOnComplete;
        this.listener = Objects.requireNonNull(listener, "listener");
        final int size = MailboxRing.checkCapacity(prefetch);
        this.overflow = new Object[size];
        this.overflowMask = size - 1;
        this.ticket = ring.roomTicket(this::drain);
    }

    /** @return the most messages requested and not yet admitted */
    public int prefetch() {
        return prefetch;
    }

    @Override
    public void onSubscribe(Subscription s) {
        Objects.requireNonNull(s, "s"); // §2.13
        if (!UPSTREAM.compareAndSet(this, null, s)) {
            s.cancel(); // §2.5: we have (or had) a subscription already
            return;
        }
        ring.onClose(wakeup); // someone else's close cancels the upstream; wakes at once if closed already
        drain();              // the first request
    }

    @Override
    public void onNext(T t) {
        Objects.requireNonNull(t, "t"); // §2.13
        if (done) {
            return; // after onComplete/onError (§1.7 broken upstream) or after we quit
        }
        final long delivered = ++this.delivered;
        if (delivered > requestedSeen && delivered > (requestedSeen = (long) REQUESTED.getAcquire(this))) {
            onNextBeyondDemand(t); // pairs with the setRelease in loop()
            return;
        }
        final long tail = (long) OVERFLOW_TAIL.get(this); // we are its only writer
        if ((long) OVERFLOW_HEAD.getAcquire(this) == tail) { // pairs with setRelease in flush(): all admitted
            final long claimed;
            try {
                claimed = ring.trySendQuiet(t);
            } catch (IllegalArgumentException invalid) {
                listener.discarded(t);
                quit(invalid); // rejected before anything was claimed (e.g. a frame over the maximum payload)
                return;
            }
            if (claimed == MailboxRing.CLAIM_CLOSED) {
                rejectClosed(t); // closed by someone else: t is not admitted
                return;
            }
            if (claimed >= 0L) {
                final long direct = (long) ADMITTED_DIRECT.get(this) + 1L;
                ADMITTED_DIRECT.setRelease(this, direct); // pairs with getAcquire in loop()
                // Replenish every 'limit' admissions, and whenever the known demand is used up: admissions from the
                // buffer are counted by the loop, so the first trigger alone could leave demand at 0 for good.
                if (direct >= nextReplenish || delivered == requestedSeen) {
                    nextReplenish = direct + limit;
                    drain();
                }
                return;
            }
        }
        // Full, or older messages wait: buffer. Demand bounds the buffer to prefetch slots (see the class comment).
        if (ring.isClosed()) {
            rejectClosed(t); // closed by someone else (§2.8: a signal after our cancel)
            return;
        }
        if (!offerOverflow(t)) {
            listener.discarded(t);
            quit(new IllegalStateException("§1.1 or §1.3 violated: more onNext than requested, or onNext from several "
                    + "threads at once, and the mailbox is full: name=" + ring.name() + ", capacity=" + ring.capacity()
                    + ", requested=" + requestedSeen));
            return;
        }
        drain(); // also brings the loop back to a slot it found claimed but not yet stored
    }

    /**
     * Buffers {@code t}: claims a slot by CAS on the tail, then stores the message into it (release). With a
     * serial upstream (§1.3) the CAS never fails and demand bounds the buffer, so it never fills; the CAS and the
     * bound keep an upstream that breaks §1.3 from overwriting a message or the loop from sending one twice.
     *
     * @return false if the buffer is full (only an upstream that broke §1.1 or §1.3 fills it)
     */
    private boolean offerOverflow(T t) {
        final Object[] overflow = this.overflow;
        for (;;) {
            final long tail = (long) OVERFLOW_TAIL.getVolatile(this);
            if (tail - (long) OVERFLOW_HEAD.getAcquire(this) >= overflow.length) {
                return false;
            }
            if (OVERFLOW_TAIL.compareAndSet(this, tail, tail + 1L)) {
                soRefElement(overflow, (int) tail & overflowMask, t); // pairs with laRefElement in flush()
                return true;
            }
        }
    }

    private void onNextBeyondDemand(T t) {
        // §1.1 broken by the upstream. Admit the message if there is room and nothing waits before it; never block,
        // never drop silently.
        final boolean admitted;
        try {
            admitted = (long) OVERFLOW_HEAD.getAcquire(this) == (long) OVERFLOW_TAIL.get(this) && ring.trySend(t);
        } catch (MailboxClosedException closed) {
            rejectClosed(t);
            return;
        } catch (IllegalArgumentException invalid) {
            listener.discarded(t);
            quit(invalid);
            return;
        }
        if (!admitted) {
            listener.discarded(t);
            quit(new IllegalStateException("§1.1 violated: onNext beyond the requested amount and the mailbox is "
                    + "full: name=" + ring.name() + ", capacity=" + ring.capacity() + ", requested=" + requestedSeen));
        }
    }

    /** {@code t} met a mailbox closed by someone else: counted, discarded; the loop drops the buffer and stops. */
    private void rejectClosed(T t) {
        ring.countRejectedClosed(1L);
        listener.discarded(t);
        quit(null);
    }

    /** The signal side gives up: the loop cancels the upstream and drops the buffer; closes with {@code cause}. */
    private void quit(Throwable cause) {
        error = cause;
        quit = true;
        done = true; // after quit and error: the loop that sees done sees both
        if (cause != null) {
            ring.closeExceptionally(cause); // runs our close wake-up, hence the loop, on this thread
        }
        drain();
    }

    @Override
    public void onError(Throwable t) {
        Objects.requireNonNull(t, "t"); // §2.13
        if (done) {
            return;
        }
        error = t;
        done = true; // the loop admits what is buffered, then closes exceptionally
        drain();
    }

    @Override
    public void onComplete() {
        if (done) {
            return;
        }
        done = true; // the loop admits what is buffered, then closes (unless sharing)
        drain();
    }

    // ------------------------------------------------------------------ the loop

    /** Runs {@link #loop()} here if no one does, else makes the running loop go round again. */
    private void drain() {
        if ((int) WIP.getAndAdd(this, 1) != 0) {
            return;
        }
        int missed = 1;
        for (;;) {
            if (!finished) {
                loop();
            }
            missed = (int) WIP.getAndAdd(this, -missed) - missed;
            if (missed == 0) {
                return;
            }
        }
    }

    private void loop() {
        final Subscription upstream = this.upstream;
        if (upstream == null) {
            return; // a misbehaving upstream signalled before onSubscribe: nothing was requested
        }
        final boolean done = this.done; // read before the buffer: every onNext before done is in it
        if (done && quit) {
            finish(upstream, true);
            return;
        }
        if (ring.isClosed()) {
            // Closed by someone else (or by quitFromLoop). NOTE: onNext may be buffering right now: what it stores
            // after our look brings the loop back through its drain(), and this branch drops it then.
            ticket.withdraw();
            dropBuffered();
            if (done) {
                finish(upstream, false); // §2.3: the upstream has signalled its end; nothing to cancel
            } else if (!upstreamCancelled) {
                upstreamCancelled = true;
                upstream.cancel();
                report(true, null);
            }
            return;
        }
        if (!flush()) {
            return; // full: the ticket's registration (or the close) brings us back
        }
        if (done) {
            finish(upstream, false);
            return;
        }
        final long requested = this.requested; // we are its only writer
        final long admitted = (long) ADMITTED_DIRECT.getAcquire(this) + admittedBuffered;
        final long wanted = prefetch - (requested - admitted);
        if (wanted >= limit) {
            REQUESTED.setRelease(this, requested + wanted); // pairs with getAcquire in onNext, before request()
            upstream.request(wanted);
        }
    }

    /**
     * Admits the buffered messages in order, reporting each attempt's outcome to the ticket.
     *
     * @return true if the buffer is empty (the ticket withdrawn); false if the mailbox is full (a registration
     *         stands), closed, or a buffered slot is claimed but not yet stored
     */
    private boolean flush() {
        final Object[] overflow = this.overflow;
        long head = (long) OVERFLOW_HEAD.get(this); // we are its only writer
        final long tail = (long) OVERFLOW_TAIL.getAcquire(this); // pairs with setRelease in onNext
        while (head != tail) {
            final int offset = (int) head & overflowMask;
            @SuppressWarnings("unchecked")
            final T message = (T) laRefElement(overflow, offset); // pairs with soRefElement in offerOverflow()
            if (message == null) {
                // Claimed by onNext and not stored yet: its drain() brings us back once it is.
                OVERFLOW_HEAD.setRelease(this, head);
                return false;
            }
            final long claimed;
            try {
                claimed = ring.trySendQuiet(message);
            } catch (IllegalArgumentException invalid) {
                spRefElement(overflow, offset, null); // rejected, not admitted: discarded, never sent again
                OVERFLOW_HEAD.setRelease(this, head + 1L);
                listener.discarded(message);
                quitFromLoop(invalid);
                return false;
            }
            if (claimed == MailboxRing.CLAIM_CLOSED) {
                OVERFLOW_HEAD.setRelease(this, head);
                return false; // the close wake-up brings us back to drop the rest and cancel the upstream
            }
            if (claimed == MailboxRing.CLAIM_FULL) {
                OVERFLOW_HEAD.setRelease(this, head);
                if (ticket.await()) {
                    return false; // registered: one freed slot (or the close) brings us back
                }
                continue; // room appeared meanwhile: retry
            }
            ticket.claimed();
            spRefElement(overflow, offset, null); // published to the signal side by the release of overflowHead
            head++;
            admittedBuffered++;
        }
        OVERFLOW_HEAD.setRelease(this, head); // pairs with getAcquire in onNext: after the last admission
        ticket.withdraw(); // nothing left to send: a registration must not outlive its need
        return true;
    }

    /**
     * Drops what the buffer holds now, up to a slot claimed by {@code onNext} and not yet stored (its
     * {@code drain()} brings the loop back): each message counted once in {@code rejectedClosed}, handed to the
     * listener, and its reference cleared.
     *
     * @return how many were dropped
     */
    private long dropBuffered() {
        final Object[] overflow = this.overflow;
        long head = (long) OVERFLOW_HEAD.get(this); // we are its only writer
        final long tail = (long) OVERFLOW_TAIL.getAcquire(this);
        long dropped = 0L;
        while (head != tail) {
            final int offset = (int) head & overflowMask;
            final Object message = laRefElement(overflow, offset);
            if (message == null) {
                break;
            }
            spRefElement(overflow, offset, null);
            head++;
            dropped++;
            listener.discarded(message);
        }
        OVERFLOW_HEAD.setRelease(this, head);
        if (dropped > 0L) {
            ring.countRejectedClosed(dropped);
            droppedTotal += dropped;
        }
        return dropped;
    }

    /** The loop found a buffered message the mailbox rejects: as {@link #quit}, from the loop. */
    private void quitFromLoop(Throwable cause) {
        ring.closeExceptionally(cause); // our close wake-up re-enters drain(): counted as missed, loops again
        upstreamCancelled = true;
        upstream.cancel();
        report(false, cause);
    }

    /** No onNext will be handled again: cancel if we quit, drop the rest, close as the terminal signal says. */
    private void finish(Subscription upstream, boolean quitting) {
        finished = true;
        ticket.withdraw();
        if (quitting && !upstreamCancelled) {
            upstreamCancelled = true;
            upstream.cancel();
        }
        dropBuffered();
        final Throwable error = this.error;
        if (!quitting && !upstreamCancelled) {
            if (error != null) {
                ring.closeExceptionally(error); // the consumer gets onError(error) after draining
            } else if (closeOnComplete) {
                ring.close(); // the consumer completes after draining
            }
        }
        report(quitting && error == null || droppedTotal > 0L, error);
    }

    /** Tells the listener the outcome, once: after it, nothing more is admitted. */
    private void report(boolean closedUnder, Throwable error) {
        if (!reported) {
            reported = true;
            listener.finished(closedUnder, droppedTotal, error);
        }
    }

    @Override
    public String toString() {
        return "MailboxSubscriber[name=" + ring.name() + ", prefetch=" + prefetch
                + (closeOnComplete ? "" : ", sharing") + "]";
    }
}
