package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.Executor;

import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.WaitPolicy;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The skeleton of a subscription that drains a mailbox to one {@link Subscriber}: the consumer role, the
 * trampolined WIP ("missed") drain loop, demand, cancellation and termination. A subclass supplies only the
 * body of one drain pass, {@link #drain(Subscriber)}: {@code MailboxPublisher}'s subscription takes batches
 * there; a fused Reactor subscription can signal "data available" there instead and let its consumer poll.
 *
 * <h2>Life cycle</h2>
 * <ol>
 *     <li>Construct (the WIP counter starts at 1: whoever starts owns the drain), then call {@link #start()} on
 *     the subscribing thread. It asks for the consumer role ({@link MailboxRing#attachConsumer}), calls
 *     {@code onSubscribe} while it still owns the drain (so no other signal can overtake it, §1.9), and then
 *     runs the first drain pass. A refused subscriber gets {@code onSubscribe} then
 *     {@code onError(IllegalStateException)} and nothing else.</li>
 *     <li>Every event that may let the drain make progress calls {@link #schedule()}: {@code request},
 *     {@code cancel}, and {@link #wake()} (a producer published into an empty mailbox, the mailbox closed, or
 *     a cancelled predecessor handed the role over). {@code schedule} increments the WIP counter; only the
 *     caller that moves it from 0 runs the loop (or hands it to the executor), so the loop runs on one thread
 *     at a time and a signal that arrives meanwhile makes the running loop go round once more instead of
 *     recursing (§1.3, §3.3).</li>
 *     <li>Each pass of the loop calls {@link #drain(Subscriber)} if this subscription holds the role and is
 *     live. A pass that finds the subscription cancelled ends it: it withdraws its data wake-up, detaches
 *     from the role (handing the mailbox to a queued successor), drops the downstream reference (§3.13) and,
 *     if the cancel was caused by an error ({@code request(n <= 0)}, an {@code onNext} that threw, a rejected
 *     executor task), signals {@code onError} once. {@link #complete()} and {@link #fail(Throwable)} do the
 *     same from inside {@code drain} and signal the terminal event.</li>
 * </ol>
 *
 * <h2>Threads</h2>
 * {@link #request}, {@link #cancel} and {@link #wake} may be called from any thread. {@link #drain},
 * {@link #complete}, {@link #fail}, {@link #checkEndOfStream}, {@link #produced} and {@link #onCancelled} run
 * only inside the loop, one thread at a time. Without an executor the loop runs on the thread whose
 * {@code schedule} moved the WIP counter from 0: the subscribing thread (first pass), a thread calling
 * {@code request} or {@code cancel}, a producer whose send published into the empty mailbox this subscription
 * waits on, the thread that closed the mailbox, or the thread of a predecessor that handed the role over.
 * With an executor the loop runs on the executor, one task at a time; only {@code onSubscribe} (and a
 * refusal's {@code onError}) run on the subscribing thread.
 *
 * <h2>Progress</h2>
 * {@code request}, {@code cancel} and {@code wake} are lock-free and never run user code except by becoming
 * the loop's owner (trampoline mode). Nothing spins while idle: a pass that finds nothing to do backs off as
 * its {@link WaitPolicy} says (a bounded number of spins and yields, and only on a thread dedicated to the
 * subscription; {@link WaitPolicy#park()} elsewhere), registers, and returns; the next event schedules a new
 * pass.
 *
 * <h2>Visibility</h2>
 * The loop's private state (the downstream reference, whether the role is held, whether the subscription
 * has terminated) is written and read only by the loop's owner; each owner's final WIP decrement
 * happens-before the next owner's WIP increment that wins (or the {@code Executor.execute} hand-off), so the
 * next pass sees it. What a requester wrote before {@code request(n)} happens-before the {@code onNext} calls
 * that demand allows. The role itself is handed over through {@link MailboxRing#consumerRole()}'s CAS, which
 * orders the predecessor's last {@code poll()} before this subscription's first one.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> {@code cancel} is asynchronous when a pass is running on another thread: that pass may finish
 * the {@code onNext} it is in, but it checks the flag before it takes the next message (subclasses must do
 * the same), so nothing more is taken out of the mailbox. A wake-up may be spurious (a registration that
 * fired late); a pass then finds nothing to do.
 *
 * <h2>Spec rules</h2>
 * §1.3 (signals serialized by the loop), §1.9 ({@code onSubscribe} first), §3.3 (trampolined, so
 * {@code request} from {@code onNext} does not recurse), §3.5–§3.7 (idempotent cancel; request after cancel
 * is a no-op), §3.9 ({@code request(n <= 0)} signals {@code IllegalArgumentException}), §3.13 (the downstream
 * reference is dropped when the subscription ends), §3.17 (demand capped at {@code Long.MAX_VALUE}, see
 * {@link Demand}).
 *
 * <p>A subclass whose consumer polls outside the loop (Reactor's ASYNC fusion) must make sure that no poll
 * can follow the loop's detach: check {@link #isCancelled()} before every poll, and override
 * {@link #releaseRole()} if the detach has to wait for the polling thread.
 *
 * @param <T> the message type
 */
public abstract class MailboxDrain<T> implements ConsumerRole, Subscription {
    /** The mailbox's ring. */
    protected final MailboxRing<T> ring;
    /** Runs the loop instead of the signalling thread; null for trampoline mode. */
    private final Executor executor;
    /** {@code this::drainLoop}, allocated once; null without an executor. */
    private final Runnable drainTask;
    /**
     * Trampolined (no executor): the batch drain's data registration, which stays while there is demand (see
     * {@link RingWaiters.StandingWaiter}); null with an executor, whose wake-up is a task submit and must stay one
     * per idle period.
     */
    private final RingWaiters.StandingWaiter standing;
    /**
     * How a pass that drained the mailbox empty waits before it registers for a wake-up and returns. Parks at
     * once unless the loop runs on a thread the user dedicated to consuming (see {@link WaitPolicy}).
     */
    protected final WaitPolicy waitPolicy;

    // Loop-confined state (see "Visibility").
    private Subscriber<? super T> downstream;
    private boolean roleHeld;
    private boolean terminated;

    /** Drain ownership and missed-signal count: incremented by every event, 1 from construction. */
    private volatile int wip;
    private static final VarHandle WIP;
    /** Outstanding demand, capped at {@code Long.MAX_VALUE}; added by requesters, subtracted once per batch. */
    private volatile long requested;
    private static final VarHandle REQUESTED;
    /** The error to signal when the loop ends a cancelled subscription; the first one wins. */
    private volatile Throwable error;
    private static final VarHandle ERROR;
    /** Set once by cancel, by an error, or by termination; read by the loop before every take. */
    private volatile boolean cancelled;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            WIP = lookup.findVarHandle(MailboxDrain.class, "wip", int.class);
            REQUESTED = lookup.findVarHandle(MailboxDrain.class, "requested", long.class);
            ERROR = lookup.findVarHandle(MailboxDrain.class, "error", Throwable.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * @param ring the mailbox to drain
     * @param downstream the subscriber
     * @param executor runs the loop, or null to run it on the signalling thread (trampoline)
     */
    protected MailboxDrain(MailboxRing<T> ring, Subscriber<? super T> downstream, Executor executor) {
        this(ring, downstream, executor, WaitPolicy.park());
    }

    /**
     * @param ring the mailbox to drain
     * @param downstream the subscriber
     * @param executor runs the loop, or null to run it on the signalling thread (trampoline)
     * @param waitPolicy how an emptied pass waits before it registers; give {@link WaitPolicy#park()} unless the
     *                   loop runs on a thread dedicated to this subscription
     */
    @SuppressWarnings("this-escape") // the StandingWaiter only keeps the reference: nothing wakes it before attach
    protected MailboxDrain(MailboxRing<T> ring, Subscriber<? super T> downstream, Executor executor,
            WaitPolicy waitPolicy) {
        this.ring = Objects.requireNonNull(ring, "ring");
        this.downstream = Objects.requireNonNull(downstream, "downstream");
        this.executor = executor;
        this.drainTask = executor == null ? null : this::drainLoop;
        this.standing = executor == null ? new RingWaiters.StandingWaiter(this) : null;
        this.waitPolicy = Objects.requireNonNull(waitPolicy, "waitPolicy");
        WIP.set(this, 1); // the starter owns the loop; published with this object by attachConsumer's CAS
    }

    // ------------------------------------------------------------------ the subclass's part

    /**
     * One drain pass: called inside the loop while this subscription holds the consumer role and is live.
     * Deliver what demand allows, then either end the stream ({@link #complete()}, {@link #fail}) or make sure
     * an event will schedule the next pass (demand, {@link MailboxRing#awaitData(Wakeable)} with {@code this},
     * or a cancel) and return. Must check {@link #isCancelled()} before every {@link MailboxRing#poll()}.
     *
     * <p><b>WARNING:</b> must not throw: catch what the downstream throws and report it with
     * {@link #cancelWithError(Throwable)}.
     *
     * @param downstream the subscriber (never null here)
     */
    protected abstract void drain(Subscriber<? super T> downstream);

    /**
     * Called once, inside the loop, when the subscription ends by cancel (including {@code request(n <= 0)}
     * and a throwing {@code onNext}), after the role was released and before any error is signalled. Not
     * called on completion, error from the mailbox, or refusal. Must not throw. Does nothing by default.
     */
    protected void onCancelled() {
    }

    /**
     * Called once, inside the loop, when the stream ends with {@code onComplete} or {@code onError} from the
     * mailbox, before the signal. Must not throw. Does nothing by default.
     */
    protected void onTerminated() {
    }

    /**
     * Withdraws the data wake-up and gives the consumer role up, handing the mailbox to a queued successor
     * (whose first drain pass may run on this thread, inside this call). Called inside the loop once no poll
     * can follow. Override only to defer the detach until a polling thread outside the loop has stopped.
     */
    protected void releaseRole() {
        withdrawDataWakeups();
        if (roleHeld || ring.consumerRole() == this) {
            roleHeld = false;
            ring.detachConsumer(this);
        }
    }

    /** Withdraws this drain's data registrations (the one-shot one and the standing one), if in place. */
    protected final void withdrawDataWakeups() {
        ring.cancelAwaitData(this);
        if (standing != null) {
            ring.cancelAwaitData(standing);
        }
    }

    // ------------------------------------------------------------------ starting

    /**
     * Attaches to the mailbox and signals {@code onSubscribe}; then runs the first pass. Call once, on the
     * subscribing thread, right after construction.
     */
    public final void start() {
        final Subscriber<? super T> downstream = this.downstream;
        // May call wake() on us before it returns (queued, then handed the role): we own the loop, so it counts.
        final int role = ring.attachConsumer(this);
        if (role == MailboxRing.ROLE_REFUSED) {
            refuse(downstream);
            return;
        }
        try {
            downstream.onSubscribe(this); // §1.9: first; we own the loop, so no other signal can overtake it
        } catch (Throwable ex) {
            // §2.13 broken by the subscriber: the subscription counts as cancelled; the error goes to onError.
            cancelWithError(ex);
        }
        resume();
    }

    private void refuse(Subscriber<? super T> downstream) {
        cancelled = true; // request and cancel on a refused subscription are no-ops (§3.6)
        terminated = true;
        this.downstream = null;
        try {
            downstream.onSubscribe(this); // §1.9: onSubscribe, then the only legal way to reject, onError
            downstream.onError(new IllegalStateException("the mailbox already has a live subscriber (one consumer "
                    + "at a time): name=" + ring.name()));
        } catch (Throwable ex) {
            dropped(ex);
        }
        drainLoop(); // gives the loop up; finds nothing to do
    }

    // ------------------------------------------------------------------ Subscription, ConsumerRole

    @Override
    public final void request(long n) {
        if (n <= 0L) {
            if (!cancelled) {
                // §3.9: signal the error and treat the subscription as cancelled
                ERROR.compareAndSet(this, null, new IllegalArgumentException(
                        "§3.9 violated: positive request amount required but it was " + n));
                cancelled = true;
                schedule();
            }
            return;
        }
        if (cancelled) {
            return; // §3.6
        }
        Demand.add(REQUESTED, this, n); // §3.17
        schedule();
    }

    @Override
    public final void cancel() {
        if (!cancelled) { // §3.7: later cancels are no-ops
            cancelled = true;
            schedule();
        }
    }

    /** Runs a drain pass soon (data arrived, the mailbox closed, or the role was handed to us). Never throws. */
    @Override
    public final void wake() {
        schedule();
    }

    @Override
    public final boolean isCancelled() {
        return cancelled;
    }

    // ------------------------------------------------------------------ the loop

    /** Makes the loop run: here if no pass is running (trampoline), on the executor, or by the running pass. */
    protected final void schedule() {
        if ((int) WIP.getAndAdd(this, 1) == 0) {
            resume();
        }
    }

    /** Called by the loop's owner: runs it here or hands it to the executor. */
    private void resume() {
        if (executor == null) {
            drainLoop();
            return;
        }
        try {
            executor.execute(drainTask); // the hand-off orders our writes before the task's reads
        } catch (Throwable ex) {
            // RejectedExecutionException (or a broken executor): end the subscription here, with that error.
            cancelWithError(ex);
            drainLoop();
        }
    }

    private void drainLoop() {
        int missed = 1;
        for (;;) {
            if (!terminated) {
                if (cancelled) {
                    endCancelled();
                } else if (roleHeld || (roleHeld = ring.consumerRole() == this)) { // pairs with the role CAS
                    drain(downstream);
                    if (!terminated && cancelled) {
                        endCancelled(); // cancelled inside drain (onNext threw, or cancel without a pending pass)
                    }
                }
                // else: queued behind a cancelled holder; its detach hands us the role and wakes us
            } else if (!roleHeld && ring.consumerRole() == this) {
                // The role was handed to us after we ended (cancelled while queued): pass it on (ConsumerRole rule).
                // Only a role that never held it gets here: ConsumerRoles hands a role over at most once, so one
                // that held the role and released it never gets it back. (That is why !roleHeld is enough: an
                // overriding releaseRole leaves roleHeld set, and may defer its detach to a poll in progress,
                // which this branch must not pre-empt.)
                ring.detachConsumer(this);
            }
            missed = (int) WIP.getAndAdd(this, -missed) - missed;
            if (missed == 0) {
                return;
            }
        }
    }

    private void endCancelled() {
        terminated = true;
        releaseRole();
        final Subscriber<? super T> downstream = this.downstream;
        this.downstream = null; // §3.13
        onCancelled();
        final Throwable error = this.error;
        if (error != null) {
            try {
                downstream.onError(error);
            } catch (Throwable ex) {
                dropped(ex);
            }
        }
    }

    // ------------------------------------------------------------------ helpers for drain()

    /**
     * One step of a short wait on a thread the library does not own: a producer between its claim and its publish,
     * the poll lock held for a bounded step. {@link RingWaiters#busyStep}: no {@code onSpinWait}, no {@code yield}
     * (BlockHound reports both on Reactor's non-blocking threads, and its default callback throws from them).
     */
    protected static void backOff(int spins) {
        RingWaiters.busyStep(spins);
    }

    /**
     * The batch drain, a complete {@link #drain} body: takes batches of up to {@code min(demand, batchSize)},
     * checking for cancel before each {@link MailboxRing#poll()} (so a cancel leaves every message not yet handed
     * to {@code onNext} in the mailbox), and per batch makes one producer wake-up check and one demand update.
     * Semantically similar to:
     * <pre>{@code
     * while (requested() > 0 && !isCancelled() && (m = ring.poll()) != null) {
     *     downstream.onNext(m);
     *     produced(1);
     * }
     * }</pre>
     * then ends the stream if the mailbox is closed and drained, or registers for the next send.
     */
    protected final void drainBatches(Subscriber<? super T> downstream, int batchSize) {
        final MailboxRing<T> ring = this.ring;
        for (int inFlight = 0; ; ) {
            final long requested = requested();
            if (requested == 0L) {
                // Without demand nothing is taken. End the stream if the mailbox is closed and drained; if it
                // is empty, ask for one wake-up (the next send or the close); if messages wait, the next
                // request() schedules us. No wake-up is registered while messages wait: it would fire at once.
                // A standing registration is withdrawn first: without demand, sends must not run the drain.
                if (standing != null) {
                    ring.cancelAwaitData(standing);
                }
                if (!checkEndOfStream() && ring.size() == 0 && !ring.awaitData(this)) {
                    checkEndOfStream(); // a send or a close raced the registration; a send needs demand
                }
                return;
            }
            final int limit = requested < batchSize ? (int) requested : batchSize;
            int n = 0;
            final Thread previous = ring.enterConsumer(); // a blocking send from onNext fails, not deadlocks
            try {
                T message;
                // cancelled is checked before each take, so a cancel leaves the rest in the mailbox
                while (n < limit && !isCancelled() && (message = ring.poll(this)) != null) {
                    n++; // counted before onNext: a message whose onNext throws counts as delivered
                    downstream.onNext(message);
                }
            } catch (Throwable ex) {
                cancelWithError(ex); // cancels; the loop hands the mailbox on, then signals onError(ex)
            } finally {
                ring.exitConsumer(previous);
            }
            if (n > 0) {
                ring.afterReceive(n); // one producer wake-up check per batch
                produced(n);          // one demand update per batch (none when unbounded)
                inFlight = 0;
            }
            if (isCancelled()) {
                return; // the loop ends the subscription
            }
            if (n == limit) {
                continue; // the batch was full: maybe more, with the demand that is left
            }
            // poll() found nothing. Complete if closed and drained; else back off as the wait policy says (on a
            // dedicated thread only), then register for the next send (or close).
            if (checkEndOfStream()) {
                return;
            }
            if (!Backoff.parksAtOnce(waitPolicy) && ring.idleUntilData(waitPolicy, this)) {
                continue; // a message (or the close) arrived during the back-off: no wake-up needed
            }
            if (isCancelled() || (standing != null ? ring.awaitDataStanding(standing) : ring.awaitData(this))) {
                return;
            }
            // awaitData refused: a message arrived since poll(), a producer is between its claim and its
            // publish, or the mailbox closed while one was. Poll again; back off only if we got nothing.
            if (n == 0) {
                backOff(inFlight++);
            }
        }
    }

    /** @return the outstanding demand (volatile read); {@code Long.MAX_VALUE} means unbounded */
    protected final long requested() {
        return requested;
    }

    /** Subtracts {@code n} delivered messages from the demand: once per batch, inside the loop. */
    protected final void produced(long n) {
        Demand.produced(REQUESTED, this, n);
    }

    /**
     * Cancels the subscription with an error to signal: the downstream threw from {@code onNext} (or
     * {@code onSubscribe}), or the executor rejected the drain. When the loop ends the subscription it hands
     * the mailbox on first, then signals {@code onError(ex)}, once. If the subscription was cancelled already
     * the error has nowhere to go and is {@link #dropped dropped}. Any thread; does not schedule the loop.
     */
    protected final void cancelWithError(Throwable ex) {
        if (cancelled || !ERROR.compareAndSet(this, null, ex)) {
            dropped(ex);
        }
        cancelled = true;
    }

    /**
     * To be called by {@code drain} after {@code poll()} found nothing: ends the stream if the mailbox is
     * closed and drained, with {@code onComplete}, or with {@code onError(cause)} if it was closed exceptionally.
     *
     * @return true if the subscription has terminated (return from {@code drain} at once)
     */
    protected final boolean checkEndOfStream() {
        final boolean end;
        try {
            end = ring.endOfStream();
        } catch (MailboxClosedException closed) {
            fail(closed.getCause() != null ? closed.getCause() : closed);
            return true;
        }
        if (end) {
            complete();
        }
        return end;
    }

    /** Ends the subscription with {@code onComplete}: releases the role first, then signals. Inside the loop. */
    protected final void complete() {
        final Subscriber<? super T> downstream = end();
        try {
            downstream.onComplete();
        } catch (Throwable ex) {
            dropped(ex);
        }
    }

    /** Ends the subscription with {@code onError(cause)}: releases the role first, then signals. Inside the loop. */
    protected final void fail(Throwable cause) {
        final Subscriber<? super T> downstream = end();
        try {
            downstream.onError(cause);
        } catch (Throwable ex) {
            dropped(ex);
        }
    }

    private Subscriber<? super T> end() {
        cancelled = true; // the role is given up, so a newcomer may take it (§1.6: terminated means cancelled)
        terminated = true;
        onTerminated();
        releaseRole();
        final Subscriber<? super T> downstream = this.downstream;
        this.downstream = null; // §3.13
        return downstream;
    }

    /**
     * Reports an error that can be signalled to nobody (the subscriber broke §2.13 in a terminal signal, or
     * threw after it cancelled): by default to the current thread's uncaught-exception handler; the Reactor face
     * overrides it with {@code Operators.onErrorDropped}. Never throws.
     */
    protected void dropped(Throwable ex) {
        try {
            final Thread thread = Thread.currentThread();
            thread.getUncaughtExceptionHandler().uncaughtException(thread, ex);
        } catch (Throwable ignored) {
            // nowhere left to report it
        }
    }
}
