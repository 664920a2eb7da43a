package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Flux;
import reactor.test.publisher.TestPublisher;

@Timeout(300)
class MailboxSubscriberTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    /** A subscription that records what the subscriber asks of it. */
    static final class RecordingSubscription implements Subscription {
        final AtomicLong requested = new AtomicLong();
        final List<Long> requests = new ArrayList<>();
        final AtomicBoolean cancelled = new AtomicBoolean();

        @Override
        public synchronized void request(long n) {
            requests.add(n);
            requested.addAndGet(n);
        }

        @Override
        public void cancel() {
            cancelled.set(true);
        }
    }

    private static List<Integer> drain(Mailbox<Integer> mailbox) {
        final List<Integer> out = new ArrayList<>();
        mailbox.tryRecvMany(out::add, Integer.MAX_VALUE);
        return out;
    }

    // ------------------------------------------------------------------ construction and bad input

    @Test
    void shouldRejectPrefetchWhenOutOfRange() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        assertThatThrownBy(() -> new MailboxSubscriber<>(mailbox, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prefetch: 0 (expected: 1 .. 8)");
        assertThatThrownBy(() -> new MailboxSubscriber<>(mailbox, 9))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prefetch: 9 (expected: 1 .. 8)");
        assertThatThrownBy(() -> new MailboxSubscriber<>(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
    }

    @Test
    void shouldThrowNullPointerWhenASignalIsNull() {
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(Mailboxes.bounded(8));
        assertThatThrownBy(() -> subscriber.onSubscribe(null)).isInstanceOf(NullPointerException.class); // §2.13
        subscriber.onSubscribe(new RecordingSubscription());
        assertThatThrownBy(() -> subscriber.onNext(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> subscriber.onError(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void shouldCancelTheSecondSubscriptionWhenAlreadySubscribed() {
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(Mailboxes.bounded(8));
        final RecordingSubscription first = new RecordingSubscription();
        final RecordingSubscription second = new RecordingSubscription();
        subscriber.onSubscribe(first);
        subscriber.onSubscribe(second); // §2.5
        assertThat(second.cancelled).isTrue();
        assertThat(second.requests).isEmpty();
        assertThat(first.cancelled).isFalse();
        assertThat(first.requested.get()).isEqualTo(8);
    }

    // ------------------------------------------------------------------ demand holds no room

    @Test
    void shouldRequestPrefetchAndHoldNoRoomWhenSubscribed() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.assertMinRequested(8).assertMaxRequested(8);
        assertThat(mailbox.stats().reserved()).isZero(); // an idle upstream keeps nobody out
        assertThat(mailbox.trySend(-1)).isTrue();
        upstream.next(1, 2, 3);
        assertThat(drain(mailbox)).containsExactly(-1, 1, 2, 3);
    }

    @Test
    void shouldBufferInOrderAndAdmitAsTheConsumerFreesRoomWhenOtherProducersFillTheMailbox() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        for (int i = 0; i < 5; i++) {
            mailbox.trySend(100 + i);
        }
        final RecordingSubscription upstream = new RecordingSubscription();
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox);
        subscriber.onSubscribe(upstream);
        assertThat(upstream.requests).containsExactly(8L);
        for (int i = 1; i <= 5; i++) {
            subscriber.onNext(i); // 1, 2, 3 fit; 4 and 5 wait in the subscriber, never dropped, never blocking
        }
        assertThat(mailbox.size()).isEqualTo(8);
        assertThat(mailbox.stats().producerParks()).as("one room registration for the two waiting").isEqualTo(1L);
        // the receive frees the slots and wakes the subscriber on this thread, which admits what waits, in order
        assertThat(drain(mailbox)).containsExactly(100, 101, 102, 103, 104, 1, 2, 3);
        assertThat(drain(mailbox)).containsExactly(4, 5);
    }

    @Test
    void shouldHonourPrefetchAndReplenishAfterThreeQuartersWhenRoomIsAvailable() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(64);
        final RecordingSubscription upstream = new RecordingSubscription();
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox, 8);
        subscriber.onSubscribe(upstream);
        assertThat(upstream.requests).containsExactly(8L);
        for (int i = 0; i < 5; i++) {
            subscriber.onNext(i);
        }
        assertThat(upstream.requests).containsExactly(8L);
        subscriber.onNext(5); // the 6th of 8: limit = 8 - 8/4 = 6
        assertThat(upstream.requests).containsExactly(8L, 6L);
        assertThat(mailbox.stats().reserved()).isZero();
    }

    @Test
    void shouldKeepAtMostPrefetchOutstandingWhileTheMailboxIsFull() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        final RecordingSubscription upstream = new RecordingSubscription();
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox);
        subscriber.onSubscribe(upstream);
        for (int i = 0; i < 3; i++) {
            subscriber.onNext(i);
        }
        assertThat(upstream.requests).as("3 of 4 admitted: replenished by 3").containsExactly(4L, 3L);
        for (int i = 3; i < 7; i++) {
            subscriber.onNext(i); // 3 fits; 4, 5, 6 wait: the mailbox is full
        }
        assertThat(mailbox.size()).isEqualTo(4);
        assertThat(upstream.requests).as("requested - admitted <= prefetch: nothing more").containsExactly(4L, 3L);
        assertThat(mailbox.tryRecv()).isEqualTo(0); // frees one slot: the wake-up admits 4, on this thread
        assertThat(mailbox.size()).isEqualTo(4);
        assertThat(drain(mailbox)).containsExactly(1, 2, 3, 4); // frees 4: the wake-up admits 5, 6, then requests
        assertThat(upstream.requests).containsExactly(4L, 3L, 4L);
        assertThat(drain(mailbox)).containsExactly(5, 6);
    }

    @Test
    void shouldFeedTheMailboxWithoutBlockingWhenTheUpstreamIsSynchronous() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        Flux.range(0, 10).subscribe(new MailboxSubscriber<>(mailbox));
        final List<Integer> received = new ArrayList<>();
        while (received.size() < 10) {
            final Integer v = mailbox.tryRecv(); // each receive lets Flux.range emit more, on this thread
            assertThat(v).isNotNull();
            received.add(v);
        }
        assertThat(received).containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
        assertThat(mailbox.isTerminated()).isTrue(); // onComplete closed it
    }

    // ------------------------------------------------------------------ terminal signals

    @Test
    void shouldCloseTheMailboxAndReleaseReservationsWhenTheUpstreamCompletes() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.next(1, 2).complete();
        assertThat(mailbox.isClosed()).isTrue();
        assertThat(mailbox.closeCause()).isNull();
        assertThat(mailbox.stats().reserved()).isZero();
        assertThat(drain(mailbox)).containsExactly(1, 2);
        assertThat(mailbox.isTerminated()).isTrue();
    }

    @Test
    void shouldCloseTheMailboxExceptionallyWhenTheUpstreamErrors() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        final IllegalStateException boom = new IllegalStateException("boom");
        upstream.next(1).error(boom);
        assertThat(mailbox.closeCause()).isSameAs(boom);
        assertThat(mailbox.stats().reserved()).isZero();
        assertThat(mailbox.recv()).isEqualTo(1);
        assertThatThrownBy(mailbox::recv).isInstanceOf(MailboxClosedException.class).hasCause(boom);
    }

    @Test
    void shouldCancelTheUpstreamWhenTheMailboxIsClosedBySomeoneElse() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.next(1);
        upstream.assertNotCancelled();
        mailbox.close();
        upstream.assertCancelled();
        assertThat(drain(mailbox)).containsExactly(1);
    }

    @Test
    void shouldCancelAtOnceWhenSubscribingToAClosedMailbox() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        mailbox.close();
        final RecordingSubscription upstream = new RecordingSubscription();
        new MailboxSubscriber<>(mailbox).onSubscribe(upstream);
        assertThat(upstream.cancelled).isTrue();
        assertThat(upstream.requests).isEmpty();
    }

    @Test
    void shouldRejectAndCountAnOnNextThatArrivesAfterSomeoneElseClosed() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.createNoncompliant(
                TestPublisher.Violation.DEFER_CANCELLATION);
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.next(1);
        mailbox.close();
        upstream.assertCancelled();
        upstream.next(2); // after cancel (§2.8): not admitted, no exception, counted as rejected
        assertThat(mailbox.stats().rejectedClosed()).isEqualTo(1L);
        assertThat(mailbox.stats().reserved()).isZero();
        assertThat(drain(mailbox)).containsExactly(1);
    }

    @Test
    void shouldDropAndCountBufferedMessagesWhenSomeoneElseClosesAFullMailbox() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
        final TestPublisher<Integer> upstream = TestPublisher.createNoncompliant(
                TestPublisher.Violation.DEFER_CANCELLATION);
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.next(1, 2, 3); // 3 waits in the subscriber: the mailbox is full
        mailbox.close();
        upstream.assertCancelled();
        upstream.next(4); // §2.8: the last signal lets the subscriber give up what it holds
        assertThat(mailbox.stats().rejectedClosed()).isEqualTo(2L); // 3 (buffered) and 4
        assertThat(drain(mailbox)).containsExactly(1, 2);
    }

    @Test
    void shouldNotCloseTheMailboxWhenASharingSubscribersUpstreamCompletes() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
        final TestPublisher<Integer> first = TestPublisher.create();
        final TestPublisher<Integer> second = TestPublisher.create();
        first.subscribe(MailboxSubscriber.sharing(mailbox, 2));
        second.subscribe(MailboxSubscriber.sharing(mailbox, 2));
        first.next(1, 2);
        second.next(10, 20); // both wait: the mailbox is full
        first.complete();    // completes once its buffer is empty; the mailbox stays open
        second.complete();
        assertThat(mailbox.isClosed()).isFalse();
        final List<Integer> got = new ArrayList<>();
        Integer m;
        while ((m = mailbox.tryRecv()) != null) {
            got.add(m);
        }
        assertThat(got).containsExactlyInAnyOrder(1, 2, 10, 20);
        assertThat(got.indexOf(10)).isLessThan(got.indexOf(20));
        assertThat(mailbox.isClosed()).isFalse();
        assertThat(mailbox.trySend(3)).isTrue(); // still open for everyone else
    }

    // ------------------------------------------------------------------ misbehaving upstreams

    @Test
    void shouldCloseExceptionallyAndCancelWhenOnNextExceedsDemandOnAFullMailbox() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
        final TestPublisher<Integer> upstream = TestPublisher.createNoncompliant(
                TestPublisher.Violation.REQUEST_OVERFLOW);
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.next(1, 2); // the requested 2, admitted: 2 more are requested, to wait in the subscriber
        upstream.next(3, 4); // the mailbox is full: they wait
        upstream.next(5);    // §1.1 broken, and the mailbox is full: not dropped silently
        upstream.assertCancelled();
        assertThat(mailbox.closeCause())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("§1.1 violated");
        assertThat(mailbox.tryRecv()).isEqualTo(1);
        assertThat(mailbox.tryRecv()).isEqualTo(2);
        assertThatThrownBy(mailbox::recv).isInstanceOf(MailboxClosedException.class)
                .hasCauseInstanceOf(IllegalStateException.class);
        assertThat(mailbox.stats().reserved()).isZero();
    }

    @Test
    void shouldAdmitTheMessageWhenOnNextExceedsDemandAndThereIsRoom() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox, 1);
        subscriber.onNext(1); // before onSubscribe: nothing requested yet (§1.1 broken), but there is room
        final RecordingSubscription upstream = new RecordingSubscription();
        subscriber.onSubscribe(upstream);
        subscriber.onNext(2);
        assertThat(upstream.cancelled).isFalse();
        assertThat(mailbox.isClosed()).isFalse();
        assertThat(drain(mailbox)).containsExactly(1, 2);
    }

    @Test
    void shouldIgnoreSignalsWhenTheUpstreamSignalsAfterCompleting() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.createNoncompliant(
                TestPublisher.Violation.CLEANUP_ON_TERMINATE);
        upstream.subscribe(new MailboxSubscriber<>(mailbox));
        upstream.next(1).complete();
        upstream.next(2); // §1.7 broken: ignored, no exception, no reservation touched
        upstream.error(new IllegalStateException("late"));
        upstream.complete();
        assertThat(mailbox.closeCause()).isNull();
        assertThat(mailbox.stats().reserved()).isZero();
        assertThat(drain(mailbox)).containsExactly(1);
        assertThat(mailbox.isTerminated()).isTrue();
    }

    @Test
    void shouldCloseExceptionallyWhenTheMailboxRejectsAMessage() {
        final FrameMailbox frames = Mailboxes.frames(4, 16);
        final RecordingSubscription upstream = new RecordingSubscription();
        final MailboxSubscriber<MessageFrame> subscriber = new MailboxSubscriber<>(frames);
        subscriber.onSubscribe(upstream);
        subscriber.onNext(MessageFrame.of(1, 1L, new byte[8]));
        subscriber.onNext(MessageFrame.of(1, 2L, new byte[17])); // over maxPayload: onNext must not throw
        assertThat(upstream.cancelled).isTrue();
        assertThat(frames.closeCause()).isInstanceOf(IllegalArgumentException.class);
        assertThat(frames.stats().reserved()).isZero();
        assertThat(frames.tryRecv().correlationId()).isEqualTo(1L);
    }

    @Test
    void shouldFeedAFrameMailboxWhenFramesArrive() {
        final FrameMailbox frames = Mailboxes.frames(4);
        Flux.range(0, 3)
                .map(i -> MessageFrame.of(i, i, ByteBuffer.allocate(60).putInt(0, i).array()))
                .subscribe(new MailboxSubscriber<>(frames));
        for (int i = 0; i < 3; i++) {
            final MessageFrame frame = frames.tryRecv();
            assertThat(frame.correlationId()).isEqualTo(i);
            assertThat(frame.payload().getInt(0)).isEqualTo(i);
        }
        assertThat(frames.isTerminated()).isTrue();
    }
}
