package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.StressSeed;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Interrupts at random points in {@code send} and {@code recv}: an interrupted send admits nothing, an interrupted
 * receive takes nothing it does not hand over, and the mailbox stays consistent and usable.
 */
class InterruptFaultTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @ParameterizedTest
    @EnumSource(Endpoint.Variant.class)
    void shouldAdmitNothingWhenSendIsInterruptedWhileParked(Endpoint.Variant variant) {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final Endpoint endpoint = variant.create(1);
            final Mailbox<?> mailbox = endpoint.mailbox();
            assertThat(endpoint.trySend(0, 0)).isTrue();
            final AtomicReference<Throwable> outcome = new AtomicReference<>();
            final Thread sender = new Thread(() -> {
                try {
                    endpoint.send(0, 1);
                    outcome.set(new AssertionError("send returned on a full mailbox"));
                } catch (Throwable t) {
                    outcome.set(t);
                }
            }, "parked-sender");
            sender.start();
            awaitTrue(() -> mailbox.stats().parkedProducers() == 1, "sender parked");
            sender.interrupt();
            sender.join();

            assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
            final MailboxStats stats = mailbox.stats();
            assertThat(stats.admitted()).as("nothing admitted by the interrupted send").isEqualTo(1);
            assertThat(stats.size()).isEqualTo(1);
            assertThat(stats.parkedProducers()).isZero();
            assertUsable(endpoint, 1);
        });
    }

    @ParameterizedTest
    @EnumSource(Endpoint.Variant.class)
    void shouldThrowInterruptedAndTakeNothingWhenRecvIsInterruptedWhileParked(Endpoint.Variant variant) {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            for (int mode = 0; mode < Endpoint.MODES - 1; mode++) { // the blocking modes
                final Endpoint endpoint = variant.create(4);
                final Mailbox<?> mailbox = endpoint.mailbox();
                final int m = mode;
                final AtomicReference<Throwable> outcome = new AtomicReference<>();
                final SequenceChecker checker = new SequenceChecker(1);
                final Thread receiver = new Thread(() -> {
                    try {
                        for (;;) { // the timed mode returns 0 on timeout: wait again
                            if (endpoint.receive(checker, m, 8) != 0) {
                                outcome.set(new AssertionError("receive returned on an empty open mailbox"));
                                return;
                            }
                        }
                    } catch (Throwable t) {
                        outcome.set(t);
                    }
                }, "parked-receiver");
                receiver.start();
                if (mode != Endpoint.RECV_TIMED) {
                    awaitTrue(() -> mailbox.stats().consumerParked(), "receiver parked");
                }
                receiver.interrupt();
                receiver.join();
                assertThat(outcome.get()).as("mode " + mode).isInstanceOf(InterruptedException.class);
                assertThat(mailbox.stats().consumerParked()).isFalse();
                assertThat(checker.received()).isZero();
                assertUsable(endpoint, 0);
            }
        });
    }

    @ParameterizedTest
    @EnumSource(Endpoint.Variant.class)
    void shouldDeliverEveryCompletedSendExactlyOnceWhenInterruptsHitRandomPoints(Endpoint.Variant variant) {
        interruptStorm(variant, 20_000, 42L);
    }

    @Tag("stress")
    @ParameterizedTest
    @EnumSource(Endpoint.Variant.class)
    void shouldDeliverEveryCompletedSendExactlyOnceWhenInterruptsHitRandomPointsForLong(Endpoint.Variant variant) {
        interruptStorm(variant, 500_000, StressSeed.of("interruptStorm " + variant));
    }

    @Test
    void shouldAdmitNothingWhenFrameSendFromBufferIsInterruptedOnEntry() throws Exception {
        final FrameMailbox frames = Mailboxes.frames(2);
        final ByteBuffer payload = ByteBuffer.wrap(new byte[100]).position(7);
        Thread.currentThread().interrupt();
        try {
            frames.send(1, 2L, payload);
            throw new AssertionError("send ignored the interrupt flag");
        } catch (InterruptedException expected) {
            assertThat(Thread.currentThread().isInterrupted()).isFalse();
        }
        assertThat(payload.position()).isEqualTo(7);
        assertThat(frames.stats().admitted()).isZero();
        assertThat(frames.trySend(MessageFrame.of(3, 4L))).isTrue();
        assertThat(frames.tryRecv()).isEqualTo(MessageFrame.of(3, 4L));
    }

    /**
     * Producers send 0 .. n-1 with blocking sends, retrying the same value after an {@link InterruptedException};
     * the consumer receives with every receive method, retrying after one; an interrupter thread interrupts a
     * random party at random moments. A send that admitted its message and still threw would show as a
     * duplicate; a receive that took a message and threw would show as a gap.
     */
    private static void interruptStorm(Endpoint.Variant variant, int perProducer, long seed) {
        assertTimeoutPreemptively(Duration.ofMinutes(perProducer > 100_000 ? 20 : 2), () -> {
            final int producers = variant.producers(2);
            final Endpoint endpoint = variant.create(4);
            final Mailbox<?> mailbox = endpoint.mailbox();
            final AtomicLong interrupted = new AtomicLong();
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            final List<Thread> parties = new ArrayList<>();
            for (int p = 0; p < producers; p++) {
                final int producer = p;
                parties.add(new Thread(() -> {
                    // Entered with the flag set, the first blocking send throws at once (the contract): one hit
                    // per producer whatever the scheduler does; the interrupter's hits come on top.
                    Thread.currentThread().interrupt();
                    try {
                        for (long seq = 0; seq < perProducer; ) {
                            try {
                                endpoint.send(producer, seq);
                                seq++;
                            } catch (InterruptedException e) {
                                interrupted.incrementAndGet(); // retry the same message
                            }
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }, "producer-" + p));
            }
            final SequenceChecker checker = new SequenceChecker(producers);
            final long total = (long) producers * perProducer;
            parties.add(new Thread(() -> {
                final SplittableRandom random = new SplittableRandom(seed);
                try {
                    while (checker.received() < total) {
                        try {
                            endpoint.receive(checker, random.nextInt(Endpoint.MODES), 1 + random.nextInt(8));
                        } catch (InterruptedException e) {
                            interrupted.incrementAndGet();
                        }
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }, "consumer"));
            final AtomicBoolean done = new AtomicBoolean();
            final Thread interrupter = new Thread(() -> {
                final SplittableRandom random = new SplittableRandom(seed + 1);
                while (!done.get()) {
                    LockSupport.parkNanos(random.nextLong(1_000L, 50_000L));
                    parties.get(random.nextInt(parties.size())).interrupt();
                }
            }, "interrupter");
            parties.forEach(Thread::start);
            interrupter.start();
            for (Thread t : parties) {
                t.join();
            }
            done.set(true);
            interrupter.join();

            assertThat(failure.get()).isNull();
            final long[] sent = new long[producers];
            java.util.Arrays.fill(sent, perProducer);
            checker.assertExactlyOnceInOrder(sent);
            assertThat(interrupted.get()).as("interrupts that hit a send or receive").isGreaterThanOrEqualTo(producers);
            final MailboxStats stats = mailbox.stats();
            assertThat(stats.admitted()).as("admitted == completed sends").isEqualTo(total);
            assertThat(stats.received()).isEqualTo(total);
            assertThat(stats.size()).isZero();
            assertThat(stats.parkedProducers()).isZero();
            assertUsable(endpoint, 0);
        });
    }

    /** A follow-up send and receive work, then a close ends the stream cleanly. */
    static void assertUsable(Endpoint endpoint, int alreadyInside) throws InterruptedException {
        final Mailbox<?> mailbox = endpoint.mailbox();
        Thread.interrupted();
        final SequenceChecker checker = new SequenceChecker(1);
        for (int i = 0; i < alreadyInside; i++) { // drain what the scenario left, in order
            assertThat(endpoint.receive(checker, Endpoint.TRY_RECV_MANY, 1)).isEqualTo(1);
        }
        final long base = checker.next(0);
        endpoint.send(0, base);
        assertThat(endpoint.receive(checker, Endpoint.RECV, 1)).isEqualTo(1);
        assertThat(endpoint.trySend(0, base + 1)).isTrue();
        assertThat(endpoint.receive(checker, Endpoint.RECV_MANY, 8)).isEqualTo(1);
        checker.assertExactlyOnceInOrder(base + 2);
        mailbox.close();
        assertThat(endpoint.receive(checker, Endpoint.RECV, 1)).as("end of stream").isEqualTo(-1);
        assertThat(mailbox.isTerminated()).isTrue();
    }

    static void awaitTrue(BooleanSupplier condition, String what) {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            LockSupport.parkNanos(100_000L);
        }
    }
}
