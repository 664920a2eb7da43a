package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** {@link MailboxMonos}: the non-blocking send and the end of the stream as {@code Mono}s. */
@Timeout(300)
class MailboxMonosTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @RegisterExtension
    final SingleSchedulers schedulers = new SingleSchedulers();

    @AfterEach
    void resetHooks() {
        Hooks.resetOnErrorDropped();
    }

    @Nested
    class Send {

        @Test
        void shouldCompleteAtOnceWhenThereIsRoom() {
            final Mailbox<String> mailbox = Mailboxes.bounded(2);
            StepVerifier.create(MailboxMonos.send(mailbox, "a")).expectComplete().verify(TIMEOUT);
            assertThat(mailbox.tryRecv()).isEqualTo("a");
        }

        @Test
        void shouldSendOncePerSubscriptionWhenSubscribedTwice() {
            final Mailbox<String> mailbox = Mailboxes.bounded(4);
            final Mono<Void> send = MailboxMonos.send(mailbox, "a");
            send.block(TIMEOUT);
            send.block(TIMEOUT);
            assertThat(mailbox.size()).isEqualTo(2);
        }

        @Test
        void shouldWaitWithoutBlockingThenCompleteWhenTheConsumerMakesRoom() {
            final Mailbox<String> mailbox = Mailboxes.bounded(1);
            mailbox.trySend("first");
            StepVerifier.create(MailboxMonos.send(mailbox, "second"))
                    .expectSubscription()
                    .then(() -> assertThat(mailbox.size()).isEqualTo(1)) // subscribe returned: nothing blocked
                    .then(() -> assertThat(mailbox.tryRecv()).isEqualTo("first"))
                    .expectComplete()
                    .verify(TIMEOUT);
            assertThat(mailbox.tryRecv()).isEqualTo("second");
        }

        @Test
        void shouldFailWithMailboxClosedExceptionWhenClosedBeforeOrWhileWaiting() {
            final Mailbox<String> closed = Mailboxes.bounded(1);
            closed.close();
            StepVerifier.create(MailboxMonos.send(closed, "a"))
                    .expectError(MailboxClosedException.class)
                    .verify(TIMEOUT);

            final Mailbox<String> full = Mailboxes.bounded(1);
            full.trySend("first");
            final IllegalStateException cause = new IllegalStateException("shutdown");
            StepVerifier.create(MailboxMonos.send(full, "second"))
                    .expectSubscription()
                    .then(() -> full.closeExceptionally(cause))
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(MailboxClosedException.class)
                            .hasCause(cause))
                    .verify(TIMEOUT);
            assertThat(full.tryRecv()).isEqualTo("first");
            assertThat(full.tryRecv()).isNull(); // "second" was never admitted
        }

        @Test
        void shouldSendNothingWhenCancelledWhileWaiting() {
            final Mailbox<String> mailbox = Mailboxes.bounded(1);
            mailbox.trySend("first");
            final Disposable waiting = MailboxMonos.send(mailbox, "second").subscribe();
            waiting.dispose();
            assertThat(mailbox.tryRecv()).isEqualTo("first"); // wakes the cancelled send: it must not send
            assertThat(mailbox.tryRecv()).isNull();
            assertThat(mailbox.trySend("third")).isTrue();
        }

        @Test
        void shouldNotDeadlockWhenTheConsumerSendsIntoItsOwnFullMailbox() {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
            mailbox.trySend(0);
            mailbox.trySend(1);
            // each value received re-sends value + 2 through the Mono, from inside the consumer, until 10
            StepVerifier.create(MailboxFlux.from(mailbox)
                            .concatMap(v -> v + 2 < 10 ? MailboxMonos.send(mailbox, v + 2).thenReturn(v) : Mono.just(v))
                            .take(10))
                    .expectNext(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
                    .expectComplete()
                    .verify(TIMEOUT);
        }

        @Test
        void shouldAdmitEveryMessageOnceWhenManySendsWaitOnASmallMailbox() throws InterruptedException {
            final int producers = 4;
            final int perProducer = 2_000;
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final CountDownLatch sent = new CountDownLatch(producers);
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            for (int p = 0; p < producers; p++) {
                final int producer = p;
                // one Mono at a time per producer: its order is the order of admission
                Flux.range(0, perProducer)
                        .concatMap(i -> MailboxMonos.send(mailbox, i * producers + producer))
                        .subscribeOn(schedulers.single("producer-" + p))
                        .subscribe(null, e -> {
                            failure.set(e);
                            sent.countDown();
                        }, sent::countDown);
            }
            final int[] next = new int[producers];
            final List<String> errors = new ArrayList<>();
            for (int received = 0; received < producers * perProducer; received++) {
                final Integer v = mailbox.recv(TIMEOUT);
                assertThat(v).as("hang: message %d", received).isNotNull();
                if (v / producers != next[v % producers]) {
                    errors.add("producer " + v % producers + ": expected " + next[v % producers] + ", got " + v);
                }
                next[v % producers] = v / producers + 1;
            }
            Hang.await(sent, "every send Mono's end");
            assertThat(failure.get()).isNull();
            assertThat(errors).isEmpty();
            assertThat(mailbox.tryRecv()).isNull();
        }

        @Test
        void shouldFailTheMonoWhenRequestedZero() {
            final Mailbox<String> mailbox = Mailboxes.bounded(1);
            mailbox.trySend("first");
            final AtomicReference<Throwable> error = new AtomicReference<>();
            MailboxMonos.send(mailbox, "second").subscribe(new CoreSubscriber<Void>() {
                @Override
                public void onSubscribe(Subscription s) {
                    s.request(0);
                }

                @Override
                public void onNext(Void v) {
                }

                @Override
                public void onError(Throwable t) {
                    error.set(t);
                }

                @Override
                public void onComplete() {
                }
            });
            assertThat(error.get()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("§3.9");
        }

        @Test
        void shouldReportThrowingSubscribersToOnErrorDroppedWhenTheyThrowFromOnComplete() {
            final List<Throwable> dropped = new CopyOnWriteArrayList<>();
            Hooks.onErrorDropped(dropped::add);
            final Mailbox<String> mailbox = Mailboxes.bounded(1);
            mailbox.trySend("first");
            final IllegalStateException thrown = new IllegalStateException("subscriber bug");
            MailboxMonos.send(mailbox, "second").subscribe(new CoreSubscriber<Void>() {
                @Override
                public void onSubscribe(Subscription s) {
                }

                @Override
                public void onNext(Void v) {
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onComplete() {
                    throw thrown;
                }
            });
            assertThat(mailbox.tryRecv()).isEqualTo("first"); // completes the send on this (the consumer's) thread
            assertThat(dropped).containsExactly(thrown);
            assertThat(mailbox.tryRecv()).isEqualTo("second");
        }

        @Test
        void shouldRejectNullArguments() {
            assertThatThrownBy(() -> MailboxMonos.send(null, "a")).isInstanceOf(NullPointerException.class)
                    .hasMessage("mailbox");
            assertThatThrownBy(() -> MailboxMonos.send(Mailboxes.bounded(1), null))
                    .isInstanceOf(NullPointerException.class).hasMessage("msg");
        }
    }

    @Nested
    class Terminated {

        @Test
        void shouldCompleteAtOnceWhenTheMailboxIsTerminatedAlready() {
            final Mailbox<String> mailbox = Mailboxes.bounded(1);
            mailbox.close();
            StepVerifier.create(MailboxMonos.terminated(mailbox)).expectComplete().verify(TIMEOUT);
        }

        @Test
        void shouldCompleteOnlyOnceClosedAndDrainedWhenReceivedOneByOne() {
            final Mailbox<String> mailbox = Mailboxes.bounded(4);
            mailbox.trySend("a");
            mailbox.trySend("b");
            final CountDownLatch ended = new CountDownLatch(1);
            MailboxMonos.terminated(mailbox).subscribe(null, e -> ended.countDown(), ended::countDown);
            mailbox.close();
            assertThat(ended.getCount()).as("closed, not drained").isEqualTo(1L);
            assertThat(mailbox.tryRecv()).isEqualTo("a");
            assertThat(ended.getCount()).as("one message left").isEqualTo(1L);
            assertThat(mailbox.tryRecv()).isEqualTo("b"); // the last receive ends it, on this thread
            assertThat(ended.getCount()).isZero();
        }

        @Test
        void shouldFailWithTheCloseCauseWhenClosedExceptionallyAndDrained() {
            final Mailbox<String> mailbox = Mailboxes.bounded(4);
            mailbox.trySend("a");
            final IllegalStateException cause = new IllegalStateException("boom");
            StepVerifier.create(MailboxMonos.terminated(mailbox))
                    .expectSubscription()
                    .then(() -> mailbox.closeExceptionally(cause))
                    .then(() -> assertThat(mailbox.tryRecv()).isEqualTo("a"))
                    .expectErrorSatisfies(e -> assertThat(e).isSameAs(cause))
                    .verify(TIMEOUT);
        }

        @Test
        void shouldCompleteOnceAFusedConsumerHasTakenEveryMessage() throws Exception {
            // "Drained" means taken from the mailbox: the fused publishOn polls the last message and only then
            // hands it to onNext, so terminated() may complete before the subscriber has seen it. The subscriber's
            // own completion is what says it has; this test asserts both, each on its own signal.
            final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
            final CompletableFuture<List<Integer>> received = MailboxFlux.from(mailbox)
                    .publishOn(schedulers.single("consumer")).collectList().toFuture();
            for (int i = 0; i < 100; i++) {
                MailboxMonos.send(mailbox, i).block(TIMEOUT);
            }
            mailbox.close();
            MailboxMonos.terminated(mailbox).block(TIMEOUT);
            assertThat(mailbox.isTerminated()).isTrue();
            assertThat(mailbox.size()).isZero();
            assertThat(received.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS))
                    .containsExactlyElementsOf(IntStream.range(0, 100).boxed().toList());
        }

        @Test
        void shouldReportTheMailboxWhenScanned() {
            final Mailbox<String> mailbox = Mailboxes.<String>builder().capacity(4).name("jobs").build();
            final Scannable terminated = Scannable.from(MailboxMonos.terminated(mailbox));
            assertThat(terminated.scan(Scannable.Attr.NAME)).isEqualTo("jobs");
            assertThat(terminated.stepName()).isEqualTo("terminated(jobs)");
            final Scannable send = Scannable.from(MailboxMonos.send(mailbox, "x"));
            assertThat(send.stepName()).isEqualTo("send(jobs)");
            assertThat(send.scan(Scannable.Attr.CAPACITY)).isEqualTo(4);
        }
    }
}
