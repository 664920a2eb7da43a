package dev.mighty.mailbox.rs;

import java.util.Objects;
import java.util.concurrent.Executor;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.WaitPolicy;
import org.reactivestreams.Processor;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * A {@link MailboxSubscriber} and a {@link MailboxPublisher} over one mailbox, as a {@link Processor}: what
 * the upstream sends goes through the mailbox to the one downstream subscriber, with the mailbox's capacity
 * as the buffer between them. The upstream's demand is the room in the mailbox; the downstream's demand is
 * served by batched receives.
 *
 * <p>A downstream cancel (or a downstream that breaks the subscription: {@code request(n <= 0)}, a throwing
 * {@code onNext}) <b>closes the mailbox</b>, which cancels the upstream (the processor rules of the TCK ask
 * for it); what is in the mailbox stays receivable, and a later subscriber receives it, then completes.
 * Completion and errors flow as in the two halves: {@code onComplete} closes the mailbox, {@code onError}
 * closes it exceptionally, and the downstream gets the terminal signal after the messages before it.
 *
 * <h2>Threads</h2>
 * As {@link MailboxSubscriber} for the upstream signals and as {@link MailboxPublisher} for the downstream
 * ones: with no executor, the downstream's {@code onNext} usually runs on the upstream's {@code onNext}
 * thread (the send wakes the waiting subscription) or on the thread that calls {@code request}; the
 * upstream's {@code request} may run on the downstream's drain thread (the receive that frees room).
 *
 * <h2>Progress</h2>
 * Lock-free throughout; neither side blocks while idle, and only an executor's drain task spins, for the
 * bounded back-off of its {@link WaitPolicy} (see the two halves).
 *
 * <h2>Visibility</h2>
 * What the upstream wrote before {@code onNext(m)} happens-before the downstream's {@code onNext(m)}.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> one downstream subscriber at a time: a second live one is refused with
 * {@code onError(IllegalStateException)}; a subscriber arriving after a cancel is accepted.
 *
 * <h2>Spec rules</h2>
 * The union of both halves' (§1.x, §2.x, §3.x as listed there), and §4.1 (a processor obeys both).
 *
 * @param <T> the message type
 */
public final class MailboxProcessor<T> implements Processor<T, T> {
    private final MailboxSubscriber<T> subscriber;
    private final MailboxPublisher<T> publisher;

    /**
     * Creates a processor without an executor, with the default batch size.
     *
     * @param mailbox the buffer between upstream and downstream
     * @throws NullPointerException if {@code mailbox} is null
     */
    public MailboxProcessor(Mailbox<T> mailbox) {
        this(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE);
    }

    /**
     * Creates a processor without an executor.
     *
     * @param mailbox the buffer between upstream and downstream
     * @param batchSize the largest number of messages taken per downstream batch, {@code >= 1}
     * @throws NullPointerException if {@code mailbox} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public MailboxProcessor(Mailbox<T> mailbox, int batchSize) {
        this.publisher = new MailboxPublisher<>(mailbox, batchSize, null, true);
        this.subscriber = new MailboxSubscriber<>(mailbox);
    }

    /**
     * Creates a processor that drains on an executor.
     *
     * @param mailbox the buffer between upstream and downstream
     * @param batchSize the largest number of messages taken per downstream batch, {@code >= 1}
     * @param executor runs the downstream drains (every downstream {@code onNext})
     * @throws NullPointerException if {@code mailbox} or {@code executor} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public MailboxProcessor(Mailbox<T> mailbox, int batchSize, Executor executor) {
        this(mailbox, batchSize, executor, WaitPolicy.defaults());
    }

    /**
     * Creates a processor that drains on an executor with a wait policy.
     *
     * @param mailbox the buffer between upstream and downstream
     * @param batchSize the largest number of messages taken per downstream batch, {@code >= 1}
     * @param executor runs the downstream drains (every downstream {@code onNext})
     * @param waitPolicy how a downstream drain task waits on an empty mailbox before it gives the thread back
     *                   (see {@link MailboxPublisher#MailboxPublisher(Mailbox, int, Executor, WaitPolicy)})
     * @throws NullPointerException if {@code mailbox}, {@code executor} or {@code waitPolicy} is null
     * @throws IllegalArgumentException if {@code batchSize < 1}
     */
    public MailboxProcessor(Mailbox<T> mailbox, int batchSize, Executor executor, WaitPolicy waitPolicy) {
        this.publisher = new MailboxPublisher<>(mailbox, batchSize, Objects.requireNonNull(executor, "executor"),
                Objects.requireNonNull(waitPolicy, "waitPolicy"), true);
        this.subscriber = new MailboxSubscriber<>(mailbox);
    }

    @Override
    public void subscribe(Subscriber<? super T> s) {
        publisher.subscribe(s);
    }

    @Override
    public void onSubscribe(Subscription s) {
        subscriber.onSubscribe(s);
    }

    @Override
    public void onNext(T t) {
        subscriber.onNext(t);
    }

    @Override
    public void onError(Throwable t) {
        subscriber.onError(t);
    }

    @Override
    public void onComplete() {
        subscriber.onComplete();
    }

    @Override
    public String toString() {
        return "MailboxProcessor[" + subscriber + ", " + publisher + "]";
    }
}
