package dev.mighty.mailbox.reliability;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.function.Consumer;

import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;

/**
 * One mailbox variant seen through {@code (producer, seq)} traffic, so a test can run the same scenario on the
 * MPSC, SPSC and frame mailboxes. Frames carry the producer in {@code kind}, the sequence in
 * {@code correlationId} and a checkable payload of 0 .. 96 bytes (inline and spilled); the frame path is the
 * zero-garbage one ({@code trySend(kind, id, ByteBuffer)} / {@code tryRecvFrames}).
 */
abstract class Endpoint {

    enum Variant {
        MPSC, SPSC, FRAMES;

        Endpoint create(int capacity) {
            return switch (this) {
                case MPSC -> new Refs(Mailboxes.<Long>builder().capacity(capacity).name("mpsc").build());
                case SPSC -> new Refs(Mailboxes.<Long>builder().capacity(capacity).singleProducer().name("spsc")
                        .build());
                case FRAMES -> new Frames(Mailboxes.builder().capacity(capacity).name("frames").buildFrames());
            };
        }

        /** Producers the variant allows: one for SPSC. */
        int producers(int wanted) {
            return this == SPSC ? 1 : wanted;
        }
    }

    /** Receive modes for {@link #receive}. */
    static final int RECV = 0;
    static final int RECV_MANY = 1;
    static final int RECV_TIMED = 2;
    static final int TRY_RECV_MANY = 3;
    static final int MODES = 4;

    abstract Mailbox<?> mailbox();

    /** Blocking send of {@code (producer, seq)}. */
    abstract void send(int producer, long seq) throws InterruptedException;

    /** Non-blocking send; false if full. */
    abstract boolean trySend(int producer, long seq);

    /**
     * Receives through one of the receive methods, feeding {@code checker}.
     *
     * @return messages received; -1 at end of stream (closed normally and drained); 0 on timeout or empty
     */
    abstract int receive(SequenceChecker checker, int mode, int max) throws InterruptedException;

    static final class Refs extends Endpoint {
        final Mailbox<Long> mailbox;
        private SequenceChecker checker;
        private final Consumer<Long> sink = m -> checker.accept(m);

        Refs(Mailbox<Long> mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        Mailbox<?> mailbox() {
            return mailbox;
        }

        @Override
        void send(int producer, long seq) throws InterruptedException {
            mailbox.send(SequenceChecker.message(producer, seq));
        }

        @Override
        boolean trySend(int producer, long seq) {
            return mailbox.trySend(SequenceChecker.message(producer, seq));
        }

        @Override
        int receive(SequenceChecker checker, int mode, int max) throws InterruptedException {
            this.checker = checker;
            switch (mode) {
                case RECV -> {
                    final Long m = mailbox.recv();
                    if (m == null) {
                        return -1;
                    }
                    checker.accept(m);
                    return 1;
                }
                case RECV_MANY -> {
                    final int n = mailbox.recvMany(sink, max);
                    return n == 0 ? -1 : n;
                }
                case RECV_TIMED -> {
                    final Long m = mailbox.recv(Duration.ofMillis(1));
                    if (m == null) {
                        return mailbox.isTerminated() ? -1 : 0;
                    }
                    checker.accept(m);
                    return 1;
                }
                default -> {
                    final int n = mailbox.tryRecvMany(sink, max);
                    return n == 0 && mailbox.isTerminated() ? -1 : n;
                }
            }
        }
    }

    static final class Frames extends Endpoint {
        final FrameMailbox mailbox;
        private final ThreadLocal<ByteBuffer> buffers = ThreadLocal.withInitial(() -> ByteBuffer.allocate(128));
        private SequenceChecker checker;
        private final FrameHandler handler = view -> checker.accept(view);

        Frames(FrameMailbox mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        Mailbox<?> mailbox() {
            return mailbox;
        }

        @Override
        void send(int producer, long seq) throws InterruptedException {
            mailbox.send(producer, seq, SequenceChecker.payload(buffers.get(), producer, seq));
        }

        @Override
        boolean trySend(int producer, long seq) {
            return mailbox.trySend(producer, seq, SequenceChecker.payload(buffers.get(), producer, seq));
        }

        @Override
        int receive(SequenceChecker checker, int mode, int max) throws InterruptedException {
            this.checker = checker;
            switch (mode) {
                case RECV -> {
                    final var frame = mailbox.recv();
                    if (frame == null) {
                        return -1;
                    }
                    acceptFrame(checker, frame);
                    return 1;
                }
                case RECV_MANY -> {
                    final int n = mailbox.recvFrames(handler, max);
                    return n == 0 ? -1 : n;
                }
                case RECV_TIMED -> {
                    final var frame = mailbox.recv(Duration.ofMillis(1));
                    if (frame == null) {
                        return mailbox.isTerminated() ? -1 : 0;
                    }
                    acceptFrame(checker, frame);
                    return 1;
                }
                default -> {
                    final int n = mailbox.tryRecvFrames(handler, max);
                    return n == 0 && mailbox.isTerminated() ? -1 : n;
                }
            }
        }

        private static void acceptFrame(SequenceChecker checker, MessageFrame frame) {
            final int producer = frame.kind();
            final long seq = frame.correlationId();
            final ByteBuffer payload = frame.payload();
            final ByteBuffer expected = SequenceChecker.payload(ByteBuffer.allocate(128), producer, seq);
            if (!payload.equals(expected)) {
                checker.violation("torn frame: producer " + producer + " seq " + seq);
            }
            checker.accept(producer, seq);
        }
    }
}
