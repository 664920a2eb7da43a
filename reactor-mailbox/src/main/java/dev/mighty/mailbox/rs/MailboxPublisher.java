package dev.mighty.mailbox.rs;

import java.util.Objects;
import java.util.concurrent.Executor;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.internal.MailboxDrain;
import dev.mighty.mailbox.internal.MailboxRing;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;

/**
 * The receive side of a {@link Mailbox} as a Reactive Streams {@link Publisher}: downstream demand is served
 * by batched receives, taking at most {@code min(demand, batchSize)} messages per batch. Semantically similar
 * to this loop, run whenever demand, data or close may let it progress:
 * <pre>{@code
 * while (!cancelled && requested > 0) {
 *     int n = 0;
 *     for (T m; n < min(requested, batchSize) && !cancelled && (m = mailbox.tryRecv()) != null; n++) {
 *         downstream.onNext(m);
 *     }
 *     requested -= n;   // once per batch, and one producer wake-up check per batch
 *     if (n == 0) { break; }   // empty: complete if closed and drained, else wait for the next send
 * }
 * }</pre>
 *
 * <h2>One consumer at a time</h2>
 * A mailbox has one consumer, whichever face it uses ({@code MailboxPublisher}, {@code MailboxFlux}, or
 * {@code recv} on a thread; the adapters coordinate through the mailbox, the thread is on its own). A
 * subscriber that arrives while another <em>live</em> subscription holds the mailbox gets {@code onSubscribe}
 * then {@code onError(IllegalStateException)}. A subscription that ends (cancel, completion, error) hands
 * the mailbox on; a subscriber that arrives while a cancelled one is still finishing its last
 * {@code onNext} is accepted and starts once that one has returned, where it stopped.
 *
 * <h2>Nothing is lost on cancel</h2>
 * A message is taken out of the mailbox only to be handed to {@code onNext} of a live subscription: the
 * batch checks for cancel before each take. A cancel, even from inside {@code onNext} in the middle of a batch
 * (Reactor's {@code take}, a failing operator), leaves every message not yet handed to {@code onNext} in the
 * mailbox, for the next subscriber. A message whose {@code onNext} threw counts as delivered: the subscription
 * is cancelled (the mailbox handed on), then the subscriber gets {@code onError} with what it threw, once.
 * (Reactor operators that prefetch into their own queue discard that queue on cancel; that loss is theirs.)
 *
 * <h2>Threads: where {@code onNext} runs</h2>
 * No thread of this library runs a drain and no thread waits for data: a drain runs when something happens
 * that may let it progress, on the thread of that event, unless an {@link Executor} was given.
 * <ul>
 *     <li><b>Default (trampoline)</b>: {@code onNext}, {@code onComplete} and {@code onError} run on one of
 *     <ul>
 *         <li>the thread that calls {@code request(n)} (or {@code subscribe}, if {@code onSubscribe} requested):
 *         demand arrived and messages are waiting;</li>
 *         <li>a <b>producer's</b> thread, inside its {@code send}/{@code trySend}: the subscription had demand and
 *         found the mailbox empty, so it registered to be woken by the next publish; that producer then runs
 *         the drain, which delivers everything present while demand lasts (so the producer's send returns
 *         only after that);</li>
 *         <li>the thread that calls {@code close()}/{@code closeExceptionally} (completion or error);</li>
 *         <li>the thread of a cancelled predecessor that hands the mailbox over (its detach wakes us).</li>
 *     </ul>
 *     Whichever of these finds no drain running runs it; signals that arrive meanwhile are absorbed by the
 *     running drain (a WIP "missed" counter), so signals never overlap and {@code request} from {@code onNext}
 *     does not recurse. Why: it needs no thread, hands a message over with no context switch, and costs a
 *     producer nothing while the subscriber keeps up (the wake-up is paid only on the empty&rarr;non-empty edge
 *     while the subscription waits with demand).</li>
 *     <li><b>With an {@code Executor}</b> ({@link #MailboxPublisher(Mailbox, int, Executor)}): every drain, hence
 *     every {@code onNext}, {@code onComplete} and {@code onError}, runs as a task on that executor, at most one
 *     task per subscription at a time (a task is submitted when an event finds no drain running). Producers
 *     and requesters only submit. A task that drains the mailbox empty waits as its {@link WaitPolicy} says
 *     (by default a bounded spin-then-yield back-off of a few tens of microseconds at most) before it registers
 *     for the next send and returns, so a producer that keeps sending does not pay an executor hand-off every
 *     few messages; an idle subscription holds no thread and uses no CPU. Use it when producers must not run subscriber code. Only {@code onSubscribe}
 *     (and a refused subscriber's {@code onError}) run on the subscribing thread. If the executor rejects a
 *     task, the subscription ends with {@code onError(RejectedExecutionException)} on the thread that was
 *     submitting.</li>
 * </ul>
 * During a batch the running thread is marked as the mailbox's consumer, so an {@code onNext} that sends into
 * the same mailbox never deadlocks: {@code trySend} returns {@code false} when it is full and a blocking
 * {@code send} throws {@link IllegalStateException} instead of waiting for room only it could make.
 *
 * <h2>Progress</h2>
 * {@code subscribe}, {@code request} and {@code cancel} are lock-free apart from the drain they may run.
 * The drain is wait-free per message except when it finds a slot claimed but not yet published: it then
 * retries (spinning briefly, then yielding) until that producer publishes. Nothing spins while demand is zero;
 * while the mailbox is empty only an executor's drain task spins, for the bounded back-off of its
 * {@link WaitPolicy}.
 *
 * <h2>Visibility</h2>
 * What a producer wrote before its send happens-before {@code onNext} of that message; what a subscriber did
 * before {@code request(n)} happens-before the {@code onNext} calls it allows; {@code close()} happens-before
 * {@code onComplete}. One subscription's last {@code onNext} happens-before its successor's first.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> with zero demand the subscription completes as soon as the mailbox is closed and empty, but
 * while messages wait it needs demand to reach the end. After {@code cancel()} from another thread, the
 * {@code onNext} in progress finishes; nothing more is taken.
 *
 * <h2>Spec rules</h2>
 * §1.1 (never more than requested), §1.3 (serialized signals), §1.6/§1.7 (terminal signals end the
 * subscription), §1.9 ({@code subscribe(null)} throws {@link NullPointerException}; {@code onSubscribe}
 * first), §1.10 (each subscriber gets its own subscription), §3.3 (bounded recursion), §3.5–§3.7, §3.9
 * ({@code request(n <= 0)} signals {@link IllegalArgumentException}), §3.13 (the subscriber reference is
 * dropped when the subscription ends), §3.17 (demand capped at {@code Long.MAX_VALUE}).
 *
 * @param <T> the message type
 */
public final class MailboxPublisher<T> implements Publisher<T> {
    /** The default largest batch. */
    public static final int DEFAULT_BATCH_SIZE = 256;

    private final MailboxRing<T> ring;
    private final int batchSize;
    private final @Nullable Executor executor;
    private final WaitPolicy waitPolicy;
    private final boolean closeOnCancel;

    /**
     * A publisher with batches of up to {@value #DEFAULT_BATCH_SIZE}, draining on the signalling thread.
     *
     * @param mailbox the mailbox to drain
     * @throws NullPointerException if {@code mailbox} is null
     */
    public MailboxPublisher(Mailbox<T> mailbox) {
        this(mailbox, DEFAULT_BATCH_SIZE);
    }

    /**
     * A publisher draining on the signalling thread.
     *
     * @param mailbox the mailbox to drain
     * @param batchSize the largest number of messages taken per batch, {@code >= 1}
     * @throws NullPointerException if {@code mailbox} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public MailboxPublisher(Mailbox<T> mailbox, int batchSize) {
        this(mailbox, batchSize, null, false);
    }

    /**
     * A publisher whose drains, and so every {@code onNext}, run on {@code executor}.
     *
     * @param mailbox the mailbox to drain
     * @param batchSize the largest number of messages taken per batch, {@code >= 1}
     * @param executor runs the drains; should not run tasks on the submitting thread
     * @throws NullPointerException if {@code mailbox} or {@code executor} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public MailboxPublisher(Mailbox<T> mailbox, int batchSize, Executor executor) {
        this(mailbox, batchSize, executor, WaitPolicy.defaults());
    }

    /**
     * A publisher whose drains, and so every {@code onNext}, run on {@code executor}, and whose drain task, when
     * it empties the mailbox, waits as {@code waitPolicy} says before it registers for the next send and
     * returns the thread to the executor. {@link WaitPolicy#defaults()} unless given; pass
     * {@link WaitPolicy#park()} for an executor whose threads serve other work too.
     *
     * @param mailbox the mailbox to drain
     * @param batchSize the largest number of messages taken per batch, {@code >= 1}
     * @param executor runs the drains; should not run tasks on the submitting thread
     * @param waitPolicy how the drain task waits on an empty mailbox before it gives the thread back
     * @throws NullPointerException if {@code mailbox}, {@code executor} or {@code waitPolicy} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public MailboxPublisher(Mailbox<T> mailbox, int batchSize, Executor executor, WaitPolicy waitPolicy) {
        this(mailbox, batchSize, Objects.requireNonNull(executor, "executor"),
                Objects.requireNonNull(waitPolicy, "waitPolicy"), false);
    }

    /** @param closeOnCancel whether a cancelled subscription closes the mailbox ({@link MailboxProcessor}) */
    MailboxPublisher(Mailbox<T> mailbox, int batchSize, @Nullable Executor executor, boolean closeOnCancel) {
        this(mailbox, batchSize, executor, executor == null ? WaitPolicy.park() : WaitPolicy.defaults(),
                closeOnCancel);
    }

    /** @param closeOnCancel whether a cancelled subscription closes the mailbox ({@link MailboxProcessor}) */
    MailboxPublisher(Mailbox<T> mailbox, int batchSize, @Nullable Executor executor, WaitPolicy waitPolicy,
            boolean closeOnCancel) {
        this.ring = MailboxRing.of(Objects.requireNonNull(mailbox, "mailbox"));
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize: " + batchSize + " (expected: >= 1)");
        }
        this.batchSize = batchSize;
        this.executor = executor;
        // Trampoline: the drain runs on producers' and requesters' threads, which must never spin.
        this.waitPolicy = executor == null ? WaitPolicy.park() : waitPolicy;
        this.closeOnCancel = closeOnCancel;
    }

    /**
     * Attaches {@code subscriber} as the mailbox's consumer; see the class comment for refusal and hand-over.
     *
     * @throws NullPointerException if {@code subscriber} is null (§1.9)
     */
    @Override
    public void subscribe(Subscriber<? super T> subscriber) {
        Objects.requireNonNull(subscriber, "subscriber"); // §1.9
        new MailboxSubscription<>(ring, subscriber, batchSize, executor, waitPolicy, closeOnCancel).start();
    }

    /** {@return the largest number of messages taken per batch} */
    public int batchSize() {
        return batchSize;
    }

    /**
     * {@return how a drain waits on an empty mailbox before it registers ({@link WaitPolicy#park()} without
     *          executor)}
     */
    public WaitPolicy waitPolicy() {
        return waitPolicy;
    }

    @Override
    public String toString() {
        return "MailboxPublisher[name=" + ring.name() + ", batchSize=" + batchSize
                + (executor != null ? ", executor=" + executor + ", waitPolicy=" + waitPolicy : "") + "]";
    }

    /**
     * A subscription of {@link MailboxPublisher}: the batch drain over {@link MailboxDrain}'s loop. Its fields
     * are final; everything mutable lives in {@link MailboxDrain}.
     */
    static final class MailboxSubscription<T> extends MailboxDrain<T> {
        private final int batchSize;
        private final boolean closeOnCancel;

        MailboxSubscription(MailboxRing<T> ring, Subscriber<? super T> downstream, int batchSize, Executor executor,
                WaitPolicy waitPolicy, boolean closeOnCancel) {
            super(ring, downstream, executor, waitPolicy);
            this.batchSize = batchSize;
            this.closeOnCancel = closeOnCancel;
        }

        @Override
        protected void drain(Subscriber<? super T> downstream) {
            drainBatches(downstream, batchSize);
        }

        @Override
        protected void onCancelled() {
            if (closeOnCancel) {
                ring.close(); // MailboxProcessor: the downstream left; what is in the mailbox stays receivable
            }
        }
    }
}
