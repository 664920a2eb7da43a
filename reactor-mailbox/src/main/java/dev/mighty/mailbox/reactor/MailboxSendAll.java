package dev.mighty.mailbox.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * {@link MailboxFlux#sendAll}: a {@link MailboxSubscriber} behind a {@code Mono<Void>}. Each subscription
 * subscribes the source with a {@link SendAllSubscriber}, which forwards the source's signals to a new
 * {@code MailboxSubscriber} and watches the subscription that one uses: a cancel the source did not ask for
 * means the mailbox was closed under it.
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
        final SendAllSubscriber<T> parent = new SendAllSubscriber<>(actual, mailbox, prefetch);
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
     * Between the source and the {@code MailboxSubscriber}, and the {@code Mono}'s subscription.
     *
     * <h2>Threads</h2>
     * The source signals serially (§1.3). {@code request}/{@code cancel} of the {@code Mono}: any thread. The
     * {@code MailboxSubscriber} calls the source's subscription, through {@link UpstreamGuard}, from its own
     * request loop, which may run on the closing thread.
     *
     * <h2>Visibility</h2>
     * {@code done} (a CAS) picks the one terminal signal of the {@code Mono}; {@code upstreamDone} is written by
     * the source's signal thread before it forwards a terminal signal, so a guard cancel that sees it false
     * happened before the source finished.
     */
    static final class SendAllSubscriber<T> implements CoreSubscriber<T>, Subscription, Scannable {
        private final CoreSubscriber<? super Void> actual;
        private final Mailbox<T> mailbox;
        private final MailboxSubscriber<T> inner;

        /** The source's subscription; set once by onSubscribe. */
        private volatile Subscription upstream;
        private static final VarHandle UPSTREAM;
        /** 0 until the Mono's terminal signal (or cancel) is decided; then 1. */
        private volatile int done;
        private static final VarHandle DONE;
        /** The Mono was cancelled: cancels from the guard are ours. */
        private volatile boolean cancelled;
        /** The source signalled onComplete or onError. */
        private volatile boolean upstreamDone;

        static {
            try {
                final MethodHandles.Lookup lookup = MethodHandles.lookup();
                UPSTREAM = lookup.findVarHandle(SendAllSubscriber.class, "upstream", Subscription.class);
                DONE = lookup.findVarHandle(SendAllSubscriber.class, "done", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        SendAllSubscriber(CoreSubscriber<? super Void> actual, Mailbox<T> mailbox, int prefetch) {
            this.actual = actual;
            this.mailbox = mailbox;
            this.inner = new MailboxSubscriber<>(mailbox, prefetch);
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
            inner.onSubscribe(new UpstreamGuard(this, s));
        }

        @Override
        public void onNext(T t) {
            inner.onNext(t); // never blocks: admitted, or buffered by the subscriber until there is room
        }

        @Override
        public void onError(Throwable t) {
            Objects.requireNonNull(t, "t"); // §2.13
            upstreamDone = true;
            inner.onError(t); // closes the mailbox exceptionally: the consumer gets onError(t) after draining
            if (DONE.compareAndSet(this, 0, 1)) {
                actual.onError(t);
            }
        }

        @Override
        public void onComplete() {
            upstreamDone = true;
            inner.onComplete(); // closes the mailbox: every element before this one has been admitted
            if (DONE.compareAndSet(this, 0, 1)) {
                actual.onComplete();
            }
        }

        /** The {@code MailboxSubscriber} cancelled the source: the mailbox was closed before the source ended. */
        void upstreamCancelledByMailbox() {
            if (!cancelled && !upstreamDone && DONE.compareAndSet(this, 0, 1)) {
                final MailboxRing<T> ring = MailboxRing.of(mailbox);
                actual.onError(new MailboxClosedException("sendAll: the mailbox was closed before the source "
                        + "completed: name=" + ring.name(), ring.closeCause()));
            }
        }

        // ------------------------------------------------------------------ the Mono's subscription

        @Override
        public void request(long n) {
            if (n <= 0L && DONE.compareAndSet(this, 0, 1)) {
                cancelSource();
                actual.onError(new IllegalArgumentException("§3.9 violated: positive request amount required but "
                        + "it was " + n));
            }
            // a Mono<Void> emits no element: demand has no other use
        }

        @Override
        public void cancel() {
            if (!cancelled) {
                cancelled = true;
                DONE.compareAndSet(this, 0, 1);
                cancelSource();
            }
        }

        private void cancelSource() {
            cancelled = true;
            final Subscription upstream = this.upstream;
            if (upstream != null) {
                upstream.cancel();
            }
            // The source will not finish: close the mailbox, which also lets the MailboxSubscriber release its
            // unused reservations; what was admitted stays receivable.
            mailbox.close();
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
                return upstreamDone;
            }
            if (key == Attr.CANCELLED) {
                return cancelled;
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
    }

    /** The source's subscription as the {@code MailboxSubscriber} sees it: reports cancels it makes. */
    static final class UpstreamGuard implements Subscription {
        private final SendAllSubscriber<?> parent;
        private final Subscription upstream;

        UpstreamGuard(SendAllSubscriber<?> parent, Subscription upstream) {
            this.parent = parent;
            this.upstream = upstream;
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            upstream.cancel();
            parent.upstreamCancelledByMailbox();
        }
    }
}
