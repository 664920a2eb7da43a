package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.internal.MailboxRing;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The contract of the batched sends ({@code trySendMany}, {@code sendMany}) on every variant, one case per rule:
 * what fits is taken in order and the rest left to the caller, reservations count as occupied, bad input is
 * refused before anything is admitted, a blocking run waits until all of it is in (or says how much is), and the
 * counters stay exact. Random sequences against a model are in {@code reliability.MailboxModelTest}; races with
 * {@code close()} in {@link BatchedSendConcurrencyTest}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BatchedSendTest {

    private static List<Object> messages(MailboxVariant v, int producer, long first, int n) {
        final List<Object> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            batch.add(v.message(MailboxVariant.id(producer, first + i)));
        }
        return batch;
    }

    /** An array of the variant's message type: a frame mailbox's array methods take a {@code MessageFrame[]}. */
    static Object[] array(MailboxVariant v, List<Object> batch) {
        return batch.toArray(v == MailboxVariant.FRAMES ? new MessageFrame[0] : new Object[0]);
    }

    private static List<Long> drainIds(MailboxVariant v, Mailbox<Object> mb) {
        final List<Long> ids = new ArrayList<>();
        mb.tryRecvMany(m -> ids.add(v.id(m)), Integer.MAX_VALUE);
        return ids;
    }

    private static List<Long> ids(int producer, long first, int n) {
        final List<Long> ids = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ids.add(MailboxVariant.id(producer, first + i));
        }
        return ids;
    }

    // ------------------------------------------------------------------ trySendMany

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldAdmitTheWholeRunInOrderWhenThereIsRoom(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(16);
        final List<Object> batch = messages(v, 0, 0, 12);
        assertThat(mb.trySendMany(batch, 2, 7)).isEqualTo(5);
        assertThat(mb.trySendMany(array(v, batch), 7, 12)).isEqualTo(5);
        assertThat(mb.trySend(batch.get(0))).isTrue();
        final List<Long> expected = ids(0, 2, 10);
        expected.add(MailboxVariant.id(0, 0));
        assertThat(drainIds(v, mb)).containsExactlyElementsOf(expected);
        final MailboxStats stats = mb.stats();
        assertThat(stats.admitted()).isEqualTo(11);
        assertThat(stats.refused()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldTakeWhatFitsAndLeaveTheRestWhenNearlyFull(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(8);
        final List<Object> batch = messages(v, 0, 0, 20);
        assertThat(mb.trySendMany(batch, 0, 5)).isEqualTo(5);
        assertThat(mb.trySendMany(batch, 5, 20)).as("3 free of 8").isEqualTo(3);
        assertThat(mb.stats().refused()).as("a run cut short counts once").isEqualTo(1);
        assertThat(mb.trySendMany(batch, 8, 20)).as("full").isZero();
        assertThat(mb.stats().refused()).isEqualTo(2);
        assertThat(mb.tryRecvMany(m -> { }, 2)).isEqualTo(2);
        assertThat(mb.trySendMany(batch, 8, 20)).isEqualTo(2);
        assertThat(drainIds(v, mb)).containsExactlyElementsOf(ids(0, 2, 8));
        assertThat(mb.stats().admitted()).isEqualTo(10);
        assertThat(mb.stats().highWaterMark()).isBetween(5, 8);
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldCountReservedSlotsAsOccupied(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(8);
        final MailboxRing<Object> ring = MailboxRing.of(mb);
        assertThat(ring.reserve(3)).isEqualTo(3);
        final List<Object> batch = messages(v, 0, 0, 10);
        assertThat(mb.trySendMany(batch, 0, 10)).as("8 - 3 reserved").isEqualTo(5);
        assertThat(ring.sendReserved(v.message(MailboxVariant.id(1, 0)))).as("the permits still hold").isTrue();
        ring.releaseReserved(2);
        assertThat(mb.trySendMany(batch, 5, 10)).isEqualTo(2);
        assertThat(mb.size()).isEqualTo(8);
        assertThat(ring.reserved()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldReturnZeroForAnEmptyRunOpenOrClosed(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(1);
        final List<Object> batch = messages(v, 0, 0, 2);
        assertThat(mb.trySend(batch.get(0))).isTrue();
        assertThat(mb.trySendMany(batch, 1, 1)).as("empty run on a full mailbox").isZero();
        assertThat(mb.sendMany(batch, 1, 1)).as("empty blocking run on a full mailbox: does not park").isZero();
        mb.close();
        assertThat(mb.trySendMany(List.of())).isZero();
        assertThat(mb.sendMany(array(v, batch), 2, 2)).isZero();
        final MailboxStats stats = mb.stats();
        assertThat(stats.refused()).isZero();
        assertThat(stats.rejectedClosed()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldRefuseTheWholeRunWhenClosed(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(8);
        final RuntimeException cause = new RuntimeException("done");
        mb.closeExceptionally(cause);
        final List<Object> batch = messages(v, 0, 0, 3);
        assertThatThrownBy(() -> mb.trySendMany(batch)).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause).hasMessageContaining("trySendMany");
        assertThatThrownBy(() -> mb.sendMany(array(v, batch), 0, 3)).isInstanceOf(MailboxClosedException.class)
                .hasMessageContaining("sendMany");
        assertThatThrownBy(() -> mb.sendMany(batch, 0, 3, Duration.ofSeconds(1)))
                .isInstanceOf(MailboxClosedException.class);
        assertThat(mb.stats().admitted()).isZero();
        assertThat(mb.stats().rejectedClosed()).isEqualTo(3);
        assertThat(mb.isTerminated()).isTrue();
    }

    // ------------------------------------------------------------------ bad input

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldRefuseANullElementBeforeAdmittingAnything(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        final List<Object> batch = messages(v, 0, 0, 6);
        batch.set(5, null); // beyond what would fit: still refused, and nothing before it is admitted
        assertThatThrownBy(() -> mb.trySendMany(batch, 0, 6)).isInstanceOf(NullPointerException.class)
                .hasMessage("batch element: index=5 is null (from=0, to=6): nothing was admitted");
        assertThatThrownBy(() -> mb.sendMany(array(v, batch), 1, 6)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.sendMany(batch, 0, 6, Duration.ZERO)).isInstanceOf(NullPointerException.class);
        assertThat(mb.trySendMany(batch, 0, 5)).as("the range before the null is fine").isEqualTo(4);
        mb.close();
        assertThatThrownBy(() -> mb.trySendMany(batch, 0, 6)).as("checked before the closed state")
                .isInstanceOf(NullPointerException.class);
        assertThat(mb.stats().admitted()).isEqualTo(4);
        assertThat(mb.stats().rejectedClosed()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldRefuseBadRangesAsTheJdkDoes(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        final List<Object> batch = messages(v, 0, 0, 3);
        final Object[] array = array(v, batch);
        assertThatThrownBy(() -> mb.trySendMany(batch, 2, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("from: 2 > to: 1");
        assertThatThrownBy(() -> mb.trySendMany(array, -1, 1)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("from: -1, to: 1 (expected: 0 <= from <= to <= 3)");
        assertThatThrownBy(() -> mb.sendMany(batch, 0, 4)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> mb.sendMany(array, 3, 4, Duration.ZERO))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> mb.trySendMany((List<Object>) null, 0, 0)).isInstanceOf(NullPointerException.class)
                .hasMessage("batch");
        assertThatThrownBy(() -> mb.trySendMany((Object[]) null, 0, 0)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.trySendMany((List<Object>) null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.sendMany(batch, 0, 1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> mb.sendMany(batch, 0, 1, Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(mb.stats().admitted()).isZero();
        assertThat(mb.trySendMany(batch)).as("the mailbox is still usable").isEqualTo(3);
    }

    @org.junit.jupiter.api.Test
    void shouldRefuseAnOversizedFrameBeforeAdmittingAnything() {
        final FrameMailbox fm = Mailboxes.builder().capacity(8).maxPayload(100).buildFrames();
        final List<MessageFrame> batch = new ArrayList<>();
        batch.add(MessageFrame.of(1, 1L, new byte[3]));
        batch.add(MessageFrame.of(1, 2L, new byte[101]));
        assertThatThrownBy(() -> fm.trySendMany(batch, 0, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxPayload 100");
        assertThatThrownBy(() -> fm.sendMany(batch.toArray(new MessageFrame[0]), 0, 2))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(fm.size()).isZero();
        assertThat(fm.trySendMany(batch, 0, 1)).isEqualTo(1);
    }

    /**
     * A list that answers null (or throws) when the run is stored, after it was checked: the slots already
     * claimed become placeholders the consumer skips, the exception reaches the caller, and the mailbox stays
     * consistent (the consumer neither hangs on a claimed slot nor receives the placeholders).
     */
    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldNotLeaveClaimedSlotsBehindWhenTheBatchChangesUnderTheSend(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(8);
        final List<Object> good = messages(v, 0, 0, 5);
        final AtomicInteger reads = new AtomicInteger();
        final List<Object> changing = new AbstractList<>() {
            @Override
            public Object get(int index) {
                reads.incrementAndGet();
                // the second pass (the stores) finds element 2 gone
                if (reads.get() > 5 && index == 2) {
                    return null;
                }
                return good.get(index);
            }

            @Override
            public int size() {
                return good.size();
            }
        };
        assertThatThrownBy(() -> mb.trySendMany(changing, 0, 5)).isInstanceOf(ConcurrentModificationException.class)
                .hasMessageContaining("index=2");
        assertThat(mb.trySend(v.message(MailboxVariant.id(0, 5)))).isTrue();
        final List<Long> expected = ids(0, 0, 2);
        expected.add(MailboxVariant.id(0, 5));
        assertThat(drainIds(v, mb)).as("the 3 claimed slots not stored are skipped")
                .containsExactlyElementsOf(expected);
        mb.close();
        assertThat(mb.isTerminated()).isTrue();
        assertThat(mb.recv(Duration.ofSeconds(5))).isNull();
    }

    // ------------------------------------------------------------------ sendMany

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldWaitUntilTheWholeRunIsInWhenSendManyMeetsAFullMailbox(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(4);
        final int n = 200;
        final List<Object> batch = messages(v, 0, 0, n);
        final Forked<List<Long>> consumer = Forked.start("consumer", () -> {
            final List<Long> got = new ArrayList<>();
            while (mb.recvMany(m -> got.add(v.id(m)), 3) > 0) {
                // until end of stream
            }
            return got;
        });
        assertThat(mb.sendMany(batch, 0, n / 2)).isEqualTo(n / 2);
        assertThat(mb.sendMany(array(v, batch), n / 2, n, Duration.ofMinutes(1))).isEqualTo(n / 2);
        mb.close();
        assertThat(consumer.join()).containsExactlyElementsOf(ids(0, 0, n));
        assertThat(mb.stats().refused()).isZero();
        assertThat(mb.stats().parkedProducers()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldReturnWhatWasAdmittedWhenTheTimeoutElapses(MailboxVariant v) throws InterruptedException {
        final Mailbox<Object> mb = v.create(4);
        final List<Object> batch = messages(v, 0, 0, 10);
        assertThat(mb.sendMany(batch, 0, 10, Duration.ofMillis(20))).isEqualTo(4);
        assertThat(mb.stats().refused()).isEqualTo(1);
        assertThat(mb.sendMany(batch, 4, 10, Duration.ofMillis(1))).isZero();
        assertThat(mb.stats().refused()).isEqualTo(2);
        assertThat(mb.stats().parkedProducers()).isZero();
        assertThat(drainIds(v, mb)).containsExactlyElementsOf(ids(0, 0, 4));
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldThrowOnEntryWhenInterruptedAndAdmitNothing(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(4);
        final List<Object> batch = messages(v, 0, 0, 2);
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> mb.sendMany(batch)).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        assertThat(mb.size()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldReportThePartWhenInterruptedWhileParked(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(4);
        final List<Object> batch = messages(v, 0, 0, 10);
        final Forked<Object[]> sender = Forked.start("sender", () -> {
            final int n = mb.sendMany(batch, 0, 10);
            return new Object[] {n, Thread.interrupted()};
        });
        sender.awaitParkedOn(MailboxRing.of(mb));
        sender.thread().interrupt();
        assertThat(sender.join()).as("admitted, interrupt flag set again").containsExactly(4, true);
        // nothing admitted yet when the interrupt comes: the exception
        final Forked<Integer> second = Forked.start("second", () -> mb.sendMany(batch, 4, 10));
        second.awaitParkedOn(MailboxRing.of(mb));
        second.thread().interrupt();
        assertThat(second.joinFailure()).isInstanceOf(InterruptedException.class);
        assertThat(drainIds(v, mb)).containsExactlyElementsOf(ids(0, 0, 4));
        assertThat(mb.stats().parkedProducers()).isZero();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldReportThePartWhenClosedWhileParked(MailboxVariant v) throws Exception {
        final Mailbox<Object> mb = v.create(4);
        final List<Object> batch = messages(v, 0, 0, 10);
        final Forked<Integer> sender = Forked.start("sender", () -> mb.sendMany(batch, 0, 10));
        sender.awaitParkedOn(MailboxRing.of(mb));
        mb.close();
        assertThat(sender.join()).as("admitted before the close").isEqualTo(4);
        assertThat(mb.stats().rejectedClosed()).isEqualTo(1);
        assertThatThrownBy(() -> mb.sendMany(batch, 4, 10)).isInstanceOf(MailboxClosedException.class);
        assertThat(drainIds(v, mb)).containsExactlyElementsOf(ids(0, 0, 4));
        assertThat(mb.isTerminated()).isTrue();
    }

    @ParameterizedTest
    @EnumSource(MailboxVariant.class)
    void shouldThrowWhenTheConsumerWouldWaitForItself(MailboxVariant v) {
        final Mailbox<Object> mb = v.create(2);
        final List<Object> batch = messages(v, 0, 0, 6);
        assertThat(mb.trySendMany(batch, 0, 2)).isEqualTo(2);
        final List<Throwable> thrown = new ArrayList<>();
        mb.tryRecvMany(m -> {
            if (thrown.isEmpty()) {
                try {
                    // one slot is free now (the message in hand): the run takes it, then would wait forever
                    mb.sendMany(batch, 2, 6);
                } catch (Throwable t) {
                    thrown.add(t);
                }
            }
        }, 1);
        assertThat(thrown).singleElement().isInstanceOf(IllegalStateException.class)
                .satisfies(t -> assertThat(t).hasMessageContaining("admitted=1 of 4"));
        assertThat(drainIds(v, mb)).containsExactlyElementsOf(ids(0, 1, 2));
    }
}
