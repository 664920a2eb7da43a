package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * A hostile reviewer's tests of the slab path, aimed at the phase-bit publication of {@link FrameRing}: a slot's
 * status word carries the lap's phase (bit 31) and the length, and the consumer never writes the slab. So every
 * test drives slots through many laps (capacity 1 flips the phase on every message), through both storage kinds
 * (inline and spilled, retained and dropped), through the renewal placeholders of the reservation epoch, and checks
 * every byte that comes out.
 */
@Timeout(300)
class FrameAbuseTest {
    private static final Duration FOREVER = ChronoUnit.FOREVER.getDuration();

    /** The ways a producer can hand a payload over; each returns the buffer it sent from (or null). */
    enum SendPath {
        HEAP_BIG_ENDIAN, HEAP_LITTLE_ENDIAN_OFFSET, DIRECT, READ_ONLY_HEAP, READ_ONLY_DIRECT, SLICED_HEAP, FRAME
    }

    /** The ways the consumer can take a frame. */
    enum RecvPath {
        VIEW_TO_ARRAY, VIEW_TO_BUFFER, VIEW_TO_FRAME, TRY_RECV, RECV, RECV_MANY, RECV_FRAMES
    }

    static byte[] payload(long id, int length) {
        final byte[] p = new byte[length];
        for (int i = 0; i < length; i++) {
            p[i] = (byte) (id * 131 + i * 17 + (i >>> 8));
        }
        return p;
    }

    /** A buffer holding {@code payload} between position and limit, with junk on both sides. */
    static ByteBuffer source(SendPath path, byte[] payload) {
        final int before = 5;
        final int after = 3;
        final ByteBuffer b;
        switch (path) {
            case HEAP_BIG_ENDIAN:
                b = ByteBuffer.allocate(before + payload.length + after);
                break;
            case HEAP_LITTLE_ENDIAN_OFFSET:
                b = ByteBuffer.allocate(before + payload.length + after).order(ByteOrder.LITTLE_ENDIAN);
                break;
            case DIRECT:
            case READ_ONLY_DIRECT:
                b = ByteBuffer.allocateDirect(before + payload.length + after);
                break;
            case READ_ONLY_HEAP:
                b = ByteBuffer.allocate(before + payload.length + after);
                break;
            case SLICED_HEAP:
                // a slice of a larger array: arrayOffset != 0, and the slice's own position != 0
                b = ByteBuffer.allocate(11 + before + payload.length + after).position(11).slice();
                break;
            default:
                throw new IllegalArgumentException("path: " + path);
        }
        for (int i = 0; i < b.capacity(); i++) {
            b.put(i, (byte) 0x5A);
        }
        b.position(before);
        b.put(payload);
        b.limit(before + payload.length).position(before);
        if (path == SendPath.READ_ONLY_HEAP || path == SendPath.READ_ONLY_DIRECT) {
            return b.asReadOnlyBuffer();
        }
        return b;
    }

    /** Sends one frame along {@code path}; checks the source buffer's position and limit are untouched. */
    static boolean trySend(FrameMailbox fm, SendPath path, int kind, long id, byte[] payload) {
        if (path == SendPath.FRAME) {
            return fm.trySend(MessageFrame.of(kind, id, payload));
        }
        final ByteBuffer src = source(path, payload);
        final int position = src.position();
        final int limit = src.limit();
        final boolean sent = fm.trySend(kind, id, src);
        assertThat(src.position()).as("position after send (%s)", path).isEqualTo(position);
        assertThat(src.limit()).as("limit after send (%s)", path).isEqualTo(limit);
        return sent;
    }

    static void send(FrameMailbox fm, SendPath path, int kind, long id, byte[] payload) throws InterruptedException {
        if (path == SendPath.FRAME) {
            if ((id & 1) == 0) {
                fm.send(MessageFrame.of(kind, id, payload));
            } else {
                assertThat(fm.send(MessageFrame.of(kind, id, payload), FOREVER)).isTrue();
            }
            return;
        }
        final ByteBuffer src = source(path, payload);
        final int position = src.position();
        if ((id & 1) == 0) {
            fm.send(kind, id, src);
        } else {
            assertThat(fm.send(kind, id, src, FOREVER)).isTrue();
        }
        assertThat(src.position()).isEqualTo(position);
    }

    /** A received frame, copied out. */
    record Got(int kind, long id, byte[] payload) {
    }

    /** Receives exactly one frame along {@code path}: it must be there (blocking paths wait for it). */
    static Got recvOne(FrameMailbox fm, RecvPath path) throws InterruptedException {
        return recvOne(fm, path, false);
    }

    /** As {@link #recvOne(FrameMailbox, RecvPath)}; with {@code spin}, a non-blocking path retries until it gets one. */
    static Got recvOne(FrameMailbox fm, RecvPath path, boolean spin) throws InterruptedException {
        for (;;) {
            final Got got = recvOneOrNull(fm, path);
            if (got != null || !spin) {
                assertThat(got).as("a frame taken by %s", path).isNotNull();
                return got;
            }
            Thread.onSpinWait();
        }
    }

    private static Got recvOneOrNull(FrameMailbox fm, RecvPath path) throws InterruptedException {
        final List<Got> got = new ArrayList<>(1);
        final int n;
        switch (path) {
            case VIEW_TO_ARRAY:
                n = fm.tryRecvFrames(v -> {
                    final byte[] dst = new byte[v.payloadLength() + 3];
                    assertThat(v.getPayload(dst, 3)).isEqualTo(v.payloadLength());
                    final byte[] p = new byte[v.payloadLength()];
                    System.arraycopy(dst, 3, p, 0, p.length);
                    got.add(new Got(v.kind(), v.correlationId(), p));
                }, 1);
                break;
            case VIEW_TO_BUFFER:
                n = fm.tryRecvFrames(v -> {
                    final ByteBuffer dst = ByteBuffer.allocateDirect(v.payloadLength() + 9).position(4);
                    assertThat(v.getPayload(dst)).isEqualTo(v.payloadLength());
                    assertThat(dst.position()).isEqualTo(4 + v.payloadLength());
                    final byte[] p = new byte[v.payloadLength()];
                    dst.get(4, p);
                    got.add(new Got(v.kind(), v.correlationId(), p));
                }, 1);
                break;
            case VIEW_TO_FRAME:
                n = fm.recvFrames(v -> {
                    final MessageFrame f = v.toFrame();
                    got.add(new Got(f.kind(), f.correlationId(), bytes(f)));
                }, 1);
                break;
            case TRY_RECV: {
                final MessageFrame f = fm.tryRecv();
                n = f == null ? 0 : 1;
                if (f != null) {
                    got.add(new Got(f.kind(), f.correlationId(), bytes(f)));
                }
                break;
            }
            case RECV: {
                final MessageFrame f = fm.recv();
                assertThat(f).as("recv at end of stream").isNotNull();
                n = 1;
                got.add(new Got(f.kind(), f.correlationId(), bytes(f)));
                break;
            }
            case RECV_MANY:
                n = fm.recvMany(f -> got.add(new Got(f.kind(), f.correlationId(), bytes(f))), 1);
                break;
            case RECV_FRAMES:
                n = fm.recvFrames(v -> got.add(new Got(v.kind(), v.correlationId(), copy(v))), 1);
                break;
            default:
                throw new IllegalArgumentException("path: " + path);
        }
        assertThat(n).as("frames taken by %s", path).isBetween(0, 1);
        assertThat(got).hasSize(n);
        return n == 0 ? null : got.get(0);
    }

    static byte[] bytes(MessageFrame f) {
        final ByteBuffer b = f.payload();
        final byte[] p = new byte[b.remaining()];
        b.get(p);
        return p;
    }

    static byte[] copy(FrameView v) {
        final byte[] p = new byte[v.payloadLength()];
        v.getPayload(p, 0);
        return p;
    }

    static void check(Got got, int kind, long id, byte[] payload) {
        assertThat(got.id()).as("correlation id").isEqualTo(id);
        assertThat(got.kind()).as("kind of %d", id).isEqualTo(kind);
        assertThat(got.payload()).as("payload of %d (%d bytes)", id, payload.length).isEqualTo(payload);
    }

    static FrameRing ring(FrameMailbox fm) {
        return (FrameRing) MailboxRing.of(fm);
    }

    /** The memory bound: once the slab is drained, no slot keeps a spill buffer over maxRetainedSpill. */
    static void checkRetention(FrameMailbox fm) {
        assertThat(fm.size()).as("drained").isZero();
        for (byte[] s : ring(fm).spill) {
            if (s != null) {
                assertThat(s.length).as("retained spill buffer").isLessThanOrEqualTo(fm.maxRetainedSpill());
            }
        }
    }

    // ------------------------------------------------------------------ every size, every path, many laps

    static Stream<Arguments> capacities() {
        return Stream.of(Arguments.of(1, 1), Arguments.of(2, 2), Arguments.of(3, 4), Arguments.of(4, 4));
    }

    @ParameterizedTest(name = "capacity {0} -> {1}")
    @MethodSource("capacities")
    void shouldRoundTripEveryByteWhenEverySizePathAndLapAreCombined(int requested, int expected)
            throws InterruptedException {
        final int maxPayload = 300;
        final int retained = 100;
        final FrameMailbox fm = Mailboxes.<MessageFrame>builder().capacity(requested).maxPayload(maxPayload)
                .maxRetainedSpill(retained).buildFrames();
        assertThat(fm.capacity()).isEqualTo(expected);
        final int[] sizes = IntStream.concat(IntStream.rangeClosed(0, 200),
                IntStream.of(retained - 1, retained, retained + 1, maxPayload - 1, maxPayload, 47, 48, 49, 0)).toArray();
        final SendPath[] sends = SendPath.values();
        final RecvPath[] recvs = RecvPath.values();
        long id = 0;
        int burst = 0;
        for (int s = 0; s < sizes.length; ) {
            // bursts of 1 .. capacity frames, so the laps of different slots fall out of step
            final int count = Math.min(1 + burst++ % expected, sizes.length - s);
            final long first = id;
            for (int k = 0; k < count; k++, id++) {
                final int size = sizes[s + k];
                assertThat(trySend(fm, sends[(int) (id % sends.length)], (int) id * 7, id, payload(id, size)))
                        .as("send %d of %d bytes", id, size).isTrue();
            }
            assertThat(fm.size()).isEqualTo(count);
            for (int k = 0; k < count; k++) {
                final long got = first + k;
                final RecvPath path = recvs[(int) ((got + burst) % recvs.length)];
                check(recvOne(fm, path), (int) got * 7, got, payload(got, sizes[s + k]));
            }
            assertThat(fm.tryRecv()).isNull();
            checkRetention(fm); // every slot free: only payloads in flight may exceed the bound

            s += count;
        }
        final MailboxStats stats = fm.stats();
        assertThat(stats.admitted()).isEqualTo(id);
        assertThat(stats.received()).isEqualTo(id);
        assertThat(stats.size()).isZero();
        assertThat(stats.refused()).isZero();
        assertThat(stats.highWaterMark()).isBetween(1, expected);
    }

    @Test
    void shouldRoundTripPayloadsAroundTheDefaultLimitsWhenOneSlotIsReused() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(1);
        final int max = fm.maxPayload();
        final int keep = fm.maxRetainedSpill();
        assertThat(max).isEqualTo(1 << 20);
        assertThat(keep).isEqualTo(4 << 10);
        final int[] sizes = {keep - 1, keep, keep + 1, 49, max, max - 1, keep, 0, max, 48, keep + 1, 1};
        long id = 0;
        for (int size : sizes) {
            final SendPath path = SendPath.values()[(int) (id % SendPath.values().length)];
            send(fm, path, 3, id, payload(id, size));
            check(recvOne(fm, RecvPath.values()[(int) (id % RecvPath.values().length)]), 3, id, payload(id, size));
            checkRetention(fm);
            id++;
        }
    }

    // ------------------------------------------------------------------ oversized payloads

    @Test
    void shouldAdmitNothingAndChangeNoCounterWhenPayloadIsOversizedOnAnyPath() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(2, 64);
        assertThat(fm.trySend(1, 1, ByteBuffer.allocate(64))).isTrue(); // exactly maxPayload is fine
        final MailboxStats before = fm.stats();
        for (SendPath path : SendPath.values()) {
            final byte[] big = payload(9, 65);
            if (path == SendPath.FRAME) {
                final MessageFrame f = MessageFrame.of(1, 9, big);
                assertThatThrownBy(() -> fm.trySend(f)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("payload: 65 bytes (expected: <= maxPayload 64)");
                assertThatThrownBy(() -> fm.send(f)).isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> fm.send(f, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
                continue;
            }
            final ByteBuffer src = source(path, big);
            final int position = src.position();
            assertThatThrownBy(() -> fm.trySend(1, 9, src)).as("%s", path)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("payload: 65 bytes (expected: <= maxPayload 64)");
            assertThatThrownBy(() -> fm.send(1, 9, src)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> fm.send(1, 9, src, FOREVER)).isInstanceOf(IllegalArgumentException.class);
            assertThat(src.position()).isEqualTo(position);
        }
        assertThat(fm.stats()).isEqualTo(before);
        assertThat(fm.size()).isEqualTo(1);
        // the mailbox still works, and the slot after the refused ones is the next one
        assertThat(fm.trySend(2, 2, ByteBuffer.wrap(payload(2, 50)))).isTrue();
        check(recvOne(fm, RecvPath.VIEW_TO_ARRAY), 1, 1, new byte[64]);
        check(recvOne(fm, RecvPath.TRY_RECV), 2, 2, payload(2, 50));
    }

    @Test
    void shouldAcceptOnlyEmptyPayloadsWhenMaxPayloadIsZero() throws InterruptedException {
        final FrameMailbox fm = Mailboxes.frames(1, 0);
        assertThat(fm.maxRetainedSpill()).isZero();
        for (long id = 0; id < 5; id++) {
            assertThat(fm.trySend(4, id, ByteBuffer.allocate(0))).isTrue();
            final long expected = id;
            assertThatThrownBy(() -> fm.trySend(4, expected, ByteBuffer.allocate(1)))
                    .isInstanceOf(IllegalArgumentException.class);
            check(recvOne(fm, RecvPath.RECV_FRAMES), 4, id, new byte[0]);
        }
        assertThat(fm.stats().admitted()).isEqualTo(5);
    }

    // ------------------------------------------------------------------ renewal placeholders

    /** Makes the reservation epoch saturate and renew with a placeholder slot; returns how many were made. */
    static long forcePlaceholder(FrameMailbox fm) {
        final MailboxRing<MessageFrame> ring = MailboxRing.of(fm);
        final long before = fm.stats().admitted();
        for (int i = 0; i < 64 && fm.stats().admitted() == before; i++) {
            ring.releaseReserved(ring.reserve(1));
        }
        assertThat(ring.reserved()).isZero();
        return fm.stats().admitted() - before;
    }

    @ParameterizedTest(name = "capacity {0}")
    @ValueSource(ints = {1, 2, 4})
    void shouldSkipPlaceholdersOnEveryLapWhenTheReservationEpochRenews(int capacity) throws InterruptedException {
        final FrameMailbox fm = Mailboxes.<MessageFrame>builder().capacity(capacity).maxRetainedSpill(60)
                .buildFrames();
        final SplittableRandom random = new SplittableRandom(capacity);
        long id = 0;
        long placeholders = 0;
        for (int round = 0; round < 40 * capacity; round++) {
            // some frames, a placeholder somewhere among them (if there is room), then take all of it
            final int before = random.nextInt(capacity);
            final List<Long> ids = new ArrayList<>();
            for (int k = 0; k < before; k++, id++) {
                assertThat(trySend(fm, SendPath.values()[(int) (id % 7)], 1, id, payload(id, (int) (id % 90))))
                        .isTrue();
                ids.add(id);
            }
            final long made = forcePlaceholder(fm);
            assertThat(made).as("round %d: a placeholder was claimed", round).isEqualTo(1);
            placeholders++;
            assertThat(fm.size()).as("size counts the placeholder").isEqualTo(before + 1);
            final int room = capacity - before - 1;
            final int after = room == 0 ? 0 : random.nextInt(room + 1);
            for (int k = 0; k < after; k++, id++) {
                assertThat(trySend(fm, SendPath.values()[(int) (id % 7)], 1, id, payload(id, (int) (id % 90))))
                        .isTrue();
                ids.add(id);
            }
            if (before + 1 + after == capacity) {
                assertThat(fm.trySend(MessageFrame.of(0, -1))).as("full with the placeholder").isFalse();
            }
            // the placeholder is never handed out and never counted as a frame taken
            final List<Got> got = new ArrayList<>();
            final int n = round % 2 == 0
                    ? fm.tryRecvFrames(v -> got.add(new Got(v.kind(), v.correlationId(), copy(v))), capacity + 1)
                    : fm.tryRecvMany(f -> got.add(new Got(f.kind(), f.correlationId(), bytes(f))), capacity + 1);
            assertThat(n).as("round %d: frames taken", round).isEqualTo(ids.size());
            for (int k = 0; k < ids.size(); k++) {
                final long expected = ids.get(k);
                check(got.get(k), 1, expected, payload(expected, (int) (expected % 90)));
            }
            assertThat(fm.size()).isZero();
            checkRetention(fm);
        }
        final MailboxStats stats = fm.stats();
        assertThat(stats.admitted()).isEqualTo(id + placeholders);
        assertThat(stats.received()).isEqualTo(id + placeholders);
    }

    @ParameterizedTest(name = "capacity {0}")
    @ValueSource(ints = {1, 2})
    void shouldKeepParkedReceiverWaitingWhenOnlyAPlaceholderIsThere(int capacity) throws Exception {
        final FrameMailbox fm = Mailboxes.frames(capacity);
        assertThat(forcePlaceholder(fm)).isEqualTo(1);
        final Forked<Got> frames = Forked.start("recvFrames", () -> recvOne(fm, RecvPath.RECV_FRAMES));
        frames.awaitParkedOn(MailboxRing.of(fm));
        assertThat(frames.isDone()).as("recvFrames must not return 0 (end of stream) for a placeholder").isFalse();
        send(fm, SendPath.DIRECT, 5, 10, payload(10, 70));
        check(frames.join(), 5, 10, payload(10, 70));

        assertThat(forcePlaceholder(fm)).isEqualTo(1);
        final Forked<Got> many = Forked.start("recvMany", () -> recvOne(fm, RecvPath.RECV_MANY));
        many.awaitParkedOn(MailboxRing.of(fm));
        send(fm, SendPath.FRAME, 5, 11, payload(11, 3));
        check(many.join(), 5, 11, payload(11, 3));

        assertThat(forcePlaceholder(fm)).isEqualTo(1);
        final Forked<MessageFrame> one = Forked.start("recv", fm::recv);
        one.awaitParkedOn(MailboxRing.of(fm));
        fm.close();
        assertThat(one.join()).as("closed with only a placeholder left: end of stream").isNull();
        assertThat(fm.isTerminated()).isTrue();
        assertThat(fm.recvFrames(v -> { }, 4)).isZero();
    }

    @Test
    void shouldEndTheStreamAfterAPlaceholderWhenClosedExceptionally() {
        final FrameMailbox fm = Mailboxes.frames(2);
        assertThat(forcePlaceholder(fm)).isEqualTo(1);
        final IllegalStateException cause = new IllegalStateException("boom");
        fm.closeExceptionally(cause);
        assertThat(fm.isTerminated()).as("the placeholder is still in the ring").isFalse();
        assertThat(catchThrowable(() -> fm.recvFrames(v -> { }, 1))).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        assertThat(fm.isTerminated()).isTrue();
    }

    // ------------------------------------------------------------------ two threads, many laps

    @ParameterizedTest(name = "capacity {0}")
    @ValueSource(ints = {1, 2, 3})
    void shouldDeliverEveryByteInOrderWhenTwoThreadsLapASmallSlab(int capacity) throws Exception {
        runLaps(capacity, 2_000, false);
    }

    @ParameterizedTest(name = "capacity {0}")
    @ValueSource(ints = {1, 2})
    void shouldDeliverEveryByteInOrderWhenPlaceholdersAreInjectedConcurrently(int capacity) throws Exception {
        runLaps(capacity, 1_500, true);
    }

    @Tag("stress")
    @ParameterizedTest(name = "capacity {0}")
    @ValueSource(ints = {1, 2, 3, 8})
    void shouldDeliverEveryByteInOrderWhenTwoThreadsLapASmallSlabForLong(int capacity) throws Exception {
        runLaps(capacity, 1_000_000, false);
        runLaps(capacity, 300_000, true);
    }

    /**
     * One producer (mixing every send path, sizes crossing the inline and the retention bounds), one consumer
     * (mixing every receive path), optionally a third thread renewing the reservation epoch so that placeholders
     * land between frames at random laps. Every byte of every frame is checked.
     */
    private static void runLaps(int capacity, int frames, boolean placeholders) throws Exception {
        final FrameMailbox fm = Mailboxes.<MessageFrame>builder().capacity(capacity).maxPayload(160)
                .maxRetainedSpill(72).buildFrames();
        final AtomicBoolean done = new AtomicBoolean();
        final Forked<Long> producer = Forked.start("producer", () -> {
            final SendPath[] paths = SendPath.values();
            for (long id = 0; id < frames; id++) {
                final byte[] p = payload(id, sizeOf(id));
                final SendPath path = paths[(int) (id % paths.length)];
                if (id % 3 == 0) {
                    while (!trySend(fm, path, kindOf(id), id, p)) {
                        Thread.onSpinWait();
                    }
                } else {
                    send(fm, path, kindOf(id), id, p);
                }
            }
            return (long) frames;
        });
        final Forked<Long> renewer = Forked.start("renewer", () -> {
            final MailboxRing<MessageFrame> ring = MailboxRing.of(fm);
            long cycles = 0;
            while (placeholders && !done.get()) {
                // bursts of 64 cycles (enough to renew the epoch once), then a pause: a reserve/release loop with no
                // pause starves trySend, since a held permit counts as full and each grant fails racing claim CASes
                for (int i = 0; i < 64; i++) {
                    ring.releaseReserved(ring.reserve(1));
                    cycles++;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(20_000L);
            }
            return cycles;
        });
        final Forked<Long> consumer = Forked.start("consumer", () -> {
            final RecvPath[] paths = RecvPath.values();
            for (long id = 0; id < frames; id++) {
                final Got got = recvOne(fm, paths[(int) (id % paths.length)], true);
                if (got.id() != id || got.kind() != kindOf(id)) {
                    throw new AssertionError("frame " + id + ": got id=" + got.id() + " kind=" + got.kind());
                }
                final byte[] expected = payload(id, sizeOf(id));
                if (!java.util.Arrays.equals(got.payload(), expected)) {
                    throw new AssertionError("frame " + id + ": payload of " + got.payload().length
                            + " bytes differs from the " + expected.length + " sent");
                }
            }
            return (long) frames;
        });
        final Duration wait = frames > 100_000 ? Hang.TIMEOUT.multipliedBy(3) : Hang.TIMEOUT;
        try {
            assertThat(producer.join(wait)).isEqualTo(frames);
            assertThat(consumer.join(wait)).isEqualTo(frames);
        } finally {
            done.set(true);
        }
        renewer.join(wait);
        assertThat(fm.tryRecv()).isNull();
        checkRetention(fm);
        final MailboxStats stats = fm.stats();
        assertThat(stats.received()).isEqualTo(stats.admitted());
        assertThat(stats.admitted()).isGreaterThanOrEqualTo(frames);
        if (!placeholders) {
            assertThat(stats.admitted()).isEqualTo(frames);
        }
    }

    private static int sizeOf(long id) {
        return (int) ((id * 37) % 161); // 0 .. 160, crossing 48 (inline) and 72 (retention)
    }

    private static int kindOf(long id) {
        return (int) (id ^ (id >>> 7)) | Integer.MIN_VALUE; // negative kinds too
    }

    // ------------------------------------------------------------------ the view and the handler

    @Test
    void shouldRefuseEveryViewMethodWhenUsedAfterOnFrameReturned() {
        final FrameMailbox fm = Mailboxes.frames(2);
        assertThat(fm.trySend(1, 2, ByteBuffer.wrap(payload(1, 60)))).isTrue();
        final FrameView[] kept = new FrameView[1];
        assertThat(fm.tryRecvFrames(v -> kept[0] = v, 1)).isEqualTo(1);
        final FrameView v = kept[0];
        assertThatThrownBy(v::kind).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(v::correlationId).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(v::payloadLength).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(v::toFrame).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> v.getPayload(new byte[100], 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> v.getPayload(ByteBuffer.allocate(100))).isInstanceOf(IllegalStateException.class);
        assertThat(v.toString()).contains("unbound");
        // also after the handler threw
        assertThat(fm.trySend(1, 3, ByteBuffer.allocate(0))).isTrue();
        assertThat(catchThrowable(() -> fm.tryRecvFrames(w -> {
            kept[0] = w;
            throw new IllegalStateException("handler");
        }, 1))).hasMessage("handler");
        assertThatThrownBy(kept[0]::kind).isInstanceOf(IllegalStateException.class);
    }

    @ParameterizedTest(name = "capacity {0}")
    @ValueSource(ints = {1, 2})
    void shouldFreeTheSlotAndDeliverTheNextFrameNextTimeWhenHandlerThrows(int capacity) throws InterruptedException {
        final FrameMailbox fm = Mailboxes.<MessageFrame>builder().capacity(capacity).maxRetainedSpill(50).buildFrames();
        long sent = 0;
        long expected = 0;
        for (int lap = 0; lap < 20; lap++) {
            while (fm.trySend(2, sent, ByteBuffer.wrap(payload(sent, (int) (sent * 13 % 120))))) {
                sent++;
            }
            assertThat(fm.size()).isEqualTo(capacity);
            final long victim = expected;
            final Throwable t = catchThrowable(() -> fm.tryRecvFrames(v -> {
                throw new IllegalArgumentException("handler threw at " + v.correlationId());
            }, capacity));
            assertThat(t).hasMessage("handler threw at " + victim);
            expected++;
            assertThat(fm.size()).as("the thrown-at frame counts as received").isEqualTo(capacity - 1);
            assertThat(fm.trySend(2, sent, ByteBuffer.wrap(payload(sent, (int) (sent * 13 % 120)))))
                    .as("its slot is free").isTrue();
            sent++;
            while (expected < sent) {
                final long id = expected++;
                check(recvOne(fm, RecvPath.VIEW_TO_BUFFER), 2, id, payload(id, (int) (id * 13 % 120)));
            }
            checkRetention(fm);
        }
        assertThat(fm.stats().received()).isEqualTo(sent);
    }

    @Test
    void shouldFailRatherThanDeadlockWhenHandlerSendsIntoItsOwnFullSlab() {
        final FrameMailbox fm = Mailboxes.frames(1);
        assertThat(fm.trySend(1, 1, ByteBuffer.allocate(4))).isTrue();
        final List<Object> outcomes = new ArrayList<>();
        assertThat(fm.tryRecvFrames(v -> {
            // the slot being handled is not free until the handler returns
            outcomes.add(fm.trySend(1, 2, ByteBuffer.allocate(4)));
            outcomes.add(catchThrowable(() -> fm.send(1, 3, ByteBuffer.allocate(4))).getClass());
            outcomes.add(catchThrowable(() -> fm.send(MessageFrame.of(1, 4))).getClass());
        }, 1)).isEqualTo(1);
        assertThat(outcomes).containsExactly(false, IllegalStateException.class, IllegalStateException.class);
        assertThat(fm.size()).isZero();
        assertThat(fm.stats().admitted()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ MessageFrame

    @Test
    void shouldKeepFrameImmutableWhenItsInputsAndOutputsAreMutated() {
        final byte[] input = payload(5, 70);
        final MessageFrame frame = MessageFrame.of(-3, Long.MIN_VALUE, input);
        final int hash = frame.hashCode();
        input[0]++;
        input[69]++;
        assertThat(bytes(frame)).isEqualTo(payload(5, 70));
        final ByteBuffer view = frame.payload();
        assertThat(view.isReadOnly()).isTrue();
        assertThat(view.hasArray()).as("no way to reach the backing array").isFalse();
        assertThat(view.position()).isZero();
        assertThat(view.limit()).isEqualTo(70);
        assertThatThrownBy(() -> view.put(0, (byte) 1)).isInstanceOf(ReadOnlyBufferException.class);
        view.position(10);
        assertThat(frame.payload().position()).as("each call an independent view").isZero();
        assertThat(frame.hashCode()).isEqualTo(hash);
        assertThat(frame.kind()).isEqualTo(-3);
        assertThat(frame.correlationId()).isEqualTo(Long.MIN_VALUE);
        assertThat(frame.payloadLength()).isEqualTo(70);
        assertThatThrownBy(() -> MessageFrame.of(1, 1, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("payload");
    }

    @Test
    void shouldCompareFramesByKindCorrelationAndContentWhenRoundTripped() throws InterruptedException {
        final MessageFrame a = MessageFrame.of(1, 2, payload(1, 60));
        assertThat(a).isEqualTo(MessageFrame.of(1, 2, payload(1, 60))).hasSameHashCodeAs(MessageFrame.of(1, 2,
                payload(1, 60)));
        assertThat(a).isNotEqualTo(MessageFrame.of(2, 2, payload(1, 60)));
        assertThat(a).isNotEqualTo(MessageFrame.of(1, 3, payload(1, 60)));
        assertThat(a).isNotEqualTo(MessageFrame.of(1, 2, payload(2, 60)));
        assertThat(a).isNotEqualTo(MessageFrame.of(1, 2, payload(1, 59)));
        assertThat(a.equals(null)).isFalse();
        assertThat(a.equals("frame")).isFalse();
        assertThat(MessageFrame.of(1, 2)).isEqualTo(MessageFrame.of(1, 2, new byte[0]));
        assertThat(MessageFrame.of(1, 2).hashCode()).isEqualTo(MessageFrame.of(1, 2, new byte[0]).hashCode());

        final FrameMailbox fm = Mailboxes.frames(1);
        for (int size : new int[] {0, 1, 48, 49, 200}) {
            final MessageFrame sent = MessageFrame.of(size, size * 3L, payload(size, size));
            assertThat(fm.trySend(sent)).isTrue();
            final MessageFrame viaView;
            final MessageFrame[] holder = new MessageFrame[1];
            assertThat(fm.tryRecvFrames(v -> holder[0] = v.toFrame(), 1)).isEqualTo(1);
            viaView = holder[0];
            assertThat(viaView).isEqualTo(sent).hasSameHashCodeAs(sent);
            fm.send(sent);
            final MessageFrame viaRecv = fm.recv();
            assertThat(viaRecv).isEqualTo(sent).isNotSameAs(sent);
            assertThat(viaRecv.payload().isReadOnly()).isTrue();
        }
    }

    // ------------------------------------------------------------------ parking on the slab path

    @Test
    void shouldParkWithoutOverflowAndAdmitWhenRoomIsMadeGivenAHugeTimeout() throws Exception {
        final FrameMailbox fm = Mailboxes.frames(1);
        assertThat(fm.trySend(1, 0, ByteBuffer.allocate(1))).isTrue();
        final Forked<Boolean> sender = Forked.start("sender", () -> fm.send(1, 1, ByteBuffer.wrap(payload(1, 90)),
                Duration.ofSeconds(Long.MAX_VALUE)));
        sender.awaitParkedOn(MailboxRing.of(fm));
        check(recvOne(fm, RecvPath.VIEW_TO_ARRAY), 1, 0, new byte[1]);
        assertThat(sender.join()).isTrue();
        check(recvOne(fm, RecvPath.VIEW_TO_ARRAY), 1, 1, payload(1, 90));
    }

    @Test
    void shouldAdmitNothingWhenBufferSenderIsInterruptedWhileParked() throws Exception {
        final FrameMailbox fm = Mailboxes.frames(1);
        assertThat(fm.trySend(1, 0, ByteBuffer.allocate(1))).isTrue();
        final ByteBuffer src = ByteBuffer.wrap(payload(1, 80));
        final Forked<Boolean> sender = Forked.start("sender", () -> {
            try {
                fm.send(1, 1, src, FOREVER);
                return true;
            } catch (InterruptedException e) {
                return Thread.currentThread().isInterrupted();
            }
        });
        sender.awaitParkedOn(MailboxRing.of(fm));
        sender.thread().interrupt();
        assertThat(sender.join()).as("flag still set after InterruptedException").isFalse();
        assertThat(src.position()).isZero();
        assertThat(fm.stats().admitted()).isEqualTo(1);
        check(recvOne(fm, RecvPath.RECV_FRAMES), 1, 0, new byte[1]);
        assertThat(fm.tryRecv()).isNull();
        // the stale waiter left by the interrupted sender harms nobody
        assertThat(fm.trySend(1, 2, src)).isTrue();
        check(recvOne(fm, RecvPath.TRY_RECV), 1, 2, payload(1, 80));
    }
}
