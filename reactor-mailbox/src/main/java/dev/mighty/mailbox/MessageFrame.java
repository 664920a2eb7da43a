package dev.mighty.mailbox;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * An immutable message descriptor for a {@link FrameMailbox}: a kind, a correlation id and a payload.
 */
public final class MessageFrame {
    private static final byte[] EMPTY = new byte[0];

    private final int kind;
    private final long correlationId;
    private final byte[] payload;

    MessageFrame(int kind, long correlationId, byte[] ownedPayload) {
        this.kind = kind;
        this.correlationId = correlationId;
        this.payload = ownedPayload;
    }

    /**
     * Creates a frame with a copy of {@code payload}.
     *
     * @param kind an application-defined tag
     * @param correlationId an application-defined id, e.g. to match a reply to its request
     * @param payload copied, so the caller may reuse the array at once
     * @return a new frame
     * @throws NullPointerException if {@code payload} is null
     */
    public static MessageFrame of(int kind, long correlationId, byte[] payload) {
        Objects.requireNonNull(payload, "payload");
        return new MessageFrame(kind, correlationId, payload.length == 0 ? EMPTY : payload.clone());
    }

    /**
     * Creates a frame without payload.
     *
     * @param kind an application-defined tag
     * @param correlationId an application-defined id, e.g. to match a reply to its request
     * @return a frame with an empty payload
     */
    public static MessageFrame of(int kind, long correlationId) {
        return new MessageFrame(kind, correlationId, EMPTY);
    }

    /** {@return the kind, an application-defined tag} */
    public int kind() {
        return kind;
    }

    /** {@return the correlation id} */
    public long correlationId() {
        return correlationId;
    }

    /** {@return the payload length in bytes} */
    public int payloadLength() {
        return payload.length;
    }

    /** {@return a read-only view of the payload, position 0, limit {@link #payloadLength()}} */
    public ByteBuffer payload() {
        return ByteBuffer.wrap(payload).asReadOnlyBuffer();
    }

    /** The payload array itself; package-private so the slab can copy it without a view. */
    byte[] payloadArray() {
        return payload;
    }

    @Override
    public boolean equals(@Nullable Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof MessageFrame)) {
            return false;
        }
        final MessageFrame that = (MessageFrame) o;
        return kind == that.kind && correlationId == that.correlationId && Arrays.equals(payload, that.payload);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * kind + Long.hashCode(correlationId)) + Arrays.hashCode(payload);
    }

    @Override
    public String toString() {
        return "MessageFrame[kind=" + kind + ", correlationId=" + correlationId + ", payloadLength=" + payload.length
                + "]";
    }
}
