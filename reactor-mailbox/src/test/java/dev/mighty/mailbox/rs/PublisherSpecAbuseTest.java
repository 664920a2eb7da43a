package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.SpecProbes;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Hooks;

/**
 * Hand-written subscribers that stress or break the Reactive Streams rules, against both receive faces (the
 * unfused {@code MailboxFlux} drains with the same loop, reached through Reactor's strict wrapper). Producers run
 * on their own threads where the rule is about concurrency.
 */
@Timeout(300)
@ExtendWith(SpecProbes.class)
class PublisherSpecAbuseTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    enum Face {
        PUBLISHER(mb -> new MailboxPublisher<>(mb, 16)),
        FLUX(mb -> MailboxFlux.from(mb, 16));

        private final Function<Mailbox<Integer>, Publisher<Integer>> factory;

        Face(Function<Mailbox<Integer>, Publisher<Integer>> factory) {
            this.factory = factory;
        }

        Publisher<Integer> publisher(Mailbox<Integer> mailbox) {
            return factory.apply(mailbox);
        }
    }

    private static Thread producer(Mailbox<Integer> mailbox, int count) {
        final Thread thread = new Thread(() -> {
            try {
                for (int i = 0; i < count; i++) {
                    mailbox.send(i);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "abuse-producer");
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    // ------------------------------------------------------------------ §3.17

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldStayUnboundedWhenLongMaxValueIsRequestedTwiceAndMoreWhileAProducerFeeds(Face face) throws Exception {
        final int count = 5_000;
        final Mailbox<Integer> mailbox = Mailboxes.bounded(64);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(Long.MAX_VALUE);
        face.publisher(mailbox).subscribe(subscriber);
        subscriber.request(Long.MAX_VALUE); // an uncapped sum would go negative and stop the drain
        subscriber.request(1);
        final Thread producer = producer(mailbox, count);
        subscriber.onNextHook = (s, v) -> {
            if (v == 100) {
                s.request(Long.MAX_VALUE); // and again, from inside onNext, mid-batch
            }
        };
        assertThat(subscriber.awaitValues(count, TIMEOUT)).isTrue();
        producer.join(TIMEOUT.toMillis());
        mailbox.close();
        assertThat(subscriber.awaitTerminated(TIMEOUT)).isTrue();
        assertThat(subscriber.completed).isTrue();
        assertThat(List.copyOf(subscriber.values)).hasSize(count).isSorted();
        assertThat(subscriber.violations).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldCapTheSumWhenFiniteRequestsOverflowTogether(Face face) throws Exception {
        final int count = 3_000;
        final Mailbox<Integer> mailbox = Mailboxes.bounded(64);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(Long.MAX_VALUE - 1);
        face.publisher(mailbox).subscribe(subscriber);
        final Thread producer = producer(mailbox, count);
        subscriber.onNextHook = (s, v) -> {
            if (v == 10) {
                s.request(Long.MAX_VALUE / 2 + 5); // outstanding (MAX - 12) + this overflows: capped, unbounded
                s.request(Long.MAX_VALUE / 2 + 5);
            }
        };
        assertThat(subscriber.awaitValues(count, TIMEOUT)).isTrue();
        producer.join(TIMEOUT.toMillis());
        assertThat(List.copyOf(subscriber.values)).hasSize(count).isSorted();
        assertThat(subscriber.violations).isEmpty();
    }

    // ------------------------------------------------------------------ §3.3

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldNotRecurseWhenRequestingOneFromOnNextWhileAProducerFeedsFromItsThread(Face face) throws Exception {
        final int count = 20_000;
        final Mailbox<Integer> mailbox = Mailboxes.bounded(32);
        final AtomicInteger depth = new AtomicInteger();
        final AtomicInteger maxDepth = new AtomicInteger();
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(1);
        subscriber.onNextHook = (s, v) -> {
            maxDepth.accumulateAndGet(depth.incrementAndGet(), Math::max);
            s.request(1); // §3.3: the running drain absorbs it
            depth.decrementAndGet();
        };
        face.publisher(mailbox).subscribe(subscriber);
        final Thread producer = producer(mailbox, count); // its sends run the drain when it waits with demand
        assertThat(subscriber.awaitValues(count, TIMEOUT)).isTrue();
        producer.join(TIMEOUT.toMillis());
        assertThat(maxDepth.get()).isEqualTo(1);
        assertThat(List.copyOf(subscriber.values)).hasSize(count).isSorted();
        assertThat(subscriber.violations).isEmpty();
    }

    // ------------------------------------------------------------------ cancel, request after the end

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldSignalNothingAndHandTheMailboxOnWhenCancelledInsideOnSubscribeThenRequested(Face face)
            throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        assertThat(mailbox.trySend(1)).isTrue();
        final Recording first = new Recording() {
            @Override
            public void onSubscribe(Subscription s) {
                super.onSubscribe(s);
                s.cancel();
                s.request(5);    // §3.6: no-op after cancel
                if (face == Face.PUBLISHER) {
                    // §3.6 before §3.9: no error after cancel. (Not asked of the FLUX face: Reactor wraps a plain
                    // Subscriber in its StrictSubscriber, which signals the §3.9 error itself, cancelled or not.)
                    s.request(-1);
                }
                s.cancel();      // §3.7
            }
        };
        face.publisher(mailbox).subscribe(first);
        assertThat(mailbox.trySend(2)).isTrue();
        mailbox.close();
        final CheckingSubscriber<Integer> second = new CheckingSubscriber<>(Long.MAX_VALUE);
        face.publisher(mailbox).subscribe(second); // accepted: the cancelled one handed the mailbox on
        assertThat(second.awaitTerminated(TIMEOUT)).isTrue();
        assertThat(second.values).containsExactly(1, 2);
        assertThat(second.completed).isTrue();
        assertThat(first.signals).containsExactly("onSubscribe");
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldIgnoreRequestsAndCancelAfterOnComplete(Face face) throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        assertThat(mailbox.trySend(1)).isTrue();
        mailbox.close();
        final Recording subscriber = new Recording();
        face.publisher(mailbox).subscribe(subscriber);
        subscriber.subscription.request(1);
        assertThat(subscriber.signals).containsExactly("onSubscribe", "onNext 1", "onComplete");
        subscriber.subscription.request(1);
        if (face == Face.PUBLISHER) { // Reactor's StrictSubscriber (FLUX face) reports it to onErrorDropped
            subscriber.subscription.request(0);
        }
        subscriber.subscription.request(Long.MAX_VALUE);
        subscriber.subscription.cancel();
        subscriber.subscription.request(1);
        assertThat(subscriber.signals).containsExactly("onSubscribe", "onNext 1", "onComplete");
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldIgnoreRequestsAfterOnErrorAndGiveTheNextSubscriberTheSameError(Face face) throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final IllegalStateException cause = new IllegalStateException("cause");
        mailbox.closeExceptionally(cause);
        final Recording subscriber = new Recording();
        face.publisher(mailbox).subscribe(subscriber);
        if (face == Face.PUBLISHER) { // Reactor's StrictSubscriber (FLUX face) reports it to onErrorDropped
            subscriber.subscription.request(-5);
        }
        subscriber.subscription.request(3);
        assertThat(subscriber.signals).containsExactly("onSubscribe", "onError cause");
        assertThat(subscriber.error).isSameAs(cause);
        final Recording next = new Recording();
        face.publisher(mailbox).subscribe(next);
        assertThat(next.signals).containsExactly("onSubscribe", "onError cause");
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldAcceptASubscriberSubscribingFromInsideOnComplete(Face face) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        assertThat(mailbox.trySend(1)).isTrue();
        final Recording inner = new Recording();
        final Recording outer = new Recording() {
            @Override
            public void onComplete() {
                super.onComplete();
                face.publisher(mailbox).subscribe(inner); // the role was released before onComplete
            }
        };
        face.publisher(mailbox).subscribe(outer);
        outer.subscription.request(5);
        mailbox.close(); // onComplete runs on this thread
        assertThat(outer.signals).containsExactly("onSubscribe", "onNext 1", "onComplete");
        assertThat(inner.signals).containsExactly("onSubscribe", "onComplete");
    }

    // ------------------------------------------------------------------ §1.10, §2.12 broken by the caller

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldRefuseTheSameSubscriberSubscribedTwiceAndKeepItsFirstSubscription(Face face) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        for (int i = 0; i < 5; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        final Recording subscriber = new Recording();
        final Publisher<Integer> publisher = face.publisher(mailbox);
        publisher.subscribe(subscriber);
        final Subscription first = subscriber.subscription;
        first.request(2);
        publisher.subscribe(subscriber); // §2.12 broken: the first subscription is live, so this one is refused
        assertThat(subscriber.subscriptions).hasSize(2);
        assertThat(subscriber.error).isInstanceOf(IllegalStateException.class);
        first.request(3);
        mailbox.close();
        assertThat(subscriber.signals).containsExactly("onSubscribe", "onNext 0", "onNext 1", "onSubscribe",
                "onError IllegalStateException", "onNext 2", "onNext 3", "onNext 4", "onComplete");
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldHandTheMailboxOnWhenOnErrorThrows(Face face) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final Recording thrower = new Recording() {
            @Override
            public void onError(Throwable t) {
                super.onError(t);
                throw new IllegalStateException("§2.13 broken in onError");
            }
        };
        final Thread.UncaughtExceptionHandler previous = Thread.currentThread().getUncaughtExceptionHandler();
        final List<Throwable> dropped = new CopyOnWriteArrayList<>();
        // the Reactive Streams faces report it to the thread's handler, the Reactor face to Hooks.onErrorDropped
        Thread.currentThread().setUncaughtExceptionHandler((t, e) -> dropped.add(e));
        Hooks.onErrorDropped(dropped::add);
        try {
            face.publisher(mailbox).subscribe(thrower);
            thrower.subscription.request(1);
            final Recording live = new Recording();
            face.publisher(mailbox).subscribe(live); // refused: the thrower is live; its onError throws next
            assertThat(live.signals).containsExactly("onSubscribe", "onError IllegalStateException");
            mailbox.closeExceptionally(new IllegalArgumentException("closed"));
            assertThat(thrower.signals).containsExactly("onSubscribe", "onError closed");
        } finally {
            Thread.currentThread().setUncaughtExceptionHandler(previous);
            Hooks.resetOnErrorDropped();
        }
        assertThat(dropped).hasSize(1);
        final Recording after = new Recording();
        face.publisher(mailbox).subscribe(after); // the mailbox was handed on despite the throw
        assertThat(after.signals).containsExactly("onSubscribe", "onError closed");
    }

    /** Records every signal as a string, in order; not thread-safe (used on one thread). */
    static class Recording implements Subscriber<Integer> {
        final List<String> signals = new CopyOnWriteArrayList<>();
        final List<Subscription> subscriptions = new CopyOnWriteArrayList<>();
        volatile Subscription subscription;
        volatile Throwable error;

        @Override
        public void onSubscribe(Subscription s) {
            signals.add("onSubscribe");
            subscriptions.add(s);
            if (subscription == null) {
                subscription = s;
            }
        }

        @Override
        public void onNext(Integer integer) {
            signals.add("onNext " + integer);
        }

        @Override
        public void onError(Throwable t) {
            error = t;
            signals.add("onError " + (t instanceof IllegalStateException && !"cause".equals(t.getMessage())
                    ? "IllegalStateException" : t.getMessage()));
        }

        @Override
        public void onComplete() {
            signals.add("onComplete");
        }
    }
}
