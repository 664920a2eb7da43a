package dev.mighty.mailbox;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A flyweight over one slot of a {@link FrameMailbox}, handed to a {@link FrameHandler}. Valid only inside
 * {@link FrameHandler#onFrame}; afterwards every method throws {@link IllegalStateException}. Consumer only.
 */
public final class FrameView {
    private final FrameRing ring;
    private int slot;
    private int base;
    private int length = FrameRing.FREE;

    FrameView(FrameRing ring) {
        this.ring = ring;
    }

    void bind(int slot, int base, int length) {
        this.slot = slot;
        this.base = base;
        this.length = length;
    }

    void unbind() {
        this.length = FrameRing.FREE;
    }

    boolean isBound() {
        return length >= 0;
    }

    private int checkBound() {
        final int length = this.length;
        if (length < 0) {
            throw new IllegalStateException("FrameView used outside FrameHandler.onFrame");
        }
        return length;
    }

    /** {@return the frame's kind} */
    public int kind() {
        checkBound();
        return ring.slab.getInt(base + FrameRing.KIND_OFFSET);
    }

    /** {@return the frame's correlation id} */
    public long correlationId() {
        checkBound();
        return ring.slab.getLong(base + FrameRing.CORRELATION_OFFSET);
    }

    /** {@return the payload length in bytes} */
    public int payloadLength() {
        return checkBound();
    }

    /**
     * Copies the payload into {@code dst} at {@code offset}.
     *
     * @param dst the array to copy into
     * @param offset the index in {@code dst} of the payload's first byte
     * @return the number of bytes copied ({@link #payloadLength()})
     * @throws NullPointerException if {@code dst} is null
     * @throws IndexOutOfBoundsException if {@code offset} is negative or the payload does not fit in {@code dst}
     *         from {@code offset} (nothing is copied)
     */
    public int getPayload(byte[] dst, int offset) {
        final int length = checkBound();
        Objects.checkFromIndexSize(offset, length, Objects.requireNonNull(dst, "dst").length);
        ring.copyPayload(slot, base, length, dst, offset);
        return length;
    }

    /**
     * Copies the payload into {@code dst} at its position, advancing the position.
     *
     * @param dst the buffer to copy into, from its position
     * @return the number of bytes copied ({@link #payloadLength()})
     * @throws NullPointerException if {@code dst} is null
     * @throws java.nio.BufferOverflowException if fewer than {@link #payloadLength()} bytes remain in {@code dst}
     *         (nothing is copied)
     * @throws java.nio.ReadOnlyBufferException if {@code dst} is read-only
     */
    public int getPayload(ByteBuffer dst) {
        final int length = checkBound();
        if (Objects.requireNonNull(dst, "dst").remaining() < length) {
            throw new java.nio.BufferOverflowException();
        }
        ring.copyPayload(slot, base, length, dst);
        return length;
    }

    /** {@return an immutable copy of this frame} */
    public MessageFrame toFrame() {
        final byte[] payload = new byte[checkBound()];
        getPayload(payload, 0);
        return new MessageFrame(kind(), correlationId(), payload);
    }

    @Override
    public String toString() {
        return length < 0 ? "FrameView[unbound]"
                : "FrameView[kind=" + kind() + ", correlationId=" + correlationId() + ", payloadLength=" + length + "]";
    }
}
