package dev.mighty.mailbox.rs;

import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.FeedListener;
import dev.mighty.mailbox.internal.MailboxFeed;
import dev.mighty.mailbox.internal.MailboxRing;
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
 * parked {@code send} is, in arrival order, about one per freed slot) when the consumer frees a slot. The
 * registration is a token: a woken subscriber admits a message, or queues again at the head if a sender that
 * never waited took the slot, or hands the wake-up on to the next waiter; a registration whose buffer emptied by
 * any other route (its own upstream's {@code onNext} flushing into room not yet announced, its completion, a
 * close) is withdrawn, so it never strands a parked {@code send} or another subscriber. (An earlier design reserved
 * room before
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
 * private buffer (at most {@code prefetch}, only while the mailbox was full) cannot be admitted: they are dropped
 * (the subscriber keeps no reference to them), each counted once in the mailbox's {@code rejectedClosed}, and the
 * upstream is cancelled unless it has already signalled its end (a Reactor operator with a queue, such as
 * {@code publishOn}, discards its queue the same way). {@code MailboxFlux.sendAll} hands them to Reactor's
 * {@code onDiscard} hook and fails its {@code Mono}.
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
 * §2.1 (demand through {@code request}), §2.3 (no call on the subscription from inside {@code onComplete} or
 * {@code onError}), §2.5 (a second {@code onSubscribe} is cancelled), §2.7 (serial
 * calls to the subscription), §2.8 ({@code onNext} after cancel is handled), §2.13 (null signals throw
 * {@link NullPointerException}; no other exception escapes), §3.3 (no recursion through {@code request}).
 *
 * @param <T> the message type
 */
public final class MailboxSubscriber<T> implements Subscriber<T> {
    /** The implementation, shared with {@code MailboxFlux.sendAll}. */
    private final MailboxFeed<T> feed;

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
        this.feed = new MailboxFeed<>(MailboxRing.of(Objects.requireNonNull(mailbox, "mailbox")), prefetch,
                closeOnComplete, FeedListener.NONE);
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
        feed.onSubscribe(s);
    }

    @Override
    public void onNext(T t) {
        feed.onNext(t);
    }

    @Override
    public void onError(Throwable t) {
        feed.onError(t);
    }

    @Override
    public void onComplete() {
        feed.onComplete();
    }

    @Override
    public String toString() {
        return feed.toString();
    }
}
