package dev.mighty.mailbox.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.FeedListener;
import dev.mighty.mailbox.internal.MailboxFeed;
import dev.mighty.mailbox.internal.MailboxRing;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * {@link MailboxFlux#sendAll}: a {@link MailboxFeed} (the implementation of {@code MailboxSubscriber}) behind a
 * {@code Mono<Void>}. Each subscription subscribes the source with a {@link SendAllSubscriber}, which forwards the
 * source's signals to a new feed and signals the {@code Mono} from the feed's outcome ({@link FeedListener}), so
 * that a success means every element is in the mailbox:
 * <ul>
 *     <li>{@code onComplete} once the source completed, its last element was admitted and the mailbox closed;</li>
 *     <li>{@code onError(e)} once the source failed with {@code e} and what it sent before was admitted (the
 *     mailbox closed with {@code e});</li>
 *     <li>{@code onError(MailboxClosedException)} when the mailbox was closed by someone else before all of it was
 *     in: the message says how many buffered elements were dropped; those, and any the source still delivers, go
 *     to Reactor's {@code onDiscard} hook.</li>
 * </ul>
 *
 * @param <T> the element type
 */
final class MailboxSendAll<T> extends Mono<Void> implements Scannable {
    private final Publisher<? extends T> source;
    private final Mailbox<T> mailbox;
    private final int prefetch;

    private MailboxSendAll(Publisher<? extends T> source, Mailbox<T> mailbox, int prefetch) {
        this.source = source;
        this.mailbox = mailbox;
        this.prefetch = prefetch;
    }

    static <T> Mono<Void> create(Publisher<? extends T> source, Mailbox<T> mailbox, int prefetch) {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(mailbox, "mailbox");
        if (prefetch < 1 || prefetch > mailbox.capacity()) {
            throw new IllegalArgumentException("prefetch: " + prefetch + " (expected: 1 .. " + mailbox.capacity() + ")");
        }
        return onAssembly(new MailboxSendAll<>(source, mailbox, prefetch));
    }

    @Override
    public void subscribe(CoreSubscriber<? super Void> actual) {
        Objects.requireNonNull(actual, "subscriber"); // §1.9
        final SendAllSubscriber<T> parent = new SendAllSubscriber<>(actual, MailboxRing.of(mailbox), prefetch);
        actual.onSubscribe(parent);
        Flux.<T>from(source).subscribe(parent);
    }

    @Override
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    public Object scanUnsafe(Attr key) {
        if (key == Attr.PARENT) {
            return Scannable.from(source);
        }
        if (key == Attr.PREFETCH) {
            return prefetch;
        }
        if (key == Attr.CAPACITY) {
            return mailbox.capacity();
        }
        if (key == Attr.BUFFERED) {
            return mailbox.size();
        }
        if (key == Attr.RUN_STYLE) {
            return Attr.RunStyle.SYNC;
        }
        return null;
    }

    @Override
    public String stepName() {
        return "sendAll(" + MailboxRing.of(mailbox).name() + ")";
    }

    /**
     * Between the source and the feed, and the {@code Mono}'s subscription.
     *
     * <h2>Threads</h2>
     * The source signals serially (§1.3). {@code request}/{@code cancel} of the {@code Mono}: any thread. The feed
     * calls the source's subscription from its own loop (so those calls are serial, §2.7), and reports its outcome
     * from that loop or the source's signal thread; a cancel of the {@code Mono} only closes the mailbox, and the
     * feed's loop then cancels the source.
     *
     * <h2>Visibility</h2>
     * {@code done} (a CAS) picks the one terminal signal of the {@code Mono}, or the cancel.
     */
    static final class SendAllSubscriber<T> implements CoreSubscriber<T>, Subscription, Scannable, FeedListener {
        private final CoreSubscriber<? super Void> actual;
        private final MailboxRing<T> ring;
        private final MailboxFeed<T> feed;

        /** The source's subscription; set once by onSubscribe. */
        private volatile Subscription upstream;
        private static final VarHandle UPSTREAM;
        /** 0 until the Mono's terminal signal (or cancel) is decided; then 1. */
        private volatile int done;
        private static final VarHandle DONE;
        /** The Mono was cancelled (or failed by a bad request) before it ended. */
        private volatile boolean cancelled;
        /** The feed reported its outcome. */
        private volatile boolean finished;

        static {
            try {
                final MethodHandles.Lookup lookup = MethodHandles.lookup();
                UPSTREAM = lookup.findVarHandle(SendAllSubscriber.class, "upstream", Subscription.class);
                DONE = lookup.findVarHandle(SendAllSubscriber.class, "done", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        SendAllSubscriber(CoreSubscriber<? super Void> actual, MailboxRing<T> ring, int prefetch) {
            this.actual = actual;
            this.ring = ring;
            this.feed = new MailboxFeed<>(ring, prefetch, true, this);
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }

        @Override
        public void onSubscribe(Subscription s) {
            Objects.requireNonNull(s, "s"); // §2.13
            if (!UPSTREAM.compareAndSet(this, null, s)) {
                s.cancel(); // §2.5
                return;
            }
            if (cancelled) {
                s.cancel(); // the Mono was cancelled before the source subscribed
                return;
            }
            feed.onSubscribe(s);
        }

        @Override
        public void onNext(T t) {
            feed.onNext(t); // never blocks: admitted, or buffered by the feed until there is room
        }

        @Override
        public void onError(Throwable t) {
            feed.onError(t); // the Mono fails once what came before is admitted (finished, below)
        }

        @Override
        public void onComplete() {
            feed.onComplete(); // the Mono completes once the last element is admitted and the mailbox closed
        }

        // ------------------------------------------------------------------ the feed's outcome

        @Override
        public void discarded(Object message) {
            Operators.onDiscard(message, actual.currentContext());
        }

        @Override
        public void finished(boolean closedUnder, long dropped, Throwable error) {
            finished = true;
            final Throwable failure = closedUnder
                    ? new MailboxClosedException("sendAll: the mailbox was closed before all elements were admitted: "
                            + "name=" + ring.name() + ", dropped=" + dropped, ring.closeCause())
                    : error;
            if (!DONE.compareAndSet(this, 0, 1)) {
                if (failure != null && !cancelled) {
                    Operators.onErrorDropped(failure, actual.currentContext()); // the Mono ended already
                }
                return;
            }
            if (failure != null) {
                actual.onError(failure);
            } else {
                actual.onComplete();
            }
        }

        // ------------------------------------------------------------------ the Mono's subscription

        @Override
        public void request(long n) {
            if (n <= 0L && DONE.compareAndSet(this, 0, 1)) {
                stopSource();
                actual.onError(new IllegalArgumentException("§3.9 violated: positive request amount required but "
                        + "it was " + n));
            }
            // a Mono<Void> emits no element: demand has no other use
        }

        /** Before the Mono has ended: the source is stopped and the mailbox closed. After: nothing (§3.7). */
        @Override
        public void cancel() {
            if (DONE.compareAndSet(this, 0, 1)) {
                stopSource();
            }
        }

        private void stopSource() {
            cancelled = true; // a source not subscribed yet is cancelled by onSubscribe
            // The source will not finish: close the mailbox. The feed's loop sees the close, drops (and discards)
            // what it buffered, and cancels the source from its loop, so calls on the source stay serial (§2.7).
            // What was admitted stays receivable.
            ring.close();
        }

        @Override
        @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
        public Object scanUnsafe(Attr key) {
            if (key == Attr.PARENT) {
                return upstream;
            }
            if (key == Attr.ACTUAL) {
                return actual;
            }
            if (key == Attr.TERMINATED) {
                return finished;
            }
            if (key == Attr.CANCELLED) {
                return cancelled;
            }
            if (key == Attr.PREFETCH) {
                return feed.prefetch();
            }
            if (key == Attr.CAPACITY) {
                return ring.capacity();
            }
            if (key == Attr.BUFFERED) {
                return ring.size();
            }
            if (key == Attr.RUN_STYLE) {
                return Attr.RunStyle.SYNC;
            }
            return null;
        }
    }
}
