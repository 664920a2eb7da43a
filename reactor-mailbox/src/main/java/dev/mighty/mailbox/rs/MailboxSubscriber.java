package dev.mighty.mailbox.rs;

import static dev.mighty.mailbox.internal.RefArray.laRefElement;
import static dev.mighty.mailbox.internal.RefArray.soRefElement;
import static dev.mighty.mailbox.internal.RefArray.spRefElement;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.Wakeable;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The send side of a {@link Mailbox} as a Reactive Streams {@link Subscriber}: an upstream publisher feeds the
 * mailbox. The subscriber keeps at most {@code prefetch} messages requested and not yet admitted; a message that
 * finds the mailbox full waits in a small private buffer of {@code prefetch} slots until the consumer frees room,
 * so {@code onNext} never blocks and never drops. Semantically similar to:
 * <pre>{@code
 * onSubscribe(s):  s.request(prefetch);
 * onNext(m):       if (buffer.isEmpty() && mailbox.trySend(m)) admitted++;   // one claim: the fast path
 *                  else buffer.add(m);          // full: flushed in order when the consumer frees room
 *                  if (prefetch - (requested - admitted) >= limit) s.request(prefetch - (requested - admitted));
 * onComplete():    flush the buffer; then mailbox.close()   (or leave it open: see sharing(..))
 * onError(e):      flush the buffer; then mailbox.closeExceptionally(e)
 * }</pre>
 *
 * <h2>Guarantee: an idle upstream starves no one</h2>
 * Demand is not backed by mailbox room: an upstream that was sent {@code request(n)} and goes quiet holds
 * <b>nothing</b> in the mailbox (no slot, no reservation), so any number of {@code MailboxSubscriber}s and plain
 * senders may share a mailbox and none of them can be kept out by another's idle upstream. The mailbox's room goes
 * to messages that exist; a subscriber whose message finds it full registers one room wait and is woken (as a
 * parked {@code send} is, in arrival order) when the consumer frees a slot. (An earlier design reserved room before
 * requesting it: there, idle upstreams holding reservations could starve every other subscriber once the sum of
 * their prefetches exceeded the capacity — hold-and-wait. See {@code docs/reliability.md}, Findings.)
 *
 * <p>Memory stays bounded: the mailbox's capacity, plus at most {@code prefetch} messages per subscriber in its
 * private buffer (only while the mailbox is full).
 *
 * <h2>Completion modes</h2>
 * {@code new MailboxSubscriber<>(mailbox[, prefetch])}: the upstream's {@code onComplete} closes the mailbox (after
 * the buffered messages are admitted), so the consumer completes once it has drained. {@link #sharing(Mailbox, int)}:
 * {@code onComplete} leaves the mailbox open, for one of several finite sources feeding one mailbox; whoever owns
 * the mailbox closes it. In both modes {@code onError(e)} closes the mailbox exceptionally once the buffered
 * messages are admitted: the consumer sees {@code e} after draining.
 *
 * <h2>Threads</h2>
 * The upstream signals it, serially (§1.3), from any thread. The subscriber calls {@code request} and
 * {@code cancel} on the upstream from a small trampolined loop (a WIP counter, so the calls are serial, §2.7,
 * and a {@code request} whose {@code onNext} arrives synchronously does not recurse, §3.3). That loop runs on
 * the thread that needs it: the {@code onSubscribe} thread (the first request), the upstream's {@code onNext}
 * thread (replenishing after {@code limit} admitted messages, or buffering), the <b>consumer's</b> thread (when the
 * mailbox was full, the consumer's receive frees room and wakes the subscriber, which admits its buffered messages
 * and requests more from inside that receive, so a synchronous upstream may run its {@code onNext} there too), or
 * the thread that closes the mailbox (to cancel the upstream).
 *
 * <p>Single writers: {@code overflowTail}, {@code admittedDirect} and the signal-side fields are written by the
 * signal side only; {@code overflowHead}, {@code requested} and the loop fields by the loop only.
 *
 * <h2>Progress</h2>
 * {@code onNext} is lock-free and never waits: one {@code trySend} when nothing is buffered, else one buffer
 * store. No thread spins or parks waiting for room: a subscriber whose buffered message finds the mailbox full
 * registers a wake-up with the mailbox and returns.
 *
 * <h2>Visibility</h2>
 * What the upstream wrote before {@code onNext(m)} happens-before the consumer's receipt of {@code m} (a buffered
 * message is stored into its slot with a release store, paired with the loop's acquire load; the mailbox's
 * publication does the rest); {@code onComplete} happens-before the consumer sees end of stream.
 * Messages of one upstream are admitted in the order of its {@code onNext}s: the fast path is taken only when the
 * buffer is seen empty, and the loop empties it only after the last buffered message was admitted.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> when someone else closes the mailbox, messages the upstream has delivered but that wait in the
 * private buffer (at most {@code prefetch}, only while the mailbox was full) cannot be admitted: they are dropped,
 * counted in the mailbox's {@code rejectedClosed}, and the upstream is cancelled (a Reactor operator with a
 * queue, such as {@code publishOn}, discards its queue the same way).
 *
 * <p><b>Note:</b> an upstream that breaks §1.1 and sends more than was requested has its extra message admitted
 * with {@code trySend} if the mailbox has room and nothing is buffered; otherwise the message is not dropped
 * silently: the upstream is cancelled and the mailbox is closed exceptionally with an
 * {@link IllegalStateException} ("§1.1 violated ..."), which the consumer sees after draining. A message the
 * mailbox rejects as invalid (a frame over the maximum payload) does the same with the
 * {@link IllegalArgumentException}. Signals after {@code onComplete}/{@code onError} are ignored (§1.7 broken by
 * the upstream).
 *
 * <h2>Spec rules</h2>
 * §2.1 (demand through {@code request}), §2.5 (a second {@code onSubscribe} is cancelled), §2.7 (serial
 * calls to the subscription), §2.8 ({@code onNext} after cancel is handled), §2.13 (null signals throw
 * {@link NullPointerException}; no other exception escapes), §3.3 (no recursion through {@code request}).
 *
 * @param <T> the message type
 */
public final class MailboxSubscriber<T> implements Subscriber<T> {
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
    /** Registered with the mailbox for its close; allocated once. */
    private final Wakeable wakeup = this::drain;
    /** Registered with the mailbox for room, one registration at a time; allocated once. */
    private final Wakeable roomWakeup = this::onRoom;

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
    /**
     * Whether a room registration stands: set by the loop when it registers, cleared by the wake-up (or by the loop
     * when the registration was withdrawn). Each registration is one waiter in the mailbox's room queue, woken for one
     * freed slot, so the loop never stacks a second one.
     */
    private volatile boolean roomPending;
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
    private boolean finished;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            UPSTREAM = lookup.findVarHandle(MailboxSubscriber.class, "upstream", Subscription.class);
            WIP = lookup.findVarHandle(MailboxSubscriber.class, "wip", int.class);
            REQUESTED = lookup.findVarHandle(MailboxSubscriber.class, "requested", long.class);
            ADMITTED_DIRECT = lookup.findVarHandle(MailboxSubscriber.class, "admittedDirect", long.class);
            OVERFLOW_TAIL = lookup.findVarHandle(MailboxSubscriber.class, "overflowTail", long.class);
            OVERFLOW_HEAD = lookup.findVarHandle(MailboxSubscriber.class, "overflowHead", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * A subscriber that keeps up to the mailbox's capacity requested; the upstream's completion closes the mailbox.
     *
     * @param mailbox the mailbox to feed
     * @throws NullPointerException if {@code mailbox} is null
     */
    public MailboxSubscriber(Mailbox<T> mailbox) {
        this(mailbox, Objects.requireNonNull(mailbox, "mailbox").capacity());
    }

    /**
     * A subscriber whose upstream's completion closes the mailbox.
     *
     * @param mailbox the mailbox to feed
     * @param prefetch the most messages requested and not yet admitted, {@code 1 .. capacity}
     * @throws NullPointerException if {@code mailbox} is null
     * @throws IllegalArgumentException if {@code prefetch} is out of range
     */
    public MailboxSubscriber(Mailbox<T> mailbox, int prefetch) {
        this(mailbox, prefetch, true);
    }

    private MailboxSubscriber(Mailbox<T> mailbox, int prefetch, boolean closeOnComplete) {
        this.ring = MailboxRing.of(Objects.requireNonNull(mailbox, "mailbox"));
        if (prefetch < 1 || prefetch > ring.capacity()) {
            throw new IllegalArgumentException("prefetch: " + prefetch + " (expected: 1 .. " + ring.capacity() + ")");
        }
        this.prefetch = prefetch;
        this.limit = prefetch - (prefetch >> 2);
        this.nextReplenish = limit;
        this.closeOnComplete = closeOnComplete;
        final int size = MailboxRing.checkCapacity(prefetch);
        this.overflow = new Object[size];
        this.overflowMask = size - 1;
    }

    /**
     * A subscriber for one of several sources sharing {@code mailbox}: its upstream's completion leaves the mailbox
     * open (an error still closes it exceptionally). Whoever owns the mailbox closes it when every source is done.
     *
     * @param mailbox the mailbox to feed
     * @param prefetch the most messages requested and not yet admitted, {@code 1 .. capacity}
     * @param <T> the message type
     * @return a subscriber whose {@code onComplete} does not close the mailbox
     * @throws NullPointerException if {@code mailbox} is null
     * @throws IllegalArgumentException if {@code prefetch} is out of range
     */
    public static <T> MailboxSubscriber<T> sharing(Mailbox<T> mailbox, int prefetch) {
        return new MailboxSubscriber<>(mailbox, prefetch, false);
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
                quit(invalid); // rejected before anything was claimed (e.g. a frame over the maximum payload)
                return;
            }
            if (claimed == MailboxRing.CLAIM_CLOSED) {
                ring.countRejectedClosed(1L); // closed by someone else: t is not admitted
                quit(null);
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
            ring.countRejectedClosed(1L); // closed by someone else (§2.8: a signal after our cancel)
            quit(null);                   // the loop drops and counts what is buffered
            return;
        }
        if (!offerOverflow(t)) {
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
            quit(null);
            return;
        } catch (IllegalArgumentException invalid) {
            quit(invalid);
            return;
        }
        if (!admitted) {
            quit(new IllegalStateException("§1.1 violated: onNext beyond the requested amount and the mailbox is "
                    + "full: name=" + ring.name() + ", capacity=" + ring.capacity() + ", requested=" + requestedSeen));
        }
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
        if (upstreamCancelled) {
            return; // closed under us; waiting for a last signal (§2.8) to finish
        }
        if (ring.isClosed()) {
            // Closed by someone else. NOTE: onNext may be buffering right now, so the buffer is dropped only once the
            // signal side says it is done, or here if it already has.
            upstreamCancelled = true;
            upstream.cancel();
            if (done) {
                finish(upstream, false);
            }
            return;
        }
        if (!flush()) {
            return; // full: the consumer's next receive (or the close) wakes us
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
     * Admits the buffered messages in order.
     *
     * @return true if the buffer is empty; false if the mailbox is full (a room wait is registered) or closed
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
                OVERFLOW_HEAD.setRelease(this, head);
                quitFromLoop(invalid);
                return false;
            }
            if (claimed == MailboxRing.CLAIM_CLOSED) {
                OVERFLOW_HEAD.setRelease(this, head);
                return false; // the close wake-up brings us back to cancel the upstream
            }
            if (claimed == MailboxRing.CLAIM_FULL) {
                OVERFLOW_HEAD.setRelease(this, head);
                if (roomPending) {
                    return false; // our registration stands: one freed slot (or the close) brings us back
                }
                roomPending = true;
                if (ring.awaitRoom(roomWakeup)) {
                    return false; // registered: one freed slot (or the close) brings us back
                }
                roomPending = false; // room appeared meanwhile: withdrawn (or fired, which also clears it); retry
                continue;
            }
            spRefElement(overflow, offset, null); // published to the signal side by the release of overflowHead
            head++;
            admittedBuffered++;
        }
        OVERFLOW_HEAD.setRelease(this, head); // pairs with getAcquire in onNext: after the last admission
        return true;
    }

    /** The room registration fired: a slot was freed for us (or the mailbox closed). */
    private void onRoom() {
        roomPending = false;
        drain();
    }

    /** The loop found a buffered message the mailbox rejects: as {@link #quit}, from the loop. */
    private void quitFromLoop(Throwable cause) {
        ring.closeExceptionally(cause); // our close wake-up re-enters drain(): counted as missed, loops again
        upstreamCancelled = true;
        upstream.cancel();
    }

    /** No onNext will be handled again: cancel if we quit, close as the terminal signal says, drop the rest. */
    private void finish(Subscription upstream, boolean quitting) {
        finished = true;
        if (quitting && !upstreamCancelled) {
            upstreamCancelled = true;
            upstream.cancel();
        }
        final long dropped = (long) OVERFLOW_TAIL.getAcquire(this) - (long) OVERFLOW_HEAD.get(this);
        if (dropped > 0L) {
            // Closed under us (or we quit) with messages still buffered: they cannot be admitted any more.
            ring.countRejectedClosed(dropped);
            Arrays.fill(overflow, null);
        }
        if (!quitting && !upstreamCancelled) {
            final Throwable error = this.error;
            if (error != null) {
                ring.closeExceptionally(error); // the consumer gets onError(error) after draining
            } else if (closeOnComplete) {
                ring.close(); // the consumer completes after draining
            }
        }
    }

    @Override
    public String toString() {
        return "MailboxSubscriber[name=" + ring.name() + ", prefetch=" + prefetch
                + (closeOnComplete ? "" : ", sharing") + "]";
    }
}
