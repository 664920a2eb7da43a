package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.Fuseable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.test.StepVerifier;

/**
 * Reactor operators over both receive faces ({@code MailboxFlux.from(mb)} and {@code Flux.from(new
 * MailboxPublisher<>(mb))}), each checked for the one property users rely on: the operator takes exactly what it
 * passes on (or, for operators that queue, exactly what the design says it may lose), the rest stays in the
 * mailbox, and the next subscriber is accepted and gets it. Messages are pre-filled so the expected split is exact.
 */
@Timeout(300)
class FluxOperatorsAbuseTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;
    private static final int COUNT = 100;

    enum Face {
        FLUX(MailboxFlux::from),
        PUBLISHER(mb -> Flux.from(new MailboxPublisher<>(mb)));

        private final Function<Mailbox<Long>, Flux<Long>> factory;

        Face(Function<Mailbox<Long>, Flux<Long>> factory) {
            this.factory = factory;
        }

        Flux<Long> flux(Mailbox<Long> mailbox) {
            return factory.apply(mailbox);
        }
    }

    @RegisterExtension
    final SingleSchedulers schedulers = new SingleSchedulers();

    private static Mailbox<Long> filled(int count) {
        final Mailbox<Long> mailbox = Mailboxes.bounded(128);
        for (long i = 0; i < count; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        return mailbox;
    }

    private static List<Long> range(long from, long to) {
        return LongStream.range(from, to).boxed().collect(Collectors.toList());
    }

    /** Everything a fresh subscriber of {@code face} gets from {@code mailbox} after it is closed. */
    private static List<Long> rest(Face face, Mailbox<Long> mailbox) {
        mailbox.close();
        return face.flux(mailbox).collectList().block(TIMEOUT);
    }

    // ------------------------------------------------------------------ cancelling operators

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldGiveTheNextSubscriberExactlyTheRestWhenTakeCancels(Face face) {
        final Mailbox<Long> mailbox = filled(COUNT);
        assertThat(face.flux(mailbox).take(10).collectList().block(TIMEOUT)).isEqualTo(range(0, 10));
        assertThat(face.flux(mailbox).take(1).collectList().block(TIMEOUT)).isEqualTo(range(10, 11));
        assertThat(face.flux(mailbox).take(0).collectList().block(TIMEOUT)).isEmpty();
        assertThat(rest(face, mailbox)).isEqualTo(range(11, COUNT));
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldTakeExactlyWhatLimitRateRequestsWhenTakeCancels(Face face) {
        final Mailbox<Long> mailbox = filled(COUNT);
        // limitRate is publishOn(immediate): fused over MailboxFlux; over the publisher face a prefetching queue,
        // but drained on the delivering thread, so take's cancel finds it empty and our drain stops before the next
        // take. Either way exactly seven leave the mailbox.
        final List<Long> taken = face.flux(mailbox).limitRate(3).take(7).collectList().block(TIMEOUT);
        assertThat(taken).isEqualTo(range(0, 7));
        assertThat(rest(face, mailbox)).isEqualTo(range(7, COUNT));
    }

    @Test
    void shouldLoseNothingWhenAFusedPublishOnWithPrefetchOneIsTakenFromRepeatedly() {
        final Mailbox<Long> mailbox = filled(COUNT);
        final Scheduler scheduler = schedulers.single("abuse-publishOn");
        final List<Long> all = new ArrayList<>();
        for (int round = 0; round < 10; round++) {
            all.addAll(MailboxFlux.from(mailbox, 4).publishOn(scheduler, 1).take(round + 1)
                    .collectList().block(TIMEOUT));
        }
        assertThat(all).isEqualTo(range(0, 55));
        assertThat(rest(Face.FLUX, mailbox)).isEqualTo(range(55, COUNT));
    }

    @Test
    void shouldTakeExactlyWhatBufferEmitsWhenTakeCancelsTheBuffers() {
        for (Face face : Face.values()) {
            final Mailbox<Long> mailbox = filled(COUNT);
            final List<List<Long>> buffers = face.flux(mailbox).buffer(4).take(2).collectList().block(TIMEOUT);
            assertThat(buffers).as("%s", face).containsExactly(range(0, 4), range(4, 8));
            assertThat(rest(face, mailbox)).as("%s", face).isEqualTo(range(8, COUNT));
        }
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldTakeOnlyWhatTheSwitchedFluxTakesWhenSwitchOnFirst(Face face) {
        final Mailbox<Long> mailbox = filled(COUNT);
        final List<Long> taken = face.flux(mailbox)
                .switchOnFirst((first, flux) -> first.get() == 0L ? flux.take(3) : Flux.<Long>empty())
                .collectList().block(TIMEOUT);
        assertThat(taken).isEqualTo(range(0, 3));
        assertThat(rest(face, mailbox)).isEqualTo(range(3, COUNT));
    }

    @Test
    void shouldTakeExactlyTheZippedAmountWhenZippedFusedBehindAShorterSource() {
        final Mailbox<Long> mailbox = filled(COUNT);
        // zip polls its fused inners in order: the finite range is found exhausted before the mailbox is polled
        // for a sixth time, so exactly five messages leave the mailbox.
        final List<Long> zipped = Flux.range(0, 5).zipWith(MailboxFlux.from(mailbox), (i, m) -> m)
                .collectList().block(TIMEOUT);
        assertThat(zipped).isEqualTo(range(0, 5));
        assertThat(rest(Face.FLUX, mailbox)).isEqualTo(range(5, COUNT));
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldHandTheMailboxOnWhenSubscribedOnAnotherThreadAndTaken(Face face) {
        final Mailbox<Long> mailbox = filled(COUNT);
        final Scheduler scheduler = schedulers.single("abuse-subscribeOn");
        for (int round = 0; round < 5; round++) {
            assertThat(face.flux(mailbox).subscribeOn(scheduler).take(3).collectList().block(TIMEOUT))
                    .isEqualTo(range(3L * round, 3L * round + 3));
        }
        assertThat(rest(face, mailbox)).isEqualTo(range(15, COUNT));
    }

    // ------------------------------------------------------------------ the mailbox flux as an inner source

    /** {@code concatMap} re-subscribes each inner; {@code flatMap} with concurrency 1 does too. */
    static Stream<Arguments> innerOperators() {
        final BiFunction<Flux<Integer>, Function<Integer, Flux<Long>>, Flux<Long>> concatMap = (outer, inner) ->
                outer.concatMap(inner, 1);
        final BiFunction<Flux<Integer>, Function<Integer, Flux<Long>>, Flux<Long>> flatMap = (outer, inner) ->
                outer.flatMap(inner, 1);
        return Stream.of(Face.values()).flatMap(face -> Stream.of(Arguments.of(face, "concatMap", concatMap),
                Arguments.of(face, "flatMap(f, 1)", flatMap)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("innerOperators")
    void shouldGiveEachInnerTheNextMessagesWhenInnersReSubscribeOneAtATime(Face face, String operator,
            BiFunction<Flux<Integer>, Function<Integer, Flux<Long>>, Flux<Long>> innerOperator) {
        final Mailbox<Long> mailbox = filled(COUNT);
        final List<Long> all = innerOperator.apply(Flux.range(0, 6), i -> face.flux(mailbox).take(i + 1))
                .collectList().block(TIMEOUT);
        assertThat(all).as(operator).isEqualTo(range(0, 21));
        assertThat(rest(face, mailbox)).isEqualTo(range(21, COUNT));
    }

    @Test
    void shouldFuseAsAFlatMapInnerAndKeepTheRestWhenTheOuterIsTaken() {
        final Mailbox<Long> mailbox = filled(COUNT);
        // One inner, fused (flatMap's inner asks for ANY fusion); the outer take cancels the inner after 5.
        StepVerifier.create(Flux.just(1).flatMap(i -> MailboxFlux.from(mailbox)).take(5), 0)
                .thenRequest(2)
                .expectNext(0L, 1L)
                .thenRequest(3)
                .expectNext(2L, 3L, 4L)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(rest(Face.FLUX, mailbox)).isEqualTo(range(5, COUNT));
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldRefuseTheSecondOfTwoConcurrentFlatMapInnersAndKeepTheFirstWorking(Face face) {
        final Mailbox<Long> mailbox = filled(3); // the first inner takes 0..2 and stays live, waiting for more
        final AtomicReference<Throwable> refused = new AtomicReference<>();
        final List<Long> all = Flux.range(0, 2)
                .flatMap(i -> face.flux(mailbox).take(5).onErrorResume(e -> {
                    refused.set(e);
                    // the first inner still waits for two more: these sends wake it, and it completes
                    assertThat(mailbox.trySend(3L)).isTrue();
                    assertThat(mailbox.trySend(4L)).isTrue();
                    assertThat(mailbox.trySend(5L)).isTrue();
                    return Mono.empty();
                }), 2)
                .collectList().block(TIMEOUT);
        assertThat(refused.get()).isInstanceOf(IllegalStateException.class);
        assertThat(all).isEqualTo(range(0, 5));
        assertThat(rest(face, mailbox)).isEqualTo(range(5, 6));
    }

    // ------------------------------------------------------------------ errors and timeouts

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldHandTheMailboxOnWhenTimeoutCancelsAnIdleSubscriptionFromTheTimerThread(Face face) {
        final Mailbox<Long> mailbox = Mailboxes.bounded(16);
        StepVerifier.create(face.flux(mailbox).timeout(Duration.ofMillis(20)))
                .expectError(TimeoutException.class)
                .verify(TIMEOUT);
        // the timer thread cancelled us: the mailbox is free again, and nothing was taken
        assertThat(mailbox.trySend(7L)).isTrue();
        StepVerifier.create(face.flux(mailbox).take(1))
                .expectNext(7L)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldResubscribeToTheSameMailboxWhenTheTimeoutFallbackIsTheMailbox(Face face) {
        final Mailbox<Long> mailbox = filled(3);
        final Sinks.Empty<Void> trigger = Sinks.empty();
        final Scheduler scheduler = schedulers.single("abuse-trigger");
        // the item timeout after 2 fires from another thread while the first subscription is live (it took 0..2
        // and waits); the fallback subscribes to the same mailbox right after the cancel, and must be accepted
        StepVerifier.create(face.flux(mailbox).timeout(Mono.never(), m -> m == 2L ? trigger.asMono() : Mono.never(),
                        face.flux(mailbox)))
                .expectNext(0L, 1L, 2L)
                .then(() -> {
                    final Object first = MailboxRing.of(mailbox).consumerRole();
                    assertThat(first).isNotNull();
                    scheduler.schedule(trigger::tryEmitEmpty);
                    // after the fallback took over, new messages go to it
                    await(() -> {
                        final Object holder = MailboxRing.of(mailbox).consumerRole();
                        return holder != null && holder != first;
                    });
                    assertThat(mailbox.trySend(3L)).isTrue();
                    assertThat(mailbox.trySend(4L)).isTrue();
                })
                .expectNext(3L, 4L)
                .then(mailbox::close)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldCountTheFailingMessageAsDeliveredAndHandTheRestOnWhenDoOnNextThrows(Face face) {
        final Mailbox<Long> mailbox = filled(COUNT);
        final List<Long> seen = new ArrayList<>();
        final List<Long> resumed = face.flux(mailbox)
                .doOnNext(m -> {
                    seen.add(m);
                    if (m == 3L) {
                        throw new IllegalStateException("boom");
                    }
                })
                .onErrorResume(e -> face.flux(mailbox).take(2)) // resumes on the same mailbox
                .collectList().block(TIMEOUT);
        assertThat(seen).isEqualTo(range(0, 4));
        assertThat(resumed).isEqualTo(List.of(0L, 1L, 2L, 4L, 5L));
        assertThat(rest(face, mailbox)).isEqualTo(range(6, COUNT));
    }

    @Test
    void shouldCountTheFailingMessageAsDeliveredWhenDoOnNextThrowsBehindAFusedPublishOn() {
        final Mailbox<Long> mailbox = filled(COUNT);
        final Scheduler scheduler = schedulers.single("abuse-fused-throw");
        StepVerifier.create(MailboxFlux.from(mailbox).publishOn(scheduler, 2).doOnNext(m -> {
                    if (m == 3L) {
                        throw new IllegalStateException("boom");
                    }
                }))
                .expectNext(0L, 1L, 2L)
                .expectErrorMessage("boom")
                .verify(TIMEOUT);
        assertThat(rest(Face.FLUX, mailbox)).isEqualTo(range(4, COUNT));
    }

    @Test
    void shouldCountTheFailingMessageAsDeliveredWhenAFusedPollThrowsInsideDoOnNext() {
        final Mailbox<Long> mailbox = filled(COUNT);
        // doOnNext is fuseable: the StepVerifier polls through it, so the exception comes out of poll()
        StepVerifier.create(MailboxFlux.from(mailbox).doOnNext(m -> {
                    if (m == 3L) {
                        throw new IllegalStateException("boom");
                    }
                }))
                .expectFusion(Fuseable.ASYNC)
                .expectNext(0L, 1L, 2L)
                .expectErrorMessage("boom")
                .verify(TIMEOUT);
        assertThat(rest(Face.FLUX, mailbox)).isEqualTo(range(4, COUNT));
    }

    static void await(java.util.function.BooleanSupplier condition) {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("timed out waiting").isNegative();
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
