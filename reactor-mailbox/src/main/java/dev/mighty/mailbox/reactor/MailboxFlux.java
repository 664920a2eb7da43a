package dev.mighty.mailbox.reactor;

import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.ConsumerRole;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A {@link Mailbox} in a Reactor pipeline: {@link #from(Mailbox)} receives from it as a {@link Flux} that
 * supports queue fusion, {@link #sendAll(Publisher, Mailbox)} sends a publisher into it as a {@link Mono}.
 *
 * <pre>{@code
 * Flux<Order> orders = MailboxFlux.from(mailbox);          // one subscriber at a time, like MailboxPublisher
 * orders.publishOn(Schedulers.boundedElastic())            // fused: publishOn polls the mailbox itself
 *       .subscribe(this::handle);
 *
 * MailboxFlux.sendAll(Flux.fromIterable(batch), mailbox)   // the mailbox closes when the source completes
 *       .subscribe();
 * }</pre>
 *
 * <h2>Receiving: fused or not</h2>
 * A subscriber that asks for queue fusion ({@code publishOn}, {@code concatMap}, the inners of {@code flatMap},
 * {@code StepVerifier.expectFusion}) gets {@link Fuseable#ASYNC}: it polls the mailbox directly instead of
 * copying each message into a queue of its own, and the mailbox tells it "poll now" with {@code onNext(null)},
 * as Reactor's ASYNC fusion does. Fusion is never {@link Fuseable#SYNC} (the mailbox is live: empty is not the
 * end), and is granted across a {@link Fuseable#THREAD_BARRIER}, because polling runs no user code. Any other
 * subscriber gets {@code onNext} calls from batched receives of up to {@code min(demand, batchSize)}, exactly
 * as from {@link MailboxPublisher}.
 *
 * <h2>Nothing is lost on cancel</h2>
 * What the pipeline has not taken stays in the mailbox for the next subscriber, fused or not: {@code poll()}
 * returns null once the subscription is cancelled, and {@code clear()} never empties the mailbox (Reactor's own
 * sinks discard what they buffered; a mailbox outlives its subscribers). Through fusion this holds across
 * {@code publishOn}: {@code MailboxFlux.from(mb).publishOn(s).take(10)} takes exactly ten messages out of the
 * mailbox, where an unfused source would lose {@code publishOn}'s prefetched queue. Keep {@code publishOn}
 * next to {@code from}: a {@code map} in between cannot fuse across the thread barrier, so {@code publishOn}
 * would buffer again. A message counts as delivered once {@code poll()} returned it: a cancel from another
 * thread that races a poll may see that one message dropped by the operator.
 *
 * <h2>One consumer at a time</h2>
 * As {@link MailboxPublisher}, and shared with it (the role lives in the mailbox): a second live subscriber
 * gets {@code onSubscribe} then {@code onError(IllegalStateException)}; a subscription that ends hands the
 * mailbox on; a subscriber arriving while a cancelled one finishes is accepted and starts where it stopped.
 *
 * <h2>Completion</h2>
 * {@code onComplete} once the mailbox is closed and drained (no send in flight), {@code onError(cause)} after
 * draining a mailbox closed with {@code closeExceptionally(cause)}. Neither needs demand.
 *
 * <h2>Threads</h2>
 * {@code subscribe}, {@code request} and {@code cancel}: any thread. Unfused, {@code onNext} runs where
 * {@link MailboxPublisher} runs it: on the requesting thread, on a producer's thread (its send woke the waiting
 * subscription), on the closing thread, or on a cancelled predecessor's thread. Fused, the downstream operator
 * polls on its own thread ({@code publishOn}'s worker); only the "poll now" signal and the terminal signals run
 * on those threads. <b>Note:</b> in fused mode {@code onNext} runs outside the mailbox's receive, so a blocking
 * {@code send} from inside the pipeline into its own full mailbox waits for room only that pipeline can make;
 * use {@code trySend} there.
 *
 * <h2>Progress</h2>
 * Lock-free, as {@link MailboxPublisher}; a fused {@code poll()} costs one uncontended CAS (the lock that lets a
 * cancel from any thread hand the mailbox on without two pollers, see {@code MailboxFluxSubscription}) and
 * spins only while a producer is between claiming a slot and publishing it. Nothing spins while idle.
 *
 * <h2>Visibility</h2>
 * What a producer wrote before its send happens-before the {@code onNext} (or {@code poll()}) that delivers it;
 * {@code close()} happens-before {@code onComplete}; one subscription's last delivery happens-before the next
 * subscription's first.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> fused, producers parked on a full mailbox are woken once per {@code min(batchSize, capacity)}
 * polls and whenever the downstream finds the mailbox empty, stops for lack of demand or cancels; a downstream
 * that pauses between polls with demand left ({@code concatMap} while its inner runs) can leave up to
 * {@code batchSize - 1} freed slots unannounced to producers already parked, until it polls again.
 *
 * <h2>Spec rules</h2>
 * As {@link MailboxPublisher}: §1.1, §1.3, §1.6/§1.7, §1.9, §1.10, §3.3, §3.5–§3.7, §3.9, §3.13, §3.17. In
 * fused mode demand is Reactor's: the downstream polls what its own demand allows.
 *
 * <h2>Scannable</h2>
 * The flux reports {@code NAME}, {@code CAPACITY} and {@code BUFFERED} (the mailbox's), {@code PREFETCH} (the
 * batch size) and {@code TERMINATED} (closed and drained); {@code CANCELLED} and {@code REQUESTED_FROM_DOWNSTREAM}
 * come from the {@code MailboxFlux} subscription that holds the mailbox now, if any. Each subscription reports the
 * same keys but {@code NAME} for itself, plus {@code ACTUAL}.
 *
 * @param <T> the message type
 */
public final class MailboxFlux<T> extends Flux<T> implements Fuseable, Scannable {
    /**
     * The most elements {@link #sendAll(Publisher, Mailbox)} requests ahead of what was admitted (or the capacity,
     * if smaller): Reactor's {@code Queues.SMALL_BUFFER_SIZE}, as its prefetching operators. Not the capacity: the
     * subscriber's buffer holds that many while the mailbox is full, so a large mailbox would double its memory.
     */
    public static final int DEFAULT_SEND_PREFETCH = 256;

    private final MailboxRing<T> ring;
    private final int batchSize;
    /** How the fused poller waits on an empty mailbox; null: the default, a linger it earns (see MailboxFluxSubscription). */
    private final @Nullable WaitPolicy waitPolicy;

    private MailboxFlux(Mailbox<T> mailbox, int batchSize, @Nullable WaitPolicy waitPolicy) {
        this.ring = MailboxRing.of(Objects.requireNonNull(mailbox, "mailbox"));
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize: " + batchSize + " (expected: >= 1)");
        }
        this.batchSize = batchSize;
        this.waitPolicy = waitPolicy;
    }

    /**
     * Receives from {@code mailbox}, in unfused batches of up to {@value MailboxPublisher#DEFAULT_BATCH_SIZE}.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to receive from; one subscriber at a time
     * @return a live, unicast, fuseable flux of the mailbox's messages: subscribing attaches as the mailbox's
     *         consumer, and a subscriber after a cancelled one resumes where it stopped
     * @throws NullPointerException if {@code mailbox} is null
     */
    public static <T> Flux<T> from(Mailbox<T> mailbox) {
        return from(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE);
    }

    /**
     * Receives from {@code mailbox}. Fused, a poll that finds the mailbox empty lingers briefly before it
     * registers for the next send, on a budget its deliveries earned (at most 64 ns per message delivered and
     * 4 us banked; never {@code onSpinWait} or {@code yield}), so a busy producer is not charged a wake-up each
     * time the poller catches up.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to receive from; one subscriber at a time
     * @param batchSize unfused: the most messages taken per batch; fused: the most polls between two wake-up
     *                  checks for parked producers (capped at the capacity); {@code >= 1}
     * @return a live, unicast, fuseable flux of the mailbox's messages
     * @throws NullPointerException if {@code mailbox} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public static <T> Flux<T> from(Mailbox<T> mailbox, int batchSize) {
        return onAssembly(new MailboxFlux<>(mailbox, batchSize, null));
    }

    /**
     * Receives from {@code mailbox}; when fused, the thread that polls (the {@code publishOn} worker) waits as
     * {@code waitPolicy} says before it reports the mailbox empty and registers for the next send, instead of the
     * other factories' default (a linger bounded by the messages delivered: at most 64 ns per message, 4 us
     * banked; {@link WaitPolicy#park()} here turns it off and registers at once). Give a
     * policy other than {@link WaitPolicy#park()} only when that worker
     * serves this flux alone, e.g. {@code publishOn(Schedulers.newSingle("consumer"))}: on a shared scheduler
     * the back-off would hold a worker other tasks need. Unfused, the policy is not used (the batches run on
     * signalling threads, which never spin).
     *
     * @param <T> the message type
     * @param mailbox the mailbox to receive from; one subscriber at a time
     * @param batchSize as in {@link #from(Mailbox, int)}, {@code >= 1}
     * @param waitPolicy how the fused poller waits on an empty mailbox
     * @return a live, unicast, fuseable flux of the mailbox's messages
     * @throws NullPointerException if {@code mailbox} or {@code waitPolicy} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public static <T> Flux<T> from(Mailbox<T> mailbox, int batchSize, WaitPolicy waitPolicy) {
        return onAssembly(new MailboxFlux<>(mailbox, batchSize, Objects.requireNonNull(waitPolicy, "waitPolicy")));
    }

    /**
     * Sends every element of {@code source} into {@code mailbox}, then closes it: a {@link MailboxSubscriber}
     * behind a {@code Mono}. The source is requested at most {@link #DEFAULT_SEND_PREFETCH} (or the capacity, if
     * smaller) ahead of what was admitted; an element that finds the mailbox full waits in the subscriber's buffer until the consumer
     * frees room, so no element is refused or blocked on, and a slow consumer slows the source down. A success
     * means the elements are in:
     * <ul>
     *     <li>Nothing happens until the {@code Mono} is subscribed; each subscription subscribes the source
     *     once.</li>
     *     <li>When the source completes, the {@code Mono} completes once its last element has been admitted and
     *     the mailbox closed (the consumer completes after draining).</li>
     *     <li>When the source fails with {@code e}, once what it sent before is admitted, the mailbox is closed
     *     with {@code closeExceptionally(e)} (its consumer gets {@code onError(e)} after draining) and the
     *     {@code Mono} fails with {@code e}.</li>
     *     <li>When someone else closes the mailbox first, the source is cancelled and the {@code Mono} fails
     *     with {@link MailboxClosedException} (its cause: the close's cause, if any; its message names how many
     *     buffered elements were dropped); those, and any the source still delivers, go to Reactor's discard
     *     hook ({@code doOnDiscard}); elements admitted before the close stay receivable.</li>
     *     <li>Cancelling the {@code Mono} before it ends cancels the source and closes the mailbox normally: the
     *     consumer receives what was admitted, then completes. A cancel after the end does nothing.</li>
     * </ul>
     * The {@code Mono}'s signal comes on the thread that admitted the last element: the source's, or, when the
     * last elements waited for room, the consumer's, from inside the receive that freed it (keep the
     * {@code Mono}'s subscriber short, or {@code publishOn} after it).
     * The mailbox's end is the source's end: to feed one mailbox from several sources, merge them first
     * ({@code Flux.merge(a, b)}), or subscribe a {@code MailboxSubscriber.sharing(mailbox, prefetch)} to each and
     * close the mailbox when all are done.
     *
     * @param <T> the element type
     * @param source the elements to send
     * @param mailbox the mailbox to send them into; closed at the end
     * @return a {@code Mono} that completes once the source completed and all of it was admitted
     * @throws NullPointerException if an argument is null
     */
    public static <T> Mono<Void> sendAll(Publisher<? extends T> source, Mailbox<T> mailbox) {
        Objects.requireNonNull(mailbox, "mailbox");
        return sendAll(source, mailbox, Math.min(mailbox.capacity(), DEFAULT_SEND_PREFETCH));
    }

    /**
     * As {@link #sendAll(Publisher, Mailbox)}, requesting at most {@code prefetch} elements ahead of what was
     * admitted (they wait in the subscriber's buffer while the mailbox is full).
     *
     * @param <T> the element type
     * @param source the elements to send
     * @param mailbox the mailbox to send them into; closed at the end
     * @param prefetch the most elements requested and not yet admitted, {@code 1 .. mailbox.capacity()}
     * @return a {@code Mono} that completes once the source completed and all of it was admitted
     * @throws NullPointerException if {@code source} or {@code mailbox} is null
     * @throws IllegalArgumentException if {@code prefetch} is out of range
     */
    public static <T> Mono<Void> sendAll(Publisher<? extends T> source, Mailbox<T> mailbox, int prefetch) {
        return MailboxSendAll.create(source, mailbox, prefetch);
    }

    /** Attaches {@code actual} as the mailbox's consumer; see the class comment. */
    @Override
    public void subscribe(CoreSubscriber<? super T> actual) {
        Objects.requireNonNull(actual, "subscriber"); // §1.9
        new MailboxFluxSubscription<>(ring, actual, batchSize, waitPolicy).start();
    }

    /** {@return the batch size given to {@link #from(Mailbox, int)}} */
    public int batchSize() {
        return batchSize;
    }

    @Override
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    public @Nullable Object scanUnsafe(Attr key) {
        final Object mailbox = RingScans.scan(ring, key);
        if (mailbox != null) {
            return mailbox;
        }
        if (key == Attr.PREFETCH) {
            return batchSize;
        }
        if (key == Attr.TERMINATED) {
            return ring.isTerminated();
        }
        if (key == Attr.CANCELLED || key == Attr.REQUESTED_FROM_DOWNSTREAM) {
            final ConsumerRole holder = ring.consumerRole();
            if (holder instanceof MailboxFluxSubscription) {
                return ((MailboxFluxSubscription<?>) holder).scanUnsafe(key);
            }
            return key == Attr.CANCELLED ? (Object) Boolean.FALSE : (Object) 0L;
        }
        if (key == Attr.RUN_STYLE) {
            return Attr.RunStyle.ASYNC;
        }
        return null; // PARENT, ACTUAL: a source has none
    }

    @Override
    public String stepName() {
        return "source(MailboxFlux)";
    }

    @Override
    public String toString() {
        return "MailboxFlux[name=" + ring.name() + ", batchSize=" + batchSize + "]";
    }
}
