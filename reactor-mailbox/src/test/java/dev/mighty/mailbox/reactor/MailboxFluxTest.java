package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.SpecProbes;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.Fuseable;
import reactor.core.Scannable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

@Timeout(300)
@ExtendWith(SpecProbes.class)
class MailboxFluxTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @RegisterExtension
    final SingleSchedulers schedulers = new SingleSchedulers();

    static Mailbox<Integer> mailboxWith(int capacity, int count) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(capacity);
        for (int i = 0; i < count; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        return mailbox;
    }

    static List<Integer> range(int from, int to) {
        return IntStream.range(from, to).boxed().collect(Collectors.toList());
    }

    /** The subscription that holds the mailbox now, if it is a MailboxFlux one. */
    static MailboxFluxSubscription<?> holder(Mailbox<?> mailbox) {
        final Object role = MailboxRing.of(mailbox).consumerRole();
        return role instanceof MailboxFluxSubscription ? (MailboxFluxSubscription<?>) role : null;
    }

    // ------------------------------------------------------------------ bad input

    @Test
    void shouldRejectBadArgumentsWhenCreating() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        assertThatThrownBy(() -> MailboxFlux.from((Mailbox<Integer>) null))
                .isInstanceOf(NullPointerException.class).hasMessage("mailbox");
        assertThatThrownBy(() -> MailboxFlux.from(mailbox, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("batchSize: 0 (expected: >= 1)");
        assertThatThrownBy(() -> MailboxFlux.sendAll(null, mailbox))
                .isInstanceOf(NullPointerException.class).hasMessage("source");
        assertThatThrownBy(() -> MailboxFlux.sendAll(Flux.just(1), null))
                .isInstanceOf(NullPointerException.class).hasMessage("mailbox");
        assertThatThrownBy(() -> MailboxFlux.sendAll(Flux.just(1), mailbox, 5))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("prefetch: 5 (expected: 1 .. 4)");
        assertThatThrownBy(() -> MailboxFlux.from(mailbox).subscribe((reactor.core.CoreSubscriber<Integer>) null))
                .isInstanceOf(NullPointerException.class);
    }

    // ------------------------------------------------------------------ fusion

    @Test
    void shouldFuseAsyncWhenAskedForAnyMode() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 3);
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .expectNext(0, 1, 2)
                .then(() -> {
                    mailbox.trySend(3);
                    mailbox.close();
                })
                .expectNext(3)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(mailbox.isTerminated()).isTrue();
    }

    @Test
    void shouldFuseAsyncAcrossAThreadBarrierWhenAskedForIt() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 2);
        mailbox.close();
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectFusion(Fuseable.ANY | Fuseable.THREAD_BARRIER, Fuseable.ASYNC)
                .expectNext(0, 1)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldStayFusedAndScannableWhenAssemblyTracingIsOn() {
        Hooks.onOperatorDebug();
        try {
            final Mailbox<Integer> mailbox = mailboxWith(16, 2);
            mailbox.close();
            final Flux<Integer> flux = MailboxFlux.from(mailbox);
            assertThat(flux).isNotInstanceOf(MailboxFlux.class); // wrapped by the assembly hook
            assertThat(Scannable.from(flux).parents().findFirst().map(p -> p.scan(Scannable.Attr.CAPACITY)))
                    .contains(16);
            StepVerifier.create(flux)
                    .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                    .expectNext(0, 1)
                    .expectComplete()
                    .verify(TIMEOUT);
        } finally {
            Hooks.resetOnOperatorDebug();
        }
    }

    @Test
    void shouldRefuseSyncFusionWhenOnlySyncIsAsked() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 2);
        mailbox.close();
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectFusion(Fuseable.SYNC, Fuseable.NONE)
                .expectNext(0, 1)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldDeliverWhatTheFusedConsumerRequestsInSteps() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        StepVerifier.create(MailboxFlux.from(mailbox), 0)
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .thenRequest(3)
                .expectNext(0, 1, 2)
                .thenRequest(2)
                .expectNext(3, 4)
                .thenCancel()
                .verify(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(5);
    }

    @Test
    void shouldCompleteWithoutDemandWhenClosedWhileTheFusedConsumerPauses() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 1);
        StepVerifier.create(MailboxFlux.from(mailbox), 0)
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .thenRequest(1)
                .expectNext(0)
                .then(mailbox::close) // empty, no demand left: the close alone must reach the consumer
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldCompleteWithoutDemandWhenClosedAndEmptyFused() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        StepVerifier.create(MailboxFlux.from(mailbox), 0)
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .then(mailbox::close)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldSignalTheCauseAfterDrainingWhenClosedExceptionallyFused() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 2);
        final IllegalStateException cause = new IllegalStateException("upstream failed");
        mailbox.closeExceptionally(cause);
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .expectNext(0, 1)
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(cause))
                .verify(TIMEOUT);
    }

    @Test
    void shouldSignalTheCauseAfterDrainingWhenClosedExceptionallyUnfused() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 2);
        final IllegalStateException cause = new IllegalStateException("upstream failed");
        mailbox.closeExceptionally(cause);
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectNext(0, 1)
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(cause))
                .verify(TIMEOUT);
    }

    @Test
    void shouldSignalIllegalArgumentAndHandTheMailboxOnWhenAFusedConsumerRequestsZero() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 3);
        final FusedProbe<Integer> probe = new FusedProbe<>(0);
        MailboxFlux.from(mailbox).subscribe(probe);
        assertThat(probe.fusionMode).isEqualTo(Fuseable.ASYNC);
        probe.subscription.request(0);
        assertThat(probe.error.get())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("§3.9");
        assertThat(holder(mailbox)).isNull();
        StepVerifier.create(MailboxFlux.from(mailbox)).expectNext(0, 1, 2).thenCancel().verify(TIMEOUT);
    }

    @Test
    void shouldDeliverFramesWhenFusedOverAFrameMailbox() {
        final FrameMailbox frames = Mailboxes.frames(8);
        frames.trySend(MessageFrame.of(1, 10L, new byte[] {1, 2, 3}));
        frames.trySend(MessageFrame.of(2, 20L, new byte[100]));
        frames.close();
        StepVerifier.create(MailboxFlux.from(frames).map(MessageFrame::correlationId))
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .expectNext(10L, 20L)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldFuseConcatMapAndFlatMapInners() throws Exception {
        // a flatMap inner: FlatMapInner asks for ANY | THREAD_BARRIER
        final Mailbox<Integer> direct = mailboxWith(16, 5);
        final CountDownLatch seen = new CountDownLatch(5);
        final AtomicReference<Boolean> directlyFused = new AtomicReference<>();
        final Disposable d = Flux.just(direct)
                .hide() // not a scalar: flatMap would subscribe the inner straight to doOnNext
                .flatMap(MailboxFlux::from)
                .doOnNext(v -> {
                    directlyFused.compareAndSet(null, holder(direct).isFused());
                    seen.countDown();
                })
                .subscribe();
        try {
            assertThat(seen.await(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
            assertThat(directlyFused.get()).isTrue();
        } finally {
            d.dispose();
        }

        // concatMap's main source, with a prefetch (the default concatMap requests one at a time, unfused)
        final Mailbox<Integer> main = mailboxWith(16, 4);
        main.close();
        final AtomicReference<Boolean> mainFused = new AtomicReference<>();
        StepVerifier.create(MailboxFlux.from(main)
                        .concatMap(v -> {
                            mainFused.compareAndSet(null, holder(main).isFused());
                            return Mono.just(v * 10).delayElement(Duration.ofMillis(1));
                        }, 32))
                .expectNext(0, 10, 20, 30)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(mainFused.get()).isTrue();
    }

    // ------------------------------------------------------------------ nothing lost on cancel

    @Test
    void shouldLeaveTheRestInTheMailboxWhenAFusedPublishOnTakeCancels() {
        final Mailbox<Integer> mailbox = mailboxWith(256, 100);
        final List<Object> discarded = new CopyOnWriteArrayList<>();
        final List<Integer> first = MailboxFlux.from(mailbox)
                .publishOn(schedulers.single("consumer"))
                .take(10, false) // unbounded request; cancels inside the tenth onNext, on the worker
                .doOnDiscard(Object.class, discarded::add)
                .collectList()
                .block(TIMEOUT);
        assertThat(first).containsExactlyElementsOf(range(0, 10));
        assertThat(discarded).isEmpty();
        assertThat(mailbox.size()).isEqualTo(90); // publishOn polled exactly ten: nothing prefetched, nothing lost
        mailbox.close();
        StepVerifier.create(MailboxFlux.from(mailbox).publishOn(schedulers.single("next")))
                .expectNextSequence(range(10, 100))
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldLoseThePrefetchedQueueWhenPublishOnIsNotFused() {
        // The contrast that motivates fusion: Flux.from(MailboxPublisher) hides the Fuseable source, so
        // publishOn prefetches into its own queue and discards it on cancel. publishOn's worker runs on an
        // executor this thread drives, so how far the prefetch got before take(10) cancels does not depend on
        // the scheduler: the publisher delivers all 100 on this thread inside subscribe (publishOn requests
        // its prefetch in onSubscribe), and only then does the worker run.
        final Mailbox<Integer> mailbox = mailboxWith(256, 100);
        final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
        final Scheduler worker = Schedulers.fromExecutor(tasks::add);
        try {
            final List<Integer> first = new ArrayList<>();
            final AtomicReference<Throwable> error = new AtomicReference<>();
            final CountDownLatch completed = new CountDownLatch(1);
            Flux.from(new MailboxPublisher<>(mailbox))
                    .hide()
                    .publishOn(worker)
                    .take(10, false)
                    .subscribe(first::add, error::set, completed::countDown);
            assertThat(mailbox.size()).as("publishOn prefetched every message into its own queue").isZero();
            for (int i = 0; i < 1_000 && !tasks.isEmpty(); i++) {
                tasks.poll().run();
            }
            assertThat(error.get()).isNull();
            assertThat(completed.getCount()).as("take(10) completed").isZero();
            assertThat(first).containsExactlyElementsOf(range(0, 10));
            assertThat(mailbox.stats().received()).as("taken from the mailbox").isEqualTo(100L);
            assertThat(mailbox.size()).as("the other 90 went with publishOn's queue").isZero();
        } finally {
            worker.dispose();
        }
    }

    @Test
    void shouldHandTheMailboxOnWhenAFusedStepVerifierCancelsFromTheTestThread() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final Thread producer = new Thread(() -> {
            for (int i = 0; i < 6; i++) {
                mailbox.trySend(i);
            }
        });
        StepVerifier.create(MailboxFlux.from(mailbox), 0)
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .thenRequest(2)
                .then(() -> {
                    producer.start(); // the polls run on the producer's thread, woken by its send
                    try {
                        producer.join();
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                })
                .expectNext(0, 1)
                .thenCancel() // from the test thread, while the consumer paused mid-batch for lack of demand
                .verify(TIMEOUT);
        assertThat(holder(mailbox)).isNull();
        StepVerifier.create(MailboxFlux.from(mailbox), 4)
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .expectNext(2, 3, 4, 5)
                .thenCancel()
                .verify(TIMEOUT);
    }

    @Test
    void shouldHandTheMailboxOnWhenDisposedWhileConcatMapPausesBetweenPolls() throws Exception {
        final Mailbox<Integer> mailbox = mailboxWith(16, 8);
        final Sinks.Empty<Void> never = Sinks.empty();
        final CountDownLatch innerStarted = new CountDownLatch(1);
        final Disposable disposable = MailboxFlux.from(mailbox)
                .concatMap(v -> never.asMono().doOnSubscribe(s -> innerStarted.countDown()).then(Mono.just(v)), 32)
                .subscribe();
        assertThat(innerStarted.await(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(holder(mailbox).isFused()).isTrue();
        disposable.dispose(); // from this thread, while concatMap waits for its inner: no poll will follow
        mailbox.close();
        // concatMap took 0 (its inner); prefetch polls nothing beyond what it maps. The rest is here.
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectNextSequence(range(1, 8))
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldLeaveTheRestWhenUnfusedTakeCancelsMidBatch() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        StepVerifier.create(MailboxFlux.from(mailbox).take(3, false))
                .expectNext(0, 1, 2)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(7);
    }

    @Test
    void shouldReturnNullFromPollAndKeepTheMailboxWhenCancelledAndCleared() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 5);
        final FusedProbe<Integer> probe = new FusedProbe<>(2);
        MailboxFlux.from(mailbox).subscribe(probe);
        assertThat(probe.values).containsExactly(0, 1);
        probe.cancel();
        assertThat(probe.queue.poll()).isNull(); // publishOn may poll once more after a cancel from onNext
        probe.queue.clear();
        assertThat(probe.queue.isEmpty()).isFalse();
        assertThat(mailbox.size()).isEqualTo(3);
        assertThat(holder(mailbox)).isNull();
    }

    @Test
    void shouldReleaseOnUnlockWhenAProducersWakeUpCancelsUsFromInsideOurOwnPoll() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        final FusedProbe<Integer> probe = new FusedProbe<>(0);
        final java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicReference<Thread> cancelledOn = new AtomicReference<>();
        // The sender's third request comes from the consumer's wake-up check (afterReceive, under the poll lock): its
        // first two (the mailbox's 4, then 4 more to wait in the subscriber) come from subscribe(); the third only once
        // the consumer has made room for those 4. Cancelling there runs our releaseRole on the polling thread, inside
        // its own poll.
        MailboxFlux.sendAll(Flux.range(0, 100).doOnRequest(n -> {
            if (requests.incrementAndGet() == 3) {
                cancelledOn.set(Thread.currentThread());
                probe.cancel();
            }
        }), mailbox).subscribe();
        assertThat(mailbox.size()).isEqualTo(4);
        probe.deferDrain = true; // polls outside our loop, as publishOn's worker does
        MailboxFlux.from(mailbox).subscribe(probe);
        probe.request(Long.MAX_VALUE);
        assertThat(cancelledOn.get()).isSameAs(Thread.currentThread());
        assertThat(probe.values).containsExactly(0, 1, 2, 3);
        assertThat(holder(mailbox)).isNull(); // released when that poll unlocked
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectNextSequence(range(4, 100))
                .expectComplete() // sendAll closed the mailbox after the last element
                .verify(TIMEOUT);
        assertThat(probe.violations).isEmpty();
    }

    // ------------------------------------------------------------------ one consumer at a time

    @Test
    void shouldRefuseASecondLiveSubscriberWhicheverFaceItUses() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 2);
        final FusedProbe<Integer> first = new FusedProbe<>(0);
        MailboxFlux.from(mailbox).subscribe(first);
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectSubscription()
                .expectErrorSatisfies(e -> assertThat(e)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("live subscriber"))
                .verify(TIMEOUT);
        StepVerifier.create(new MailboxPublisher<>(mailbox))
                .expectSubscription()
                .expectError(IllegalStateException.class)
                .verify(TIMEOUT);
        // a fused refused subscriber polls nothing
        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectFusion(Fuseable.ANY, Fuseable.ASYNC)
                .expectError(IllegalStateException.class)
                .verify(TIMEOUT);
        first.request(2);
        assertThat(first.values).containsExactly(0, 1);
        assertThat(first.violations).isEmpty();
    }

    @Test
    void shouldAcceptASubscriberArrivingWhileTheCancelledFusedOneFinishesItsOnNext() throws Exception {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        final FusedProbe<Integer> second = new FusedProbe<>(Long.MAX_VALUE);
        final List<Integer> firstGot = new CopyOnWriteArrayList<>();
        final CountDownLatch done = new CountDownLatch(1);
        MailboxFlux.from(mailbox)
                .publishOn(schedulers.single("first"))
                .subscribe(new BaseSubscriber<Integer>() {
                    @Override
                    protected void hookOnNext(Integer v) {
                        firstGot.add(v);
                        if (v == 2) {
                            cancel(); // on the worker, between two polls
                            final Thread thread = new Thread(() -> MailboxFlux.from(mailbox).subscribe(second));
                            thread.start();
                            try {
                                thread.join(TIMEOUT.toMillis());
                            } catch (InterruptedException e) {
                                throw new AssertionError(e);
                            }
                            done.countDown();
                        }
                    }
                });
        assertThat(done.await(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(second.error.get()).isNull(); // accepted, not refused
        assertThat(second.fusionMode).isEqualTo(Fuseable.ASYNC);
        assertThat(second.awaitValues(7, 10_000)).isTrue();
        assertThat(second.values).containsExactlyElementsOf(range(3, 10));
        assertThat(firstGot).containsExactly(0, 1, 2);
        assertThat(second.violations).isEmpty();
    }

    @Test
    void shouldAcceptASubscriberSubscribingFromInsideTheFusedOnesOnNextAfterCancel() throws Exception {
        final Mailbox<Integer> mailbox = mailboxWith(16, 6);
        final List<Integer> firstGot = new CopyOnWriteArrayList<>();
        final FusedProbe<Integer> second = new FusedProbe<>(Long.MAX_VALUE);
        MailboxFlux.from(mailbox)
                .publishOn(schedulers.single("first"))
                .subscribe(new BaseSubscriber<Integer>() {
                    @Override
                    protected void hookOnNext(Integer v) {
                        firstGot.add(v);
                        cancel();
                        MailboxFlux.from(mailbox).subscribe(second); // on the worker, inside onNext
                    }
                });
        assertThat(second.awaitValues(5, 10_000)).isTrue();
        assertThat(firstGot).containsExactly(0);
        assertThat(second.values).containsExactly(1, 2, 3, 4, 5);
        assertThat(second.error.get()).isNull();
    }

    // ------------------------------------------------------------------ producers

    @Test
    void shouldWakeProducersParkedOnAFullMailboxWhenTheFusedConsumerStopsForDemand() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        final Thread producer = new Thread(() -> {
            try {
                for (int i = 0; i < 8; i++) {
                    mailbox.send(i); // parks on the fifth send until the consumer frees room
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        producer.start();
        while (mailbox.size() < 4) {
            Thread.onSpinWait();
        }
        // batchSize 256: only the stop (demand used up, isEmpty, an empty poll) wakes the parked producer
        final FusedProbe<Integer> probe = new FusedProbe<>(0);
        MailboxFlux.from(mailbox, 256).subscribe(probe);
        probe.request(2); // takes 0, 1 and stops: the producer must be woken now, not after 256 polls
        final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
        while (mailbox.stats().admitted() < 6 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertThat(mailbox.stats().admitted()).isEqualTo(6L); // 4, 5 went into the two freed slots
        probe.request(6);
        producer.join(Hang.TIMEOUT.toMillis());
        assertThat(producer.isAlive()).isFalse();
        assertThat(probe.awaitValues(8, 10_000)).isTrue();
        assertThat(probe.values).containsExactlyElementsOf(range(0, 8));
        assertThat(probe.violations).isEmpty();
    }

    @Test
    void shouldDeliverEveryMessageOnceAndInOrderPerProducerWhenFourProducersFeedAFusedPublishOn() throws Exception {
        final int producers = 4;
        final int perProducer = 20_000;
        final Mailbox<Long> mailbox = Mailboxes.bounded(64); // small: producers park, the consumer wakes them
        final long[] last = new long[producers];
        java.util.Arrays.fill(last, -1L);
        final List<String> errors = new CopyOnWriteArrayList<>();
        final CountDownLatch completed = new CountDownLatch(1);
        final long[] count = new long[1];
        MailboxFlux.from(mailbox, 16)
                .publishOn(schedulers.single("consumer"), 32)
                .subscribe(v -> {
                    final int p = (int) (v >>> 32);
                    final long seq = v & 0xFFFF_FFFFL;
                    if (seq != last[p] + 1) {
                        errors.add("producer " + p + ": got " + seq + " after " + last[p]);
                    }
                    last[p] = seq;
                    count[0]++;
                }, e -> errors.add(e.toString()), completed::countDown);
        final List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final long tag = (long) p << 32;
            final Thread t = new Thread(() -> {
                try {
                    for (long i = 0; i < perProducer; i++) {
                        mailbox.send(tag | i);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "producer-" + p);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(t.isAlive()).as(t.getName() + " finished").isFalse();
        }
        mailbox.close();
        assertThat(completed.await(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(errors).isEmpty();
        assertThat(count[0]).isEqualTo((long) producers * perProducer);
        for (int p = 0; p < producers; p++) {
            assertThat(last[p]).isEqualTo(perProducer - 1L);
        }
    }

    // ------------------------------------------------------------------ Scannable

    @Test
    void shouldReportScannableAttributesOnTheFluxAndItsSubscription() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 3);
        final Flux<Integer> flux = MailboxFlux.from(mailbox, 8);
        final Scannable scannable = Scannable.from(flux);
        assertThat(scannable.isScanAvailable()).isTrue();
        assertThat(scannable.scan(Scannable.Attr.CAPACITY)).isEqualTo(16);
        assertThat(scannable.scan(Scannable.Attr.BUFFERED)).isEqualTo(3);
        assertThat(scannable.scan(Scannable.Attr.PREFETCH)).isEqualTo(8);
        assertThat(scannable.scan(Scannable.Attr.TERMINATED)).isFalse();
        assertThat(scannable.scan(Scannable.Attr.CANCELLED)).isFalse();
        assertThat(scannable.scan(Scannable.Attr.REQUESTED_FROM_DOWNSTREAM)).isZero();
        assertThat(scannable.stepName()).isEqualTo("source(MailboxFlux)");

        final FusedProbe<Integer> probe = new FusedProbe<>(5);
        flux.subscribe(probe);
        final Scannable subscription = Scannable.from(probe.subscription);
        assertThat(subscription.scan(Scannable.Attr.CAPACITY)).isEqualTo(16);
        assertThat(subscription.scan(Scannable.Attr.BUFFERED)).isZero();
        assertThat(subscription.scan(Scannable.Attr.PREFETCH)).isEqualTo(8);
        assertThat(subscription.scan(Scannable.Attr.REQUESTED_FROM_DOWNSTREAM)).isEqualTo(2L);
        assertThat(scannable.scan(Scannable.Attr.REQUESTED_FROM_DOWNSTREAM)).isEqualTo(2L);
        assertThat(subscription.scanUnsafe(Scannable.Attr.ACTUAL)).isSameAs(probe);
        assertThat(subscription.scan(Scannable.Attr.TERMINATED)).isFalse();
        assertThat(subscription.scan(Scannable.Attr.CANCELLED)).isFalse();
        probe.cancel();
        assertThat(subscription.scan(Scannable.Attr.CANCELLED)).isTrue();
        assertThat(subscription.scanUnsafe(Scannable.Attr.ACTUAL)).isNull();

        mailbox.close();
        StepVerifier.create(flux).expectComplete().verify(TIMEOUT);
        assertThat(scannable.scan(Scannable.Attr.TERMINATED)).isTrue();
    }
}
