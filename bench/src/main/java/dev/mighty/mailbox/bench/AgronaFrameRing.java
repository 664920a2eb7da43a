package dev.mighty.mailbox.bench;

import java.nio.ByteBuffer;

import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * Agrona's byte ring buffers carrying what the frame rows carry: a record of the given payload length (32 bytes
 * next to the inline frame path) copied in from one reused buffer whose first 8 bytes are the message's id, read
 * back by a {@link MessageHandler}. The comparator of {@code FrameMailbox}'s {@code trySend(kind, id, ByteBuffer)}
 * / {@code recvFrames}, shared by the CLI's rows and JMH's {@code FramePayloadBenchmark}, so both measure one
 * wiring.
 *
 * <p>The ring's byte capacity is a power of two (Agrona's rule): the smallest that holds {@code capacity}
 * records, so it holds at least as many as the mailbox it is compared with (1024 records of 32 bytes, 40 with the
 * header: 64 KiB, 1,638 records).
 *
 * <p>Agrona 2.x on JDK 17 needs {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED}.
 *
 * <h2>Threads</h2>
 * {@link Kind#ONE_TO_ONE}: one producer thread and one consumer thread; {@link Kind#MANY_TO_ONE}: any number of
 * producer threads (each with its own instance of the source buffer, see {@link #send}) and one consumer.
 * {@link #send} uses this instance's source buffer, so it is for one producer thread at a time.
 */
public final class AgronaFrameRing {
    /** The record type written (the frame rows' kind). */
    public static final int MSG_TYPE = 7;

    /** The rings compared. */
    public enum Kind {
        /** {@link ManyToOneRingBuffer}: producers claim space with a CAS. */
        MANY_TO_ONE,
        /** {@link OneToOneRingBuffer}: one producer, plain ordered stores. */
        ONE_TO_ONE
    }

    private final RingBuffer ring;
    private final UnsafeBuffer source;
    private final int payloadLength;

    /**
     * @param kind          which ring
     * @param capacity      the least number of records it holds
     * @param payloadLength bytes per record, at least 8 (the id)
     */
    public AgronaFrameRing(Kind kind, int capacity, int payloadLength) {
        if (payloadLength < Long.BYTES) {
            throw new IllegalArgumentException("payloadLength: " + payloadLength + " (expected: >= 8, the id)");
        }
        final int record = align(RecordDescriptor.HEADER_LENGTH + payloadLength, RecordDescriptor.ALIGNMENT);
        final int bytes = Integer.highestOneBit(Math.max(1, capacity * record - 1)) << 1;
        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(bytes
                + RingBufferDescriptor.TRAILER_LENGTH));
        this.ring = kind == Kind.MANY_TO_ONE ? new ManyToOneRingBuffer(buffer) : new OneToOneRingBuffer(buffer);
        final byte[] payload = new byte[payloadLength];
        for (int i = 0; i < payloadLength; i++) {
            payload[i] = (byte) i;
        }
        this.source = new UnsafeBuffer(payload);
        this.payloadLength = payloadLength;
    }

    private static int align(int value, int alignment) {
        return (value + alignment - 1) & -alignment;
    }

    /** @return the payload bytes per record */
    public int payloadLength() {
        return payloadLength;
    }

    /** @return the ring's capacity in bytes (a power of two) */
    public int capacityBytes() {
        return ring.capacity();
    }

    /**
     * Writes one record carrying {@code id}, waiting with {@code idle} while the ring is full.
     *
     * @throws InterruptedException if the wait is aborted
     */
    public void send(long id, DrivenExecutor.Idle idle) throws InterruptedException {
        final UnsafeBuffer source = this.source;
        source.putLong(0, id);
        for (int spins = 0; !ring.write(MSG_TYPE, source, 0, payloadLength); ) {
            spins = idle.idle(spins);
        }
    }

    /**
     * Reads what is there, at most {@code max} records, without waiting.
     *
     * @return the records read
     */
    public int receive(MessageHandler handler, int max) {
        return ring.read(handler, max);
    }
}
