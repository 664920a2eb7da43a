package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.Exceptions;
import reactor.core.Fuseable;
import reactor.core.Scannable;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.SignalType;
import reactor.core.publisher.Sinks;
import reactor.core.publisher.Sinks.EmitResult;
import reactor.test.StepVerifier;

/** {@link MailboxSinks}: the {@code Sinks.Many} contract, organised by the rule each nested class pins. */
@Timeout(300)
class MailboxSinksTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @RegisterExtension
    final SingleSchedulers schedulers = new SingleSchedulers();

    @AfterEach
    void resetHooks() {
        Hooks.resetOnNextDropped();
        Hooks.resetOnErrorDropped();
    }

    static <T> Mailbox<T> named(String name, int capacity) {
        return Mailboxes.<T>builder().capacity(capacity).name(name).build();
    }

    @Nested
    class EmitResults {

        @Test
        void shouldAnswerOkUntilFullThenOverflowWhenNobodyConsumes() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(2);
            assertThat(sink.tryEmitNext(1)).isEqualTo(EmitResult.OK);
            assertThat(sink.tryEmitNext(2)).isEqualTo(EmitResult.OK);
            assertThat(sink.tryEmitNext(3)).isEqualTo(EmitResult.FAIL_OVERFLOW);
        }

        @Test
        void shouldAnswerTerminatedWhenCompletedErroredOrClosed() {
            final Sinks.Many<Integer> completed = MailboxSinks.many(4);
            assertThat(completed.tryEmitComplete()).isEqualTo(EmitResult.OK);
            assertThat(completed.tryEmitNext(1)).isEqualTo(EmitResult.FAIL_TERMINATED);
            assertThat(completed.tryEmitComplete()).isEqualTo(EmitResult.FAIL_TERMINATED);
            assertThat(completed.tryEmitError(new IllegalStateException())).isEqualTo(EmitResult.FAIL_TERMINATED);

            final Sinks.Many<Integer> errored = MailboxSinks.many(4);
            assertThat(errored.tryEmitError(new IllegalStateException("boom"))).isEqualTo(EmitResult.OK);
            assertThat(errored.tryEmitNext(1)).isEqualTo(EmitResult.FAIL_TERMINATED);
            assertThat(errored.tryEmitComplete()).isEqualTo(EmitResult.FAIL_TERMINATED);

            final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
            final Sinks.Many<Integer> closed = MailboxSinks.many(mailbox);
            mailbox.close();
            assertThat(closed.tryEmitNext(1)).isEqualTo(EmitResult.FAIL_TERMINATED);
            assertThat(closed.tryEmitComplete()).isEqualTo(EmitResult.FAIL_TERMINATED);
            assertThat(closed.tryEmitError(new IllegalStateException())).isEqualTo(EmitResult.FAIL_TERMINATED);
        }

        @Test
        void shouldThrowNullPointerExceptionWhenEmittingNull() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(4);
            assertThatThrownBy(() -> sink.tryEmitNext(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> sink.tryEmitError(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> MailboxSinks.many(null)).isInstanceOf(NullPointerException.class)
                    .hasMessage("mailbox");
            assertThatThrownBy(() -> MailboxSinks.many(0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("capacity: 0 (expected: 1 .. 1073741824)");
        }

        @Test
        void shouldEmitFramesWhenTheMailboxIsASlab() {
            final Sinks.Many<MessageFrame> sink = MailboxSinks.many(Mailboxes.frames(2));
            assertThat(sink.tryEmitNext(MessageFrame.of(1, 10L, new byte[3]))).isEqualTo(EmitResult.OK);
            assertThat(sink.tryEmitNext(MessageFrame.of(1, 11L, new byte[100]))).isEqualTo(EmitResult.OK);
            assertThat(sink.tryEmitNext(MessageFrame.of(1, 12L, new byte[0]))).isEqualTo(EmitResult.FAIL_OVERFLOW);
            sink.tryEmitComplete();
            StepVerifier.create(sink.asFlux().map(MessageFrame::correlationId))
                    .expectNext(10L, 11L).expectComplete().verify(TIMEOUT);
        }

        @Test
        void shouldMixWithTheMailboxSendsWhenBothFeedIt() throws InterruptedException {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
            final Sinks.Many<Integer> sink = MailboxSinks.many(mailbox);
            assertThat(sink.tryEmitNext(1)).isEqualTo(EmitResult.OK);
            mailbox.send(2);
            assertThat(sink.tryEmitNext(3)).isEqualTo(EmitResult.OK);
            assertThat(sink.tryEmitComplete()).isEqualTo(EmitResult.OK);
            StepVerifier.create(sink.asFlux()).expectNext(1, 2, 3).expectComplete().verify(TIMEOUT);
        }
    }

    @Nested
    class BufferingAndTerminalSignals {

        @Test
        void shouldDeliverWhatWasBufferedThenCompleteWhenSubscribedAfterTheEmissions() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(8);
            sink.tryEmitNext(1);
            sink.tryEmitNext(2);
            sink.tryEmitNext(3);
            sink.tryEmitComplete();
            StepVerifier.create(sink.asFlux()).expectNext(1, 2, 3).expectComplete().verify(TIMEOUT);
        }

        @Test
        void shouldDeliverWhatWasBufferedThenTheErrorWhenErrored() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(8);
            sink.tryEmitNext(1);
            sink.tryEmitNext(2);
            sink.tryEmitError(new IllegalStateException("boom"));
            StepVerifier.create(sink.asFlux()).expectNext(1, 2)
                    .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
                            .hasMessage("boom"))
                    .verify(TIMEOUT);
        }

        @Test
        void shouldDeliverLiveEmissionsWhenSubscribedFirst() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(8);
            StepVerifier.create(sink.asFlux(), 0)
                    .expectSubscription()
                    .then(() -> sink.tryEmitNext(1))
                    .thenRequest(1)
                    .expectNext(1)
                    .then(() -> {
                        sink.tryEmitNext(2);
                        sink.tryEmitComplete();
                    })
                    .thenRequest(1)
                    .expectNext(2)
                    .expectComplete()
                    .verify(TIMEOUT);
        }

        @Test
        void shouldFuseAsyncWhenTheSubscriberAsksForFusion() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(8);
            sink.tryEmitNext(1);
            StepVerifier.create(sink.asFlux())
                    .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                    .expectNext(1)
                    .then(() -> {
                        sink.tryEmitNext(2);
                        sink.tryEmitComplete();
                    })
                    .expectNext(2)
                    .expectComplete()
                    .verify(TIMEOUT);
        }
    }

    @Nested
    class FailureHandlers {

        @Test
        void shouldRetryAsLongAsTheHandlerSaysWhenTheMailboxIsFull() {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
            final Sinks.Many<Integer> sink = MailboxSinks.many(mailbox);
            sink.tryEmitNext(0);
            final AtomicInteger calls = new AtomicInteger();
            sink.emitNext(1, (signal, result) -> {
                assertThat(signal).isEqualTo(SignalType.ON_NEXT);
                assertThat(result).isEqualTo(EmitResult.FAIL_OVERFLOW);
                if (calls.incrementAndGet() == 3) {
                    assertThat(mailbox.tryRecv()).isZero(); // the consumer makes room: the next try succeeds
                }
                return true;
            });
            assertThat(calls).hasValue(3);
            assertThat(mailbox.tryRecv()).isEqualTo(1);
        }

        @Test
        void shouldDiscardTheValueAndErrorWithOverflowWhenTheHandlerGivesUp() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(2);
            final List<Object> discarded = new CopyOnWriteArrayList<>();
            StepVerifier.create(sink.asFlux().doOnDiscard(Object.class, discarded::add), 0)
                    .expectSubscription()
                    .then(() -> {
                        sink.emitNext(1, Sinks.EmitFailureHandler.FAIL_FAST);
                        sink.emitNext(2, Sinks.EmitFailureHandler.FAIL_FAST);
                        sink.emitNext(3, Sinks.EmitFailureHandler.FAIL_FAST); // overflow
                    })
                    .then(() -> assertThat(discarded).containsExactly(3))
                    .then(() -> assertThat(sink.tryEmitNext(4)).isEqualTo(EmitResult.FAIL_TERMINATED))
                    .thenRequest(2)
                    .expectNext(1, 2)
                    .expectErrorSatisfies(e -> assertThat(Exceptions.isOverflow(e)).isTrue())
                    .verify(TIMEOUT);
        }

        @Test
        void shouldDropTheValueAndTheErrorWhenTheSinkIsTerminated() {
            final List<Object> droppedValues = new CopyOnWriteArrayList<>();
            final List<Throwable> droppedErrors = new CopyOnWriteArrayList<>();
            Hooks.onNextDropped(droppedValues::add);
            Hooks.onErrorDropped(droppedErrors::add);
            final Sinks.Many<Integer> sink = MailboxSinks.many(4);
            sink.emitComplete(Sinks.EmitFailureHandler.FAIL_FAST);
            final AtomicReference<EmitResult> seen = new AtomicReference<>();
            sink.emitNext(1, (signal, result) -> {
                seen.set(result);
                return false;
            });
            assertThat(seen).hasValue(EmitResult.FAIL_TERMINATED);
            final IllegalStateException late = new IllegalStateException("late");
            sink.emitError(late, Sinks.EmitFailureHandler.FAIL_FAST);
            sink.emitComplete(Sinks.EmitFailureHandler.FAIL_FAST); // a failed complete does nothing
            assertThat(droppedValues).containsExactly(1);
            assertThat(droppedErrors).containsExactly(late);
        }

        @Test
        void shouldDropTheOverflowErrorWhenTheSinkWasTerminatedMeanwhile() {
            final List<Throwable> droppedErrors = new CopyOnWriteArrayList<>();
            Hooks.onErrorDropped(droppedErrors::add);
            final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
            final Sinks.Many<Integer> sink = MailboxSinks.many(mailbox);
            sink.tryEmitNext(0);
            final AtomicInteger calls = new AtomicInteger();
            sink.emitNext(1, (signal, result) -> {
                if (calls.incrementAndGet() == 1) {
                    assertThat(result).isEqualTo(EmitResult.FAIL_OVERFLOW);
                    sink.tryEmitComplete(); // someone completes between the overflow and the handler's answer
                    return false;
                }
                assertThat(signal).isEqualTo(SignalType.ON_ERROR);
                assertThat(result).isEqualTo(EmitResult.FAIL_TERMINATED);
                return false;
            });
            assertThat(calls).hasValue(2);
            assertThat(droppedErrors).singleElement().satisfies(e -> assertThat(Exceptions.isOverflow(e)).isTrue());
        }
    }

    @Nested
    class Subscribers {

        @Test
        void shouldCountTheLiveSubscriberWhenOneHoldsTheMailbox() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(4);
            assertThat(sink.currentSubscriberCount()).isZero();
            StepVerifier.create(sink.asFlux(), 0)
                    .expectSubscription()
                    .then(() -> assertThat(sink.currentSubscriberCount()).isEqualTo(1))
                    .thenCancel()
                    .verify(TIMEOUT);
            assertThat(sink.currentSubscriberCount()).isZero();
        }

        @Test
        void shouldRefuseASecondLiveSubscriberWithIllegalStateException() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(4);
            StepVerifier.create(sink.asFlux(), 0)
                    .expectSubscription()
                    .then(() -> StepVerifier.create(sink.asFlux())
                            .expectError(IllegalStateException.class)
                            .verify(TIMEOUT))
                    .then(() -> sink.tryEmitNext(1))
                    .thenRequest(1)
                    .expectNext(1)
                    .thenCancel()
                    .verify(TIMEOUT);
        }

        @Test
        void shouldResumeWithALaterSubscriberWhenTheFirstCancelled() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(8);
            for (int i = 0; i < 5; i++) {
                sink.tryEmitNext(i);
            }
            StepVerifier.create(sink.asFlux().take(2)).expectNext(0, 1).expectComplete().verify(TIMEOUT);
            // unlike Reactor's unicast sink, the cancel did not end this one: it keeps buffering
            assertThat(sink.tryEmitNext(5)).isEqualTo(EmitResult.OK);
            sink.tryEmitComplete();
            StepVerifier.create(sink.asFlux()).expectNext(2, 3, 4, 5).expectComplete().verify(TIMEOUT);
        }

        @Test
        void shouldLoseNothingThroughPublishOnWhenALaterSubscriberResumes() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(64);
            for (int i = 0; i < 50; i++) {
                sink.tryEmitNext(i);
            }
            sink.tryEmitComplete();
            StepVerifier.create(sink.asFlux().publishOn(schedulers.single("first")).take(10))
                    .expectNextCount(10).expectComplete().verify(TIMEOUT);
            StepVerifier.create(sink.asFlux().publishOn(schedulers.single("second")))
                    .expectNextSequence(MailboxFluxTest.range(10, 50)).expectComplete().verify(TIMEOUT);
        }
    }

    @Nested
    class ScannableAttributes {

        @Test
        void shouldReportTheMailboxWhenScanned() {
            final Mailbox<Integer> mailbox = named("orders", 8);
            final Sinks.Many<Integer> sink = MailboxSinks.many(mailbox);
            sink.tryEmitNext(1);
            sink.tryEmitNext(2);
            assertThat(sink.scan(Scannable.Attr.NAME)).isEqualTo("orders");
            assertThat(sink.name()).isEqualTo("orders");
            assertThat(sink.stepName()).isEqualTo("sink(MailboxSinks, orders)");
            assertThat(sink.scan(Scannable.Attr.CAPACITY)).isEqualTo(8);
            assertThat(sink.scan(Scannable.Attr.BUFFERED)).isEqualTo(2);
            assertThat(sink.scan(Scannable.Attr.TERMINATED)).isFalse();
            assertThat(sink.scan(Scannable.Attr.CANCELLED)).isFalse();
            assertThat(sink.scan(Scannable.Attr.ERROR)).isNull();
            final IllegalStateException boom = new IllegalStateException("boom");
            sink.tryEmitError(boom);
            assertThat(sink.scan(Scannable.Attr.TERMINATED)).isTrue();
            assertThat(sink.scan(Scannable.Attr.ERROR)).isSameAs(boom);
            assertThat(sink.scan(Scannable.Attr.BUFFERED)).isEqualTo(2); // still receivable
        }

        @Test
        void shouldReportTheSubscriberAsActualWhenAFluxHoldsTheMailbox() {
            final Sinks.Many<Integer> sink = MailboxSinks.many(8);
            assertThat(sink.scan(Scannable.Attr.ACTUAL)).isNull();
            StepVerifier.create(sink.asFlux(), 0)
                    .expectSubscription()
                    .then(() -> assertThat(sink.scan(Scannable.Attr.ACTUAL)).isNotNull())
                    .thenCancel()
                    .verify(TIMEOUT);
        }
    }
}
