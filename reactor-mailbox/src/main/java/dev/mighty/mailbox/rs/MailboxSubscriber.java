package dev.mighty.mailbox.rs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.Wakeable;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The send side of a {@link Mailbox} as a Reactive Streams {@link Subscriber}: an upstream publisher feeds the
 * mailbox, and its demand is the room the mailbox has. The subscriber reserves slots before it requests
 * them, so every requested {@code onNext} has a slot waiting: it never finds the mailbox full (even when
 * other producers share it), never blocks and never drops. Semantically similar to:
 * <pre>{@code
 * onSubscribe(s):  n = mailbox.reserve(prefetch); s.request(n);
 * onNext(m):       mailbox.sendReserved(m);          // uses one reserved slot
 *                  if (enough used) { n = mailbox.reserve(prefetch - unused); s.request(n); }
 *                  // nothing reserved and nothing unused: wait until the consumer frees room, then reserve
 * onComplete():    mailbox.close();
 * onError(e):      mailbox.closeExceptionally(e);
 * }</pre>
 * When someone else closes the mailbox, the subscriber cancels its upstream. Unused reservations are
 * released when the upstream terminates (and when an {@code onNext} arrives after the close).
 *
 * <h2>Threads</h2>
 * The upstream signals it, serially (§1.3), from any thread. The subscriber calls {@code request} and
 * {@code cancel} on the upstream from a small trampolined loop (a WIP counter, so the calls are serial, §2.7,
 * and a {@code request} whose {@code onNext} arrives synchronously does not recurse, §3.3). That loop runs on
 * the thread that needs it: the {@code onSubscribe} thread (the first request), the upstream's
 * {@code onNext} thread (replenishing after {@code limit} messages), the <b>consumer's</b> thread (when the
 * mailbox was full, the consumer's next receive frees room and wakes the subscriber, which then reserves and
 * requests from inside that receive, so a synchronous upstream may run its {@code onNext} there too), or the
 * thread that closes the mailbox (to cancel the upstream).
 *
 * <p>Replenishment comes in runs: while the consumer still has messages to take, a round reserves only once a
 * quarter of {@code prefetch} (or all it wants) is free, so a full mailbox costs one reserve, one
 * {@code request} and at most one wake-up per run of freed slots, not per slot. Once the mailbox is empty a
 * round takes whatever is free, so a slow or paused consumer never starves the upstream.
 *
 * <h2>Progress</h2>
 * {@code onNext} is lock-free and never waits: a reserved send cannot find the mailbox full. No thread
 * spins or parks waiting for room: a subscriber that has no reserved slot left and gets none registers a
 * wake-up with the mailbox and returns.
 *
 * <h2>Visibility</h2>
 * What the upstream wrote before {@code onNext(m)} happens-before the consumer's receipt of {@code m};
 * {@code onComplete} happens-before the consumer sees end of stream.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> the reserved slots count as occupied: while the subscriber holds up to {@code prefetch}
 * reservations, other producers' {@code trySend} may return {@code false} although {@code size()} is below
 * the capacity. Give a smaller {@code prefetch} to share the mailbox more evenly.
 *
 * <p><b>Note:</b> when someone else closes the mailbox, the reservations the upstream has not used yet
 * cannot be released at once (an {@code onNext} may be spending one concurrently); they are released when the
 * upstream signals again ({@code onNext}, {@code onComplete} or {@code onError}), and otherwise stay counted in
 * the closed mailbox, where they no longer keep anyone out.
 *
 * <p><b>Note:</b> an upstream that breaks §1.1 and sends more than was requested has its extra message
 * admitted with {@code trySend} if the mailbox has room for it; if it is full, the message is not dropped
 * silently: the upstream is cancelled and the mailbox is closed exceptionally with an
 * {@link IllegalStateException} ("§1.1 violated ..."), which the consumer sees after draining. A message the
 * mailbox rejects as invalid (a frame over the maximum payload) does the same with the
 * {@link IllegalArgumentException}. Signals after {@code onComplete}/{@code onError} are ignored (§1.7 broken by
 * the upstream; the mailbox is closed).
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
    /** Reservations held at most (used or not yet). */
    private final int prefetch;
    /** Replenish after this many reserved sends: 75% of {@code prefetch}, as Reactor's prefetching operators. */
    private final int limit;
    /**
     * The smallest top-up worth a round while the consumer has messages to take: a quarter of {@code prefetch}
     * (at least 1). Below it the round waits for the consumer to free more (see {@code runAvailable}).
     */
    private final int run;
    /** Registered with the mailbox for room and for close; allocated once. */
    private final Wakeable wakeup = this::drain;

    /** The upstream; set once by the first onSubscribe (§2.5). */
    private volatile Subscription upstream;
    private static final VarHandle UPSTREAM;
    /** Ownership and missed-signal count of the request loop. */
    private volatile int wip;
    private static final VarHandle WIP;
    /** Reservations ever granted (and requested). Written by the loop (release), read by onNext (acquire). */
    private volatile long granted;
    private static final VarHandle GRANTED;
    /** Reservations ever used or given back by the signal side. Written by it (release), read by the loop. */
    private volatile long used;
    private static final VarHandle USED;
    /** Set by the signal side when no onNext will use a reservation again: upstream terminated, or we quit. */
    private volatile boolean done;
    /** Set with {@code done} when the upstream did not terminate by itself: the loop must cancel it. */
    private volatile boolean quit;

    // Signal-side state (onNext/onComplete/onError, serial by §1.3).
    private long grantedSeen;
    private long nextReplenish;
    // Loop-confined state.
    private boolean upstreamCancelled;
    private boolean finished;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            UPSTREAM = lookup.findVarHandle(MailboxSubscriber.class, "upstream", Subscription.class);
            WIP = lookup.findVarHandle(MailboxSubscriber.class, "wip", int.class);
            GRANTED = lookup.findVarHandle(MailboxSubscriber.class, "granted", long.class);
            USED = lookup.findVarHandle(MailboxSubscriber.class, "used", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * A subscriber that holds up to the mailbox's capacity in reservations.
     *
     * @param mailbox the mailbox to feed
     * @throws NullPointerException if {@code mailbox} is null
     */
    public MailboxSubscriber(Mailbox<T> mailbox) {
        this(mailbox, Objects.requireNonNull(mailbox, "mailbox").capacity());
    }

    /**
     * @param mailbox the mailbox to feed
     * @param prefetch the most slots reserved (and requested) at once, {@code 1 .. capacity}
     * @throws NullPointerException if {@code mailbox} is null
     * @throws IllegalArgumentException if {@code prefetch} is out of range
     */
    public MailboxSubscriber(Mailbox<T> mailbox, int prefetch) {
        this.ring = MailboxRing.of(Objects.requireNonNull(mailbox, "mailbox"));
        if (prefetch < 1 || prefetch > ring.capacity()) {
            throw new IllegalArgumentException("prefetch: " + prefetch + " (expected: 1 .. " + ring.capacity() + ")");
        }
        this.prefetch = prefetch;
        this.limit = prefetch - (prefetch >> 2);
        this.run = Math.max(1, prefetch >> 2);
        this.nextReplenish = limit;
    }

    @Override
    public void onSubscribe(Subscription s) {
        Objects.requireNonNull(s, "s"); // §2.13
        if (!UPSTREAM.compareAndSet(this, null, s)) {
            s.cancel(); // §2.5: we have (or had) a subscription already
            return;
        }
        ring.onClose(wakeup); // someone else's close cancels the upstream; wakes at once if closed already
        drain();              // the first reservation and request
    }

    @Override
    public void onNext(T t) {
        Objects.requireNonNull(t, "t"); // §2.13
        if (done) {
            return; // after onComplete/onError (§1.7 broken upstream) or after we quit: the mailbox is closed
        }
        final long used = (long) USED.get(this); // we are its only writer
        long granted = grantedSeen;
        if (used == granted) {
            granted = grantedSeen = (long) GRANTED.getAcquire(this); // pairs with setRelease in requestMore()
            if (used == granted) {
                onNextBeyondDemand(t);
                return;
            }
        }
        final boolean sent;
        try {
            sent = ring.sendReserved(t); // never full: we hold a reservation
        } catch (RuntimeException invalid) {
            quit(invalid); // rejected before anything was claimed (e.g. a frame over the maximum payload)
            return;
        }
        USED.setRelease(this, used + 1L); // pairs with getAcquire in requestMore()
        if (!sent) {
            quit(null); // closed by someone else; the mailbox took that reservation back itself
            return;
        }
        if (used + 1L == granted || used + 1L >= nextReplenish) {
            nextReplenish = used + 1L + limit;
            drain();
        }
    }

    private void onNextBeyondDemand(T t) {
        // §1.1 broken by the upstream. Admit the message if there is room; never block, never drop silently.
        final boolean admitted;
        try {
            admitted = ring.trySend(t);
        } catch (MailboxClosedException closed) {
            quit(null);
            return;
        } catch (RuntimeException invalid) {
            quit(invalid);
            return;
        }
        if (!admitted) {
            quit(new IllegalStateException("§1.1 violated: onNext beyond the requested amount and the mailbox is "
                    + "full: name=" + ring.name() + ", capacity=" + ring.capacity() + ", requested=" + grantedSeen));
        }
    }

    /** The signal side gives up: cancel the upstream, release what is unused, close with {@code cause} if any. */
    private void quit(Throwable cause) {
        quit = true;
        done = true; // after quit: the loop that sees done sees quit
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
        done = true;
        ring.closeExceptionally(t); // the consumer gets onError(t) after draining
        drain();
    }

    @Override
    public void onComplete() {
        if (done) {
            return;
        }
        done = true;
        ring.close(); // the consumer completes after draining
        drain();
    }

    // ------------------------------------------------------------------ the request loop

    /** Runs {@link #requestMore()} here if no one does, else makes the running loop go round again. */
    private void drain() {
        if ((int) WIP.getAndAdd(this, 1) != 0) {
            return;
        }
        int missed = 1;
        for (;;) {
            if (!finished) {
                requestMore();
            }
            missed = (int) WIP.getAndAdd(this, -missed) - missed;
            if (missed == 0) {
                return;
            }
        }
    }

    private void requestMore() {
        final Subscription upstream = this.upstream;
        if (upstream == null) {
            return; // a misbehaving upstream signalled before onSubscribe: nothing was requested
        }
        if (done) {
            // No onNext will use a reservation again, so 'used' is final. Pairs with the volatile store of done.
            finished = true;
            if (quit && !upstreamCancelled) {
                upstreamCancelled = true;
                upstream.cancel();
            }
            final long unused = granted - (long) USED.getAcquire(this);
            if (unused > 0L) {
                ring.releaseReserved(unused);
            }
            return;
        }
        if (upstreamCancelled) {
            return; // waiting for a last signal to release the unused reservations
        }
        if (ring.isClosed()) {
            // Closed by someone else. NOTE: onNext may be spending a reservation right now, so the unused ones are
            // released only once the signal side says it is done (see the class comment).
            upstreamCancelled = true;
            upstream.cancel();
            return;
        }
        for (int attempt = 0; attempt < 2; attempt++) {
            final long granted = this.granted; // we are its only writer
            final long outstanding = granted - (long) USED.getAcquire(this); // pairs with setRelease in onNext
            final long wanted = prefetch - outstanding;
            if (wanted <= 0L) {
                return;
            }
            if (!runAvailable(wanted)) {
                // Replenish in runs, not per freed slot: while the consumer still has messages to take, wait until
                // it has freed at least a run (or everything we want) instead of reserving and requesting the
                // few slots free now, which would cost a reserve, a request and, later, a wake-up each.
                if (outstanding > 0L) {
                    return; // the onNext that uses the last reservation schedules the next round
                }
                if (ring.awaitRoom(wakeup)) {
                    return; // the consumer's next receive (or a release, or close) wakes us to look again
                }
                if (!runAvailable(wanted)) {
                    return; // the registration stands (awaitRoom pushed it either way) and brings us back
                }
            }
            final int reserved = ring.reserve((int) wanted);
            if (reserved > 0) {
                GRANTED.setRelease(this, granted + reserved); // pairs with getAcquire in onNext: before request()
                upstream.request(reserved);
                return; // an onNext that used them all, or enough of them, schedules the next round
            }
            if (outstanding > 0L) {
                return; // the onNext that uses the last one schedules the next round
            }
            if (ring.awaitRoom(wakeup)) {
                return; // the consumer's next receive (or a release, or close) wakes us
            }
            // Room appeared meanwhile: try once more. If reserve still grants nothing, the registration made by
            // awaitRoom stands and its wake-up brings us back.
        }
    }

    /**
     * @return whether reserving now is worth a round: at least {@code min(wanted, run)} slots look free, or the
     *         mailbox is empty (the consumer will free nothing more, so take whatever there is). A racy estimate:
     *         {@code reserve} decides what is granted.
     */
    private boolean runAvailable(long wanted) {
        final MailboxRing<T> ring = this.ring;
        final int size = ring.size();
        if (size == 0) {
            return true;
        }
        final long free = ring.capacity() - size - Math.max(0L, ring.reserved());
        return free >= Math.min(wanted, run);
    }

    @Override
    public String toString() {
        return "MailboxSubscriber[name=" + ring.name() + ", prefetch=" + prefetch + "]";
    }
}
