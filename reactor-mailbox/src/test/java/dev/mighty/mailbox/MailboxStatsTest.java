package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import reactor.core.publisher.Flux;

import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * Every figure of {@link MailboxStats} after known sequences, single-threaded and with four racing producers,
 * on both mailbox kinds.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class MailboxStatsTest {
    private static final long AWAIT_NANOS = Hang.TIMEOUT.toNanos();
    private static final int PRODUCERS = 4;

    /** The mailbox kinds; each makes a message from an int. */
    enum Kind {
        REFERENCE {
            @Override
            Mailbox<Object> create(int capacity, String name) {
                return Mailboxes.builder().capacity(capacity).name(name).build();
            }

            @Override
            Object message(int i) {
                return i;
            }
        },
        FRAMES {
            @Override
            @SuppressWarnings("unchecked") // every message this kind sends is a MessageFrame
            Mailbox<Object> create(int capacity, String name) {
                return (Mailbox<Object>) (Mailbox<?>) Mailboxes.builder().capacity(capacity).name(name).buildFrames();
            }

            @Override
            Object message(int i) {
                return MessageFrame.of(1, i);
            }
        };

        abstract Mailbox<Object> create(int capacity, String name);

        abstract Object message(int i);
    }

    private ExecutorService pool;

    @BeforeEach
    void startPool() {
        pool = Executors.newFixedThreadPool(PRODUCERS + 1);
    }

    @AfterEach
    void stopPool() throws InterruptedException {
        pool.shutdownNow();
        assertThat(pool.awaitTermination(Hang.SECONDS, TimeUnit.SECONDS)).as("pool terminated").isTrue();
    }

    // ------------------------------------------------------------------ single-threaded sequences

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldReportNameCapacityAndZerosWhenFresh(Kind kind) {
        final MailboxStats stats = kind.create(5, "fresh").stats();

        assertThat(stats).isEqualTo(new MailboxStats("fresh", 8, 0, 0L, 0L, 0L, 0L, 0, 0L, 0, false, 0L, 0L));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldCountAdmittedReceivedAndSizeWhenSendingAndReceiving(Kind kind) {
        final Mailbox<Object> mb = kind.create(8, "flow");
        for (int i = 0; i < 5; i++) {
            assertThat(mb.trySend(kind.message(i))).isTrue();
        }
        assertThat(mb.stats()).extracting(MailboxStats::admitted, MailboxStats::received, MailboxStats::size)
                .containsExactly(5L, 0L, 5);

        assertThat(mb.tryRecv()).isNotNull();
        assertThat(mb.tryRecv()).isNotNull();
        assertThat(mb.stats()).extracting(MailboxStats::admitted, MailboxStats::received, MailboxStats::size)
                .containsExactly(5L, 2L, 3);

        assertThat(mb.tryRecvMany(m -> { }, 10)).isEqualTo(3);
        final MailboxStats stats = mb.stats();
        assertThat(stats).extracting(MailboxStats::admitted, MailboxStats::received, MailboxStats::size)
                .containsExactly(5L, 5L, 0);
        assertThat(stats.refused()).isZero();
        assertThat(stats.rejectedClosed()).isZero();
        assertThat(stats.size()).isEqualTo(mb.size());
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldCountRefusedWhenFullAndTimedSendsTimeOut(Kind kind) throws InterruptedException {
        final Mailbox<Object> mb = kind.create(4, "refusals");
        for (int i = 0; i < 4; i++) {
            assertThat(mb.trySend(kind.message(i))).isTrue();
        }
        for (int i = 0; i < 3; i++) {
            assertThat(mb.trySend(kind.message(i))).isFalse();
        }
        assertThat(mb.stats().refused()).isEqualTo(3L);

        assertThat(mb.send(kind.message(9), Duration.ZERO)).isFalse();
        assertThat(mb.send(kind.message(9), Duration.ofMillis(1))).isFalse();

        final MailboxStats stats = mb.stats();
        assertThat(stats.refused()).isEqualTo(5L);
        assertThat(stats.admitted()).isEqualTo(4L);
        assertThat(stats.size()).isEqualTo(4);
        assertThat(stats.highWaterMark()).as("sampled by the refused claims' limit refresh").isEqualTo(4);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldRaiseHighWaterMarkAndNeverLowerItWhenOccupancyChanges(Kind kind) {
        final Mailbox<Object> mb = kind.create(8, "hwm");
        sendAll(mb, kind, 3);
        assertThat(mb.stats().highWaterMark()).as("a lower bound of the peak").isBetween(0, 3);
        assertThat(mb.tryRecvMany(m -> { }, 8)).isEqualTo(3);
        assertThat(mb.stats().highWaterMark()).as("sampled from the batch size").isEqualTo(3);

        sendAll(mb, kind, 2);
        assertThat(mb.tryRecvMany(m -> { }, 8)).isEqualTo(2);
        assertThat(mb.stats().highWaterMark()).as("never lowered").isEqualTo(3);

        sendAll(mb, kind, 8);
        assertThat(mb.trySend(kind.message(0))).isFalse();
        assertThat(mb.stats().highWaterMark()).as("full, seen by the refused claim").isEqualTo(8);
        assertThat(mb.tryRecvMany(m -> { }, 8)).isEqualTo(8);
        assertThat(mb.stats().highWaterMark()).isEqualTo(8);
        assertThat(mb.stats().size()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldCountRejectedWhenSendingAfterClose(Kind kind) {
        final Mailbox<Object> mb = kind.create(4, "rejections");
        final MailboxRing<Object> ring = MailboxRing.of(mb);
        assertThat(ring.reserve(1)).isEqualTo(1);
        assertThat(mb.trySend(kind.message(1))).isTrue();
        mb.close();

        assertThatThrownBy(() -> mb.trySend(kind.message(2))).isInstanceOf(MailboxClosedException.class);
        assertThatThrownBy(() -> mb.send(kind.message(3))).isInstanceOf(MailboxClosedException.class);
        assertThatThrownBy(() -> mb.send(kind.message(4), Duration.ofSeconds(1)))
                .isInstanceOf(MailboxClosedException.class);
        assertThat(ring.sendReserved(kind.message(5))).as("a reserved send after close").isFalse();

        final MailboxStats stats = mb.stats();
        assertThat(stats.rejectedClosed()).isEqualTo(4L);
        assertThat(stats.refused()).isZero();
        assertThat(stats.admitted()).isEqualTo(1L);
        assertThat(stats.reserved()).as("the permit came back").isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldTrackReservedWhenReservingSendingAndReleasing(Kind kind) {
        final Mailbox<Object> mb = kind.create(4, "reservations");
        final MailboxRing<Object> ring = MailboxRing.of(mb);

        assertThat(ring.reserve(3)).isEqualTo(3);
        assertThat(mb.stats().reserved()).isEqualTo(3L);
        assertThat(ring.sendReserved(kind.message(1))).isTrue();
        assertThat(mb.stats()).extracting(MailboxStats::reserved, MailboxStats::admitted, MailboxStats::size)
                .containsExactly(2L, 1L, 1);

        assertThat(mb.trySend(kind.message(2))).as("1 occupied + 2 reserved + 1 free").isTrue();
        assertThat(mb.trySend(kind.message(3))).as("occupied + reserved = capacity").isFalse();
        assertThat(mb.stats()).extracting(MailboxStats::refused, MailboxStats::size)
                .containsExactly(1L, 2);

        ring.releaseReserved(2);
        assertThat(mb.stats().reserved()).isZero();
        assertThat(mb.trySend(kind.message(4))).isTrue();
        assertThat(mb.stats().admitted()).isEqualTo(3L);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldReportParkedProducerWhileSendWaitsOnFull(Kind kind) throws Exception {
        final Mailbox<Object> mb = kind.create(1, "parked");
        assertThat(mb.trySend(kind.message(0))).isTrue();

        final Future<?> producer = pool.submit(() -> {
            mb.send(kind.message(1));
            return null;
        });
        await(() -> mb.stats().parkedProducers() == 1, "producer parked");
        await(() -> mb.stats().producerParks() >= 1, "the park counted");

        assertThat(mb.tryRecv()).isNotNull();
        producer.get(Hang.SECONDS, TimeUnit.SECONDS);
        final MailboxStats stats = mb.stats();
        assertThat(stats.parkedProducers()).isZero();
        assertThat(stats.producerParks()).as("cumulative: still counted after the producer left").isPositive();
        assertThat(stats.consumerParks()).as("the consumer never waited").isZero();
        assertThat(stats.admitted()).isEqualTo(2L);
        assertThat(stats.refused()).as("a blocking send that got in is not refused").isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldReportConsumerParkedWhileRecvWaitsOnEmpty(Kind kind) throws Exception {
        final Mailbox<Object> mb = kind.create(2, "consumer");
        assertThat(mb.stats().consumerParked()).isFalse();

        final Future<Object> consumer = pool.submit(() -> mb.recv());
        await(() -> mb.stats().consumerParked(), "consumer parked");
        await(() -> mb.stats().consumerParks() >= 1, "the park counted"); // counted just before it parks

        assertThat(mb.trySend(kind.message(7))).isTrue();
        assertThat(consumer.get(Hang.SECONDS, TimeUnit.SECONDS)).isNotNull();
        assertThat(mb.stats().consumerParked()).isFalse();
        assertThat(mb.stats().received()).isEqualTo(1L);
        assertThat(mb.stats().consumerParks()).as("cumulative").isPositive();
        assertThat(mb.stats().producerParks()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldCountOneParkPerWaitWhenNothingSpuriousWakesTheThreads(Kind kind) throws Exception {
        final Mailbox<Object> mb = kind.create(1, "parks");
        for (int round = 1; round <= 3; round++) {
            final Future<Object> consumer = pool.submit(() -> mb.recv());
            final long parks = round;
            await(() -> mb.stats().consumerParks() >= parks, "consumer park " + round);
            assertThat(mb.trySend(kind.message(round))).isTrue();
            assertThat(consumer.get(Hang.SECONDS, TimeUnit.SECONDS)).isNotNull();
        }
        assertThat(mb.stats().consumerParks()).as("one per empty wait, give or take a spurious wake-up")
                .isBetween(3L, 6L);
    }

    /** The adapters' waits count too: a publisher's registration for data, a subscriber's for room. */
    @Test
    void shouldCountThePublishersWaitForDataAndTheSubscribersWaitForRoom() {
        final Mailbox<Integer> mb = Mailboxes.bounded(2);
        final List<Integer> got = new ArrayList<>();
        new MailboxPublisher<>(mb).subscribe(new Subscriber<Integer>() {
            @Override
            public void onSubscribe(Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(Integer item) {
                got.add(item);
            }

            @Override
            public void onError(Throwable t) {
                throw new AssertionError(t);
            }

            @Override
            public void onComplete() {
            }
        });
        assertThat(mb.stats().consumerParks()).as("demand, no data: the drain waits").isEqualTo(1L);
        assertThat(mb.trySend(1)).isTrue(); // wakes the drain on this thread; it delivers and waits again
        assertThat(got).containsExactly(1);
        assertThat(mb.stats().consumerParks()).as("a trampolined drain's registration stands: counted once")
                .isEqualTo(1L);
        assertThat(mb.stats().consumerParked()).isTrue();
        assertThat(mb.stats().producerParks()).isZero();

        final Mailbox<Integer> full = Mailboxes.bounded(2);
        full.trySend(-1);
        full.trySend(-2);
        Flux.range(0, 4).subscribe(new MailboxSubscriber<>(full));
        assertThat(full.stats().producerParks()).as("no room to request: the subscriber waits").isEqualTo(1L);
        assertThat(full.stats().consumerParks()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldResetHighWaterMarkToTheCurrentSizeAndReturnThePreviousMark(Kind kind) {
        final Mailbox<Object> mb = kind.create(8, "window");
        sendAll(mb, kind, 5);
        assertThat(mb.tryRecvMany(m -> { }, 8)).isEqualTo(5);
        assertThat(mb.stats().highWaterMark()).isEqualTo(5);
        sendAll(mb, kind, 2);

        assertThat(mb.resetHighWaterMark()).as("the mark of the window that ends").isEqualTo(5);
        assertThat(mb.stats().highWaterMark()).as("a new window starts at the current size").isEqualTo(2);

        assertThat(mb.tryRecvMany(m -> { }, 8)).isEqualTo(2);
        assertThat(mb.resetHighWaterMark()).isEqualTo(2);
        assertThat(mb.stats().highWaterMark()).as("empty now").isZero();
        sendAll(mb, kind, 8);
        assertThat(mb.trySend(kind.message(0))).isFalse();
        assertThat(mb.stats().highWaterMark()).as("rises again from zero").isEqualTo(8);
    }

    // ------------------------------------------------------------------ concurrent, exact at quiescence

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldKeepExactTotalsWhenFourProducersRaceTrySend(Kind kind) throws Exception {
        for (int round = 0; round < 10; round++) {
            final Mailbox<Object> mb = kind.create(32, "race-" + round);
            final int attempts = 5_000;
            final CountDownLatch start = new CountDownLatch(1);
            final List<Future<long[]>> producers = new ArrayList<>();
            for (int p = 0; p < PRODUCERS; p++) {
                producers.add(pool.submit(() -> {
                    start.await();
                    long admitted = 0;
                    long refused = 0;
                    for (int i = 0; i < attempts; i++) {
                        if (mb.trySend(kind.message(i))) {
                            admitted++;
                        } else {
                            refused++;
                        }
                    }
                    return new long[] {admitted, refused};
                }));
            }
            final AtomicBoolean producing = new AtomicBoolean(true);
            final Future<Long> consumer = pool.submit(() -> drainUntilDoneAndEmpty(mb, producing));
            start.countDown();

            long admitted = 0;
            long refused = 0;
            for (Future<long[]> f : producers) {
                final long[] counts = f.get(Hang.SECONDS, TimeUnit.SECONDS);
                admitted += counts[0];
                refused += counts[1];
            }
            producing.set(false);
            final long received = consumer.get(Hang.SECONDS, TimeUnit.SECONDS);

            final MailboxStats stats = mb.stats();
            assertThat(admitted + refused).isEqualTo((long) PRODUCERS * attempts);
            assertThat(stats.admitted()).as("admitted, round %d", round).isEqualTo(admitted);
            assertThat(stats.received()).as("received, round %d", round).isEqualTo(admitted).isEqualTo(received);
            assertThat(stats.refused()).as("refused, round %d", round).isEqualTo(refused);
            assertThat(stats.rejectedClosed()).isZero();
            assertThat(stats.size()).isZero();
            assertThat(stats.parkedProducers()).isZero();
            assertThat(stats.reserved()).isZero();
            assertThat(stats.highWaterMark()).isPositive(); // at most the capacity: see assertOccupancyWithinCapacity
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldKeepExactTotalsWhenFourProducersBlockOnSend(Kind kind) throws Exception {
        for (int round = 0; round < 10; round++) {
            final Mailbox<Object> mb = kind.create(8, "blocking-" + round);
            final int perProducer = 2_000;
            final CountDownLatch start = new CountDownLatch(1);
            final List<Future<?>> producers = new ArrayList<>();
            for (int p = 0; p < PRODUCERS; p++) {
                producers.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < perProducer; i++) {
                        mb.send(kind.message(i));
                    }
                    return null;
                }));
            }
            final long total = (long) PRODUCERS * perProducer;
            final Future<Long> consumer = pool.submit(() -> {
                long received = 0;
                while (received < total) {
                    received += mb.recvMany(m -> { }, 16);
                    assertOccupancyWithinCapacity(mb);
                }
                return received;
            });
            start.countDown();
            for (Future<?> f : producers) {
                f.get(Hang.SECONDS, TimeUnit.SECONDS);
            }
            assertThat(consumer.get(Hang.SECONDS, TimeUnit.SECONDS)).isEqualTo(total);

            final MailboxStats stats = mb.stats();
            assertThat(stats.admitted()).as("admitted, round %d", round).isEqualTo(total);
            assertThat(stats.received()).as("received, round %d", round).isEqualTo(total);
            assertThat(stats.refused()).as("blocking sends are never refused").isZero();
            assertThat(stats.parkedProducers()).isZero();
            assertThat(stats.size()).isZero();
            assertThat(stats.highWaterMark()).isPositive(); // at most the capacity: see assertOccupancyWithinCapacity
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void shouldCountEachRejectionOnceWhenCloseRacesFourProducers(Kind kind) throws Exception {
        for (int round = 0; round < 10; round++) {
            final Mailbox<Object> mb = kind.create(16, "close-race-" + round);
            final CountDownLatch start = new CountDownLatch(1);
            final List<Future<long[]>> producers = new ArrayList<>();
            for (int p = 0; p < PRODUCERS; p++) {
                producers.add(pool.submit(() -> {
                    start.await();
                    long admitted = 0;
                    long refused = 0;
                    try {
                        for (int i = 0; ; i++) {
                            if (mb.trySend(kind.message(i))) {
                                admitted++;
                            } else {
                                refused++;
                            }
                        }
                    } catch (MailboxClosedException expected) {
                        return new long[] {admitted, refused, 1L};
                    }
                }));
            }
            final AtomicBoolean producing = new AtomicBoolean(true);
            final Future<Long> consumer = pool.submit(() -> drainUntilDoneAndEmpty(mb, producing));
            start.countDown();
            await(() -> mb.stats().received() >= 100, "some traffic before the close");
            mb.close();

            long admitted = 0;
            long refused = 0;
            long rejected = 0;
            for (Future<long[]> f : producers) {
                final long[] counts = f.get(Hang.SECONDS, TimeUnit.SECONDS);
                admitted += counts[0];
                refused += counts[1];
                rejected += counts[2];
            }
            producing.set(false);
            final long received = consumer.get(Hang.SECONDS, TimeUnit.SECONDS);

            final MailboxStats stats = mb.stats();
            assertThat(stats.admitted()).as("admitted, round %d", round).isEqualTo(admitted);
            assertThat(stats.received()).as("received, round %d", round).isEqualTo(admitted).isEqualTo(received);
            assertThat(stats.refused()).as("refused, round %d", round).isEqualTo(refused);
            assertThat(stats.rejectedClosed()).as("one rejection per producer").isEqualTo(rejected)
                    .isEqualTo(PRODUCERS);
            assertThat(mb.isTerminated()).isTrue();
        }
    }

    // ------------------------------------------------------------------ helpers

    private static void sendAll(Mailbox<Object> mb, Kind kind, int n) {
        for (int i = 0; i < n; i++) {
            assertThat(mb.trySend(kind.message(i))).as("send %d of %d", i, n).isTrue();
        }
    }

    /**
     * Fails if more messages are admitted than received plus the capacity. Consumer thread only: there 'received'
     * holds still, so the check is exact under every interleaving. (size() and the high-water mark are clamped to
     * [0, capacity]: a check on them could never fail.)
     */
    private static void assertOccupancyWithinCapacity(Mailbox<Object> mb) {
        final MailboxStats stats = mb.stats();
        if (stats.admitted() - stats.received() > stats.capacity()) {
            throw new AssertionError("admitted - received > capacity: " + stats);
        }
    }

    /** Drains until the producers are done and the mailbox is empty (or terminated); returns the count. */
    private static long drainUntilDoneAndEmpty(Mailbox<Object> mb, AtomicBoolean producing) {
        long received = 0;
        final long deadline = System.nanoTime() + AWAIT_NANOS;
        for (;;) {
            final int n = mb.tryRecvMany(m -> { }, 64);
            received += n;
            assertOccupancyWithinCapacity(mb);
            if (n == 0) {
                if (!producing.get() && mb.size() == 0) {
                    return received;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("drain did not finish: " + mb.stats());
                }
                Thread.onSpinWait();
            }
        }
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        final long deadline = System.nanoTime() + AWAIT_NANOS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(1);
        }
    }
}
