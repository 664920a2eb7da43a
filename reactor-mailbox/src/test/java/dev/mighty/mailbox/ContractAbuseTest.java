package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.function.LongConsumer;
import java.util.stream.Stream;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * A hostile reviewer's tests of the public contract (DESIGN.md "The public contract" and "Rules the contract
 * implies"), for every variant: what the existing contract tests leave out. Close racing every kind of send and
 * receive with an exact outcome ledger, racing closers, end of stream on every receive method, timeouts at the
 * edges of {@code Duration}, interrupts, capacities, misbehaving sinks, and the counters.
 */
@Timeout(300)
class ContractAbuseTest {
    private static final Duration FOREVER = ChronoUnit.FOREVER.getDuration();

    static Stream<MailboxVariant> variants() {
        return Stream.of(MailboxVariant.values());
    }

    /** @return the mailbox as a FrameMailbox, or null if it is another variant */
    private static FrameMailbox frames(Mailbox<?> mb) {
        return mb instanceof FrameMailbox ? (FrameMailbox) mb : null;
    }

    private static Object ring(Mailbox<Object> mb) {
        return MailboxRing.of(mb);
    }

    // ------------------------------------------------------------------ close linearizable with sends

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReceiveExactlyTheSendsThatReturnedWhenCloseRacesEveryKindOfSend(MailboxVariant v) throws Exception {
        runCloseLedger(v, 60, 42);
    }

    @Tag("stress")
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReceiveExactlyTheSendsThatReturnedWhenCloseRacesEveryKindOfSendForLong(MailboxVariant v)
            throws Exception {
        runCloseLedger(v, 10_000, StressSeed.of("closeLedger " + v));
    }

    /**
     * Per round: producers send with one of trySend (once: false means not sent), send, send(1 ns .. 1 ms) and
     * send(FOREVER), each message's outcome recorded; a closer closes (normally or exceptionally) after a random
     * spin; the consumer receives with one of recv, recv(timeout), recvMany, tryRecvMany+recv until end of stream.
     * The received set must be exactly the set of sends that returned normally (true), in per-producer order; every
     * other send either threw MailboxClosedException (counted in rejectedClosed) or returned false.
     */
    private static void runCloseLedger(MailboxVariant v, int rounds, long seed) throws Exception {
        final int producers = v.multiProducer() ? 3 : 1;
        final SplittableRandom random = new SplittableRandom(seed);
        for (int round = 0; round < rounds; round++) {
            final int capacity = 1 << random.nextInt(4);
            final Mailbox<Object> mb = v.create(capacity);
            final int spins = random.nextInt(3_000);
            final boolean exceptional = random.nextBoolean();
            final int consumerMode = random.nextInt(4);
            final int sendMode = random.nextInt(5);
            final RuntimeException cause = new RuntimeException("round " + round);
            final CyclicBarrier start = new CyclicBarrier(producers + 2);
            final Set<Long> sent = ConcurrentHashMap.newKeySet();
            final long[] rejected = new long[producers];
            final String where = "seed " + seed + " round " + round + " capacity " + capacity + " exceptional "
                    + exceptional + " consumerMode " + consumerMode + " sendMode " + sendMode;

            final long[] maxOccupancy = new long[1]; // written by the consumer, read after its join
            final Forked<List<Long>> consumer = Forked.start("consumer", () -> {
                final List<Long> got = new ArrayList<>();
                // on the consumer's thread 'received' holds still, so admitted - received is exact (unlike size()
                // and the high-water mark, which are clamped to the capacity and so cannot show an overfull mailbox)
                final LongConsumer take = id -> {
                    got.add(id);
                    final MailboxStats stats = mb.stats();
                    maxOccupancy[0] = Math.max(maxOccupancy[0], stats.admitted() - stats.received());
                };
                start.await();
                try {
                    switch (consumerMode) {
                        case 0:
                            for (Object m; (m = mb.recv()) != null; ) {
                                take.accept(v.id(m));
                            }
                            break;
                        case 1:
                            for (;;) {
                                final Object m = mb.recv(Duration.ofMillis(got.size() % 3));
                                if (m != null) {
                                    take.accept(v.id(m));
                                } else if (mb.isTerminated()) {
                                    // a timeout may have raced the close: ask once more, to see how the stream ended
                                    assertThat(mb.recv(Duration.ZERO)).isNull();
                                    break;
                                }
                            }
                            break;
                        case 2:
                            while (mb.recvMany(m -> take.accept(v.id(m)), 1 + got.size() % 5) > 0) {
                                // until end of stream
                            }
                            break;
                        default:
                            for (;;) {
                                if (mb.tryRecvMany(m -> take.accept(v.id(m)), 2) == 0) {
                                    final Object m = mb.recv();
                                    if (m == null) {
                                        break;
                                    }
                                    take.accept(v.id(m));
                                }
                            }
                            break;
                    }
                    assertThat(exceptional).as("normal end of stream after a normal close: %s", where).isFalse();
                } catch (MailboxClosedException e) {
                    assertThat(exceptional).as("exceptional end after closeExceptionally: %s", where).isTrue();
                    assertThat(e.getCause()).isSameAs(cause);
                }
                assertThat(mb.isTerminated()).as(where).isTrue();
                return got;
            });
            final List<Forked<Void>> senders = new ArrayList<>();
            for (int p = 0; p < producers; p++) {
                final int producer = p;
                senders.add(Forked.start("producer-" + p, () -> {
                    start.await();
                    for (long seq = 0; seq < 200; seq++) {
                        final long id = MailboxVariant.id(producer, seq);
                        final Object msg = v.message(id);
                        final boolean ok;
                        try {
                            switch ((sendMode + (int) seq) % 5) {
                                case 0:
                                    ok = mb.trySend(msg);
                                    break;
                                case 1:
                                    mb.send(msg);
                                    ok = true;
                                    break;
                                case 2:
                                    ok = mb.send(msg, Duration.ofNanos(1));
                                    break;
                                case 3:
                                    ok = mb.send(msg, Duration.ofMillis(1));
                                    break;
                                default:
                                    ok = mb.send(msg, FOREVER);
                                    break;
                            }
                        } catch (MailboxClosedException e) {
                            assertThat(e.getCause()).isSameAs(mb.closeCause());
                            rejected[producer]++;
                            continue; // later sends must be rejected too
                        }
                        if (ok) {
                            assertThat(rejected[producer]).as("a send succeeded after one was rejected: %s", where)
                                    .isZero();
                            sent.add(id);
                        }
                    }
                    return null;
                }));
            }
            final Forked<Void> closer = Forked.start("closer", () -> {
                start.await();
                for (int i = 0; i < spins; i++) {
                    Thread.onSpinWait();
                }
                if (exceptional) {
                    mb.closeExceptionally(cause);
                } else {
                    mb.close();
                }
                return null;
            });
            closer.join();
            for (Forked<Void> s : senders) {
                s.join();
            }
            final List<Long> received = consumer.join();
            assertThat(new HashSet<>(received)).as("no duplicates: %s", where).hasSize(received.size());
            assertThat(new HashSet<>(received)).as("received == sends that returned normally: %s", where)
                    .isEqualTo(sent);
            final long[] next = new long[producers];
            for (long id : received) {
                final int p = MailboxVariant.producerOf(id);
                assertThat(MailboxVariant.seqOf(id)).as("order of producer %d: %s", p, where)
                        .isGreaterThanOrEqualTo(next[p]);
                next[p] = MailboxVariant.seqOf(id) + 1;
            }
            long rejectedTotal = 0;
            for (long r : rejected) {
                rejectedTotal += r;
            }
            final MailboxStats stats = mb.stats();
            assertThat(stats.admitted()).as(where).isEqualTo(sent.size());
            assertThat(stats.received()).as(where).isEqualTo(sent.size());
            assertThat(stats.rejectedClosed()).as(where).isEqualTo(rejectedTotal);
            assertThat(stats.size()).isZero();
            assertThat(stats.parkedProducers()).isZero();
            assertThat(maxOccupancy[0]).as("admitted - received seen by the consumer: %s", where)
                    .isLessThanOrEqualTo(capacity);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldAgreeOnOneWinnerWhenCloseAndCloseExceptionallyRace(MailboxVariant v) throws Exception {
        for (int round = 0; round < 100; round++) {
            final Mailbox<Object> mb = v.create(2);
            assertThat(mb.trySend(v.message(1))).isTrue();
            final int closers = 4;
            final CyclicBarrier start = new CyclicBarrier(closers);
            final List<Throwable> causes = new ArrayList<>();
            final List<Forked<Void>> threads = new ArrayList<>();
            for (int c = 0; c < closers; c++) {
                final Throwable cause = c == 0 ? null : new IllegalArgumentException("closer " + c);
                causes.add(cause);
                threads.add(Forked.start("closer-" + c, () -> {
                    start.await();
                    if (cause == null) {
                        mb.close();
                    } else {
                        mb.closeExceptionally(cause);
                    }
                    assertThat(mb.isClosed()).as("closed once a close returned").isTrue();
                    return null;
                }));
            }
            for (Forked<Void> t : threads) {
                t.join();
            }
            final Throwable winner = mb.closeCause();
            assertThat(causes).as("round %d", round).contains(winner);
            final Throwable rejected = catchThrowable(() -> mb.trySend(v.message(2)));
            assertThat(rejected).isInstanceOf(MailboxClosedException.class);
            assertThat(rejected.getCause()).isSameAs(winner);
            assertThat(v.id(mb.recv())).isEqualTo(1);
            if (winner == null) {
                assertThat(mb.recv()).isNull();
                assertThat(mb.recvMany(m -> { }, 3)).isZero();
            } else {
                assertThat(catchThrowable(mb::recv)).isInstanceOf(MailboxClosedException.class).hasCause(winner);
                assertThat(catchThrowable(() -> mb.recvMany(m -> { }, 3))).hasCause(winner);
            }
            assertThat(mb.closeCause()).isSameAs(winner);
        }
    }

    // ------------------------------------------------------------------ end of stream on every receive

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowTheCauseFromEveryBlockingReceiveEveryTimeWhenClosedExceptionallyAndDrained(MailboxVariant v)
            throws Exception {
        final Mailbox<Object> mb = v.create(4);
        mb.trySend(v.message(1));
        mb.trySend(v.message(2));
        final Exception cause = new java.io.IOException("peer reset");
        mb.closeExceptionally(cause);
        mb.closeExceptionally(new IllegalStateException("second")); // first close wins
        mb.close();
        assertThat(mb.closeCause()).isSameAs(cause);
        assertThat(mb.isClosed()).isTrue();
        assertThat(mb.isTerminated()).as("two messages still there").isFalse();
        assertThat(catchThrowable(() -> mb.trySend(v.message(3)))).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        assertThat(catchThrowable(() -> mb.send(v.message(3), FOREVER))).hasCause(cause);
        final List<Long> got = new ArrayList<>();
        assertThat(mb.recvMany(m -> got.add(v.id(m)), 1)).isEqualTo(1);
        assertThat(v.id(mb.recv(Duration.ZERO))).isEqualTo(2);
        got.add(2L);
        assertThat(got).containsExactly(1L, 2L);
        assertThat(mb.isTerminated()).isTrue();
        for (int i = 0; i < 2; i++) {
            assertThat(catchThrowable(mb::recv)).as("recv").isInstanceOf(MailboxClosedException.class)
                    .hasCause(cause);
            assertThat(catchThrowable(() -> mb.recv(Duration.ZERO))).as("recv(0)")
                    .isInstanceOf(MailboxClosedException.class).hasCause(cause);
            assertThat(catchThrowable(() -> mb.recv(FOREVER))).as("recv(forever)")
                    .isInstanceOf(MailboxClosedException.class).hasCause(cause);
            assertThat(catchThrowable(() -> mb.recvMany(m -> { }, 8))).as("recvMany")
                    .isInstanceOf(MailboxClosedException.class).hasCause(cause);
            final FrameMailbox fm = frames(mb);
            if (fm != null) {
                assertThat(catchThrowable(() -> fm.recvFrames(f -> { }, 8))).as("recvFrames")
                        .isInstanceOf(MailboxClosedException.class).hasCause(cause);
                assertThat(fm.tryRecvFrames(f -> { }, 8)).isZero();
            }
            // the non-blocking receives report "nothing now", as their javadoc says
            assertThat(mb.tryRecv()).isNull();
            assertThat(mb.tryRecvMany(m -> { }, 8)).isZero();
            // max 0 is answered before end of stream is looked at (documented)
            assertThat(mb.recvMany(m -> { }, 0)).isZero();
        }
        assertThat(mb.stats().rejectedClosed()).isEqualTo(2);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldEndNormallyEveryTimeWhenClosedThenClosedExceptionally(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(1);
        mb.trySend(v.message(7));
        mb.close();
        mb.closeExceptionally(new IllegalStateException("too late"));
        assertThat(mb.closeCause()).isNull();
        assertThat(catchThrowable(() -> mb.send(v.message(8))).getCause()).isNull();
        assertThat(v.id(mb.recv(FOREVER))).isEqualTo(7);
        for (int i = 0; i < 2; i++) {
            assertThat(mb.recv()).isNull();
            assertThat(mb.recv(FOREVER)).isNull();
            assertThat(mb.recvMany(m -> { }, 1)).isZero();
            if (frames(mb) != null) {
                assertThat(frames(mb).recvFrames(f -> { }, 1)).isZero();
            }
        }
        assertThat(mb.isTerminated()).isTrue();
    }

    // ------------------------------------------------------------------ timeouts at the edges

    static Stream<Arguments> hugeTimeouts() {
        // FOREVER saturates the nanosecond conversion; MAX/2 - 1 ns is the largest that still makes a deadline
        return variants().flatMap(v -> Stream.of(FOREVER, Duration.ofMillis(Long.MAX_VALUE),
                Duration.ofNanos(Long.MAX_VALUE / 2 - 1)).map(d -> Arguments.of(v, d)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("hugeTimeouts")
    void shouldParkAndSucceedWhenTimeoutIsHuge(MailboxVariant v, Duration timeout) throws Exception {
        final Mailbox<Object> mb = v.create(1);
        final Forked<Object> receiver = Forked.start("receiver", () -> mb.recv(timeout));
        receiver.awaitParkedOn(ring(mb));
        assertThat(mb.send(v.message(1), timeout)).as("room: admitted at once").isTrue();
        assertThat(v.id(receiver.join())).isEqualTo(1);

        assertThat(mb.trySend(v.message(2))).isTrue();
        final Forked<Boolean> sender = Forked.start("sender", () -> mb.send(v.message(3), timeout));
        sender.awaitParkedOn(ring(mb));
        assertThat(v.id(mb.recv(timeout))).isEqualTo(2);
        assertThat(sender.join()).isTrue();
        assertThat(v.id(mb.recv(timeout))).isEqualTo(3);

        final Forked<Object> last = Forked.start("last", () -> mb.recv(timeout));
        last.awaitParkedOn(ring(mb));
        mb.close();
        assertThat(last.join()).isNull();
        assertThat(mb.stats().refused()).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldTimeOutAtOnceAndCountItWhenTimeoutIsTiny(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(1);
        assertThat(mb.recv(Duration.ofNanos(1))).isNull();
        assertThat(mb.recv(Duration.ZERO)).isNull();
        assertThat(mb.isTerminated()).isFalse();
        assertThat(mb.send(v.message(1), Duration.ofNanos(1))).as("room: admitted").isTrue();
        assertThat(mb.send(v.message(2), Duration.ofNanos(1))).isFalse();
        assertThat(mb.send(v.message(3), Duration.ZERO)).isFalse();
        assertThat(mb.trySend(v.message(4))).isFalse();
        final MailboxStats stats = mb.stats();
        assertThat(stats.refused()).isEqualTo(3);
        assertThat(stats.admitted()).isEqualTo(1);
        assertThat(v.id(mb.recv(Duration.ofNanos(1)))).isEqualTo(1);
        assertThat(mb.tryRecv()).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectNegativeAndNullTimeoutsEvenWhenClosed(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(1);
        mb.close();
        assertThatThrownBy(() -> mb.send(v.message(1), Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("timeout: PT-0.000000001S (expected: >= 0)");
        assertThatThrownBy(() -> mb.recv(Duration.ofSeconds(Long.MIN_VALUE)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> mb.send(v.message(1), null)).isInstanceOf(NullPointerException.class)
                .hasMessage("timeout");
        assertThatThrownBy(() -> mb.recv(null)).isInstanceOf(NullPointerException.class).hasMessage("timeout");
        assertThat(mb.stats().rejectedClosed()).isZero();
    }

    /**
     * Inside the consumer's own batch a blocking send on a full mailbox must fail rather than deadlock; but a
     * <em>timed</em> send cannot deadlock, and {@code send(msg, Duration.ZERO)} is documented as a try.
     * Found by this test: a timed send there threw IllegalStateException; only an untimed one does now.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReturnFalseRatherThanThrowWhenTimedSendFromInsideTheBatchFindsItFull(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        mb.trySend(v.message(1));
        mb.trySend(v.message(2));
        final List<Object> outcomes = new ArrayList<>();
        mb.tryRecvMany(m -> {
            outcomes.add(mb.trySend(v.message(3))); // the slot just freed
            outcomes.add(mb.trySend(v.message(4)));
            try {
                outcomes.add(mb.send(v.message(5), Duration.ZERO));
                outcomes.add(mb.send(v.message(6), Duration.ofMillis(1)));
            } catch (Exception e) {
                outcomes.add(e.getClass());
            }
        }, 1);
        assertThat(outcomes).containsExactly(true, false, false, false);
    }

    // ------------------------------------------------------------------ interrupts

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowAtOnceAndClearTheFlagWhenBlockingCallWithHugeTimeoutEnteredInterrupted(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        mb.trySend(v.message(0));
        final List<Object> outcomes = new ArrayList<>();
        final List<Blocking> calls = new ArrayList<>();
        calls.add(() -> mb.send(v.message(9), FOREVER));
        calls.add(() -> mb.send(v.message(9), Duration.ZERO));
        calls.add(() -> mb.recv(FOREVER));
        calls.add(() -> mb.recv(Duration.ZERO));
        calls.add(() -> mb.recvMany(m -> outcomes.add(m), 1));
        final FrameMailbox fm = frames(mb);
        if (fm != null) {
            calls.add(() -> fm.recvFrames(f -> outcomes.add(f), 1));
            calls.add(() -> fm.send(1, 9, java.nio.ByteBuffer.allocate(3), FOREVER));
        }
        for (Blocking call : calls) {
            Thread.currentThread().interrupt();
            outcomes.add(catchThrowable(call::call).getClass());
            assertThat(Thread.interrupted()).as("flag cleared with InterruptedException").isFalse();
        }
        assertThat(outcomes).containsOnly(InterruptedException.class).hasSize(calls.size());
        assertThat(mb.stats().admitted()).isEqualTo(1);
        assertThat(mb.stats().received()).isZero();
        assertThat(mb.stats().refused()).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowInterruptedRatherThanEndOfStreamWhenEnteredInterruptedOnTerminatedMailbox(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        mb.close();
        Thread.currentThread().interrupt();
        assertThat(catchThrowable(mb::recv)).isInstanceOf(InterruptedException.class);
        Thread.currentThread().interrupt();
        assertThat(catchThrowable(() -> mb.send(v.message(1)))).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        assertThat(mb.stats().rejectedClosed()).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowInterruptedFromTimedCallsParkedWithHugeTimeout(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(1);
        final Forked<Boolean> receiver = Forked.start("receiver", () -> {
            try {
                mb.recv(FOREVER);
                return null;
            } catch (InterruptedException e) {
                return Thread.currentThread().isInterrupted();
            }
        });
        receiver.awaitParkedOn(ring(mb));
        receiver.thread().interrupt();
        assertThat(receiver.join()).isFalse();
        assertThat(mb.stats().consumerParked()).isFalse();

        mb.trySend(v.message(1));
        final Forked<Boolean> sender = Forked.start("sender", () -> {
            try {
                mb.send(v.message(2), FOREVER);
                return null;
            } catch (InterruptedException e) {
                return Thread.currentThread().isInterrupted();
            }
        });
        sender.awaitParkedOn(ring(mb));
        sender.thread().interrupt();
        assertThat(sender.join()).isFalse();
        assertThat(mb.stats().admitted()).isEqualTo(1);
        assertThat(mb.stats().parkedProducers()).isZero();
        assertThat(v.id(mb.recv())).isEqualTo(1);
        assertThat(mb.tryRecv()).isNull();
    }

    /** A call to be entered with the interrupt flag set. */
    @FunctionalInterface
    private interface Blocking {
        void call() throws Exception;
    }

    // ------------------------------------------------------------------ capacity

    @Test
    void shouldRejectEveryOutOfRangeCapacityOnEveryFactoryWithTheSameMessage() {
        for (int capacity : new int[] {0, -1, Integer.MIN_VALUE, (1 << 30) + 1, Integer.MAX_VALUE}) {
            final String message = "capacity: " + capacity + " (expected: 1 .. 1073741824)";
            assertThatThrownBy(() -> Mailboxes.bounded(capacity)).hasMessage(message)
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> Mailboxes.builder().capacity(capacity)).hasMessage(message)
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> Mailboxes.frames(capacity)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("capacity: " + capacity + " (expected: 1 .. ");
        }
        assertThatThrownBy(() -> Mailboxes.frames((1 << 24) + 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity: 16777217 (expected: 1 .. 16777216 for a FrameMailbox)");
        assertThatThrownBy(() -> Mailboxes.builder().capacity(1 << 30).buildFrames())
                .isInstanceOf(IllegalArgumentException.class);
        // a rejected capacity leaves the builder as it was
        final MailboxBuilder<Object> builder = Mailboxes.builder().capacity(3);
        assertThatThrownBy(() -> builder.capacity(0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(builder.build().capacity()).isEqualTo(4);
        assertThat(MailboxRing.checkCapacity(1 << 30)).isEqualTo(1 << 30);
        assertThat(MailboxRing.checkCapacity((1 << 29) + 1)).isEqualTo(1 << 30);
        assertThat(Mailboxes.builder().capacity(1 << 30)).isNotNull(); // accepted; not built (4 GiB)
    }

    @Test
    void shouldDefaultTo1024WhenBuilderCapacityIsNotSet() {
        assertThat(Mailboxes.builder().build().capacity()).isEqualTo(1024);
        assertThat(Mailboxes.builder().singleProducer().build().capacity()).isEqualTo(1024);
        assertThat(Mailboxes.builder().buildFrames().capacity()).isEqualTo(1024);
        assertThat(Mailboxes.DEFAULT_CAPACITY).isEqualTo(1024);
        assertThat(Mailboxes.MAX_CAPACITY).isEqualTo(1 << 30);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldHoldExactlyTheRoundedCapacityWhenFilled(MailboxVariant v) {
        for (int requested : new int[] {1, 2, 3, 5, 7, 9, 17, 100}) {
            final Mailbox<Object> mb = v.create(requested);
            final int expected = Integer.highestOneBit(requested - 1) << 1 | (requested == 1 ? 1 : 0);
            assertThat(mb.capacity()).isEqualTo(expected);
            int n = 0;
            while (mb.trySend(v.message(n))) {
                n++;
                assertThat(n).isLessThanOrEqualTo(expected);
            }
            assertThat(n).as("requested %d", requested).isEqualTo(expected);
            assertThat(mb.size()).isEqualTo(expected);
            assertThat(mb.stats().highWaterMark()).isEqualTo(expected);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldCountReservationsAsFullWhenSizeIsBelowCapacity(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(4);
        final MailboxRing<Object> ring = MailboxRing.of(mb);
        assertThat(ring.reserve(3)).isEqualTo(3);
        assertThat(mb.trySend(v.message(0))).isTrue();
        assertThat(mb.trySend(v.message(1))).as("occupied 1 + reserved 3 = full").isFalse();
        assertThat(mb.size()).isEqualTo(1).isLessThan(mb.capacity());
        assertThat(mb.send(v.message(1), Duration.ofNanos(1))).isFalse();
        final Forked<Void> sender = Forked.start("sender", () -> {
            mb.send(v.message(1));
            return null;
        });
        sender.awaitParkedOn(ring(mb));
        ring.releaseReserved(1); // releasing a permit makes room: wakes the parked sender
        sender.join();
        assertThat(mb.stats().refused()).isEqualTo(2);
        assertThat(mb.stats().reserved()).isEqualTo(2);
        ring.releaseReserved(2);
        assertThat(v.id(mb.tryRecv())).isZero();
        assertThat(v.id(mb.tryRecv())).isEqualTo(1);
    }

    // ------------------------------------------------------------------ misbehaving sinks

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldKeepTheRestInOrderWhenRecvManySinkThrowsMidBatch(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(8);
        for (int i = 0; i < 8; i++) {
            mb.trySend(v.message(i));
        }
        final List<Long> got = new ArrayList<>();
        final Throwable t = catchThrowable(() -> mb.recvMany(m -> {
            got.add(v.id(m));
            if (got.size() == 3) {
                throw new UnsupportedOperationException("sink");
            }
        }, 8));
        assertThat(t).isInstanceOf(UnsupportedOperationException.class);
        assertThat(got).containsExactly(0L, 1L, 2L);
        assertThat(mb.size()).isEqualTo(5);
        assertThat(mb.stats().received()).isEqualTo(3);
        // usable afterwards: a parked producer is woken by the next receive, and a blocking send from the same
        // thread works now that it is no longer inside a batch
        for (int i = 8; i < 11; i++) {
            assertThat(mb.trySend(v.message(i))).isTrue();
        }
        final Forked<Void> sender = Forked.start("sender", () -> {
            mb.send(v.message(11));
            return null;
        });
        sender.awaitParkedOn(ring(mb));
        assertThat(mb.recvMany(m -> got.add(v.id(m)), 2)).isEqualTo(2);
        sender.join();
        while (mb.tryRecvMany(m -> got.add(v.id(m)), 3) > 0) {
            // drain
        }
        assertThat(got).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L);
        mb.send(v.message(12)); // the same thread: not a consumer anymore
        assertThat(v.id(mb.recv())).isEqualTo(12);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldAdmitNothingAndStayUsableWhenSinkBlockingSendIntoFullMailboxIsRefused(MailboxVariant v)
            throws Exception {
        final Mailbox<Object> mb = v.create(2);
        mb.trySend(v.message(0));
        mb.trySend(v.message(1));
        final List<Object> outcomes = new ArrayList<>();
        final Forked<Integer> consumer = Forked.start("consumer", () -> mb.recvMany(m -> {
            outcomes.add(mb.trySend(v.message(2))); // the slot just freed
            outcomes.add(catchThrowable(() -> mb.send(v.message(3))).getClass());
        }, 1));
        assertThat(consumer.join()).isEqualTo(1);
        assertThat(outcomes).containsExactly(true, IllegalStateException.class);
        assertThat(mb.stats().admitted()).isEqualTo(3);
        assertThat(mb.stats().parkedProducers()).isZero();
        final List<Long> rest = new ArrayList<>();
        assertThat(mb.tryRecvMany(m -> rest.add(v.id(m)), 5)).isEqualTo(2);
        assertThat(rest).containsExactly(1L, 2L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectBadBatchArgumentsBeforeEndOfStreamOrInterrupt(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        mb.closeExceptionally(new IllegalStateException("x"));
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> mb.recvMany(m -> { }, -1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("max: -1 (expected: >= 0)");
            assertThatThrownBy(() -> mb.recvMany(null, 1)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> mb.tryRecvMany(m -> { }, Integer.MIN_VALUE))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> mb.tryRecvMany(null, 0)).isInstanceOf(NullPointerException.class);
            assertThat(Thread.currentThread().isInterrupted()).as("argument errors leave the flag alone").isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    // ------------------------------------------------------------------ counters

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldBalanceTheCountersWhenQuiescentAfterAConcurrentRun(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(4);
        final int producers = v.multiProducer() ? 3 : 1;
        final long[] refusedByMe = new long[producers];
        final List<Forked<Long>> senders = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final int producer = p;
            senders.add(Forked.start("producer-" + p, () -> {
                long admitted = 0;
                for (long seq = 0; seq < 3_000; seq++) {
                    final Object msg = v.message(MailboxVariant.id(producer, seq));
                    if (seq % 2 == 0 ? mb.trySend(msg) : mb.send(msg, Duration.ofNanos(seq % 4 == 1 ? 1 : 100_000))) {
                        admitted++;
                    } else {
                        refusedByMe[producer]++;
                    }
                }
                return admitted;
            }));
        }
        long received = 0;
        long admitted = 0;
        for (Forked<Long> s : senders) {
            while (!s.isDone()) {
                received += mb.tryRecvMany(m -> { }, 3);
            }
            admitted += s.join();
        }
        final MailboxStats mid = mb.stats();
        assertThat(mid.admitted()).isEqualTo(admitted);
        assertThat(mid.received()).isEqualTo(received);
        assertThat(mid.admitted()).isEqualTo(mid.received() + mid.size());
        long refused = 0;
        for (long r : refusedByMe) {
            refused += r;
        }
        assertThat(mid.refused()).isEqualTo(refused);
        assertThat(mid.rejectedClosed()).isZero();
        assertThat(mid.highWaterMark()).isBetween(1, 4);
        assertThat(mid.parkedProducers()).isZero();
        assertThat(mid.reserved()).isZero();
        mb.close();
        assertThatThrownBy(() -> mb.trySend(v.message(-1))).isInstanceOf(MailboxClosedException.class);
        while (mb.tryRecvMany(m -> { }, 10) > 0) {
            // drain
        }
        final MailboxStats end = mb.stats();
        assertThat(end.received()).isEqualTo(admitted);
        assertThat(end.size()).isZero();
        assertThat(end.rejectedClosed()).isEqualTo(1);
        assertThat(end.refused()).isEqualTo(refused);
        assertThat(mb.isTerminated()).isTrue();
    }
}
