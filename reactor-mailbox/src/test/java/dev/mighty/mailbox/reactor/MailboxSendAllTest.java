package dev.mighty.mailbox.reactor;

import static dev.mighty.mailbox.reactor.MailboxFluxTest.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;

@Timeout(300)
class MailboxSendAllTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @Test
    void shouldAdmitEverythingThenCloseAndCompleteWhenTheSourceCompletes() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        StepVerifier.create(MailboxFlux.sendAll(Flux.range(0, 10), mailbox))
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(mailbox.isClosed()).isTrue();
        assertThat(mailbox.size()).isEqualTo(10);
        StepVerifier.create(MailboxFlux.from(mailbox)).expectNextSequence(range(0, 10)).expectComplete().verify(TIMEOUT);
    }

    @Test
    void shouldDoNothingUntilSubscribed() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final Mono<Void> send = MailboxFlux.sendAll(Flux.range(0, 3), mailbox);
        assertThat(mailbox.size()).isZero();
        assertThat(mailbox.isClosed()).isFalse();
        send.block(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(3);
    }

    @Test
    void shouldRequestOnlyTheRoomTheMailboxHasWhenTheConsumerIsSlow() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> source = TestPublisher.create();
        final Disposable sending = MailboxFlux.sendAll(source, mailbox).subscribe();
        source.assertMinRequested(8);
        source.assertMaxRequested(8); // the mailbox's room, reserved
        source.next(0, 1, 2, 3, 4, 5, 6, 7);
        assertThat(mailbox.size()).isEqualTo(8);
        assertThat(mailbox.trySend(99)).isFalse(); // full; the source is not asked for more
        assertThat(mailbox.tryRecv()).isZero();     // frees a slot: the subscriber reserves and requests again
        final List<Integer> rest = new CopyOnWriteArrayList<>();
        mailbox.tryRecvMany(rest::add, 16);
        source.next(8, 9);
        source.complete();
        assertThat(rest).containsExactlyElementsOf(range(1, 8));
        assertThat(mailbox.tryRecv()).isEqualTo(8);
        assertThat(mailbox.tryRecv()).isEqualTo(9);
        assertThat(mailbox.isTerminated()).isTrue();
        assertThat(sending.isDisposed()).isTrue();
    }

    @Test
    void shouldRequestAtMostTheDefaultPrefetchAheadOfALargeMailbox() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(1 << 16);
        final TestPublisher<Integer> source = TestPublisher.create();
        final Disposable sending = MailboxFlux.sendAll(source, mailbox).subscribe();
        source.assertMaxRequested(MailboxFlux.DEFAULT_SEND_PREFETCH); // not the capacity: the buffer stays small
        source.assertMinRequested(MailboxFlux.DEFAULT_SEND_PREFETCH);
        sending.dispose();
    }

    @Test
    void shouldCloseExceptionallyAndFailWithTheCauseWhenTheSourceFails() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(MailboxFlux.sendAll(Flux.just(1, 2).concatWith(Mono.error(boom)), mailbox))
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(TIMEOUT);
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectNext(1, 2)
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(TIMEOUT);
    }

    @Test
    void shouldCancelTheSourceAndFailWhenTheMailboxIsClosedUnderIt() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final TestPublisher<Integer> source = TestPublisher.create();
        StepVerifier.create(MailboxFlux.sendAll(source, mailbox))
                .then(() -> source.next(1, 2))
                .then(mailbox::close)
                .expectErrorSatisfies(e -> assertThat(e)
                        .isInstanceOf(MailboxClosedException.class)
                        .hasMessageContaining("closed before all elements were admitted"))
                .verify(TIMEOUT);
        source.assertCancelled();
        StepVerifier.create(MailboxFlux.from(mailbox)).expectNext(1, 2).expectComplete().verify(TIMEOUT);
    }

    @Test
    void shouldFailAtOnceWhenTheMailboxIsAlreadyClosed() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final IllegalStateException cause = new IllegalStateException("gone");
        mailbox.closeExceptionally(cause);
        final TestPublisher<Integer> source = TestPublisher.create();
        StepVerifier.create(MailboxFlux.sendAll(source, mailbox))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(MailboxClosedException.class).hasCause(cause))
                .verify(TIMEOUT);
        source.assertCancelled();
    }

    @Test
    void shouldCancelTheSourceAndCloseTheMailboxWhenTheMonoIsCancelled() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final TestPublisher<Integer> source = TestPublisher.create();
        StepVerifier.create(MailboxFlux.sendAll(source, mailbox))
                .then(() -> source.next(1, 2))
                .thenCancel()
                .verify(TIMEOUT);
        source.assertCancelled();
        assertThat(mailbox.isClosed()).isTrue();
        assertThat(mailbox.closeCause()).isNull();
        StepVerifier.create(MailboxFlux.from(mailbox)).expectNext(1, 2).expectComplete().verify(TIMEOUT);
    }

    @Test
    void shouldSignalIllegalArgumentWhenTheMonoIsRequestedZero() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        StepVerifier.create(MailboxFlux.sendAll(Flux.never(), mailbox), 0)
                .consumeSubscriptionWith(s -> s.request(0))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("§3.9"))
                .verify(TIMEOUT);
    }

    @Test
    void shouldFeedAFusedConsumerEndToEndWhenBothSidesRunOnDifferentThreads() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(256);
        final int count = 20_000;
        final Mono<List<Integer>> received = MailboxFlux.from(mailbox)
                .publishOn(Schedulers.single())
                .collectList()
                .cache();
        received.subscribe();
        MailboxFlux.sendAll(Flux.range(0, count).subscribeOn(Schedulers.parallel()), mailbox).block(TIMEOUT);
        assertThat(received.block(TIMEOUT)).containsExactlyElementsOf(range(0, count));
    }

    @Test
    void shouldReportScannableAttributes() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final Scannable scannable = Scannable.from(MailboxFlux.sendAll(Flux.range(0, 3), mailbox, 4));
        assertThat(scannable.scan(Scannable.Attr.PREFETCH)).isEqualTo(4);
        assertThat(scannable.scan(Scannable.Attr.CAPACITY)).isEqualTo(16);
        assertThat(scannable.scan(Scannable.Attr.BUFFERED)).isZero();
        assertThat(scannable.stepName()).isEqualTo("sendAll(mailbox)");
    }
}
