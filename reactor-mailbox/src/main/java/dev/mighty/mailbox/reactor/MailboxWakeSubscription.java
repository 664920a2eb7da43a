package dev.mighty.mailbox.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.Wakeable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Operators;

/**
 * The subscription of a {@code Mono<Void>} of {@link MailboxMonos} that waits for a mailbox event: a trampolined
 * loop of {@link #attempt()}s, run once on subscribe and again on every {@link #wake()}.
 *
 * <h2>Threads</h2>
 * {@link #wake()}, {@link #request} and {@link #cancel}: any thread, concurrently. The loop runs on one thread at a
 * time: whoever moves {@code wip} from 0 (the subscriber, a consumer that freed room, a closer); a wake that
 * arrives while the loop runs is counted and makes it attempt once more, so no wake is lost and a spurious one
 * costs one attempt.
 *
 * <h2>Progress</h2>
 * Lock-free; a wake never blocks (the loop makes one non-blocking attempt and at most one registration).
 *
 * <h2>Visibility</h2>
 * {@code wip}'s getAndAdd orders each attempt after the wake that triggered it; {@code done} is written by the
 * loop (terminal) or by {@code cancel}, and read by the loop before each attempt.
 *
 * <h2>Spec rules</h2>
 * §1.3 and §1.7 (signals only from the loop, at most one terminal signal), §2.13 (a throwing subscriber's
 * exception goes to {@code Operators.onErrorDropped}, never into the mailbox's thread), §3.9 (see
 * {@link #request}).
 */
abstract class MailboxWakeSubscription implements Subscription, Wakeable {
    final CoreSubscriber<? super Void> downstream;
    final MailboxRing<?> ring;

    /** Wake-ups not yet handled by the loop; the loop runs while it is above 0. */
    private volatile int wip;
    private static final VarHandle WIP;
    /** Terminated or cancelled: no more attempts, no more signals. */
    private volatile boolean done;
    /** A {@code request(n <= 0)}: the loop signals the §3.9 error. */
    private volatile long badRequest;
    /** {@link #stop()} has run. Loop-confined. */
    private boolean stopped;

    static {
        try {
            WIP = MethodHandles.lookup().findVarHandle(MailboxWakeSubscription.class, "wip", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    MailboxWakeSubscription(MailboxRing<?> ring, CoreSubscriber<? super Void> downstream) {
        this.ring = ring;
        this.downstream = downstream;
    }

    /**
     * One try, in the loop: ends with {@link #complete()} or {@link #error(Throwable)}, or registers this
     * subscription with the mailbox for the next {@link #wake()}. Must not block.
     */
    abstract void attempt();

    /** Subscriber's thread, after {@code onSubscribe}: the first attempt. */
    final void start() {
        wake();
    }

    /** Called by the mailbox (at most once per registration, maybe spuriously) and by {@link #start()}. */
    @Override
    public final void wake() {
        if ((int) WIP.getAndAdd(this, 1) != 0) {
            return; // the running loop attempts again
        }
        int missed = 1;
        for (;;) {
            if (!done) {
                final long n = badRequest;
                if (n != 0L) {
                    error(new IllegalArgumentException("§3.9 violated: positive request amount required, got " + n));
                } else {
                    attempt();
                }
            }
            if (done && !stopped) {
                stopped = true;
                stop();
            }
            missed = (int) WIP.getAndAdd(this, -missed) - missed;
            if (missed == 0) {
                return;
            }
        }
    }

    /** A {@code Mono<Void>} signals no value: demand is not needed. {@code n <= 0} fails the Mono (§3.9). */
    @Override
    public final void request(long n) {
        if (n <= 0L) {
            badRequest = n == 0L ? -1L : n;
            wake();
        }
    }

    /**
     * Stops: no further attempt, no signal (§3.7: idempotent). What an attempt already did stays done. The loop
     * runs once more (here, or on the thread running it now) to {@link #stop()}: a registration it holds is
     * withdrawn there, by the only thread that touches it.
     */
    @Override
    public final void cancel() {
        if (!done) {
            done = true;
            wake();
        }
    }

    /** In the loop, once, after the Mono ended or was cancelled: withdraw what {@link #attempt()} registered. */
    void stop() {
    }

    /** In the loop: signals {@code onComplete}. */
    final void complete() {
        done = true;
        try {
            downstream.onComplete();
        } catch (Throwable t) {
            dropped(t);
        }
    }

    /** In the loop: signals {@code onError(e)}. */
    final void error(Throwable e) {
        done = true;
        try {
            downstream.onError(e);
        } catch (Throwable t) {
            dropped(t);
        }
    }

    private void dropped(Throwable t) {
        Exceptions.throwIfJvmFatal(t); // a VirtualMachineError or the like must not be swallowed
        Operators.onErrorDropped(t, downstream.currentContext());
    }

    /** @return whether the loop has ended the Mono or it was cancelled (racy: scans) */
    final boolean isDone() {
        return done;
    }
}
