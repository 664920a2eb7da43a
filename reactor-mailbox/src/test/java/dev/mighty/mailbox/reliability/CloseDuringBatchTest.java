package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.StressSeed;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code close} / {@code closeExceptionally} arriving while a batch is being delivered and while senders race:
 * what was admitted is delivered, exactly once and in order, then the stream ends with the documented signal
 * (end of stream, or {@link MailboxClosedException} carrying the cause); every send either is delivered or fails
 * with {@code MailboxClosedException}.
 */
class CloseDuringBatchTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @ParameterizedTest(name = "blocking={0}")
    @CsvSource({"false", "true"})
    void shouldDeliverEveryAdmittedMessageWhenClosedExceptionallyDuringABatch(boolean blocking) {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            for (int i = 0; i < 5; i++) {
                assertThat(mailbox.trySend(i)).isTrue();
            }
            final IllegalStateException cause = new IllegalStateException("upstream failed");
            final CountDownLatch inBatch = new CountDownLatch(1);
            final CountDownLatch closed = new CountDownLatch(1);
            final List<Integer> got = new ArrayList<>();
            final AtomicReference<Object> outcome = new AtomicReference<>();
            final Thread consumer = new Thread(() -> {
                try {
                    final Consumer<Integer> sink = m -> {
                        got.add(m);
                        if (got.size() == 2) {
                            inBatch.countDown();
                            awaitQuietly(closed);
                        }
                    };
                    outcome.set(blocking ? mailbox.recvMany(sink, 8) : mailbox.tryRecvMany(sink, 8));
                } catch (Throwable t) {
                    outcome.set(t);
                }
            }, "consumer");
            consumer.start();
            assertThat(inBatch.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            mailbox.closeExceptionally(cause);
            assertThatThrownBy(() -> mailbox.trySend(99)).isInstanceOf(MailboxClosedException.class).hasCause(cause);
            closed.countDown();
            consumer.join();

            assertThat(outcome.get()).as("the batch under way finishes").isEqualTo(5);
            assertThat(got).containsExactly(0, 1, 2, 3, 4);
            assertClosedExceptionallyAndDrained(mailbox, cause, 5);
        });
    }

    @ParameterizedTest(name = "blocking={0}")
    @CsvSource({"false", "true"})
    void shouldDeliverEveryAdmittedFrameWhenClosedExceptionallyDuringABatch(boolean blocking) {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final FrameMailbox mailbox = Mailboxes.frames(8);
            final ByteBuffer payload = ByteBuffer.allocate(100);
            for (int i = 0; i < 5; i++) {
                assertThat(mailbox.trySend(0, i, SequenceChecker.payload(payload, 0, i * 30L))).isTrue();
            }
            final IllegalStateException cause = new IllegalStateException("upstream failed");
            final CountDownLatch inBatch = new CountDownLatch(1);
            final CountDownLatch closed = new CountDownLatch(1);
            final List<Long> got = new ArrayList<>();
            final AtomicReference<Object> outcome = new AtomicReference<>();
            final Thread consumer = new Thread(() -> {
                try {
                    final FrameHandler handler = view -> {
                        got.add(view.correlationId());
                        if (got.size() == 2) {
                            inBatch.countDown();
                            awaitQuietly(closed);
                        }
                    };
                    outcome.set(blocking ? mailbox.recvFrames(handler, 8) : mailbox.tryRecvFrames(handler, 8));
                } catch (Throwable t) {
                    outcome.set(t);
                }
            }, "consumer");
            consumer.start();
            assertThat(inBatch.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            mailbox.closeExceptionally(cause);
            closed.countDown();
            consumer.join();

            assertThat(outcome.get()).isEqualTo(5);
            assertThat(got).containsExactly(0L, 1L, 2L, 3L, 4L);
            assertClosedExceptionallyAndDrained(mailbox, cause, 5);
            assertThatThrownBy(() -> mailbox.recvFrames(v -> { }, 1)).isInstanceOf(MailboxClosedException.class)
                    .hasCause(cause);
        });
    }

    @ParameterizedTest(name = "{0} exceptional={1}")
    @CsvSource({"MPSC,false", "MPSC,true", "SPSC,true", "FRAMES,false", "FRAMES,true"})
    void shouldDeliverOrRejectEverySendWhenCloseRacesSendersAndTheConsumer(Endpoint.Variant variant,
            boolean exceptional) {
        closeRace(variant, exceptional, 400, 7L);
    }

    @Tag("stress")
    @ParameterizedTest(name = "{0} exceptional={1}")
    @CsvSource({"MPSC,false", "MPSC,true", "SPSC,true", "FRAMES,false", "FRAMES,true"})
    void shouldDeliverOrRejectEverySendWhenCloseRacesSendersAndTheConsumerForLong(Endpoint.Variant variant,
            boolean exceptional) {
        closeRace(variant, exceptional, 20_000, StressSeed.of("closeRace " + variant + " " + exceptional));
    }

    @Test
    void shouldKeepTheFirstCloseWhenCloseAndCloseExceptionallyRace() {
        try (Race race = new Race(2, TIMEOUT)) {
            for (int round = 0; round < 2_000; round++) {
                final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
                final RuntimeException cause = new RuntimeException("round " + round);
                race.run(mailbox::close, () -> mailbox.closeExceptionally(cause));
                assertThat(mailbox.isClosed()).isTrue();
                assertThat(mailbox.isTerminated()).isTrue();
                final Throwable decided = mailbox.closeCause();
                assertThat(decided).isIn(null, cause);
                if (decided != null) {
                    assertThatThrownBy(mailbox::recv).isInstanceOf(MailboxClosedException.class).hasCause(cause);
                } else {
                    assertThat(recvQuietly(mailbox)).isNull();
                }
                mailbox.closeExceptionally(new RuntimeException("late"));
                assertThat(mailbox.closeCause()).as("the first close decides").isSameAs(decided);
            }
        }
    }

    /**
     * Rounds of: producers {@code trySend} 0, 1, 2, ... until they are rejected; the consumer receives with a
     * random receive method until the end; a closer closes at a random moment. Each round: every admitted message
     * was delivered exactly once and in order, the end was signalled as documented, and the counters agree.
     */
    private static void closeRace(Endpoint.Variant variant, boolean exceptional, int rounds, long seed) {
        final int producers = variant.producers(2);
        final SplittableRandom random = new SplittableRandom(seed);
        try (Race race = new Race(producers + 2, TIMEOUT)) {
            for (int round = 0; round < rounds; round++) {
                final Endpoint endpoint = variant.create(1 << random.nextInt(4));
                final Mailbox<?> mailbox = endpoint.mailbox();
                final RuntimeException cause = new RuntimeException("round " + round);
                final long[] sent = new long[producers];
                final SequenceChecker checker = new SequenceChecker(producers);
                final AtomicReference<Object> end = new AtomicReference<>();
                final AtomicLong rejected = new AtomicLong();
                final int closeDelay = random.nextInt(4_000);
                final long consumerSeed = random.nextLong();
                final Runnable[] actions = new Runnable[producers + 2];
                for (int p = 0; p < producers; p++) {
                    final int producer = p;
                    actions[p] = () -> {
                        try {
                            for (long seq = 0; ; ) {
                                if (endpoint.trySend(producer, seq)) {
                                    sent[producer] = ++seq;
                                } else {
                                    Thread.onSpinWait();
                                }
                            }
                        } catch (MailboxClosedException e) {
                            rejected.incrementAndGet();
                            assertThat(e.getCause()).isSameAs(exceptional ? cause : null);
                        }
                    };
                }
                actions[producers] = () -> {
                    final SplittableRandom r = new SplittableRandom(consumerSeed);
                    try {
                        while (endpoint.receive(checker, r.nextInt(Endpoint.MODES), 1 + r.nextInt(8)) >= 0) {
                            // until the end
                        }
                        end.set("end of stream");
                    } catch (MailboxClosedException e) {
                        end.set(e);
                    } catch (InterruptedException e) {
                        end.set(e);
                    }
                };
                actions[producers + 1] = () -> {
                    for (int i = 0; i < closeDelay; i++) {
                        Thread.onSpinWait();
                    }
                    if (exceptional) {
                        mailbox.closeExceptionally(cause);
                    } else {
                        mailbox.close();
                    }
                };
                race.run(actions);

                checker.assertExactlyOnceInOrder(sent);
                assertThat(rejected.get()).as("every producer ends rejected").isEqualTo(producers);
                final Object signal = end.get();
                if (exceptional && !(signal instanceof String)) {
                    assertThat(signal).isInstanceOf(MailboxClosedException.class);
                    assertThat(((Throwable) signal).getCause()).isSameAs(cause);
                } else {
                    // a try-receive reports the end without throwing; the cause is still there to read
                    assertThat(signal).isEqualTo("end of stream");
                    assertThat(mailbox.closeCause()).isSameAs(exceptional ? cause : null);
                }
                long total = 0;
                for (long s : sent) {
                    total += s;
                }
                final MailboxStats stats = mailbox.stats();
                assertThat(stats.admitted()).isEqualTo(total);
                assertThat(stats.received()).isEqualTo(total);
                assertThat(stats.rejectedClosed()).isEqualTo(producers);
                assertThat(mailbox.isTerminated()).isTrue();
            }
        }
    }

    static void assertClosedExceptionallyAndDrained(Mailbox<?> mailbox, Throwable cause, long admitted) {
        assertThat(mailbox.isClosed()).isTrue();
        assertThat(mailbox.isTerminated()).isTrue();
        assertThat(mailbox.closeCause()).isSameAs(cause);
        assertThat(mailbox.tryRecv()).isNull();
        assertThat(mailbox.tryRecvMany(m -> { }, 8)).isZero();
        assertThatThrownBy(mailbox::recv).isInstanceOf(MailboxClosedException.class).hasCause(cause);
        assertThatThrownBy(() -> mailbox.recv(Duration.ofSeconds(1))).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        assertThatThrownBy(() -> mailbox.recvMany(m -> { }, 8)).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        final MailboxStats stats = mailbox.stats();
        assertThat(stats.admitted()).isEqualTo(admitted);
        assertThat(stats.received()).isEqualTo(admitted);
        assertThat(stats.size()).isZero();
    }

    static void awaitQuietly(CountDownLatch latch) {
        try {
            if (!latch.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("latch timed out");
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    static Object recvQuietly(Mailbox<?> mailbox) {
        try {
            return mailbox.recv();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
