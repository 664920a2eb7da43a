package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.SpecProbes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

@Timeout(300)
@ExtendWith(SpecProbes.class)
class MailboxPublisherTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    private final List<ExecutorService> executors = new ArrayList<>();

    @AfterEach
    void shutdownExecutors() {
        executors.forEach(ExecutorService::shutdownNow);
    }

    private static Mailbox<Integer> mailboxWith(int capacity, int count) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(capacity);
        for (int i = 0; i < count; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        return mailbox;
    }

    private static List<Integer> range(int from, int to) {
        return IntStream.range(from, to).boxed().collect(Collectors.toList());
    }

    private ExecutorService singleThread(String name) {
        final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            final Thread thread = new Thread(r, name);
            thread.setDaemon(true);
            return thread;
        });
        executors.add(executor);
        return executor;
    }

    // ------------------------------------------------------------------ construction and bad input

    @Test
    void shouldRejectBatchSizeWhenBelowOne() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        assertThatThrownBy(() -> new MailboxPublisher<>(mailbox, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("batchSize: 0 (expected: >= 1)");
        assertThatThrownBy(() -> new MailboxPublisher<>(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> new MailboxPublisher<>(mailbox, 1, null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("executor");
    }

    @Test
    void shouldThrowNullPointerWhenSubscriberIsNull() {
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(Mailboxes.bounded(4));
        assertThatThrownBy(() -> publisher.subscribe(null)) // §1.9
                .isInstanceOf(NullPointerException.class)
                .hasMessage("subscriber");
    }

    @Test
    void shouldSignalIllegalArgumentAndHandMailboxOnWhenRequestIsNotPositive() {
        final Mailbox<Integer> mailbox = mailboxWith(8, 3);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        for (long n : new long[] {0L, -1L, Long.MIN_VALUE}) {
            StepVerifier.create(publisher, 0)
                    .consumeSubscriptionWith(s -> s.request(n)) // StepVerifier's thenRequest refuses n <= 0
                    .expectErrorSatisfies(e -> assertThat(e)
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessage("§3.9 violated: positive request amount required but it was " + n))
                    .verify(TIMEOUT);
        }
        assertThat(mailbox.size()).isEqualTo(3);
        mailbox.close();
        StepVerifier.create(publisher).expectNext(0, 1, 2).expectComplete().verify(TIMEOUT);
    }

    // ------------------------------------------------------------------ demand and batches

    @Test
    void shouldDeliverExactlyTheRequestedAmountWhenRequestedInSteps() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        StepVerifier.create(new MailboxPublisher<>(mailbox, 4), 0)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(20))
                .thenRequest(3)
                .expectNext(0, 1, 2)
                .expectNoEvent(Duration.ofMillis(20))
                .thenRequest(5)
                .expectNext(3, 4, 5, 6, 7)
                .thenRequest(Long.MAX_VALUE)
                .expectNext(8, 9)
                .then(() -> assertThat(mailbox.size()).isZero())
                .then(mailbox::close)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldTakeBatchesOfAtMostBatchSizeWhenDemandIsLarger() {
        final Mailbox<Integer> mailbox = mailboxWith(64, 50);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
        final AtomicInteger sizeAtFirstOnNext = new AtomicInteger(-1);
        subscriber.onNextHook = (s, v) -> {
            if (v == 0) {
                sizeAtFirstOnNext.set(mailbox.size());
            }
        };
        new MailboxPublisher<>(mailbox, 8).subscribe(subscriber);
        subscriber.request(30);
        assertThat(subscriber.values).containsExactlyElementsOf(range(0, 30));
        assertThat(sizeAtFirstOnNext.get()).isEqualTo(49); // taken one at a time, not copied out in bulk
        assertThat(mailbox.stats().highWaterMark()).isEqualTo(8);
        assertThat(subscriber.violations).isEmpty();
    }

    @Test
    void shouldCompleteWithoutDemandWhenClosedAndEmpty() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        mailbox.close();
        StepVerifier.create(new MailboxPublisher<>(mailbox), 0)
                .expectSubscription()
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldCompleteWithoutDemandWhenClosedLaterWhileEmpty() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        StepVerifier.create(new MailboxPublisher<>(mailbox), 0)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(20))
                .then(mailbox::close)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldCompleteAfterDataWhenClosedWithMessagesWaiting() {
        final Mailbox<Integer> mailbox = mailboxWith(8, 3);
        mailbox.close();
        StepVerifier.create(new MailboxPublisher<>(mailbox), 0)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(20)) // messages wait for demand: not complete yet
                .thenRequest(2)
                .expectNext(0, 1)
                .thenRequest(1)
                .expectNext(2)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldSignalTheCauseAfterDataWhenClosedExceptionally() {
        final Mailbox<Integer> mailbox = mailboxWith(8, 2);
        final IllegalStateException boom = new IllegalStateException("boom");
        mailbox.closeExceptionally(boom);
        StepVerifier.create(new MailboxPublisher<>(mailbox), 0)
                .expectSubscription()
                .thenRequest(5)
                .expectNext(0, 1)
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(TIMEOUT);
    }

    @Test
    void shouldSignalTheCauseWhenClosedExceptionallyWhileWaiting() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final IllegalStateException boom = new IllegalStateException("boom");
        StepVerifier.create(new MailboxPublisher<>(mailbox), 0)
                .expectSubscription()
                .thenRequest(5)
                .then(() -> mailbox.trySend(1))
                .expectNext(1)
                .then(() -> mailbox.closeExceptionally(boom))
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(TIMEOUT);
    }

    @Test
    void shouldDeliverFramesWhenMailboxIsFrameMailbox() {
        final FrameMailbox frames = Mailboxes.frames(8);
        final byte[] big = new byte[100];
        big[99] = 7;
        assertThat(frames.trySend(1, 10L, ByteBuffer.wrap(new byte[] {1, 2, 3}))).isTrue();
        assertThat(frames.trySend(2, 20L, ByteBuffer.wrap(big))).isTrue();
        frames.close();
        StepVerifier.create(new MailboxPublisher<MessageFrame>(frames, 1), 0)
                .thenRequest(2)
                .assertNext(f -> assertThat(f.correlationId()).isEqualTo(10L))
                .assertNext(f -> {
                    assertThat(f.kind()).isEqualTo(2);
                    assertThat(f.payloadLength()).isEqualTo(100);
                    assertThat(f.payload().get(99)).isEqualTo((byte) 7);
                })
                .expectComplete()
                .verify(TIMEOUT);
    }

    // ------------------------------------------------------------------ nothing lost on cancel

    @Test
    void shouldLeaveTheRestInTheMailboxWhenTakeCancelsMidBatch() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        // take(3, false) requests unbounded and cancels from inside the third onNext: mid-batch
        StepVerifier.create(Flux.from(publisher).take(3, false))
                .expectNext(0, 1, 2)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(7);
        // take(3) (limitRequest) requests exactly 3
        StepVerifier.create(Flux.from(publisher).take(3))
                .expectNext(3, 4, 5)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(4);
        mailbox.close();
        StepVerifier.create(publisher).expectNext(6, 7, 8, 9).expectComplete().verify(TIMEOUT);
    }

    @Test
    void shouldLeaveTheRestInTheMailboxWhenCancelledInsideOnNext() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        StepVerifier.create(publisher)
                .expectNext(0, 1, 2)
                .thenCancel()
                .verify(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(7);
        StepVerifier.create(publisher, 0)
                .thenRequest(7)
                .expectNextSequence(range(3, 10))
                .then(mailbox::close)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldCountTheMessageAsDeliveredAndSignalOnErrorOnceWhenOnNextThrows() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        final IllegalStateException boom = new IllegalStateException("boom");
        final CheckingSubscriber<Integer> failing = new CheckingSubscriber<>(Long.MAX_VALUE);
        final AtomicReference<Boolean> handedOnBeforeOnError = new AtomicReference<>();
        failing.onNextHook = (s, v) -> {
            if (v == 1) {
                throw boom;
            }
        };
        final CheckingSubscriber<Integer> next = new CheckingSubscriber<>(0);
        final Subscriber<Integer> probe = new Subscriber<>() {
            @Override
            public void onSubscribe(Subscription s) {
                failing.onSubscribe(s);
            }

            @Override
            public void onNext(Integer v) {
                failing.onNext(v);
            }

            @Override
            public void onError(Throwable t) {
                publisher.subscribe(next); // accepted at once: the failed subscription handed the mailbox on
                handedOnBeforeOnError.set(next.error == null && next.subscription != null);
                failing.onError(t);
            }

            @Override
            public void onComplete() {
                failing.onComplete();
            }
        };
        publisher.subscribe(probe);
        assertThat(failing.values).containsExactly(0, 1);
        assertThat(failing.error).isSameAs(boom);
        assertThat(failing.terminalCount.get()).isEqualTo(1);
        assertThat(handedOnBeforeOnError.get()).isTrue();
        assertThat(mailbox.size()).isEqualTo(8); // 0 and 1 delivered, 2..9 left
        next.request(8);
        assertThat(next.values).containsExactlyElementsOf(range(2, 10));
        assertThat(failing.violations).isEmpty();
        assertThat(next.violations).isEmpty();
    }

    // ------------------------------------------------------------------ one consumer at a time

    @Test
    void shouldRefuseASecondSubscriberWhenTheFirstIsLive() {
        final Mailbox<Integer> mailbox = mailboxWith(8, 2);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(0);
        publisher.subscribe(first);
        StepVerifier.create(publisher)
                .expectSubscription()
                .expectErrorSatisfies(e -> assertThat(e)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("live subscriber"))
                .verify(TIMEOUT);
        // also through a second publisher over the same mailbox
        StepVerifier.create(new MailboxPublisher<>(mailbox))
                .expectSubscription()
                .expectError(IllegalStateException.class)
                .verify(TIMEOUT);
        first.request(2);
        assertThat(first.values).containsExactly(0, 1);
        assertThat(first.violations).isEmpty();
    }

    @Test
    void shouldAcceptASubscriberArrivingDuringTheCancelledOnesLastDelivery() throws Exception {
        final Mailbox<Integer> mailbox = mailboxWith(16, 10);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        final CheckingSubscriber<Integer> second = new CheckingSubscriber<>(Long.MAX_VALUE);
        final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(Long.MAX_VALUE);
        // observed inside the first's onNext, asserted here: the publisher catches what onNext throws
        final AtomicReference<Boolean> secondSubscribedDuringFirst = new AtomicReference<>();
        final AtomicReference<Integer> secondGotDuringFirst = new AtomicReference<>();
        first.onNextHook = (s, v) -> {
            if (v == 2) {
                s.cancel();
                // subscribe from another thread while this onNext is still running
                final Thread thread = new Thread(() -> publisher.subscribe(second));
                thread.start();
                try {
                    thread.join(TIMEOUT.toMillis());
                    secondSubscribedDuringFirst.set(second.subscribed.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                secondGotDuringFirst.set(second.onNextCount.get());
            }
        };
        publisher.subscribe(first);
        assertThat(first.values).containsExactly(0, 1, 2);
        assertThat(secondSubscribedDuringFirst.get()).as("the second subscribed during the first's onNext").isTrue();
        assertThat(secondGotDuringFirst.get()).isZero(); // queued: nobody polls while the first delivers
        assertThat(second.awaitValues(7, TIMEOUT)).isTrue();
        assertThat(second.error).isNull();
        assertThat(second.values).containsExactlyElementsOf(range(3, 10));
        assertThat(first.violations).isEmpty();
        assertThat(second.violations).isEmpty();
    }

    @Test
    void shouldAcceptASubscriberSubscribingFromInsideTheCancelledOnesOnNext() {
        final Mailbox<Integer> mailbox = mailboxWith(16, 6);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        final CheckingSubscriber<Integer> second = new CheckingSubscriber<>(Long.MAX_VALUE);
        final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(Long.MAX_VALUE);
        // observed inside the first's onNext, asserted here: the publisher catches what onNext throws
        final AtomicReference<Integer> secondGotInsideFirst = new AtomicReference<>();
        first.onNextHook = (s, v) -> {
            if (v == 0) {
                s.cancel();
                publisher.subscribe(second);
                secondGotInsideFirst.set(second.onNextCount.get());
            }
        };
        publisher.subscribe(first);
        assertThat(first.values).containsExactly(0);
        assertThat(secondGotInsideFirst.get()).as("delivered to the second inside the first's onNext").isZero();
        assertThat(second.values).containsExactly(1, 2, 3, 4, 5);
        assertThat(second.error).isNull();
    }

    @Test
    void shouldAcceptANewSubscriberWhenThePreviousCompleted() {
        final Mailbox<Integer> mailbox = mailboxWith(4, 1);
        mailbox.close();
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        StepVerifier.create(publisher).expectNext(0).expectComplete().verify(TIMEOUT);
        StepVerifier.create(publisher).expectComplete().verify(TIMEOUT);
    }

    // ------------------------------------------------------------------ threads

    @Test
    void shouldRegisterForOneWakeUpAndReturnWhenRequestingOnAnEmptyMailbox() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        // no demand, empty: one wake-up registered, for the close (a send then finds demand still zero)
        assertThat(mailbox.stats().consumerParked()).isTrue();
        subscriber.request(5); // returns: the drain registered a wake-up and left; no thread waits or spins
        assertThat(mailbox.stats().consumerParked()).isTrue();
        assertThat(subscriber.values).isEmpty();
        mailbox.trySend(1); // the registration fires on the producer's thread, inside trySend
        assertThat(subscriber.values).containsExactly(1);
        assertThat(mailbox.stats().consumerParked()).isTrue(); // re-registered: demand 4 left, empty again
    }

    @Test
    void shouldRunOnNextOnTheRequestingThreadWhenMessagesWait() throws Exception {
        final Mailbox<Integer> mailbox = mailboxWith(8, 3);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        final Thread requester = new Thread(() -> subscriber.request(3), "requester");
        requester.start();
        requester.join(TIMEOUT.toMillis());
        assertThat(subscriber.values).containsExactly(0, 1, 2);
        assertThat(subscriber.onNextThreads).containsOnly(requester);
    }

    @Test
    void shouldRunOnNextOnTheProducersThreadWhenWaitingWithDemand() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(10);
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        final Thread producer = new Thread(() -> mailbox.trySend(42), "producer");
        producer.start();
        producer.join(TIMEOUT.toMillis());
        assertThat(subscriber.values).containsExactly(42); // delivered before the producer's trySend returned
        assertThat(subscriber.onNextThreads).containsOnly(producer);
        final Thread closer = new Thread(mailbox::close, "closer");
        closer.start();
        closer.join(TIMEOUT.toMillis());
        assertThat(subscriber.completed).isTrue();
        assertThat(subscriber.terminalThread).isSameAs(closer);
    }

    @Test
    void shouldRunEveryDrainOnTheExecutorWhenGivenOne() throws Exception {
        final ExecutorService executor = singleThread("drainer");
        final Thread drainer = executor.submit(Thread::currentThread).get();
        final Mailbox<Integer> mailbox = mailboxWith(64, 5);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
        new MailboxPublisher<>(mailbox, 2, executor).subscribe(subscriber);
        subscriber.request(7); // from the test thread: only submits
        final Thread producer = new Thread(() -> {
            mailbox.trySend(5);
            mailbox.trySend(6);
        }, "producer");
        producer.start();
        producer.join(TIMEOUT.toMillis());
        assertThat(subscriber.awaitValues(7, TIMEOUT)).isTrue();
        mailbox.close();
        assertThat(subscriber.awaitTerminated(TIMEOUT)).isTrue();
        assertThat(subscriber.values).containsExactly(0, 1, 2, 3, 4, 5, 6);
        assertThat(subscriber.onNextThreads).containsOnly(drainer);
        assertThat(subscriber.terminalThread).isSameAs(drainer);
        assertThat(subscriber.violations).isEmpty();
    }

    @Test
    void shouldSignalRejectedExecutionWhenTheExecutorRejects() {
        final ExecutorService executor = singleThread("dead");
        executor.shutdown();
        final Mailbox<Integer> mailbox = mailboxWith(8, 2);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox, 4, executor);
        StepVerifier.create(publisher)
                .expectSubscription()
                .expectError(RejectedExecutionException.class)
                .verify(TIMEOUT);
        assertThat(mailbox.size()).isEqualTo(2);
        StepVerifier.create(new MailboxPublisher<>(mailbox)).expectNext(0, 1).thenCancel().verify(TIMEOUT);
    }

    // ------------------------------------------------------------------ re-entrance

    @Test
    void shouldNotDeadlockWhenOnNextSendsIntoItsOwnFullMailbox() {
        final Mailbox<Integer> mailbox = mailboxWith(4, 4);
        final List<Object> outcomes = new ArrayList<>();
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
        subscriber.onNextHook = (s, v) -> {
            if (v == 0) {
                outcomes.add(mailbox.trySend(100)); // refills the slot poll() freed
                outcomes.add(mailbox.trySend(101)); // full now: false, no wait
                try {
                    mailbox.send(102); // would wait for room only this thread can make
                    outcomes.add("sent");
                } catch (IllegalStateException e) {
                    outcomes.add(e.getClass());
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }
        };
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        subscriber.request(1);
        assertThat(outcomes).containsExactly(true, false, IllegalStateException.class);
        subscriber.request(4);
        assertThat(subscriber.values).containsExactly(0, 1, 2, 3, 100);
    }

    @Test
    void shouldNotDeadlockWhenOnNextSendsIntoItsOwnFullMailboxOnTheExecutor() throws Exception {
        final ExecutorService executor = singleThread("drainer");
        final Mailbox<Integer> mailbox = mailboxWith(2, 2);
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
        final AtomicReference<Object> outcome = new AtomicReference<>();
        final CountDownLatch done = new CountDownLatch(1);
        subscriber.onNextHook = (s, v) -> {
            if (v == 0) {
                try {
                    mailbox.trySend(7);
                    mailbox.send(8);
                    outcome.set("sent");
                } catch (Exception e) {
                    outcome.set(e);
                }
                done.countDown();
            }
        };
        new MailboxPublisher<>(mailbox, 8, executor).subscribe(subscriber);
        subscriber.request(1);
        assertThat(done.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        assertThat(outcome.get()).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void shouldNotRecurseWhenRequestingOneFromOnNext() {
        final int count = 2_000;
        final Mailbox<Integer> mailbox = mailboxWith(4096, count);
        mailbox.close();
        final AtomicInteger depth = new AtomicInteger();
        final AtomicInteger maxDepth = new AtomicInteger();
        final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(1);
        subscriber.onNextHook = (s, v) -> {
            maxDepth.accumulateAndGet(depth.incrementAndGet(), Math::max);
            s.request(1); // §3.3: trampolined, not recursive
            depth.decrementAndGet();
        };
        new MailboxPublisher<>(mailbox, 16).subscribe(subscriber);
        assertThat(subscriber.values).hasSize(count);
        assertThat(subscriber.completed).isTrue();
        assertThat(maxDepth.get()).isEqualTo(1);
        assertThat(subscriber.violations).isEmpty();
    }

    // ------------------------------------------------------------------ §3.13

    @Test
    void shouldDropTheSubscriberReferenceWhenCancelled() throws Exception {
        final Mailbox<Integer> mailbox = mailboxWith(8, 3);
        final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
        final AtomicReference<Subscription> subscription = new AtomicReference<>();
        CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(1);
        publisher.subscribe(subscriber);
        subscription.set(subscriber.subscription);
        final WeakReference<CheckingSubscriber<Integer>> ref = new WeakReference<>(subscriber);
        subscriber.cancel();
        subscriber = null;
        for (int i = 0; i < 100 && ref.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertThat(ref.get()).isNull(); // even though the subscription object is still reachable
        assertThat(subscription.get()).isNotNull();
    }
}
