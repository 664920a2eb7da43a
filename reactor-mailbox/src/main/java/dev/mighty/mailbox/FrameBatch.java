package dev.mighty.mailbox;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * A reusable run of frames for {@link FrameMailbox#trySendMany(FrameBatch, int, int)} and
 * {@link FrameMailbox#sendMany(FrameBatch, int, int)}: the zero-garbage batched send, which claims as many slots
 * as fit with one atomic on the producer word, then writes the frames into them back to back.
 *
 * <p>Why batch: every claim is an atomic instruction, and on x86 an atomic waits until the stores before it have
 * reached the cache. A frame fills a whole 64-byte slot, a cache line the consumer read on the slot's last lap, so
 * each of those stores first takes the line back from the consumer's core: sent one at a time, every frame's claim
 * waits out the line transfer of the frame before it. A run's frames are written after one claim, so their line
 * transfers overlap (docs/benchmarks.md has the measurement).
 *
 * <h2>What it holds</h2>
 * {@link #add} records a frame's kind, correlation id and payload <em>by reference</em>: the buffer itself, with
 * its position and remaining length at the time of the call (the buffer's position is not changed). The payload's
 * bytes are copied into the slab when the frame is sent, so they must not change between {@code add} and the
 * return of the send that admits the frame. The buffer's position may change; its limit may too, as long as it
 * still covers the recorded bytes when the batch is sent: the send checks every frame's limit, as it checks every
 * payload's length, before it claims anything, and throws {@link IndexOutOfBoundsException} (nothing admitted)
 * otherwise. {@link #clear()} empties the batch and drops its references, for the next run. Nothing is
 * allocated after construction.
 *
 * <h2>Threads</h2>
 * Not thread-safe: one producer thread fills, sends and clears a batch (or hands it on with a happens-before,
 * as any plain object). Several producers may each send their own batch into the same mailbox at once.
 */
public final class FrameBatch {
    final int[] kinds;
    final long[] correlationIds;
    final ByteBuffer[] payloads;
    final int[] positions;
    final int[] lengths;
    private int size;

    /**
     * Creates an empty batch.
     *
     * @param maxFrames how many frames the batch holds; a run is also cut to the room in the mailbox
     * @throws IllegalArgumentException if {@code maxFrames <= 0}
     */
    public FrameBatch(int maxFrames) {
        if (maxFrames <= 0) {
            throw new IllegalArgumentException("maxFrames: " + maxFrames + " (expected: > 0)");
        }
        this.kinds = new int[maxFrames];
        this.correlationIds = new long[maxFrames];
        this.payloads = new ByteBuffer[maxFrames];
        this.positions = new int[maxFrames];
        this.lengths = new int[maxFrames];
    }

    /**
     * Appends a frame: {@code payload}'s bytes from its position to its limit, by reference (see the class
     * comment); the buffer's position is left as it was.
     *
     * @param kind the frame's kind, an application-defined tag
     * @param correlationId the frame's correlation id
     * @param payload the frame's bytes, from its position to its limit
     * @return this batch
     * @throws NullPointerException if {@code payload} is null
     * @throws IllegalStateException if the batch is full ({@link #isFull()})
     */
    public FrameBatch add(int kind, long correlationId, ByteBuffer payload) {
        Objects.requireNonNull(payload, "payload");
        final int i = size;
        if (i == kinds.length) {
            throw new IllegalStateException("batch full: maxFrames=" + kinds.length + " (send it, then clear it)");
        }
        kinds[i] = kind;
        correlationIds[i] = correlationId;
        payloads[i] = payload;
        positions[i] = payload.position();
        lengths[i] = payload.remaining();
        size = i + 1;
        return this;
    }

    /** {@return how many frames the batch holds now} */
    public int size() {
        return size;
    }

    /** {@return how many frames the batch can hold} */
    public int maxFrames() {
        return kinds.length;
    }

    /** {@return whether {@link #add} would throw} */
    public boolean isFull() {
        return size == kinds.length;
    }

    /**
     * Returns the payload length of one frame of the batch.
     *
     * @param i the frame's index in the batch, {@code 0 <= i < size()}
     * @return the payload length {@link #add} recorded for frame {@code i}
     * @throws IndexOutOfBoundsException if {@code i} is out of range
     */
    public int payloadLength(int i) {
        Objects.checkIndex(i, size);
        return lengths[i];
    }

    /** Empties the batch and drops its references to the payload buffers. */
    public void clear() {
        Arrays.fill(payloads, 0, size, null);
        size = 0;
    }

    @Override
    public String toString() {
        return "FrameBatch[size=" + size + ", maxFrames=" + kinds.length + "]";
    }
}
