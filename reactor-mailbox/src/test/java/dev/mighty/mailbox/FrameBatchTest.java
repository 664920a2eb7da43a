package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The contract of {@link FrameBatch} and the batched frame sends ({@code FrameMailbox.trySendMany(FrameBatch, ..)},
 * {@code sendMany(FrameBatch, ..)}), one case per rule: frames arrive in order with their kind, id and bytes (inline
 * and spilled), a prefix of the run is taken when the mailbox is nearly full, bad input is refused before anything is
 * admitted, buffers' positions are left alone, and the counters stay exact. Concurrent producers sending batches are
 * in {@link BatchedSendConcurrencyTest}; the zero-allocation check in {@link AllocationTest}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class FrameBatchTest {

    private record Received(int kind, long id, byte[] payload) {
    }

    private static List<Received> drain(FrameMailbox fm) {
        final List<Received> out = new ArrayList<>();
        fm.tryRecvFrames(f -> {
            final byte[] copy = new byte[f.payloadLength()];
            f.getPayload(copy, 0);
            out.add(new Received(f.kind(), f.correlationId(), copy));
        }, Integer.MAX_VALUE);
        return out;
    }

    private static byte[] bytes(int n, int seed) {
        final byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed * 31 + i);
        }
        return b;
    }

    @ParameterizedTest(name = "{0}-byte payloads")
    @ValueSource(ints = {0, 32, FrameMailbox.INLINE_PAYLOAD, 200})
    void shouldDeliverEveryFrameOfTheRunInOrderWithItsKindIdAndBytes(int size) {
        final FrameMailbox fm = Mailboxes.frames(16);
        final FrameBatch batch = new FrameBatch(8);
        final List<ByteBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            // heap and direct buffers, with a non-zero position: the run copies from the position add() saw
            final byte[] payload = bytes(size, i);
            final ByteBuffer buffer = (i & 1) == 0 ? ByteBuffer.allocate(size + 3)
                    : ByteBuffer.allocateDirect(size + 3);
            buffer.put(new byte[3]).put(payload).flip().position(3);
            buffers.add(buffer);
            batch.add(10 + i, 100L + i, buffer);
        }
        assertThat(fm.trySendMany(batch, 2, 8)).isEqualTo(6);
        final List<Received> got = drain(fm);
        assertThat(got).hasSize(6);
        for (int i = 0; i < 6; i++) {
            assertThat(got.get(i).kind()).isEqualTo(12 + i);
            assertThat(got.get(i).id()).isEqualTo(102L + i);
            assertThat(got.get(i).payload()).isEqualTo(bytes(size, 2 + i));
        }
        for (ByteBuffer b : buffers) {
            assertThat(b.position()).as("the buffer's position is left as it was").isEqualTo(3);
        }
        assertThat(fm.stats().admitted()).isEqualTo(6);
        assertThat(fm.stats().refused()).isZero();
    }

    @Test
    void shouldCopyTheBytesAddSawEvenIfThePositionMovesBeforeTheSend() {
        final FrameMailbox fm = Mailboxes.frames(4);
        final ByteBuffer buffer = ByteBuffer.wrap(bytes(10, 1));
        final FrameBatch batch = new FrameBatch(2).add(1, 1L, buffer);
        buffer.position(buffer.limit()); // consumed by the caller after add()
        assertThat(fm.trySendMany(batch, 0, 1)).isEqualTo(1);
        assertThat(drain(fm).get(0).payload()).isEqualTo(bytes(10, 1));
    }

    @Test
    void shouldTakeAPrefixWhenNearlyFullAndCountTheCutOnceAsRefused() {
        final FrameMailbox fm = Mailboxes.frames(8);
        final ByteBuffer payload = ByteBuffer.wrap(bytes(16, 0));
        final FrameBatch batch = new FrameBatch(10);
        for (int i = 0; i < 10; i++) {
            batch.add(0, i, payload);
        }
        assertThat(fm.trySendMany(batch, 0, 5)).isEqualTo(5);
        assertThat(fm.trySendMany(batch, 5, 10)).as("3 free of 8").isEqualTo(3);
        assertThat(fm.trySendMany(batch, 8, 10)).as("full").isZero();
        assertThat(fm.stats().refused()).isEqualTo(2);
        assertThat(drain(fm)).extracting(Received::id).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
        assertThat(fm.trySendMany(batch, 8, 10)).isEqualTo(2);
        assertThat(drain(fm)).extracting(Received::id).containsExactly(8L, 9L);
    }

    @Test
    void shouldRefuseAnOversizedPayloadBeforeAnythingIsAdmitted() {
        final FrameMailbox fm = Mailboxes.frames(8, 64);
        final FrameBatch batch = new FrameBatch(3)
                .add(0, 0L, ByteBuffer.allocate(10))
                .add(0, 1L, ByteBuffer.allocate(65))
                .add(0, 2L, ByteBuffer.allocate(10));
        assertThatThrownBy(() -> fm.trySendMany(batch, 0, 3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("index=1")
                .hasMessageContaining("nothing was admitted");
        assertThatThrownBy(() -> fm.sendMany(batch, 0, 3)).isInstanceOf(IllegalArgumentException.class);
        assertThat(fm.size()).isZero();
        assertThat(fm.stats().admitted()).isZero();
        assertThat(fm.trySendMany(batch, 0, 1)).as("the frames before it are fine alone").isEqualTo(1);
        assertThat(fm.trySendMany(batch, 2, 3)).isEqualTo(1);
        assertThat(drain(fm)).extracting(Received::id).containsExactly(0L, 2L);
    }

    @Test
    void shouldCheckTheRangeAndArguments() {
        final FrameMailbox fm = Mailboxes.frames(8);
        final FrameBatch batch = new FrameBatch(2).add(0, 0L, ByteBuffer.allocate(1));
        assertThatThrownBy(() -> fm.trySendMany((FrameBatch) null, 0, 0)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> fm.trySendMany(batch, 1, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> fm.trySendMany(batch, 0, 2)).as("past size(), not maxFrames()")
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> fm.trySendMany(batch, -1, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> fm.sendMany(batch, 0, 1, Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> fm.sendMany(batch, 0, 1, null)).isInstanceOf(NullPointerException.class);
        assertThat(fm.trySendMany(batch, 1, 1)).as("an empty run").isZero();
        assertThat(fm.stats().admitted()).isZero();
        assertThat(fm.stats().refused()).isZero();

        assertThatThrownBy(() -> new FrameBatch(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> batch.add(0, 0L, null)).isInstanceOf(NullPointerException.class);
        batch.add(0, 1L, ByteBuffer.allocate(1));
        assertThat(batch.isFull()).isTrue();
        assertThatThrownBy(() -> batch.add(0, 2L, ByteBuffer.allocate(1)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("maxFrames=2");
        assertThatThrownBy(() -> batch.payloadLength(2)).isInstanceOf(IndexOutOfBoundsException.class);
        batch.clear();
        assertThat(batch.size()).isZero();
        assertThat(batch.maxFrames()).isEqualTo(2);
        assertThatThrownBy(() -> fm.trySendMany(batch, 0, 1)).as("cleared").isInstanceOf(
                IndexOutOfBoundsException.class);
    }

    @Test
    void shouldRejectARunOnAClosedMailbox() {
        final FrameMailbox fm = Mailboxes.frames(8);
        final FrameBatch batch = new FrameBatch(2).add(0, 0L, ByteBuffer.allocate(1)).add(0, 1L, ByteBuffer.allocate(1));
        fm.close();
        assertThatThrownBy(() -> fm.trySendMany(batch, 0, 2)).isInstanceOf(MailboxClosedException.class);
        assertThatThrownBy(() -> fm.sendMany(batch, 0, 2)).isInstanceOf(MailboxClosedException.class);
        assertThat(fm.stats().rejectedClosed()).isEqualTo(2);
        assertThat(fm.trySendMany(batch, 0, 0)).as("an empty run is not a send").isZero();
    }

    @Test
    void shouldWaitForRoomUntilTheWholeRunIsIn() throws Exception {
        final FrameMailbox fm = Mailboxes.frames(4);
        final FrameBatch batch = new FrameBatch(10);
        for (int i = 0; i < 10; i++) {
            batch.add(0, i, ByteBuffer.wrap(bytes(8, i)));
        }
        final Forked<Integer> sender = Forked.start("batch-sender", () -> fm.sendMany(batch, 0, 10));
        final List<Long> ids = new ArrayList<>();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (ids.size() < 10 && System.nanoTime() < deadline) {
            fm.recvFrames(f -> ids.add(f.correlationId()), 3);
        }
        assertThat(sender.join(Duration.ofSeconds(30))).isEqualTo(10);
        assertThat(ids).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L);
    }

    @Test
    void shouldReturnWhatWasAdmittedWhenTheTimeoutElapses() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(4);
        final FrameBatch batch = new FrameBatch(6);
        for (int i = 0; i < 6; i++) {
            batch.add(0, i, ByteBuffer.allocate(4));
        }
        assertThat(fm.sendMany(batch, 0, 6, Duration.ofMillis(20))).isEqualTo(4);
        assertThat(fm.sendMany(batch, 4, 6, Duration.ZERO)).isZero();
        assertThat(drain(fm)).extracting(Received::id).containsExactly(0L, 1L, 2L, 3L);
    }

    @Test
    void shouldThrowInterruptedWhenInterruptedOnEntryAndAdmitNothing() {
        final FrameMailbox fm = Mailboxes.frames(4);
        final FrameBatch batch = new FrameBatch(1).add(0, 0L, ByteBuffer.allocate(4));
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> fm.sendMany(batch, 0, 1)).isInstanceOf(InterruptedException.class);
        assertThat(fm.size()).isZero();
    }

    @Test
    void shouldFailAnUntimedSendFromInsideTheConsumersOwnReceiveWhenFull() {
        final FrameMailbox fm = Mailboxes.frames(2);
        final FrameBatch batch = new FrameBatch(4);
        for (int i = 0; i < 4; i++) {
            batch.add(0, i, ByteBuffer.allocate(1));
        }
        assertThat(fm.trySendMany(batch, 0, 2)).isEqualTo(2);
        final List<Throwable> thrown = new ArrayList<>();
        fm.tryRecvFrames(f -> {
            try {
                fm.sendMany(batch, 2, 4);
            } catch (Throwable t) {
                thrown.add(t);
            }
        }, 1);
        assertThat(thrown).singleElement().isInstanceOf(IllegalStateException.class);
    }
}
