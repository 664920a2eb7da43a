package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.internal.MailboxRing;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Model-based test: random sequences of operations run in lockstep against a real mailbox and a
 * trivially correct model (an {@link ArrayDeque}, a closed flag, a cause, a reservation count), for the MPSC,
 * SPSC and frame mailboxes at capacities 1, 2, 3 (rounded to 4), 8 and 1024. After every operation the
 * return value, the thrown exception, the received messages and every observable ({@code size},
 * {@code isClosed}, {@code isTerminated}, {@code closeCause}, {@code reserved}, {@code stats()}) must match.
 * Cases come from {@link RandomCases}: reproducible seeds (a fixed base; {@code -Dmailbox.model.seed=N} explores
 * others), and on a mismatch the operation list is shrunk to a minimal failing one, reported with its seed.
 *
 * <p>Operations that would block forever single-threaded (a blocking send on a full open mailbox, a blocking
 * receive on an empty open one) are replaced by their zero-timeout forms, which the model predicts exactly.
 * "Full" is occupied + reserved; {@code reserve} refuses after 63 grants without a claim (the reservation
 * epoch, see {@code docs/architecture.md}), and the model says so too.
 */
class MailboxModelTest {

    /** Payload sizes the frame variant draws from: empty, inline, the 48-byte edge, spilled, the retained edge. */
    static final int[] SIZES = {0, 1, 47, 48, 49, 64, 65, 150, 200};
    static final int MAX_PAYLOAD = 200;
    static final int MAX_RETAINED_SPILL = 64;
    static final int EPOCH_LIMIT = 63;

    enum Variant { MPSC, SPSC, FRAMES }

    enum Kind {
        TRY_SEND, TRY_SEND_BURST, TRY_SEND_BUFFER, SEND_TIMED_ZERO, SEND_BLOCKING, SEND_INTERRUPTED, SEND_BAD,
        TRY_SEND_MANY, SEND_MANY, SEND_MANY_BAD,
        TRY_RECV, TRY_RECV_MANY, TRY_RECV_FRAMES, RECV_ZERO, RECV, RECV_MANY, RECV_INTERRUPTED, RECV_BAD,
        RESERVE, SEND_RESERVED, RELEASE_RESERVED, RESERVE_CYCLE, CLOSE, CLOSE_EXCEPTIONALLY
    }

    /** One operation: {@code a} is a count, a {@code max} or an {@code n}; {@code b} a size index or a sub-case. */
    record Op(Kind kind, int a, int b) {
        @Override
        public String toString() {
            return kind + "(" + a + "," + b + ")";
        }
    }

    record Case(int capacity, List<Op> ops) {
    }

    static final int[] CAPACITIES = {1, 2, 3, 8, 1024};
    static final int MAX_OPS = 60;

    @Test
    void mpscShouldBehaveAsTheModel() {
        check(Variant.MPSC, 300);
    }

    @Test
    void spscShouldBehaveAsTheModel() {
        check(Variant.SPSC, 150);
    }

    @Test
    void framesShouldBehaveAsTheModel() {
        check(Variant.FRAMES, 300);
    }

    @Tag("stress")
    @ParameterizedTest
    @EnumSource(Variant.class)
    void everyVariantShouldBehaveAsTheModelForLong(Variant variant) {
        check(variant, 20_000);
    }

    static void check(Variant variant, int tries) {
        RandomCases.check("model " + variant, tries, MailboxModelTest::randomCase, Case::ops,
                (c, ops) -> new Case(c.capacity(), ops), c -> run(variant, c));
    }

    /** A capacity and up to {@value #MAX_OPS} operations, weighted towards sends and receives. */
    static Case randomCase(SplittableRandom random) {
        final int capacity = CAPACITIES[random.nextInt(CAPACITIES.length)];
        final int count = random.nextInt(MAX_OPS + 1);
        final List<Op> ops = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            ops.add(new Op(randomKind(random), random.nextInt(capacity + 3), random.nextInt(9)));
        }
        return new Case(capacity, ops);
    }

    private static final Kind[] WEIGHTED = weighted();

    private static Kind[] weighted() {
        final List<Kind> kinds = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            final int weight = switch (kind) {
                case TRY_SEND, TRY_RECV, TRY_RECV_MANY -> 10;
                case TRY_SEND_BURST, TRY_SEND_BUFFER, SEND_TIMED_ZERO, SEND_BLOCKING, TRY_RECV_FRAMES, RECV_ZERO, RECV,
                        RECV_MANY, RESERVE, SEND_RESERVED, RELEASE_RESERVED, TRY_SEND_MANY, SEND_MANY -> 4;
                case SEND_INTERRUPTED, SEND_BAD, RECV_INTERRUPTED, RECV_BAD, RESERVE_CYCLE, SEND_MANY_BAD -> 2;
                case CLOSE, CLOSE_EXCEPTIONALLY -> 1;
            };
            for (int w = 0; w < weight; w++) {
                kinds.add(kind);
            }
        }
        return kinds.toArray(new Kind[0]);
    }

    private static Kind randomKind(SplittableRandom random) {
        return WEIGHTED[random.nextInt(WEIGHTED.length)];
    }

    static void run(Variant variant, Case c) {
        try {
            switch (variant) {
                case MPSC -> new Harness<>(Mailboxes.<Integer>builder().capacity(c.capacity()).build(), null,
                        c.capacity(), (seq, size) -> seq).run(c.ops());
                case SPSC -> new Harness<>(Mailboxes.<Integer>builder().capacity(c.capacity()).singleProducer().build(),
                        null, c.capacity(), (seq, size) -> seq).run(c.ops());
                case FRAMES -> {
                    final FrameMailbox frames = Mailboxes.builder().capacity(c.capacity()).maxPayload(MAX_PAYLOAD)
                            .maxRetainedSpill(MAX_RETAINED_SPILL).buildFrames();
                    new Harness<>(frames, frames, c.capacity(), MailboxModelTest::frame).run(c.ops());
                }
            }
        } finally {
            Thread.interrupted(); // never leak an interrupt into the next try
        }
    }

    static MessageFrame frame(int seq, int size) {
        return MessageFrame.of(seq, seq * 1_000_003L, payload(seq, size));
    }

    static byte[] payload(int seq, int size) {
        final byte[] payload = new byte[size];
        for (int i = 0; i < size; i++) {
            payload[i] = (byte) (seq * 7 + i);
        }
        return payload;
    }

    @FunctionalInterface
    interface MessageFactory<T> {
        T make(int seq, int size);
    }

    /**
     * The model: what a correct bounded FIFO mailbox with reservations does, single-threaded. The queue also holds
     * {@link #SKIP} placeholders: {@code reserve} renews a saturated epoch by claiming one slot that every receive
     * frees and skips without returning it (so it counts in {@code size}, {@code admitted} and {@code received}).
     */
    static final class Model<T> {
        static final Object SKIP = new Object();

        final int capacity;
        final ArrayDeque<Object> queue = new ArrayDeque<>();
        boolean closed;
        Throwable cause;
        long reserved;
        int epoch;
        long admitted;
        long received;
        long refused;
        long rejectedClosed;
        int maxSize;

        Model(int capacity) {
            this.capacity = capacity;
        }

        boolean full() {
            return queue.size() + reserved >= capacity;
        }

        /** Messages waiting, placeholders not counted. */
        long messages() {
            return queue.stream().filter(e -> e != SKIP).count();
        }

        void admit(Object msg) {
            queue.add(msg);
            admitted++;
            epoch = 0; // a claim resets the reservation epoch
            maxSize = Math.max(maxSize, queue.size());
        }

        /** {@code max} polls' worth: each poll frees the placeholders in front of it, then takes one message. */
        @SuppressWarnings("unchecked")
        List<T> take(int max) {
            final List<T> taken = new ArrayList<>();
            while (taken.size() < max) {
                while (queue.peek() == SKIP) {
                    queue.poll();
                    received++;
                }
                if (queue.isEmpty()) {
                    break;
                }
                taken.add((T) queue.poll());
                received++;
            }
            return taken;
        }

        /**
         * A batched send of {@code run}: as much of it as fits (capacity - occupied - reserved), in order; a run
         * cut short or refused whole counts once in {@code refused}. The caller checks for a closed mailbox.
         */
        int admitRun(List<?> run) {
            if (run.isEmpty()) {
                return 0;
            }
            final int k = (int) Math.max(0L, Math.min(run.size(), capacity - queue.size() - reserved));
            for (int i = 0; i < k; i++) {
                admit(run.get(i));
            }
            if (k < run.size()) {
                refused++;
            }
            return k;
        }

        int reserve(int n) {
            while (n > 0) {
                if (closed) {
                    return 0;
                }
                final long free = capacity - queue.size() - reserved;
                if (free <= 0) {
                    return 0;
                }
                if (epoch >= EPOCH_LIMIT) {
                    admit(SKIP); // 63 grants without a claim: a placeholder claim renews the epoch (there is room)
                    continue;
                }
                epoch++;
                final int grant = (int) Math.min(n, free);
                reserved += grant;
                return grant;
            }
            return 0;
        }
    }

    /** Runs one sequence against one mailbox and its model. */
    static final class Harness<T> {
        final Mailbox<T> mailbox;
        final MailboxRing<T> ring;
        final FrameMailbox frames;
        final MessageFactory<T> factory;
        final Model<T> model;
        int seq;
        int step;
        Op op;

        Harness(Mailbox<T> mailbox, FrameMailbox frames, int requestedCapacity, MessageFactory<T> factory) {
            this.mailbox = mailbox;
            this.ring = MailboxRing.of(mailbox);
            this.frames = frames;
            this.factory = factory;
            final int expected = requestedCapacity == 1 ? 1 : Integer.highestOneBit(requestedCapacity - 1) << 1;
            assertThat(mailbox.capacity()).as("capacity rounded up to a power of two").isEqualTo(expected);
            this.model = new Model<>(expected);
        }

        void run(List<Op> ops) {
            for (Op o : ops) {
                op = o;
                apply(o);
                checkInvariants();
                step++;
            }
            // a clean end: close, drain, and see exactly the model's remainder, then end of stream
            op = null;
            mailbox.close();
            model.closed = true;
            final List<T> rest = new ArrayList<>();
            mailbox.tryRecvMany(rest::add, Integer.MAX_VALUE);
            assertThat(rest).as(where("final drain")).containsExactlyElementsOf(model.take(Integer.MAX_VALUE));
            assertThat(mailbox.isTerminated()).as(where("terminated after the final drain")).isTrue();
            checkInvariants();
        }

        String where(String what) {
            return what + " at step " + step + " " + (op == null ? "end" : op.toString());
        }

        T next(int sizeIndex) {
            return factory.make(seq++, SIZES[sizeIndex % SIZES.length]);
        }

        void apply(Op o) {
            switch (o.kind()) {
                case TRY_SEND -> trySend(next(o.b()));
                case TRY_SEND_BURST -> {
                    for (int i = 0; i <= o.a() && !model.closed; i++) {
                        trySend(next(o.b()));
                    }
                }
                case TRY_SEND_BUFFER -> trySendBuffer(o);
                case SEND_TIMED_ZERO -> sendTimedZero(next(o.b()));
                case SEND_BLOCKING -> sendBlocking(next(o.b()));
                case SEND_INTERRUPTED -> sendInterrupted(o);
                case SEND_BAD -> sendBad(o);
                case TRY_SEND_MANY -> trySendMany(o);
                case SEND_MANY -> sendMany(o);
                case SEND_MANY_BAD -> sendManyBad(o);
                case TRY_RECV -> {
                    final List<T> expected = model.take(1);
                    final T got = mailbox.tryRecv();
                    assertThat(got).as(where("tryRecv")).isEqualTo(expected.isEmpty() ? null : expected.get(0));
                }
                case TRY_RECV_MANY -> tryRecvMany(o.a());
                case TRY_RECV_FRAMES -> tryRecvFrames(o.a());
                case RECV_ZERO -> recv(true);
                case RECV -> recv(false);
                case RECV_MANY -> recvMany(o);
                case RECV_INTERRUPTED -> recvInterrupted(o);
                case RECV_BAD -> recvBad(o);
                case RESERVE -> {
                    final int n = o.a() - 1;
                    assertThat(ring.reserve(n)).as(where("reserve(" + n + ")")).isEqualTo(model.reserve(n));
                }
                case SEND_RESERVED -> sendReserved(next(o.b()));
                case RELEASE_RESERVED -> {
                    final long n = o.b() == 8 ? -1L : Math.min(o.a(), model.reserved);
                    ring.releaseReserved(n);
                    model.reserved -= Math.max(0L, n);
                }
                case RESERVE_CYCLE -> {
                    for (int i = 0; i < o.b() * 9; i++) {
                        final int granted = ring.reserve(1);
                        assertThat(granted).as(where("reserve(1) #" + i)).isEqualTo(model.reserve(1));
                        if (granted == 1) {
                            ring.releaseReserved(1L);
                            model.reserved--;
                        }
                    }
                }
                case CLOSE -> {
                    mailbox.close();
                    model.closed = true;
                }
                case CLOSE_EXCEPTIONALLY -> {
                    if (o.b() == 0) {
                        assertThatThrownBy(() -> mailbox.closeExceptionally(null)).as(where("closeExceptionally(null)"))
                                .isInstanceOf(NullPointerException.class);
                        return;
                    }
                    final Throwable cause = new IllegalStateException("cause-" + step);
                    mailbox.closeExceptionally(cause);
                    if (!model.closed) {
                        model.closed = true;
                        model.cause = cause;
                    }
                }
            }
        }

        void trySend(T msg) {
            expectSend(msg, () -> mailbox.trySend(msg), "trySend");
        }

        /**
         * A run of {@code a} messages (0 .. capacity + 2, so empty, partial and whole runs all come up) inside a
         * larger list or array, so {@code from} and {@code to} are exercised: {@code b} picks the list or the array
         * form and the offset.
         */
        List<T> run(Op o) {
            final List<T> run = new ArrayList<>(o.a());
            for (int i = 0; i < o.a(); i++) {
                run.add(next(o.b()));
            }
            return run;
        }

        /** Calls a batched send of {@code run} placed at offset {@code b % 3} of a list ({@code b} even) or array. */
        int callSendMany(List<T> run, int b, BatchCall<T> call) throws InterruptedException {
            final int offset = b % 3;
            final List<T> list = new ArrayList<>(run.size() + offset + 1);
            for (int i = 0; i < offset; i++) {
                list.add(next(0)); // around the run: must never be sent
            }
            list.addAll(run);
            list.add(next(0));
            return call.send(list, b % 2 == 0, offset, offset + run.size());
        }

        void trySendMany(Op o) {
            final List<T> run = run(o);
            expectRun(run, o.b(), (list, asList, from, to) -> batched(o)
                    ? frames.trySendMany(frameBatch(list), from, to)
                    : asList ? mailbox.trySendMany(list, from, to) : mailbox.trySendMany(array(list), from, to),
                    batched(o) ? "trySendMany(FrameBatch)" : "trySendMany");
        }

        /** On a frame mailbox, one batched send in four goes through a {@link FrameBatch} of the same frames. */
        boolean batched(Op o) {
            return frames != null && (o.a() + o.b()) % 4 == 3;
        }

        FrameBatch frameBatch(List<T> list) {
            final FrameBatch batch = new FrameBatch(Math.max(1, list.size()));
            for (MessageFrame f : framesOf(list)) {
                batch.add(f.kind(), f.correlationId(), f.payload());
            }
            return batch;
        }

        /** {@code sendMany}, or {@code sendMany(.., 0)} when it would wait forever (nobody else receives). */
        void sendMany(Op o) {
            final List<T> run = run(o);
            final boolean blocks = !model.closed && run.size() > model.capacity - model.queue.size() - model.reserved;
            final Duration timeout = blocks || o.b() % 4 == 1 ? Duration.ZERO : o.b() % 4 == 3 ? Duration.ofHours(1)
                    : null;
            expectRun(run, o.b(), (list, asList, from, to) -> batched(o)
                    ? (timeout == null ? frames.sendMany(frameBatch(list), from, to)
                            : frames.sendMany(frameBatch(list), from, to, timeout))
                    : timeout == null
                    ? (asList ? mailbox.sendMany(list, from, to) : mailbox.sendMany(array(list), from, to))
                    : (asList ? mailbox.sendMany(list, from, to, timeout)
                            : mailbox.sendMany(array(list), from, to, timeout)),
                    (batched(o) ? "sendMany(FrameBatch" : "sendMany(")
                            + (timeout == null ? ")" : ", " + timeout + ")"));
        }

        /** The outcome every batched send shares single-threaded: closed -> exception, else what fits. */
        void expectRun(List<T> run, int b, BatchCall<T> call, String name) {
            if (model.closed && !run.isEmpty()) {
                assertThatThrownBy(() -> callSendMany(run, b, call)).as(where(name + " when closed"))
                        .isInstanceOf(MailboxClosedException.class)
                        .satisfies(e -> assertThat(e.getCause()).isSameAs(model.cause));
                model.rejectedClosed++;
                return;
            }
            final int n;
            try {
                n = callSendMany(run, b, call);
            } catch (InterruptedException e) {
                throw new AssertionError(where("unexpected interrupt"), e);
            }
            assertThat(n).as(where(name + " of " + run.size())).isEqualTo(model.admitRun(run));
        }

        @SuppressWarnings("unchecked")
        T[] array(List<T> list) {
            return (T[]) list.toArray(frames == null ? new Integer[0] : new MessageFrame[0]);
        }

        /** Bad input is refused before anything is admitted, closed or open, full or not. */
        void sendManyBad(Op o) {
            final List<T> run = run(new Op(o.kind(), Math.max(1, o.a()), 0));
            final List<T> withNull = new ArrayList<>(run);
            withNull.add(o.a() % (withNull.size() + 1), null);
            final int size = withNull.size();
            final Class<? extends Throwable> type;
            final SendCall call;
            switch (o.b()) {
                case 0 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.trySendMany(withNull, 0, size) >= 0;
                }
                case 1 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.sendMany(array(withNull), 0, size) >= 0;
                }
                case 2 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.trySendMany((List<T>) null, 0, 0) >= 0;
                }
                case 3 -> {
                    type = IllegalArgumentException.class;
                    call = () -> mailbox.trySendMany(run, 1, 0) >= 0;
                }
                case 4 -> {
                    type = IndexOutOfBoundsException.class;
                    call = () -> mailbox.trySendMany(array(run), -1, 0) >= 0;
                }
                case 5 -> {
                    type = IndexOutOfBoundsException.class;
                    call = () -> mailbox.sendMany(run, 0, run.size() + 1, Duration.ZERO) >= 0;
                }
                case 6 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.sendMany(run, 0, run.size(), null) >= 0;
                }
                case 7 -> {
                    type = IllegalArgumentException.class;
                    call = () -> mailbox.sendMany(array(run), 0, run.size(), Duration.ofNanos(-1)) >= 0;
                }
                default -> {
                    if (frames == null) {
                        type = NullPointerException.class;
                        call = () -> mailbox.trySendMany((T[]) null, 0, 0) >= 0;
                    } else {
                        type = IllegalArgumentException.class; // an oversized frame last: checked before any claim
                        final List<MessageFrame> bad = new ArrayList<>(framesOf(run));
                        bad.add(oversized());
                        if (o.a() % 2 == 0) {
                            call = () -> frames.trySendMany(bad, 0, bad.size()) >= 0;
                        } else {
                            final FrameBatch batch = new FrameBatch(bad.size());
                            bad.forEach(f -> batch.add(f.kind(), f.correlationId(), f.payload()));
                            call = () -> frames.sendMany(batch, 0, batch.size()) >= 0;
                        }
                    }
                }
            }
            assertThatThrownBy(call::send).as(where("bad batched send " + o.b())).isInstanceOf(type);
        }

        /** The outcome every non-blocking send shares: closed -> exception, full -> false, else admitted. */
        void expectSend(T msg, SendCall call, String name) {
            if (model.closed) {
                assertThatThrownBy(call::send).as(where(name + " when closed"))
                        .isInstanceOf(MailboxClosedException.class)
                        .satisfies(e -> assertThat(e.getCause()).isSameAs(model.cause));
                model.rejectedClosed++;
            } else if (model.full()) {
                assertThat(sendQuietly(call)).as(where(name + " when full")).isFalse();
                model.refused++;
            } else {
                assertThat(sendQuietly(call)).as(where(name + " with room")).isTrue();
                model.admit(msg);
            }
        }

        boolean sendQuietly(SendCall call) {
            try {
                return call.send();
            } catch (InterruptedException e) {
                throw new AssertionError(where("unexpected interrupt"), e);
            }
        }

        void trySendBuffer(Op o) {
            final int offset = o.a() % 4;
            final int size = SIZES[o.b() % SIZES.length];
            if (frames == null) {
                trySend(next(o.b()));
                return;
            }
            final int s = seq++;
            final MessageFrame frame = frame(s, size);
            final ByteBuffer buffer = (offset % 2 == 0 ? ByteBuffer.allocate(offset + size + 3)
                    : ByteBuffer.allocateDirect(offset + size + 3));
            buffer.position(offset);
            buffer.put(payload(s, size));
            buffer.limit(offset + size).position(offset);
            @SuppressWarnings("unchecked")
            final T msg = (T) frame;
            expectSend(msg, () -> frames.trySend(s, s * 1_000_003L, buffer), "trySend(ByteBuffer)");
            assertThat(buffer.position()).as(where("buffer position left as it was")).isEqualTo(offset);
            assertThat(buffer.limit()).as(where("buffer limit left as it was")).isEqualTo(offset + size);
        }

        void sendTimedZero(T msg) {
            expectSend(msg, () -> mailbox.send(msg, Duration.ZERO), "send(msg, 0)");
        }

        void sendBlocking(T msg) {
            if (!model.closed && model.full()) {
                sendTimedZero(msg); // a blocking send would park forever: nobody else receives
                return;
            }
            expectSend(msg, () -> {
                mailbox.send(msg);
                return true;
            }, "send");
        }

        void sendInterrupted(Op o) {
            final T msg = next(o.b());
            Thread.currentThread().interrupt();
            final SendCall call = switch (o.a() % 5) {
                case 0 -> () -> {
                    mailbox.send(msg);
                    return true;
                };
                case 1 -> () -> mailbox.send(msg, Duration.ofSeconds(1));
                case 2 -> () -> mailbox.sendMany(List.of(msg)) >= 0;
                case 3 -> () -> mailbox.sendMany(List.of(msg, msg), 0, o.b() % 3, Duration.ofSeconds(1)) >= 0;
                default -> frames == null ? () -> mailbox.send(msg, Duration.ZERO) : () -> {
                    frames.send(1, 2L, ByteBuffer.allocate(3));
                    return true;
                };
            };
            assertThatThrownBy(call::send).as(where("send with the interrupt flag set"))
                    .isInstanceOf(InterruptedException.class);
            assertThat(Thread.currentThread().isInterrupted()).as(where("flag consumed by the exception")).isFalse();
        }

        void sendBad(Op o) {
            final T msg = next(o.b());
            final Class<? extends Throwable> type;
            final SendCall call;
            switch (o.b()) {
                case 0 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.trySend(null);
                }
                case 1 -> {
                    type = NullPointerException.class;
                    call = () -> {
                        mailbox.send(null);
                        return true;
                    };
                }
                case 2 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.send(msg, null);
                }
                case 3 -> {
                    type = IllegalArgumentException.class;
                    call = () -> mailbox.send(msg, Duration.ofNanos(-1));
                }
                case 4 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.send(null, Duration.ZERO);
                }
                case 5 -> {
                    type = NullPointerException.class;
                    call = () -> ring.sendReserved(null);
                }
                case 6 -> {
                    type = frames == null ? NullPointerException.class : IllegalArgumentException.class;
                    call = frames == null ? () -> mailbox.trySend(null) : () -> frames.trySend(oversized());
                }
                case 7 -> {
                    type = frames == null ? NullPointerException.class : IllegalArgumentException.class;
                    call = frames == null ? () -> mailbox.trySend(null)
                            : () -> frames.trySend(1, 1L, ByteBuffer.allocate(MAX_PAYLOAD + 1));
                }
                default -> {
                    type = frames == null ? NullPointerException.class : IllegalArgumentException.class;
                    call = frames == null ? () -> mailbox.trySend(null) : () -> {
                        frames.send(oversized());
                        return true;
                    };
                }
            }
            assertThatThrownBy(call::send).as(where("bad send " + o.b())).isInstanceOf(type);
        }

        MessageFrame oversized() {
            return MessageFrame.of(1, 1L, new byte[MAX_PAYLOAD + 1]);
        }

        void tryRecvMany(int max) {
            final List<T> got = new ArrayList<>();
            final int n = mailbox.tryRecvMany(got::add, max);
            final List<T> expected = model.take(max);
            assertThat(got).as(where("tryRecvMany(" + max + ")")).containsExactlyElementsOf(expected);
            assertThat(n).as(where("tryRecvMany count")).isEqualTo(expected.size());
        }

        void tryRecvFrames(int max) {
            if (frames == null) {
                tryRecvMany(max);
                return;
            }
            final List<MessageFrame> got = new ArrayList<>();
            final FrameView[] seen = new FrameView[1];
            final int n = frames.tryRecvFrames(frameCollector(got, seen), max);
            final List<T> expected = model.take(max);
            assertThat(got).as(where("tryRecvFrames(" + max + ")")).containsExactlyElementsOf(framesOf(expected));
            assertThat(n).as(where("tryRecvFrames count")).isEqualTo(expected.size());
            if (seen[0] != null) {
                assertThatThrownBy(seen[0]::kind).as(where("FrameView after onFrame returned"))
                        .isInstanceOf(IllegalStateException.class);
            }
        }

        FrameHandler frameCollector(List<MessageFrame> into, FrameView[] seen) {
            return view -> {
                seen[0] = view;
                final ByteBuffer copy = ByteBuffer.allocate(view.payloadLength() + 2).position(1);
                assertThat(view.getPayload(copy)).isEqualTo(view.payloadLength());
                final MessageFrame frame = view.toFrame();
                assertThat(copy.flip().position(1)).isEqualTo(frame.payload());
                into.add(frame);
            };
        }

        @SuppressWarnings("unchecked")
        List<MessageFrame> framesOf(List<T> messages) {
            return (List<MessageFrame>) messages;
        }

        void recv(boolean zeroTimeout) {
            final boolean blocks = model.messages() == 0 && !model.closed;
            final RecvCall call = zeroTimeout || blocks ? () -> mailbox.recv(Duration.ZERO) : mailbox::recv;
            final String name = zeroTimeout || blocks ? "recv(0)" : "recv()";
            if (model.messages() > 0) {
                assertThat(recvQuietly(call)).as(where(name)).isEqualTo(model.take(1).get(0));
            } else if (model.closed && model.cause != null) {
                assertThatThrownBy(call::recv).as(where(name + " when closed exceptionally and drained"))
                        .isInstanceOf(MailboxClosedException.class)
                        .satisfies(e -> assertThat(e.getCause()).isSameAs(model.cause));
                model.take(1); // the placeholders it freed on the way
            } else {
                assertThat(recvQuietly(call)).as(where(name + " when empty")).isNull();
                model.take(1);
            }
        }

        Object recvQuietly(RecvCall call) {
            try {
                return call.recv();
            } catch (InterruptedException e) {
                throw new AssertionError(where("unexpected interrupt"), e);
            }
        }

        void recvMany(Op o) {
            final int max = o.a();
            if (max > 0 && model.messages() == 0 && !model.closed) {
                tryRecvMany(max); // would park forever
                return;
            }
            final boolean viaFrames = frames != null && o.b() % 2 == 1;
            final List<MessageFrame> frameSink = new ArrayList<>();
            final List<T> sink = new ArrayList<>();
            final FrameHandler handler = frameCollector(frameSink, new FrameView[1]);
            final Consumer<T> consumer = sink::add;
            final RecvManyCall call = viaFrames ? () -> frames.recvFrames(handler, max)
                    : () -> mailbox.recvMany(consumer, max);
            if (max > 0 && model.messages() == 0 && model.cause != null) {
                assertThatThrownBy(call::recv).as(where("recvMany when closed exceptionally and drained"))
                        .isInstanceOf(MailboxClosedException.class)
                        .satisfies(e -> assertThat(e.getCause()).isSameAs(model.cause));
                model.take(max); // the placeholders it freed on the way
                return;
            }
            final int n;
            try {
                n = call.recv();
            } catch (InterruptedException e) {
                throw new AssertionError(where("unexpected interrupt"), e);
            }
            final List<T> expected = model.take(max);
            if (viaFrames) {
                assertThat(frameSink).as(where("recvFrames(" + max + ")"))
                        .containsExactlyElementsOf(framesOf(expected));
            } else {
                assertThat(sink).as(where("recvMany(" + max + ")")).containsExactlyElementsOf(expected);
            }
            assertThat(n).as(where("recvMany count")).isEqualTo(expected.size());
        }

        void recvInterrupted(Op o) {
            Thread.currentThread().interrupt();
            final RecvCall call = switch (o.b() % 5) {
                case 0 -> mailbox::recv;
                case 1 -> () -> mailbox.recv(Duration.ofSeconds(1));
                case 2 -> () -> {
                    mailbox.recvMany(m -> { }, o.a() + 1);
                    return null;
                };
                case 3 -> () -> {
                    mailbox.recvMany(m -> { }, 0);
                    return null;
                };
                default -> frames == null ? mailbox::recv : () -> {
                    frames.recvFrames(v -> { }, o.a() + 1);
                    return null;
                };
            };
            assertThatThrownBy(call::recv).as(where("receive with the interrupt flag set"))
                    .isInstanceOf(InterruptedException.class);
            assertThat(Thread.currentThread().isInterrupted()).as(where("flag consumed by the exception")).isFalse();
        }

        void recvBad(Op o) {
            final Class<? extends Throwable> type;
            final RecvCall call;
            switch (o.b()) {
                case 0 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.tryRecvMany(null, 1);
                }
                case 1 -> {
                    type = IllegalArgumentException.class;
                    call = () -> mailbox.tryRecvMany(m -> { }, -1);
                }
                case 2 -> {
                    type = IllegalArgumentException.class;
                    call = () -> mailbox.recv(Duration.ofNanos(-1));
                }
                case 3 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.recv(null);
                }
                case 4 -> {
                    type = IllegalArgumentException.class;
                    call = () -> mailbox.recvMany(m -> { }, -1);
                }
                case 5 -> {
                    type = NullPointerException.class;
                    call = () -> mailbox.recvMany(null, 1);
                }
                case 6 -> {
                    type = NullPointerException.class;
                    call = () -> {
                        if (frames == null) {
                            mailbox.tryRecvMany(null, 0);
                        } else {
                            frames.tryRecvFrames(null, 1);
                        }
                        return null;
                    };
                }
                case 7 -> {
                    type = IllegalArgumentException.class;
                    call = () -> {
                        if (frames == null) {
                            mailbox.tryRecvMany(m -> { }, Integer.MIN_VALUE);
                        } else {
                            frames.tryRecvFrames(v -> { }, -1);
                        }
                        return null;
                    };
                }
                default -> {
                    type = IllegalArgumentException.class;
                    call = () -> {
                        if (frames == null) {
                            mailbox.recvMany(m -> { }, Integer.MIN_VALUE);
                        } else {
                            frames.recvFrames(v -> { }, -1);
                        }
                        return null;
                    };
                }
            }
            assertThatThrownBy(call::recv).as(where("bad receive " + o.b())).isInstanceOf(type);
        }

        void sendReserved(T msg) {
            if (model.reserved == 0) {
                // no permit: a caller bug, refused before anything is claimed, closed or not
                assertThatThrownBy(() -> ring.sendReserved(msg)).as(where("sendReserved without a permit"))
                        .isInstanceOf(IllegalStateException.class).hasMessageStartingWith("sendReserved without a "
                                + "reserved slot");
                return;
            }
            final boolean sent = ring.sendReserved(msg);
            model.reserved--;
            if (model.closed) {
                assertThat(sent).as(where("sendReserved when closed")).isFalse();
                model.rejectedClosed++;
            } else {
                assertThat(sent).as(where("sendReserved with a permit")).isTrue();
                model.admit(msg);
            }
        }

        void checkInvariants() {
            assertThat(Thread.currentThread().isInterrupted()).as(where("interrupt flag")).isFalse();
            assertThat(mailbox.size()).as(where("size")).isEqualTo(model.queue.size());
            assertThat(mailbox.isClosed()).as(where("isClosed")).isEqualTo(model.closed);
            assertThat(mailbox.isTerminated()).as(where("isTerminated"))
                    .isEqualTo(model.closed && model.queue.isEmpty());
            assertThat(mailbox.closeCause()).as(where("closeCause")).isSameAs(model.cause);
            assertThat(ring.reserved()).as(where("reserved")).isEqualTo(model.reserved);
            final MailboxStats stats = mailbox.stats();
            assertThat(stats.capacity()).as(where("stats.capacity")).isEqualTo(model.capacity);
            assertThat(stats.size()).as(where("stats.size")).isEqualTo(model.queue.size());
            assertThat(stats.admitted()).as(where("stats.admitted")).isEqualTo(model.admitted);
            assertThat(stats.received()).as(where("stats.received")).isEqualTo(model.received);
            assertThat(stats.refused()).as(where("stats.refused")).isEqualTo(model.refused);
            assertThat(stats.rejectedClosed()).as(where("stats.rejectedClosed")).isEqualTo(model.rejectedClosed);
            assertThat(stats.reserved()).as(where("stats.reserved")).isEqualTo(model.reserved);
            assertThat(stats.highWaterMark()).as(where("stats.highWaterMark: a lower bound of the true peak"))
                    .isBetween(0, model.maxSize);
            assertThat(stats.parkedProducers()).as(where("stats.parkedProducers")).isZero();
            assertThat(stats.consumerParked()).as(where("stats.consumerParked")).isFalse();
        }
    }

    @FunctionalInterface
    interface BatchCall<T> {
        int send(List<T> list, boolean asList, int from, int to) throws InterruptedException;
    }

    @FunctionalInterface
    interface SendCall {
        boolean send() throws InterruptedException;
    }

    @FunctionalInterface
    interface RecvCall {
        Object recv() throws InterruptedException;
    }

    @FunctionalInterface
    interface RecvManyCall {
        int recv() throws InterruptedException;
    }
}
