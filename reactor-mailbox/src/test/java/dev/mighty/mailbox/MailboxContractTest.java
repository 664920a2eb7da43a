package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The {@link Mailbox} contract of DESIGN.md, run once per variant (JCTools {@code QueueSanityTest} style):
 * FIFO, capacity, full and empty, batch limits, close and drain, timeouts, interrupts, wake-ups on close,
 * bad input and the counters. Blocking behaviour is checked on real threads that are seen parked on the
 * mailbox before the test acts; every wait is bounded, so a bug fails instead of hanging.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MailboxContractTest {
    private static final Duration LONG_WAIT = Duration.ofMinutes(1);

    static Stream<MailboxVariant> variants() {
        return Stream.of(MailboxVariant.values());
    }

    // ------------------------------------------------------------------ helpers

    private static void fill(MailboxVariant v, Mailbox<Object> mb, long from, int count) {
        for (long id = from; id < from + count; id++) {
            assertThat(mb.trySend(v.message(id))).as("trySend(%d)", id).isTrue();
        }
    }

    private static List<Long> drain(MailboxVariant v, Mailbox<Object> mb) {
        final List<Long> ids = new ArrayList<>();
        for (Object m; (m = mb.tryRecv()) != null; ) {
            ids.add(v.id(m));
        }
        return ids;
    }

    private static List<Long> ids(long from, int count) {
        return LongStream.range(from, from + count).boxed().toList();
    }

    private static Consumer<Object> into(MailboxVariant v, List<Long> ids) {
        return m -> ids.add(v.id(m));
    }

    private static Object ring(Mailbox<Object> mb) {
        return MailboxRing.of(mb);
    }

    // ------------------------------------------------------------------ FIFO, capacity, full and empty

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReceiveInSendOrderWhenTheRingWrapsAround(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(8);
        long sent = 0;
        final List<Long> received = new ArrayList<>();
        for (int round = 0; round < 400; round++) {
            final int k = 1 + round % 8;
            fill(v, mb, sent, k);
            sent += k;
            switch (round % 4) {
                case 0:
                    received.addAll(drain(v, mb));
                    break;
                case 1:
                    assertThat(mb.tryRecvMany(into(v, received), k)).isEqualTo(k);
                    break;
                case 2:
                    for (int i = 0; i < k; i++) {
                        received.add(v.id(mb.recv()));
                    }
                    break;
                default:
                    assertThat(mb.recvMany(into(v, received), Integer.MAX_VALUE)).isEqualTo(k);
                    break;
            }
            assertThat(mb.size()).isZero();
        }
        assertThat(received).isEqualTo(ids(0, (int) sent));
        assertThat(mb.stats().admitted()).isEqualTo(sent);
        assertThat(mb.stats().received()).isEqualTo(sent);
    }

    static Stream<Arguments> roundedCapacities() {
        return variants().flatMap(v -> Stream.of(
                Arguments.of(v, 1, 1), Arguments.of(v, 2, 2), Arguments.of(v, 3, 4), Arguments.of(v, 5, 8),
                Arguments.of(v, 1000, 1024), Arguments.of(v, 1024, 1024), Arguments.of(v, 1025, 2048)));
    }

    @ParameterizedTest(name = "{0} capacity {1} -> {2}")
    @MethodSource("roundedCapacities")
    void shouldRoundCapacityUpToPowerOfTwoWhenCreated(MailboxVariant v, int requested, int expected) {
        final Mailbox<Object> mb = v.create(requested);
        assertThat(mb.capacity()).isEqualTo(expected);
        // the rounded capacity is usable: exactly that many fit
        fill(v, mb, 0, expected);
        assertThat(mb.trySend(v.message(expected))).isFalse();
        assertThat(mb.size()).isEqualTo(expected);
    }

    @Test
    void shouldAcceptCapacityUpToTwoToTheThirtiethWhenValidated() {
        // A 2^30-slot ring needs 4 GiB of references: check the bound, not an allocation.
        assertThat(MailboxRing.checkCapacity(1 << 30)).isEqualTo(1 << 30);
        assertThat(MailboxRing.checkCapacity((1 << 29) + 1)).isEqualTo(1 << 30);
        assertThat(Mailboxes.MAX_CAPACITY).isEqualTo(1 << 30);
        assertThatCode(() -> Mailboxes.builder().capacity(1 << 30)).doesNotThrowAnyException();
    }

    static Stream<Arguments> badCapacities() {
        final String refs = " (expected: 1 .. 1073741824)";
        final String slab = " (expected: 1 .. 16777216 for a FrameMailbox)";
        return Stream.of(
                Arguments.of(MailboxVariant.MPSC, 0, "capacity: 0" + refs),
                Arguments.of(MailboxVariant.MPSC, -1, "capacity: -1" + refs),
                Arguments.of(MailboxVariant.MPSC, Integer.MIN_VALUE, "capacity: -2147483648" + refs),
                Arguments.of(MailboxVariant.MPSC, (1 << 30) + 1, "capacity: 1073741825" + refs),
                Arguments.of(MailboxVariant.MPSC, Integer.MAX_VALUE, "capacity: 2147483647" + refs),
                Arguments.of(MailboxVariant.SPSC, 0, "capacity: 0" + refs),
                Arguments.of(MailboxVariant.SPSC, -1, "capacity: -1" + refs),
                Arguments.of(MailboxVariant.SPSC, (1 << 30) + 1, "capacity: 1073741825" + refs),
                Arguments.of(MailboxVariant.FRAMES, 0, "capacity: 0" + refs),
                Arguments.of(MailboxVariant.FRAMES, -1, "capacity: -1" + refs),
                Arguments.of(MailboxVariant.FRAMES, (1 << 24) + 1, "capacity: 16777217" + slab),
                Arguments.of(MailboxVariant.FRAMES, 1 << 30, "capacity: 1073741824" + slab),
                Arguments.of(MailboxVariant.FRAMES, (1 << 30) + 1, "capacity: 1073741825" + slab));
    }

    @ParameterizedTest(name = "{0} capacity {1}")
    @MethodSource("badCapacities")
    void shouldRejectCapacityWhenOutOfRange(MailboxVariant v, int capacity, String message) {
        assertThatThrownBy(() -> v.create(capacity))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @Test
    void shouldRejectFrameCapacityWhenBuilderAcceptedItForReferences() {
        final MailboxBuilder<Object> builder = Mailboxes.builder().capacity(1 << 30);
        assertThatThrownBy(builder::buildFrames)
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity: 1073741824 (expected: 1 .. 16777216 for a FrameMailbox)");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRefuseTrySendWhenFull(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        fill(v, mb, 0, 4);
        assertThat(mb.size()).isEqualTo(mb.capacity());

        assertThat(mb.trySend(v.message(99))).isFalse();
        assertThat(mb.size()).isEqualTo(4);
        assertThat(mb.stats().refused()).isEqualTo(1);
        assertThat(mb.stats().admitted()).isEqualTo(4);

        assertThat(v.id(mb.tryRecv())).isZero();
        assertThat(mb.trySend(v.message(99))).isTrue();
        assertThat(drain(v, mb)).containsExactly(1L, 2L, 3L, 99L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReturnNothingWhenEmpty(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(4);
        final List<Long> sunk = new ArrayList<>();

        assertThat(mb.tryRecv()).isNull();
        assertThat(mb.tryRecvMany(into(v, sunk), 10)).isZero();
        assertThat(mb.recv(Duration.ZERO)).isNull();
        assertThat(sunk).isEmpty();
        assertThat(mb.size()).isZero();
        assertThat(mb.isClosed()).isFalse();
        assertThat(mb.isTerminated()).isFalse();
        assertThat(mb.stats().consumerParked()).isFalse();
    }

    // ------------------------------------------------------------------ batch receive

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldHandOverAtMostMaxWhenReceivingMany(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(8);
        final List<Long> sunk = new ArrayList<>();
        fill(v, mb, 0, 5);

        assertThat(mb.tryRecvMany(into(v, sunk), 0)).isZero();
        assertThat(sunk).isEmpty();
        assertThat(mb.size()).isEqualTo(5);

        assertThat(mb.tryRecvMany(into(v, sunk), 2)).isEqualTo(2);
        assertThat(sunk).containsExactly(0L, 1L);
        assertThat(mb.size()).isEqualTo(3);

        assertThat(mb.tryRecvMany(into(v, sunk), 10)).isEqualTo(3);
        assertThat(sunk).containsExactly(0L, 1L, 2L, 3L, 4L);
        assertThat(mb.size()).isZero();

        assertThat(mb.tryRecvMany(into(v, sunk), Integer.MAX_VALUE)).isZero();
        assertThat(mb.stats().received()).isEqualTo(5);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectBadBatchArgumentsWhenReceivingManyAndLeaveMailboxUnchanged(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        final List<Long> sunk = new ArrayList<>();
        fill(v, mb, 0, 2);

        assertThatThrownBy(() -> mb.tryRecvMany(into(v, sunk), -1))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThatThrownBy(() -> mb.tryRecvMany(into(v, sunk), Integer.MIN_VALUE))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -2147483648 (expected: >= 0)");
        assertThatThrownBy(() -> mb.recvMany(into(v, sunk), -1))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThatThrownBy(() -> mb.tryRecvMany(null, 1)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.recvMany(null, 1)).isExactlyInstanceOf(NullPointerException.class);

        assertThat(sunk).isEmpty();
        assertThat(mb.size()).isEqualTo(2);
        assertThat(mb.stats().received()).isZero();
        assertThat(drain(v, mb)).containsExactly(0L, 1L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReceiveWhatIsThereUpToMaxWhenRecvManyFindsMessages(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(8);
        final List<Long> sunk = new ArrayList<>();
        fill(v, mb, 0, 3);

        assertThat(mb.recvMany(into(v, sunk), 2)).isEqualTo(2);
        assertThat(mb.recvMany(into(v, sunk), 0)).isZero();
        assertThat(mb.size()).isEqualTo(1);
        assertThat(mb.recvMany(into(v, sunk), 5)).isEqualTo(1);
        assertThat(sunk).containsExactly(0L, 1L, 2L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldCountMessageAsReceivedWhenSinkThrows(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(8);
        fill(v, mb, 0, 4);
        final IllegalStateException boom = new IllegalStateException("boom");
        final Consumer<Object> throwsOnOne = m -> {
            if (v.id(m) == 1) {
                throw boom;
            }
        };

        assertThat(catchThrowable(() -> mb.tryRecvMany(throwsOnOne, 10))).isSameAs(boom);
        assertThat(mb.stats().received()).isEqualTo(2);
        assertThat(mb.size()).isEqualTo(2);

        final List<Long> sunk = new ArrayList<>();
        assertThat(mb.recvMany(into(v, sunk), 10)).isEqualTo(2);
        assertThat(sunk).containsExactly(2L, 3L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldDeliverEachMessageOnceWhenSinkReceivesReentrantly(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(8);
        fill(v, mb, 0, 4);
        final List<Long> got = new ArrayList<>();

        mb.tryRecvMany(m -> {
            got.add(v.id(m));
            if (v.id(m) == 0) {
                got.add(v.id(mb.tryRecv())); // the consumer thread takes the next one itself
            }
        }, 10);

        assertThat(got).containsExactly(0L, 1L, 2L, 3L);
        assertThat(mb.size()).isZero();
        assertThat(mb.stats().received()).isEqualTo(4);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldFailInsteadOfDeadlockingWhenSinkSendsIntoFullMailbox(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        fill(v, mb, 0, 2);

        final int n = assertTimeoutPreemptively(Hang.TIMEOUT, () -> mb.tryRecvMany(m -> {
            // the slot of m may already be free: fill it, so the mailbox is full from inside the batch
            assertThat(mb.trySend(v.message(10))).isTrue();
            assertThat(mb.trySend(v.message(11))).isFalse();
            assertThatThrownBy(() -> mb.send(v.message(12)))
                    .isExactlyInstanceOf(IllegalStateException.class);
            // a timed send cannot wait forever: it waits out its timeout, as anywhere else
            try {
                assertThat(mb.send(v.message(13), Duration.ofMillis(5))).isFalse();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, 1));

        assertThat(n).isEqualTo(1);
        assertThat(drain(v, mb)).containsExactly(1L, 10L);
        assertThat(mb.stats().admitted()).isEqualTo(3);
    }

    // ------------------------------------------------------------------ close

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectSendsAndKeepContentWhenClosed(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(4);
        fill(v, mb, 0, 3);

        mb.close();

        assertThat(mb.isClosed()).isTrue();
        assertThat(mb.isTerminated()).isFalse();
        assertThat(mb.closeCause()).isNull();
        assertThatThrownBy(() -> mb.trySend(v.message(7))).isExactlyInstanceOf(MailboxClosedException.class)
                .hasNoCause();
        assertThatThrownBy(() -> mb.send(v.message(7))).isExactlyInstanceOf(MailboxClosedException.class);
        assertThatThrownBy(() -> mb.send(v.message(7), Duration.ofSeconds(1)))
                .isExactlyInstanceOf(MailboxClosedException.class);
        assertThat(mb.size()).isEqualTo(3);
        assertThat(mb.stats().rejectedClosed()).isEqualTo(3);
        assertThat(mb.stats().admitted()).isEqualTo(3);

        assertThat(v.id(mb.tryRecv())).isZero();
        assertThat(v.id(mb.recv())).isEqualTo(1);
        assertThat(mb.isTerminated()).isFalse();
        final List<Long> sunk = new ArrayList<>();
        assertThat(mb.recvMany(into(v, sunk), 10)).isEqualTo(1);
        assertThat(sunk).containsExactly(2L);

        assertThat(mb.isTerminated()).isTrue();
        assertThat(mb.recv()).isNull();
        assertThat(mb.recv()).isNull();
        assertThat(mb.recv(LONG_WAIT)).isNull();
        assertThat(mb.recvMany(into(v, sunk), 10)).isZero();
        assertThat(mb.tryRecvMany(into(v, sunk), 10)).isZero();
        assertThat(mb.tryRecv()).isNull();

        mb.close(); // idempotent
        assertThat(mb.isClosed()).isTrue();
        assertThat(mb.isTerminated()).isTrue();
        assertThat(mb.closeCause()).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowRatherThanRefuseWhenClosedAndFull(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        fill(v, mb, 0, 2);
        mb.close();
        assertThatThrownBy(() -> mb.trySend(v.message(5))).isExactlyInstanceOf(MailboxClosedException.class);
        assertThat(mb.stats().refused()).isZero();
        assertThat(drain(v, mb)).containsExactly(0L, 1L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldTerminateAtOnceWhenClosedEmpty(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(4);
        mb.close();
        assertThat(mb.isTerminated()).isTrue();
        assertThat(mb.recv()).isNull();
        assertThat(mb.recvMany(m -> { }, 1)).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowCauseAfterDrainWhenClosedExceptionally(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(4);
        fill(v, mb, 0, 2);
        final IOException cause = new IOException("upstream failed");

        mb.closeExceptionally(cause);

        assertThat(mb.isClosed()).isTrue();
        assertThat(mb.closeCause()).isSameAs(cause);
        assertThatThrownBy(() -> mb.trySend(v.message(7))).isExactlyInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        assertThat(v.id(mb.tryRecv())).isZero();
        assertThat(v.id(mb.recv())).isEqualTo(1);
        assertThat(mb.isTerminated()).isTrue();

        for (int i = 0; i < 2; i++) { // every later receive reports it again
            assertThat(catchThrowable(mb::recv)).isExactlyInstanceOf(MailboxClosedException.class)
                    .cause().isSameAs(cause);
        }
        assertThat(catchThrowable(() -> mb.recv(LONG_WAIT))).isExactlyInstanceOf(MailboxClosedException.class)
                .cause().isSameAs(cause);
        assertThat(catchThrowable(() -> mb.recvMany(m -> { }, 4))).isExactlyInstanceOf(MailboxClosedException.class)
                .cause().isSameAs(cause);
        assertThat(mb.tryRecv()).isNull();
        assertThat(mb.tryRecvMany(m -> { }, 4)).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldKeepFirstCloseWhenClosedAgain(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> normal = v.create(4);
        normal.close();
        normal.closeExceptionally(new IOException("too late"));
        assertThat(normal.closeCause()).isNull();
        assertThat(normal.recv()).isNull();

        final Mailbox<Object> failed = v.create(4);
        final IOException first = new IOException("first");
        failed.closeExceptionally(first);
        failed.closeExceptionally(new IOException("second"));
        failed.close();
        assertThat(failed.closeCause()).isSameAs(first);
        assertThat(catchThrowable(failed::recv)).isExactlyInstanceOf(MailboxClosedException.class)
                .cause().isSameAs(first);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectNullCauseWhenClosingExceptionallyAndStayOpen(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        assertThatThrownBy(() -> mb.closeExceptionally(null)).isExactlyInstanceOf(NullPointerException.class);
        assertThat(mb.isClosed()).isFalse();
        assertThat(mb.trySend(v.message(1))).isTrue();
    }

    // ------------------------------------------------------------------ timeouts

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReturnNullButNotTerminateWhenRecvTimesOut(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(2);
        assertThat(mb.recv(Duration.ofMillis(20))).isNull();
        assertThat(mb.isTerminated()).isFalse();
        assertThat(mb.isClosed()).isFalse();
        assertThat(mb.stats().consumerParked()).isFalse();

        fill(v, mb, 0, 1);
        assertThat(v.id(mb.recv(Duration.ZERO))).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReturnFalseAndAdmitNothingWhenTimedSendTimesOut(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(2);
        assertThat(mb.send(v.message(0), Duration.ZERO)).isTrue();
        assertThat(mb.send(v.message(1), Duration.ofMillis(1))).isTrue();

        assertThat(mb.send(v.message(2), Duration.ofMillis(20))).isFalse();
        assertThat(mb.send(v.message(3), Duration.ZERO)).isFalse();

        assertThat(mb.size()).isEqualTo(2);
        assertThat(mb.stats().admitted()).isEqualTo(2);
        assertThat(mb.stats().refused()).isEqualTo(2);
        assertThat(mb.stats().parkedProducers()).isZero();
        assertThat(drain(v, mb)).containsExactly(0L, 1L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectNegativeOrNullTimeoutAndLeaveMailboxUnchanged(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        fill(v, mb, 0, 1);

        assertThatThrownBy(() -> mb.send(v.message(1), Duration.ofNanos(-1)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("timeout: ")
                .hasMessageEndingWith(" (expected: >= 0)");
        assertThatThrownBy(() -> mb.recv(Duration.ofMillis(-1)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("timeout: ")
                .hasMessageEndingWith(" (expected: >= 0)");
        assertThatThrownBy(() -> mb.send(v.message(1), null)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.recv(null)).isExactlyInstanceOf(NullPointerException.class);

        assertThat(mb.size()).isEqualTo(1);
        assertThat(mb.stats().admitted()).isEqualTo(1);
        assertThat(mb.stats().received()).isZero();
        assertThat(drain(v, mb)).containsExactly(0L);
    }

    // ------------------------------------------------------------------ interrupts

    /** A blocking call, to be entered with the interrupt flag set. */
    @FunctionalInterface
    private interface Blocking {
        void call() throws Exception;
    }

    private static Throwable callInterrupted(Blocking call) {
        Thread.currentThread().interrupt();
        try {
            return catchThrowable(call::call);
        } finally {
            assertThat(Thread.interrupted()).as("interrupt flag left set after InterruptedException").isFalse();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowAtOnceWhenBlockingCallEnteredInterrupted(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        fill(v, mb, 0, 1); // room to send and a message to receive: only the flag can stop the calls

        assertThat(callInterrupted(() -> mb.send(v.message(9)))).isInstanceOf(InterruptedException.class);
        assertThat(callInterrupted(() -> mb.send(v.message(9), LONG_WAIT))).isInstanceOf(InterruptedException.class);
        assertThat(callInterrupted(mb::recv)).isInstanceOf(InterruptedException.class);
        assertThat(callInterrupted(() -> mb.recv(LONG_WAIT))).isInstanceOf(InterruptedException.class);
        assertThat(callInterrupted(() -> mb.recvMany(m -> { }, 4))).isInstanceOf(InterruptedException.class);

        assertThat(mb.size()).isEqualTo(1);
        assertThat(mb.stats().admitted()).isEqualTo(1);
        assertThat(mb.stats().received()).isZero();
        assertThat(drain(v, mb)).containsExactly(0L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldIgnoreInterruptFlagWhenCallDoesNotBlock(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        Thread.currentThread().interrupt();
        try {
            assertThat(mb.trySend(v.message(0))).isTrue();
            assertThat(mb.trySend(v.message(1))).isTrue();
            assertThat(v.id(mb.tryRecv())).isZero();
            assertThat(mb.tryRecvMany(m -> { }, 4)).isEqualTo(1);
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldAdmitNothingWhenSenderInterruptedWhileParked(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(2);
        fill(v, mb, 0, 2);

        final Forked<Void> sender = Forked.start("sender", () -> {
            mb.send(v.message(100));
            return null;
        });
        sender.awaitParkedOn(ring(mb));
        assertThat(mb.stats().parkedProducers()).isEqualTo(1);
        sender.thread().interrupt();
        assertThat(sender.joinFailure()).isInstanceOf(InterruptedException.class);

        final Forked<Boolean> timedSender = Forked.start("timed sender", () -> mb.send(v.message(101), LONG_WAIT));
        timedSender.awaitParkedOn(ring(mb));
        timedSender.thread().interrupt();
        assertThat(timedSender.joinFailure()).isInstanceOf(InterruptedException.class);

        assertThat(mb.stats().parkedProducers()).isZero();
        assertThat(mb.stats().admitted()).isEqualTo(2);
        assertThat(drain(v, mb)).containsExactly(0L, 1L);
        assertThat(mb.trySend(v.message(2))).isTrue();
        assertThat(drain(v, mb)).containsExactly(2L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldLeaveMailboxUsableWhenReceiverInterruptedWhileParked(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(2);
        final List<Blocking> receives = List.of(mb::recv, () -> mb.recv(LONG_WAIT), () -> mb.recvMany(m -> { }, 4));
        for (Blocking receive : receives) {
            final Forked<Void> receiver = Forked.start("receiver", () -> {
                receive.call();
                return null;
            });
            receiver.awaitParkedOn(ring(mb));
            assertThat(mb.stats().consumerParked()).isTrue();
            receiver.thread().interrupt();
            assertThat(receiver.joinFailure()).isInstanceOf(InterruptedException.class);
            assertThat(mb.stats().consumerParked()).isFalse();
        }
        assertThat(mb.size()).isZero();
        fill(v, mb, 0, 1);
        assertThat(v.id(mb.recv())).isZero();
    }

    // ------------------------------------------------------------------ parking and wake-ups

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldWakeParkedReceiverWhenMessageArrives(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(2);
        final Forked<Object> receiver = Forked.start("receiver", mb::recv);
        receiver.awaitParkedOn(ring(mb));
        assertThat(mb.trySend(v.message(42))).isTrue();
        assertThat(v.id(receiver.join())).isEqualTo(42);

        final List<Long> sunk = new ArrayList<>();
        final Forked<Integer> batch = Forked.start("batch receiver", () -> mb.recvMany(into(v, sunk), 8));
        batch.awaitParkedOn(ring(mb));
        assertThat(mb.trySend(v.message(43))).isTrue();
        assertThat(batch.join()).isEqualTo(1);
        assertThat(sunk).containsExactly(43L); // join() orders the receiver's writes before this read
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldWakeParkedSenderWhenRoomIsMade(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(2);
        fill(v, mb, 0, 2);
        final Forked<Void> sender = Forked.start("sender", () -> {
            mb.send(v.message(2));
            return null;
        });
        sender.awaitParkedOn(ring(mb));
        assertThat(v.id(mb.tryRecv())).isZero();
        sender.join();
        assertThat(drain(v, mb)).containsExactly(1L, 2L);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReturnEndOfStreamToParkedReceiverWhenClosed(MailboxVariant v) throws Exception {
        final Mailbox<Object> plain = v.create(2);
        final Forked<Object> receiver = Forked.start("receiver", plain::recv);
        receiver.awaitParkedOn(ring(plain));
        plain.close();
        assertThat(receiver.join()).isNull();
        assertThat(plain.isTerminated()).isTrue();

        final Mailbox<Object> timed = v.create(2);
        final Forked<Object> timedReceiver = Forked.start("timed receiver", () -> timed.recv(LONG_WAIT));
        timedReceiver.awaitParkedOn(ring(timed));
        timed.close();
        assertThat(timedReceiver.join()).isNull();
        assertThat(timed.isTerminated()).isTrue();

        final Mailbox<Object> batch = v.create(2);
        final Forked<Integer> batchReceiver = Forked.start("batch receiver", () -> batch.recvMany(m -> { }, 4));
        batchReceiver.awaitParkedOn(ring(batch));
        batch.close();
        assertThat(batchReceiver.join()).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldThrowCauseInParkedReceiverWhenClosedExceptionally(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(2);
        final IOException cause = new IOException("boom");
        final Forked<Object> receiver = Forked.start("receiver", mb::recv);
        receiver.awaitParkedOn(ring(mb));
        mb.closeExceptionally(cause);
        assertThat(receiver.joinFailure()).isExactlyInstanceOf(MailboxClosedException.class).cause().isSameAs(cause);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectEveryParkedSenderWhenClosed(MailboxVariant v) throws Exception {
        for (Throwable cause : new Throwable[] {null, new IOException("boom")}) {
            final Mailbox<Object> mb = v.create(2);
            fill(v, mb, 0, 2);
            final int senders = v.multiProducer() ? 3 : 1;
            final List<Forked<Boolean>> parked = new ArrayList<>();
            for (int i = 0; i < senders; i++) {
                final long id = 100 + i;
                parked.add(Forked.start("sender-" + i, () -> {
                    if (id % 2 == 0) {
                        mb.send(v.message(id));
                        return true;
                    }
                    return mb.send(v.message(id), LONG_WAIT);
                }));
            }
            for (Forked<Boolean> sender : parked) {
                sender.awaitParkedOn(ring(mb));
            }
            assertThat(mb.stats().parkedProducers()).isEqualTo(senders);

            if (cause == null) {
                mb.close();
            } else {
                mb.closeExceptionally(cause);
            }

            for (Forked<Boolean> sender : parked) {
                final Throwable failure = sender.joinFailure();
                assertThat(failure).isExactlyInstanceOf(MailboxClosedException.class);
                assertThat(failure.getCause()).isSameAs(cause);
            }
            assertThat(mb.stats().parkedProducers()).isZero();
            assertThat(mb.stats().admitted()).isEqualTo(2);
            assertThat(drain(v, mb)).containsExactly(0L, 1L);
        }
    }

    // ------------------------------------------------------------------ bad input, counters

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldRejectNullMessageAndLeaveMailboxUnchanged(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        assertNullRejected(mb, 0); // empty
        fill(v, mb, 0, 2);
        assertNullRejected(mb, 2); // full
        assertThat(drain(v, mb)).containsExactly(0L, 1L);
    }

    private static void assertNullRejected(Mailbox<Object> mb, int size) {
        assertThatThrownBy(() -> mb.trySend(null)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.send(null)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.send(null, Duration.ZERO)).isExactlyInstanceOf(NullPointerException.class);
        assertThat(mb.size()).isEqualTo(size);
        assertThat(mb.stats().admitted()).isEqualTo(size);
        assertThat(mb.stats().refused()).isZero();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldCountAdmittedReceivedRefusedAndRejectedWhenUsed(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(4);
        MailboxStats stats = mb.stats();
        assertThat(stats.capacity()).isEqualTo(4);
        assertThat(stats.admitted()).isZero();
        assertThat(stats.received()).isZero();

        fill(v, mb, 0, 4);
        assertThat(mb.trySend(v.message(4))).isFalse();
        assertThat(mb.trySend(v.message(4))).isFalse();
        assertThat(mb.send(v.message(4), Duration.ofMillis(1))).isFalse();
        final List<Long> sunk = new ArrayList<>();
        assertThat(mb.tryRecvMany(into(v, sunk), 3)).isEqualTo(3);

        stats = mb.stats();
        assertThat(stats.admitted()).isEqualTo(4);
        assertThat(stats.received()).isEqualTo(3);
        assertThat(stats.size()).isEqualTo(1).isEqualTo(mb.size());
        assertThat(stats.refused()).isEqualTo(3);
        assertThat(stats.rejectedClosed()).isZero();
        assertThat(stats.highWaterMark()).isBetween(3, 4);
        assertThat(stats.reserved()).isZero();
        assertThat(stats.parkedProducers()).isZero();
        assertThat(stats.consumerParked()).isFalse();

        mb.send(v.message(4));
        mb.close();
        assertThatThrownBy(() -> mb.trySend(v.message(5))).isInstanceOf(MailboxClosedException.class);
        assertThatThrownBy(() -> mb.send(v.message(5))).isInstanceOf(MailboxClosedException.class);
        assertThat(drain(v, mb)).containsExactly(3L, 4L);

        stats = mb.stats();
        assertThat(stats.admitted()).isEqualTo(5);
        assertThat(stats.received()).isEqualTo(5);
        assertThat(stats.size()).isZero();
        assertThat(stats.refused()).isEqualTo(3);
        assertThat(stats.rejectedClosed()).isEqualTo(2);
    }

    @Test
    void shouldReportBuilderNameWhenAskedForStats() {
        assertThat(Mailboxes.builder().name("orders").build().stats().name()).isEqualTo("orders");
        assertThat(Mailboxes.builder().name("frames-in").buildFrames().stats().name()).isEqualTo("frames-in");
        assertThat(Mailboxes.builder().build().capacity()).isEqualTo(Mailboxes.DEFAULT_CAPACITY);
        assertThatThrownBy(() -> Mailboxes.builder().name(null)).isExactlyInstanceOf(NullPointerException.class);
    }
}
