package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.SpecProbes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Flux;

/**
 * Races of request / cancel / send / close / subscribe on real threads ({@link Hang#race}: reactor-test's {@code RaceTestUtils.race} with a hang limit instead of 5 s), many rounds
 * each. Each round's outcome is checked the moment both sides returned: a trampolined drain finishes inside
 * the call that started it, so a lost wake-up shows up as a missing value, not as a slow test. The default run
 * does {@link #ROUNDS} rounds per race; {@code -Pstress} runs the {@code @Tag("stress")} variant with more.
 */
@Timeout(120)
@ExtendWith(SpecProbes.class)
class MailboxRaceTest {
    static final int ROUNDS = 300;
    static final int STRESS_ROUNDS = 20_000;
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    private static ExecutorService executor;

    @BeforeAll
    static void startExecutor() {
        executor = Executors.newSingleThreadExecutor(r -> {
            final Thread thread = new Thread(r, "race-drainer");
            thread.setDaemon(true);
            return thread;
        });
    }

    @AfterAll
    static void stopExecutor() {
        executor.shutdownNow();
    }

    @Test
    void shouldDeliverExactlyOnceWhenRequestRacesSend() {
        requestRacesSend(ROUNDS);
    }

    @Test
    @Tag("stress")
    void shouldDeliverExactlyOnceWhenRequestRacesSendUnderStress() {
        requestRacesSend(STRESS_ROUNDS);
    }

    private static void requestRacesSend(int rounds) {
        for (int round = 0; round < rounds; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
            new MailboxPublisher<>(mailbox).subscribe(subscriber);
            final int value = round;
            Hang.race(() -> subscriber.request(1), () -> mailbox.trySend(value));
            assertThat(subscriber.values).as("round %d", round).containsExactly(value);
            assertThat(subscriber.violations).isEmpty();
        }
    }

    @Test
    void shouldLoseNothingWhenCancelRacesSend() {
        cancelRacesSend(ROUNDS);
    }

    @Test
    @Tag("stress")
    void shouldLoseNothingWhenCancelRacesSendUnderStress() {
        cancelRacesSend(STRESS_ROUNDS);
    }

    private static void cancelRacesSend(int rounds) {
        for (int round = 0; round < rounds; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
            final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(Long.MAX_VALUE);
            publisher.subscribe(first);
            Hang.race(first::cancel, () -> mailbox.trySend(1), () -> mailbox.trySend(2));
            // every message was either delivered to the live subscription or is still in the mailbox
            assertThat(first.values.size() + mailbox.size()).as("round %d", round).isEqualTo(2);
            final CheckingSubscriber<Integer> next = new CheckingSubscriber<>(Long.MAX_VALUE);
            publisher.subscribe(next); // the cancelled one has handed the mailbox on
            assertThat(next.error).isNull();
            final List<Integer> all = new ArrayList<>(first.values);
            all.addAll(next.values);
            assertThat(all).containsExactlyInAnyOrder(1, 2);
            assertThat(first.violations).isEmpty();
            assertThat(next.violations).isEmpty();
        }
    }

    @Test
    void shouldCompleteWithEverythingWhenCloseRacesRequest() {
        for (int round = 0; round < ROUNDS; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            mailbox.trySend(0);
            mailbox.trySend(1);
            final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
            new MailboxPublisher<>(mailbox, 1).subscribe(subscriber);
            Hang.race(() -> subscriber.request(2), mailbox::close);
            assertThat(subscriber.values).as("round %d", round).containsExactly(0, 1);
            assertThat(subscriber.completed).as("round %d", round).isTrue();
            assertThat(subscriber.violations).isEmpty();
        }
    }

    @Test
    void shouldDeliverASendIffItSucceededWhenSendRacesClose() {
        for (int round = 0; round < ROUNDS; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(Long.MAX_VALUE);
            new MailboxPublisher<>(mailbox).subscribe(subscriber);
            final AtomicBoolean sent = new AtomicBoolean();
            Hang.race(() -> {
                try {
                    sent.set(mailbox.trySend(7));
                } catch (MailboxClosedException closed) {
                    sent.set(false);
                }
            }, mailbox::close);
            assertThat(subscriber.completed).as("round %d", round).isTrue();
            if (sent.get()) {
                assertThat(subscriber.values).containsExactly(7);
            } else {
                assertThat(subscriber.values).isEmpty();
            }
            assertThat(subscriber.violations).isEmpty();
        }
    }

    @Test
    void shouldHandOverWithoutLossWhenCancelRacesANewSubscriber() {
        for (int round = 0; round < ROUNDS; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            for (int i = 0; i < 5; i++) {
                mailbox.trySend(i);
            }
            final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox);
            final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(2);
            publisher.subscribe(first);
            final CheckingSubscriber<Integer> second = new CheckingSubscriber<>(Long.MAX_VALUE);
            Hang.race(first::cancel, () -> publisher.subscribe(second));
            assertThat(first.values).containsExactly(0, 1);
            if (second.error != null) {
                // it came while the first was live: refused, and nothing of the mailbox was touched
                assertThat(second.error).isInstanceOf(IllegalStateException.class);
                assertThat(second.values).isEmpty();
                assertThat(mailbox.size()).isEqualTo(3);
            } else {
                assertThat(second.values).as("round %d", round).containsExactly(2, 3, 4);
            }
            assertThat(second.violations).isEmpty();
        }
    }

    @Test
    void shouldSerializeSignalsWhenProducersAndARequesterRace() {
        for (int round = 0; round < ROUNDS / 3; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
            final CheckingSubscriber<Integer> subscriber = new CheckingSubscriber<>(0);
            new MailboxPublisher<>(mailbox, 4).subscribe(subscriber);
            Hang.race(
                    () -> sendAll(mailbox, 0, 50),
                    () -> sendAll(mailbox, 1_000, 50),
                    () -> {
                        for (int i = 0; i < 100; i++) {
                            subscriber.request(1);
                        }
                    });
            assertThat(subscriber.values).as("round %d", round).hasSize(100);
            assertInOrderPerProducer(subscriber.values, 50);
            assertThat(subscriber.violations).isEmpty();
        }
    }

    @Test
    void shouldLoseNothingWhenCancelRacesSendOnTheExecutor() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final MailboxPublisher<Integer> publisher = new MailboxPublisher<>(mailbox, 4, executor);
            final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(Long.MAX_VALUE);
            publisher.subscribe(first);
            Hang.race(first::cancel, () -> mailbox.trySend(1), () -> mailbox.trySend(2));
            // the next subscriber is accepted (maybe queued until the executor ran the cancelled one's last pass)
            final CheckingSubscriber<Integer> next = new CheckingSubscriber<>(Long.MAX_VALUE);
            publisher.subscribe(next);
            assertThat(next.awaitValues(2 - first.onNextCount.get(), TIMEOUT)).isTrue();
            final List<Integer> all = new ArrayList<>(first.values);
            all.addAll(next.values);
            assertThat(all).as("round %d", round).containsExactlyInAnyOrder(1, 2);
            assertThat(next.error).isNull();
            assertThat(first.violations).isEmpty();
            assertThat(next.violations).isEmpty();
        }
    }

    @Test
    void shouldNeverBlockOrLoseWhenTheSubscriberRacesTheConsumerAndAnotherProducer() {
        final int fromUpstream = 2_000;
        final int fromProducer = 2_000;
        for (int round = 0; round < 10; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
            final List<Integer> received = new ArrayList<>();
            final AtomicInteger failures = new AtomicInteger();
            Hang.race(
                    // upstream: emits while it has demand, then on the consumer's thread as room frees
                    () -> Flux.range(0, fromUpstream).concatWith(Flux.never())
                            .subscribe(new MailboxSubscriber<>(mailbox, 2)),
                    () -> {
                        try {
                            sendAll(mailbox, 1_000_000, fromProducer);
                        } catch (RuntimeException e) {
                            failures.incrementAndGet();
                        }
                    },
                    () -> {
                        try {
                            while (received.size() < fromUpstream + fromProducer) {
                                final Integer v = mailbox.recv(TIMEOUT);
                                if (v == null) {
                                    failures.incrementAndGet();
                                    return;
                                }
                                received.add(v);
                            }
                        } catch (InterruptedException e) {
                            failures.incrementAndGet();
                        }
                    });
            assertThat(failures.get()).isZero();
            assertThat(received).hasSize(fromUpstream + fromProducer);
            assertThat(received.stream().filter(v -> v < 1_000_000)).containsExactlyElementsOf(
                    () -> java.util.stream.IntStream.range(0, fromUpstream).iterator());
            assertThat(received.stream().filter(v -> v >= 1_000_000).map(v -> v - 1_000_000))
                    .containsExactlyElementsOf(() -> java.util.stream.IntStream.range(0, fromProducer).iterator());
            assertThat(mailbox.stats().reserved()).isLessThanOrEqualTo(2);
        }
    }

    @Test
    void shouldNotThrowFromOnNextWhenCloseRacesTheUpstream() {
        for (int round = 0; round < ROUNDS; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox, 4);
            final AtomicBoolean cancelled = new AtomicBoolean();
            subscriber.onSubscribe(new Subscription() {
                @Override
                public void request(long n) {
                }

                @Override
                public void cancel() {
                    cancelled.set(true);
                }
            });
            final AtomicInteger thrown = new AtomicInteger();
            Hang.race(mailbox::close, () -> {
                try {
                    for (int i = 0; i < 4; i++) {
                        subscriber.onNext(i); // §2.8: may arrive after the cancel
                    }
                } catch (RuntimeException e) {
                    thrown.incrementAndGet();
                }
            });
            assertThat(thrown.get()).isZero();
            assertThat(cancelled.get()).as("round %d", round).isTrue();
            final List<Integer> received = new ArrayList<>();
            mailbox.tryRecvMany(received::add, 8);
            assertThat(received).isEqualTo(List.of(0, 1, 2, 3).subList(0, received.size())); // a prefix, in order
            assertThat(mailbox.isTerminated()).isTrue();
        }
    }

    // ------------------------------------------------------------------ helpers

    private static void sendAll(Mailbox<Integer> mailbox, int base, int count) {
        try {
            for (int i = 0; i < count; i++) {
                mailbox.send(base + i);
            }
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void assertInOrderPerProducer(Iterable<Integer> values, int perProducer) {
        int expectedA = 0;
        int expectedB = 1_000;
        for (int v : values) {
            if (v < 1_000) {
                assertThat(v).isEqualTo(expectedA++);
            } else {
                assertThat(v).isEqualTo(expectedB++);
            }
        }
        assertThat(expectedA).isEqualTo(perProducer);
        assertThat(expectedB).isEqualTo(1_000 + perProducer);
    }
}
