package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The slab path of {@link FrameMailbox}: inline and spilled payloads, the zero-copy send from a
 * {@link ByteBuffer}, the {@link FrameView} flyweight, the payload limit and spill retention, and
 * {@link MessageFrame} immutability. The {@code Mailbox} contract itself is in {@link MailboxContractTest}.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class FrameMailboxTest {

    /** Payload sizes around the inline bound (48) and the power-of-two spill sizes. */
    static IntStream payloadSizes() {
        return IntStream.of(0, 1, 15, 47, 48, 49, 63, 64, 65, 100, 1000, 4096, 4097, 70_000);
    }

    private static byte[] bytes(int length, int seed) {
        final byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (seed * 131 + i * 17 + (i >>> 8));
        }
        return b;
    }

    /** What a handler saw: a copy of everything the view showed. */
    private record Seen(int kind, long correlationId, byte[] payload) {
    }

    private static List<Seen> recvAllFrames(FrameMailbox fm) {
        final List<Seen> seen = new ArrayList<>();
        fm.tryRecvFrames(view -> {
            final byte[] payload = new byte[view.payloadLength()];
            assertThat(view.getPayload(payload, 0)).isEqualTo(payload.length);
            seen.add(new Seen(view.kind(), view.correlationId(), payload));
        }, Integer.MAX_VALUE);
        return seen;
    }

    private static FrameRing ring(FrameMailbox fm) {
        return (FrameRing) MailboxRing.of(fm);
    }

    // ------------------------------------------------------------------ round trips

    @ParameterizedTest(name = "{0} bytes")
    @MethodSource("payloadSizes")
    void shouldRoundTripPayloadExactlyWhenSentFromHeapBuffer(int size) {
        final FrameMailbox fm = Mailboxes.frames(4);
        final byte[] payload = bytes(size, 1);
        // the payload sits between position 3 and limit 3 + size of a larger buffer
        final ByteBuffer buffer = ByteBuffer.allocate(size + 10);
        buffer.position(3).put(payload).flip().position(3);
        final int limit = buffer.limit();

        assertThat(fm.trySend(7, 0x1234_5678_9ABCL, buffer)).isTrue();

        assertThat(buffer.position()).isEqualTo(3);
        assertThat(buffer.limit()).isEqualTo(limit);
        final List<Seen> seen = recvAllFrames(fm);
        assertThat(seen).hasSize(1);
        assertThat(seen.get(0).kind()).isEqualTo(7);
        assertThat(seen.get(0).correlationId()).isEqualTo(0x1234_5678_9ABCL);
        assertThat(seen.get(0).payload()).isEqualTo(payload);
        assertThat(fm.size()).isZero();
    }

    @ParameterizedTest(name = "{0} bytes")
    @MethodSource("payloadSizes")
    void shouldRoundTripPayloadExactlyWhenSentFromDirectOrReadOnlyBuffer(int size) throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(4);
        final byte[] payload = bytes(size, 2);
        final ByteBuffer direct = ByteBuffer.allocateDirect(size).put(payload).flip();
        final ByteBuffer readOnly = ByteBuffer.wrap(payload).asReadOnlyBuffer();

        fm.send(-1, Long.MIN_VALUE, direct);
        assertThat(fm.send(Integer.MAX_VALUE, Long.MAX_VALUE, readOnly, Duration.ZERO)).isTrue();

        assertThat(direct.position()).isZero();
        assertThat(readOnly.position()).isZero();
        final List<MessageFrame> frames = new ArrayList<>();
        assertThat(fm.recvFrames(view -> frames.add(view.toFrame()), 10)).isEqualTo(2);
        assertThat(frames).containsExactly(MessageFrame.of(-1, Long.MIN_VALUE, payload),
                MessageFrame.of(Integer.MAX_VALUE, Long.MAX_VALUE, payload));
    }

    /**
     * A heap buffer that is a slice of a larger array (a non-zero {@code arrayOffset()}) is copied from its own
     * position, for every inline length and a spilled one: the send takes the array path for heap buffers.
     */
    @Test
    void shouldRoundTripPayloadWhenHeapBufferIsSliceWithArrayOffset() {
        final FrameMailbox fm = Mailboxes.frames(2);
        for (final int size : new int[] {0, 1, 7, 8, 9, 31, 32, 33, 47, 48, 49, 200}) {
            final byte[] payload = bytes(size, size + 3);
            final byte[] backing = new byte[size + 20];
            Arrays.fill(backing, (byte) -1);
            System.arraycopy(payload, 0, backing, 11, size);
            final ByteBuffer slice = ByteBuffer.wrap(backing).position(9).slice().position(2).limit(2 + size);
            assertThat(slice.arrayOffset()).isEqualTo(9);

            assertThat(fm.trySend(size, size, slice)).isTrue();

            assertThat(slice.position()).isEqualTo(2);
            final List<Seen> seen = recvAllFrames(fm);
            assertThat(seen).as("size %d", size).hasSize(1);
            assertThat(seen.get(0).payload()).as("size %d", size).isEqualTo(payload);
        }
    }

    /**
     * Every inline length, from an odd position of heap and direct buffers of either byte order, arrives byte for
     * byte (the copy must not go through the buffer's order, e.g. by moving 8 bytes at a time with getLong).
     */
    @Test
    void shouldRoundTripEveryInlineLengthWhenSourceHasAnyOrderAndOddPosition() {
        final FrameMailbox fm = Mailboxes.frames(2);
        for (int size = 0; size <= FrameRing.INLINE_PAYLOAD; size++) {
            final byte[] payload = bytes(size, size);
            for (final ByteOrder order : new ByteOrder[] {ByteOrder.BIG_ENDIAN, ByteOrder.LITTLE_ENDIAN}) {
                for (final ByteBuffer buffer : new ByteBuffer[] {ByteBuffer.allocate(size + 8),
                        ByteBuffer.allocateDirect(size + 8)}) {
                    buffer.order(order).position(5).put(payload).flip().position(5);
                    assertThat(fm.trySend(size, order.hashCode(), buffer)).isTrue();
                    assertThat(buffer.position()).isEqualTo(5);
                    final List<Seen> seen = recvAllFrames(fm);
                    final String what = "size " + size + ", " + order + ", direct " + buffer.isDirect();
                    assertThat(seen).as(what).hasSize(1);
                    assertThat(seen.get(0).kind()).as(what).isEqualTo(size);
                    assertThat(seen.get(0).correlationId()).as(what).isEqualTo(order.hashCode());
                    assertThat(seen.get(0).payload()).as(what).isEqualTo(payload);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} bytes")
    @MethodSource("payloadSizes")
    void shouldRoundTripMessageFrameWhenSentAndReceivedAsMailbox(int size) throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(4);
        final MessageFrame sent = MessageFrame.of(3, 99L, bytes(size, 3));
        assertThat(fm.trySend(sent)).isTrue();
        fm.send(sent);

        final MessageFrame first = fm.tryRecv();
        assertThat(first).isEqualTo(sent).isNotSameAs(sent).hasSameHashCodeAs(sent);
        assertThat(first.kind()).isEqualTo(3);
        assertThat(first.correlationId()).isEqualTo(99L);
        assertThat(first.payloadLength()).isEqualTo(size);

        // the received frame is its own copy: reusing the slot does not change it
        final ByteBuffer other = ByteBuffer.wrap(bytes(size, 4));
        assertThat(fm.trySend(5, 6L, other)).isTrue();
        assertThat(fm.recv()).isEqualTo(sent);
        assertThat(first).isEqualTo(sent);
        assertThat(fm.recv()).isEqualTo(MessageFrame.of(5, 6L, bytes(size, 4)));
    }

    @ParameterizedTest(name = "{0} bytes")
    @MethodSource("payloadSizes")
    void shouldCopyIntoByteBufferWhenViewPayloadRead(int size) {
        final FrameMailbox fm = Mailboxes.frames(2);
        final byte[] payload = bytes(size, 5);
        assertThat(fm.trySend(1, 2L, ByteBuffer.wrap(payload))).isTrue();
        final ByteBuffer dst = ByteBuffer.allocate(size + 4).position(4);

        fm.tryRecvFrames(view -> assertThat(view.getPayload(dst)).isEqualTo(size), 1);

        assertThat(dst.position()).isEqualTo(size + 4);
        assertThat(Arrays.copyOfRange(dst.array(), 4, size + 4)).isEqualTo(payload);
    }

    @Test
    void shouldKeepEachPayloadWhenSenderReusesItsBufferRightAfterSend() {
        final FrameMailbox fm = Mailboxes.frames(16);
        final ByteBuffer reused = ByteBuffer.allocate(200);
        final byte[] array = new byte[200];
        final List<byte[]> expected = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            final int size = i % 2 == 0 ? 40 : 150; // inline and spilled, through the same buffer
            final byte[] payload = bytes(size, 10 + i);
            reused.clear().put(payload).flip();
            assertThat(fm.trySend(i, i, reused)).isTrue();
            Arrays.fill(reused.array(), (byte) 0x5A); // overwrite at once
            expected.add(payload);

            System.arraycopy(payload, 0, array, 0, size);
            assertThat(fm.trySend(MessageFrame.of(100 + i, i, Arrays.copyOf(array, size)))).isTrue();
            Arrays.fill(array, (byte) 0x5A);
            expected.add(payload);
        }
        final List<Seen> seen = recvAllFrames(fm);
        assertThat(seen).hasSize(16);
        for (int i = 0; i < 16; i++) {
            assertThat(seen.get(i).payload()).as("frame %d", i).isEqualTo(expected.get(i));
        }
    }

    // ------------------------------------------------------------------ payload limit

    @Test
    void shouldRejectOversizedPayloadBeforeAdmittingAnything() {
        final FrameMailbox fm = Mailboxes.frames(4, 100);
        assertThat(fm.maxPayload()).isEqualTo(100);
        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(100))).isTrue(); // exactly the limit is fine
        final String message = "payload: 101 bytes (expected: <= maxPayload 100)";
        final ByteBuffer big = ByteBuffer.allocate(101);
        final MessageFrame bigFrame = MessageFrame.of(2, 2L, new byte[101]);

        assertThatThrownBy(() -> fm.trySend(2, 2L, big)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> fm.send(2, 2L, big)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> fm.send(2, 2L, big, Duration.ofSeconds(1)))
                .isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(message);
        assertThatThrownBy(() -> fm.trySend(bigFrame)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> fm.send(bigFrame)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> fm.send(bigFrame, Duration.ofSeconds(1)))
                .isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(message);

        assertThat(big.position()).isZero();
        assertThat(fm.size()).isEqualTo(1);
        assertThat(fm.stats().admitted()).isEqualTo(1);
        assertThat(fm.stats().refused()).isZero();
        assertThat(recvAllFrames(fm)).hasSize(1);
    }

    @Test
    void shouldRejectOversizedPayloadWhenMailboxFullOrMaxPayloadZero() {
        final FrameMailbox fm = Mailboxes.<Object>builder().capacity(1).maxPayload(0).buildFrames();
        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(0))).isTrue();
        assertThatThrownBy(() -> fm.trySend(2, 2L, ByteBuffer.allocate(1)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("payload: 1 bytes (expected: <= maxPayload 0)");
        assertThat(fm.stats().refused()).isZero();
        assertThat(fm.stats().admitted()).isEqualTo(1);
    }

    @Test
    void shouldRejectBadPayloadLimitsWhenBuilding() {
        assertThatThrownBy(() -> Mailboxes.frames(4, -1)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("maxPayload: -1 (expected: ");
        assertThatThrownBy(() -> Mailboxes.builder().maxPayload(-1)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxPayload: -1 (expected: >= 0)");
        assertThatThrownBy(() -> Mailboxes.builder().maxRetainedSpill(-1))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxRetainedSpill: -1 (expected: >= 0)");
        assertThat(Mailboxes.frames(4).maxPayload()).isEqualTo(FrameMailbox.DEFAULT_MAX_PAYLOAD);
        assertThat(Mailboxes.frames(4).maxRetainedSpill()).isEqualTo(FrameMailbox.DEFAULT_MAX_RETAINED_SPILL);
    }

    @Test
    void shouldRejectNullPayloadOrHandlerAndLeaveMailboxUnchanged() {
        final FrameMailbox fm = Mailboxes.frames(4);
        assertThatThrownBy(() -> fm.trySend(1, 1L, null)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> fm.send(1, 1L, null)).isExactlyInstanceOf(NullPointerException.class);
        assertThat(fm.size()).isZero();
        assertThat(fm.stats().admitted()).isZero();

        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(1))).isTrue();
        assertThatThrownBy(() -> fm.tryRecvFrames(null, 1)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> fm.recvFrames(null, 1)).isExactlyInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> fm.tryRecvFrames(f -> { }, -1)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThatThrownBy(() -> fm.recvFrames(f -> { }, -1)).isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThat(fm.size()).isEqualTo(1);
        assertThat(fm.tryRecvFrames(f -> { }, 0)).isZero();
        assertThat(fm.size()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ blocking frame calls

    @Test
    void shouldThrowAtOnceWhenFrameCallEnteredInterrupted() {
        final FrameMailbox fm = Mailboxes.frames(4);
        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(1))).isTrue();
        for (int call = 0; call < 3; call++) {
            final int which = call;
            Thread.currentThread().interrupt();
            try {
                assertThat(catchThrowable(() -> {
                    switch (which) {
                        case 0 -> fm.send(2, 2L, ByteBuffer.allocate(1));
                        case 1 -> fm.send(2, 2L, ByteBuffer.allocate(1), Duration.ofMinutes(1));
                        default -> fm.recvFrames(f -> { }, 4);
                    }
                })).as("call %d", which).isInstanceOf(InterruptedException.class);
            } finally {
                assertThat(Thread.interrupted()).isFalse();
            }
        }
        assertThat(fm.size()).isEqualTo(1);
        assertThat(fm.stats().admitted()).isEqualTo(1);
    }

    @Test
    void shouldWakeParkedFrameReceiverAndSenderWhenClosed() throws Exception {
        final FrameMailbox fm = Mailboxes.frames(1);
        final Forked<Integer> receiver = Forked.start("receiver", () -> fm.recvFrames(f -> { }, 4));
        receiver.awaitParkedOn(ring(fm));
        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(60))).isTrue();
        assertThat(receiver.join()).isEqualTo(1);

        assertThat(fm.trySend(2, 2L, ByteBuffer.allocate(60))).isTrue();
        final Forked<Void> sender = Forked.start("sender", () -> {
            fm.send(3, 3L, ByteBuffer.allocate(60));
            return null;
        });
        sender.awaitParkedOn(ring(fm));
        final Forked<Boolean> timedSender = Forked.start("timed sender",
                () -> fm.send(4, 4L, ByteBuffer.allocate(60), Duration.ofMinutes(1)));
        timedSender.awaitParkedOn(ring(fm));
        fm.close();
        assertThat(sender.joinFailure()).isExactlyInstanceOf(MailboxClosedException.class);
        assertThat(timedSender.joinFailure()).isExactlyInstanceOf(MailboxClosedException.class);
        assertThat(recvAllFrames(fm)).extracting(Seen::kind).containsExactly(2);
        assertThat(fm.recvFrames(f -> { }, 4)).isZero();
    }

    @Test
    void shouldReturnFalseWhenTimedFrameSendTimesOut() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(1);
        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(1))).isTrue();
        assertThat(fm.trySend(2, 2L, ByteBuffer.allocate(1))).isFalse();
        assertThat(fm.send(2, 2L, ByteBuffer.allocate(1), Duration.ofMillis(20))).isFalse();
        assertThatThrownBy(() -> fm.send(2, 2L, ByteBuffer.allocate(1), Duration.ofMillis(-1)))
                .isExactlyInstanceOf(IllegalArgumentException.class);
        assertThat(fm.stats().refused()).isEqualTo(2);
        assertThat(recvAllFrames(fm)).extracting(Seen::kind).containsExactly(1);
    }

    @Test
    void shouldThrowCauseFromRecvFramesWhenClosedExceptionallyAndDrained() {
        final FrameMailbox fm = Mailboxes.frames(2);
        assertThat(fm.trySend(1, 1L, ByteBuffer.allocate(1))).isTrue();
        final IllegalStateException cause = new IllegalStateException("upstream");
        fm.closeExceptionally(cause);
        assertThatThrownBy(() -> fm.trySend(2, 2L, ByteBuffer.allocate(1)))
                .isExactlyInstanceOf(MailboxClosedException.class).hasCause(cause);
        assertThat(recvAllFrames(fm)).hasSize(1);
        assertThat(catchThrowable(() -> fm.recvFrames(f -> { }, 1))).isExactlyInstanceOf(MailboxClosedException.class)
                .cause().isSameAs(cause);
    }

    // ------------------------------------------------------------------ the view

    @Test
    void shouldRefuseViewUseWhenOutsideHandler() {
        final FrameMailbox fm = Mailboxes.frames(4);
        assertThat(fm.trySend(1, 1L, ByteBuffer.wrap(bytes(10, 1)))).isTrue();
        final AtomicReference<FrameView> escaped = new AtomicReference<>();
        assertThat(fm.tryRecvFrames(escaped::set, 1)).isEqualTo(1);

        final FrameView view = escaped.get();
        assertThatThrownBy(view::kind).isExactlyInstanceOf(IllegalStateException.class);
        assertThatThrownBy(view::correlationId).isExactlyInstanceOf(IllegalStateException.class);
        assertThatThrownBy(view::payloadLength).isExactlyInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> view.getPayload(new byte[64], 0)).isExactlyInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> view.getPayload(ByteBuffer.allocate(64)))
                .isExactlyInstanceOf(IllegalStateException.class);
        assertThatThrownBy(view::toFrame).isExactlyInstanceOf(IllegalStateException.class);
        assertThat(view).hasToString("FrameView[unbound]");
    }

    @Test
    void shouldCountFrameAsReceivedAndKeepTheRestWhenHandlerThrows() {
        final FrameMailbox fm = Mailboxes.frames(8);
        for (int kind = 0; kind < 4; kind++) {
            assertThat(fm.trySend(kind, kind, ByteBuffer.wrap(bytes(kind * 30, kind)))).isTrue();
        }
        final IllegalStateException boom = new IllegalStateException("boom");
        final AtomicReference<FrameView> escaped = new AtomicReference<>();

        assertThat(catchThrowable(() -> fm.tryRecvFrames(view -> {
            if (view.kind() == 1) {
                escaped.set(view);
                throw boom;
            }
        }, 10))).isSameAs(boom);

        assertThat(fm.stats().received()).isEqualTo(2);
        assertThat(fm.size()).isEqualTo(2);
        assertThatThrownBy(escaped.get()::kind).isExactlyInstanceOf(IllegalStateException.class);
        final List<Seen> rest = recvAllFrames(fm);
        assertThat(rest).extracting(Seen::kind).containsExactly(2, 3);
        assertThat(rest.get(1).payload()).isEqualTo(bytes(90, 3));
    }

    @Test
    void shouldRejectTooSmallDestinationWhenCopyingPayload() {
        final FrameMailbox fm = Mailboxes.frames(2);
        assertThat(fm.trySend(1, 1L, ByteBuffer.wrap(bytes(60, 1)))).isTrue();
        fm.tryRecvFrames(view -> {
            assertThatThrownBy(() -> view.getPayload(new byte[60], 1))
                    .isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> view.getPayload(ByteBuffer.allocate(59)))
                    .isInstanceOf(java.nio.BufferOverflowException.class);
        }, 1);
        assertThat(fm.size()).isZero();
    }

    @Test
    void shouldNotRedeliverFrameWhenHandlerReceivesReentrantly() {
        final FrameMailbox fm = Mailboxes.frames(8);
        for (int kind = 0; kind < 4; kind++) {
            assertThat(fm.trySend(kind, kind, ByteBuffer.allocate(kind))).isTrue();
        }
        final List<Integer> kinds = new ArrayList<>();
        final Throwable thrown = catchThrowable(() -> fm.tryRecvFrames(view -> {
            kinds.add(view.kind());
            if (view.kind() == 0) {
                // the consumer thread takes more itself; either it gets the next frames or it is told no
                fm.tryRecvFrames(inner -> kinds.add(inner.kind()), 2);
            }
        }, 10));

        assertThat(thrown == null || thrown instanceof IllegalStateException).as("thrown: %s", thrown).isTrue();
        kinds.addAll(recvAllFrames(fm).stream().map(Seen::kind).toList());
        assertThat(kinds).containsExactly(0, 1, 2, 3);
        assertThat(fm.stats().received()).isEqualTo(4);
        assertThat(fm.size()).isZero();
    }

    // ------------------------------------------------------------------ spill retention

    @Test
    void shouldKeepSpillBufferForReuseWhenWithinRetentionBound() {
        final FrameMailbox fm = Mailboxes.<Object>builder().capacity(1).maxRetainedSpill(256).buildFrames();
        final FrameRing ring = ring(fm);
        assertThat(fm.maxRetainedSpill()).isEqualTo(256);

        assertThat(fm.trySend(1, 1L, ByteBuffer.wrap(bytes(48, 1)))).isTrue();
        recvAllFrames(fm);
        assertThat(ring.spill[0]).as("an inline payload uses no spill buffer").isNull();

        assertThat(fm.trySend(1, 1L, ByteBuffer.wrap(bytes(200, 1)))).isTrue();
        recvAllFrames(fm);
        final byte[] kept = ring.spill[0];
        assertThat(kept).isNotNull();
        assertThat(kept.length).isBetween(200, 256);

        assertThat(fm.trySend(2, 2L, ByteBuffer.wrap(bytes(180, 2)))).isTrue();
        assertThat(ring.spill[0]).as("a payload that fits reuses the slot's buffer").isSameAs(kept);
        assertThat(recvAllFrames(fm).get(0).payload()).isEqualTo(bytes(180, 2));
        assertThat(ring.spill[0]).isSameAs(kept);
    }

    @Test
    void shouldDropSpillBufferAfterReceiveWhenOverRetentionBound() {
        final FrameMailbox fm = Mailboxes.<Object>builder().capacity(2).maxRetainedSpill(256).buildFrames();
        final FrameRing ring = ring(fm);
        final int[] sizes = {1000, 300, 257, 70_000, 100, 5000, 49};
        long id = 0;
        for (int size : sizes) { // both slots see sizes on both sides of the bound, in turn
            for (int slot = 0; slot < 2; slot++, id++) {
                assertThat(fm.trySend(size, id, ByteBuffer.wrap(bytes(size, (int) id)))).isTrue();
            }
            final List<Seen> seen = recvAllFrames(fm);
            assertThat(seen).hasSize(2);
            for (int slot = 0; slot < 2; slot++) {
                final long sent = id - 2 + slot;
                assertThat(seen.get(slot).payload()).as("payload %d of %d bytes", sent, size)
                        .isEqualTo(bytes(size, (int) sent));
                assertThat(ring.spill[slot] == null ? 0 : ring.spill[slot].length).as("kept after %d bytes", size)
                        .isLessThanOrEqualTo(256);
            }
        }
    }

    /**
     * The receive decides whether to drop a slot's spill buffer from the payload length alone: for every bound,
     * a buffer is dropped exactly when its payload was over the bound, and what stays is within it.
     */
    @Test
    void shouldDropSpillBufferExactlyWhenPayloadOverRetentionBound() {
        for (final int bound : new int[] {0, 10, 49, 64, 100, 256}) {
            final FrameMailbox fm = Mailboxes.<Object>builder().capacity(1).maxRetainedSpill(bound).buildFrames();
            final FrameRing ring = ring(fm);
            long id = 0;
            for (final int size : new int[] {49, bound, bound + 1, 60, 300, bound - 1, 49, 1000, 64, bound}) {
                if (size <= FrameRing.INLINE_PAYLOAD) {
                    continue;
                }
                assertThat(fm.trySend(1, id, ByteBuffer.wrap(bytes(size, (int) id)))).isTrue();
                final List<Seen> seen = recvAllFrames(fm);
                assertThat(seen.get(0).payload()).as("bound %d, size %d", bound, size)
                        .isEqualTo(bytes(size, (int) id));
                if (size > bound) {
                    assertThat(ring.spill[0]).as("bound %d, size %d", bound, size).isNull();
                } else {
                    assertThat(ring.spill[0]).as("bound %d, size %d", bound, size).isNotNull();
                    assertThat(ring.spill[0].length).as("bound %d, size %d", bound, size)
                            .isBetween(size, bound);
                }
                id++;
            }
        }
    }

    @Test
    void shouldKeepSpillBufferWhenPayloadWithinNonPowerOfTwoRetentionBound() {
        final FrameMailbox fm = Mailboxes.<Object>builder().capacity(1).maxRetainedSpill(100).buildFrames();
        final FrameRing ring = ring(fm);
        assertThat(fm.trySend(1, 1L, ByteBuffer.wrap(bytes(100, 1)))).isTrue();
        final byte[] first = ring.spill[0];
        recvAllFrames(fm);
        assertThat(fm.trySend(1, 2L, ByteBuffer.wrap(bytes(100, 2)))).isTrue();
        assertThat(ring.spill[0]).as("a 100-byte payload is within the 100-byte retention bound").isSameAs(first);
    }

    // ------------------------------------------------------------------ MessageFrame

    @Test
    void shouldCopyArrayWhenFrameCreated() {
        final byte[] payload = bytes(70, 9);
        final MessageFrame frame = MessageFrame.of(1, 2L, payload);
        Arrays.fill(payload, (byte) 0);

        final byte[] read = new byte[frame.payloadLength()];
        frame.payload().get(read);
        assertThat(read).isEqualTo(bytes(70, 9));
    }

    @Test
    void shouldExposeReadOnlyIndependentPayloadViewsWhenAsked() {
        final MessageFrame frame = MessageFrame.of(1, 2L, bytes(20, 9));
        final ByteBuffer view = frame.payload();
        assertThat(view.isReadOnly()).isTrue();
        assertThat(view.position()).isZero();
        assertThat(view.limit()).isEqualTo(20);
        assertThatThrownBy(() -> view.put(0, (byte) 1)).isInstanceOf(ReadOnlyBufferException.class);
        assertThatThrownBy(view::array).isInstanceOf(ReadOnlyBufferException.class);

        view.position(10); // moving one view does not move the next
        assertThat(frame.payload().position()).isZero();
        assertThat(frame.payload().remaining()).isEqualTo(20);
    }

    @Test
    void shouldCompareByContentWhenFramesEqual() {
        assertThat(MessageFrame.of(1, 2L)).isEqualTo(MessageFrame.of(1, 2L, new byte[0]));
        assertThat(MessageFrame.of(1, 2L).payloadLength()).isZero();
        assertThat(MessageFrame.of(1, 2L, new byte[] {1})).isNotEqualTo(MessageFrame.of(1, 2L, new byte[] {2}))
                .isNotEqualTo(MessageFrame.of(1, 3L, new byte[] {1}))
                .isNotEqualTo(MessageFrame.of(2, 2L, new byte[] {1}));
        assertThatThrownBy(() -> MessageFrame.of(1, 2L, null)).isExactlyInstanceOf(NullPointerException.class);
    }
}
