package dev.mighty.mailbox;

import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

import dev.mighty.mailbox.internal.ConsumerRole;
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The slab behind a {@link FrameMailbox}: {@code capacity} preallocated 64-byte slots in one direct,
 * cache-line-aligned buffer, claimed and published with the {@link MailboxRing} protocol.
 *
 * <pre>
 *  0         4         8                   16                                              64
 *  +---------+---------+-------------------+-----------------------------------------------+
 *  |  kind   | status  |   correlationId   |         inline payload (48 bytes)             |
 *  +---------+---------+-------------------+-----------------------------------------------+
 *  status: bit 31 = phase, bits 0..30 = payload length ({@link #SKIP_LENGTH} for a placeholder poll() skips).
 *  Over 48 bytes, the payload lives in the slot's spill buffer, which the slot keeps for the next payload
 *  that fits (the inline cache) unless it is larger than maxRetainedSpill.
 * </pre>
 *
 * <h2>Publication by phase: the consumer never writes to the slab</h2>
 * The slot of index {@code i} is published when its status word carries the phase of {@code i}'s lap:
 * {@link #phaseOf(long)}, which flips every {@code capacity} indices and is 1 on lap 0, so the zeroed slab of a
 * new mailbox holds no published slot. A stale status word is always the lap before's (the claim never hands
 * out index {@code i + capacity} before the consumer index has passed {@code i}), so one bit tells the two
 * apart, as the per-slot lap flags of the Disruptor's multi-producer sequencer and the phase tag of an NVMe
 * completion queue do. Freeing a slot is therefore only the release store of the consumer index: the consumer
 * reads each slot's line and never writes it, so a line is written by one side only. Measured with
 * {@code bench/ab} (docs/benchmarks-log.md): about 10% less time per frame on one thread than a "free" mark written by
 * the consumer, no difference above the noise across cores.
 *
 * <p>The header and payload are written with plain stores by the producer that claimed the slot, then
 * published by the status word, stored after a release fence; the consumer reads the status word, then an acquire
 * fence, then the rest with plain loads (the fences instead of {@code setRelease}/{@code getAcquire} through a
 * {@code byteBufferViewVarHandle}: see {@link #storeStatus}), and frees the slot with the release store of the consumer index (which the
 * claim of the slot's next lap reads with acquire before writing it). Each spill buffer is owned by its
 * slot's current producer, then its consumer.
 */
final class FrameRing extends MailboxRing<MessageFrame> {
    static final int SLOT_SHIFT = 6;
    static final int SLOT_SIZE = 1 << SLOT_SHIFT;
    static final int KIND_OFFSET = 0;
    /** The status word: phase bit and payload length. */
    static final int STATUS_OFFSET = 4;
    static final int CORRELATION_OFFSET = 8;
    static final int PAYLOAD_OFFSET = 16;
    static final int INLINE_PAYLOAD = SLOT_SIZE - PAYLOAD_OFFSET;
    /** Not published: what {@link #lengthAt} returns for a slot whose status carries the lap before's phase. */
    static final int FREE = -1;
    /** The length of a placeholder slot ({@link #publishSkip}); above maxPayload's bound, so never a payload. */
    static final int SKIP_LENGTH = Integer.MAX_VALUE;
    private static final int LENGTH_MASK = Integer.MAX_VALUE;
    /** Largest slab: 2^24 slots of 64 bytes (1 GiB), the most one direct buffer can hold. */
    static final int MAX_CAPACITY = 1 << 24;

    final ByteBuffer slab;
    final byte[][] spill;
    final int maxPayload;
    final int maxRetainedSpill;
    /** log2(capacity): index {@code >>>} this is the lap. */
    private final int lapShift;
    /** The consumer's flyweight. */
    private final FrameView view;

    FrameRing(int capacity, int maxPayload, int maxRetainedSpill, boolean singleProducer, String name) {
        super(checkFrameCapacity(capacity), singleProducer, name);
        if (maxPayload < 0 || maxPayload > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("maxPayload: " + maxPayload + " (expected: 0 .. " + (Integer.MAX_VALUE - 16)
                    + ")");
        }
        if (maxRetainedSpill < 0) {
            throw new IllegalArgumentException("maxRetainedSpill: " + maxRetainedSpill + " (expected: >= 0)");
        }
        this.maxPayload = maxPayload;
        this.maxRetainedSpill = maxRetainedSpill;
        this.lapShift = Integer.numberOfTrailingZeros(this.capacity);
        // zeroed by allocateDirect: every status word has phase 0, the phase of no index on lap 0
        this.slab = ByteBuffer.allocateDirect(this.capacity * SLOT_SIZE + SLOT_SIZE).alignedSlice(SLOT_SIZE)
                .order(ByteOrder.nativeOrder());
        this.spill = new byte[this.capacity][];
        this.view = new FrameView(this);
    }

    private static int checkFrameCapacity(int capacity) {
        if (capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity: " + capacity + " (expected: 1 .. " + MAX_CAPACITY
                    + " for a FrameMailbox)");
        }
        return capacity;
    }

    void checkPayload(int length) {
        if (length > maxPayload) {
            throw new IllegalArgumentException("payload: " + length + " bytes (expected: <= maxPayload " + maxPayload
                    + ")");
        }
    }

    @Override
    protected void validate(MessageFrame frame) {
        checkPayload(frame.payloadLength());
    }

    @Override
    protected void publishQuiet(long index, MessageFrame frame) {
        final byte[] src = frame.payloadArray();
        final int length = src.length;
        final int slot = (int) (index & mask);
        final int base = slot << SLOT_SHIFT;
        writeHeader(base, frame.kind(), frame.correlationId());
        if (length <= INLINE_PAYLOAD) {
            slab.put(base + PAYLOAD_OFFSET, src, 0, length);
        } else {
            System.arraycopy(src, 0, spillFor(slot, length), 0, length);
        }
        storeStatus(index, base, length);
    }

    /** Zero-garbage send from {@code payload}'s position to its limit; the position is left unchanged. */
    boolean trySend(int kind, long correlationId, ByteBuffer payload) {
        Objects.requireNonNull(payload, "payload");
        final int length = payload.remaining();
        checkPayload(length);
        final long index = claim();
        if (index < 0) {
            return refused(index, "trySend");
        }
        writeClaimed(index, kind, correlationId, payload, length);
        return true;
    }

    /**
     * The zero-garbage batched send of {@code batch[from .. to)}: one claim of as much of the run as fits (see
     * {@link FrameBatch} for why). Every payload is checked before anything is claimed.
     *
     * @return how many were admitted, a prefix of the run
     */
    int trySendMany(FrameBatch batch, int from, int to) {
        return trySendRun(batch, from, checkBatch(batch, from, to));
    }

    /** As {@link #trySendMany(FrameBatch, int, int)}, waiting for room until all is in or the deadline passes. */
    int sendMany(FrameBatch batch, int from, int to, long deadline) throws InterruptedException {
        return sendRun(batch, from, checkBatch(batch, from, to), deadline);
    }

    private int checkBatch(FrameBatch batch, int from, int to) {
        Objects.requireNonNull(batch, "batch");
        checkRunRange(batch.size(), from, to);
        for (int i = from; i < to; i++) {
            final int length = batch.lengths[i];
            if (length > maxPayload) {
                throw new IllegalArgumentException("batch frame: index=" + i + ", payload: " + length
                        + " bytes (expected: <= maxPayload " + maxPayload + "): nothing was admitted");
            }
            final int end = batch.positions[i] + length;
            final int limit = batch.payloads[i].limit();
            if (end > limit) {
                throw new IndexOutOfBoundsException("batch frame: index=" + i + ", payload bytes " + batch.positions[i]
                        + " .. " + end + " (as added) beyond the buffer's limit " + limit
                        + " (expected: the limit still covers them when the batch is sent): nothing was admitted");
            }
        }
        return to - from;
    }

    @Override
    protected void publishRunElement(Object run, int i, long index) {
        final FrameBatch batch = (FrameBatch) run;
        write(index, batch.kinds[i], batch.correlationIds[i], batch.payloads[i], batch.positions[i], batch.lengths[i]);
    }

    /** Zero-garbage blocking send; false only if the deadline passed. */
    boolean send(int kind, long correlationId, ByteBuffer payload, long deadline) throws InterruptedException {
        Objects.requireNonNull(payload, "payload");
        final int length = payload.remaining();
        checkPayload(length);
        final long index = claimBlocking(deadline, "send");
        if (index < 0) {
            return false;
        }
        writeClaimed(index, kind, correlationId, payload, length);
        return true;
    }

    static long deadlineOf(java.time.Duration timeout) {
        return deadline(timeout);
    }

    static long noDeadline() {
        return NO_DEADLINE;
    }

    /**
     * The zero-garbage single send's write, as {@link #publishClaimed} for a {@code MessageFrame}: if the copy
     * throws (an {@code OutOfMemoryError} growing the spill buffer, a mapped payload whose file was truncated under
     * the copy), the slot becomes a placeholder and the throw goes on; then wakes the consumer.
     */
    private void writeClaimed(long index, int kind, long correlationId, ByteBuffer payload, int length) {
        try {
            write(index, kind, correlationId, payload, payload.position(), length);
        } catch (Throwable t) {
            publishSkip(index); // wakes the consumer itself
            throw t;
        }
        signalConsumer();
    }

    /** Writes the frame into the claimed slot {@code index} and stores its status; the caller wakes the consumer. */
    private void write(long index, int kind, long correlationId, ByteBuffer payload, int position, int length) {
        final int slot = (int) (index & mask);
        final int base = slot << SLOT_SHIFT;
        writeHeader(base, kind, correlationId);
        if (length <= INLINE_PAYLOAD) {
            if (payload.hasArray()) { // a heap buffer: an array transfer skips the buffer-to-buffer one's checks
                slab.put(base + PAYLOAD_OFFSET, payload.array(), payload.arrayOffset() + position, length);
            } else {
                slab.put(base + PAYLOAD_OFFSET, payload, position, length);
            }
        } else {
            payload.get(position, spillFor(slot, length), 0, length);
        }
        storeStatus(index, base, length);
    }

    private void writeHeader(int base, int kind, long correlationId) {
        slab.putInt(base + KIND_OFFSET, kind);
        slab.putLong(base + CORRELATION_OFFSET, correlationId);
    }

    @Override
    protected void publishSkip(long index) {
        storeStatus(index, (int) (index & mask) << SLOT_SHIFT, SKIP_LENGTH);
        signalConsumer();
    }

    /**
     * Publishes the slot (the caller then wakes the consumer): a release fence, then a plain store of the status
     * word (Agrona's {@code releaseFence} then plain store of a record's length). The same as a {@code setRelease}
     * through a {@code byteBufferViewVarHandle}, which on JDK 17 costs an out-of-line call per access (the view looks
     * up the buffer's memory segment); the buffer's own {@code putInt} does not. Pairs with the acquire fence in
     * {@link #lengthAt}.
     */
    private void storeStatus(long index, int base, int length) {
        VarHandle.releaseFence(); // the header and payload stores above happen-before the status store below
        slab.putInt(base + STATUS_OFFSET, phaseOf(index) | length);
    }

    /** The phase bit (bit 31) that marks the slot of {@code index} as published: 1 on even laps, 0 on odd. */
    private int phaseOf(long index) {
        return (int) ~(index >>> lapShift) << 31;
    }

    /**
     * The slot's spill buffer, grown if the payload does not fit: to a power of two when that stays within the
     * bound that applies (maxRetainedSpill for a payload within it, else maxPayload), else to that bound.
     */
    private byte[] spillFor(int slot, int length) {
        byte[] buffer = spill[slot];
        if (buffer == null || buffer.length < length) {
            // Round up (so nearby sizes reuse it) but never past the retention bound a payload within it must stay
            // under, or a same-size burst would allocate once per message.
            final int rounded = Integer.highestOneBit(length - 1) << 1;
            final int bound = length <= maxRetainedSpill ? maxRetainedSpill : maxPayload;
            buffer = new byte[rounded > 0 && rounded <= bound ? rounded : Math.max(length, Math.min(bound, maxPayload))];
            spill[slot] = buffer;
        }
        return buffer;
    }

    /**
     * @return the length published in the slot of {@code index} (at {@code base}), {@link #SKIP_LENGTH} for a
     *         placeholder, or {@link #FREE} if the slot still holds the lap before's frame (acquire)
     */
    private int lengthAt(long index, int base) {
        final int status = slab.getInt(base + STATUS_OFFSET);
        // NOTE: acquire, as a getAcquire through a view VarHandle would be without its call (see storeStatus): the
        // header and payload loads after it read what the producer stored before its release fence. Pairs with the
        // releaseFence in storeStatus(). A spin on this method reloads the status word on every call: the fence
        // keeps the load from being hoisted out of a loop.
        VarHandle.acquireFence();
        return (status ^ phaseOf(index)) < 0 ? FREE : status & LENGTH_MASK;
    }

    @Override
    protected boolean isPublished(long index) {
        return lengthAt(index, (int) (index & mask) << SLOT_SHIFT) != FREE;
    }

    @Override
    public MessageFrame poll(ConsumerRole owner) {
        checkNotInHandler();
        for (;;) {
            final long cIndex = lpConsumerIndex();
            final int slot = (int) (cIndex & mask);
            final int base = slot << SLOT_SHIFT;
            final int length = lengthAt(cIndex, base);
            if (length == SKIP_LENGTH) {
                free(slot, length, cIndex);
                if (!afterSkip(owner)) {
                    return null; // cancelled by a wake-up the skip ran: what follows is the next consumer's
                }
                continue;
            }
            if (length < 0) {
                return null;
            }
            final byte[] payload = new byte[length];
            copyPayload(slot, base, length, payload, 0);
            final MessageFrame frame = new MessageFrame(slab.getInt(base + KIND_OFFSET),
                    slab.getLong(base + CORRELATION_OFFSET), payload);
            free(slot, length, cIndex);
            return frame;
        }
    }

    void copyPayload(int slot, int base, int length, byte[] dst, int offset) {
        if (length <= INLINE_PAYLOAD) {
            slab.get(base + PAYLOAD_OFFSET, dst, offset, length);
        } else {
            System.arraycopy(spill[slot], 0, dst, offset, length);
        }
    }

    void copyPayload(int slot, int base, int length, ByteBuffer dst) {
        final int position = dst.position();
        if (length <= INLINE_PAYLOAD) {
            dst.put(position, slab, base + PAYLOAD_OFFSET, length);
        } else {
            dst.put(position, spill[slot], 0, length);
        }
        dst.position(position + length);
    }

    /**
     * Frees the slot of {@code cIndex}; the slab is left as it is (see the phase bit in the class comment). A spill
     * buffer is longer than maxRetainedSpill exactly when its payload is ({@link #spillFor} grows a buffer past
     * maxRetainedSpill only for a payload over it, and such a buffer is dropped here before the slot's next lap), so
     * the length decides, without a load of the spill buffer's first line, which its producer has just written.
     */
    private void free(int slot, int length, long cIndex) {
        if (length > maxRetainedSpill && length > INLINE_PAYLOAD && length != SKIP_LENGTH) {
            spill[slot] = null;
        }
        soConsumerIndex(cIndex + 1); // frees the slot: pairs with lvConsumerIndex in claim()
    }

    int tryRecvFrames(FrameHandler handler, int max) {
        Objects.requireNonNull(handler, "handler");
        checkMax(max);
        final Thread previous = enterConsumer(); // first: a second consumer thread is reported as such
        final FrameView view = this.view;
        int n = 0;
        try {
            checkNotInHandler();
            while (n < max) {
                final long cIndex = lpConsumerIndex();
                final int slot = (int) (cIndex & mask);
                final int base = slot << SLOT_SHIFT;
                final int length = lengthAt(cIndex, base);
                if (length == FREE) {
                    break;
                }
                if (length == SKIP_LENGTH) {
                    free(slot, length, cIndex);
                    afterSkip(null); // the raw consumer: nothing to cancel
                    continue;
                }
                n++;
                view.bind(slot, base, length);
                try {
                    handler.onFrame(view);
                } finally {
                    view.unbind();
                    free(slot, length, cIndex);
                }
            }
        } finally {
            exitConsumer(previous);
            if (n > 0) {
                afterReceive(n);
            }
        }
        return n;
    }

    /**
     * A frame handler runs while its slot is still the consumer's current one (the slot is freed when the handler
     * returns), so a receive from inside it would hand the same slot out again. Consumer only; a plain read.
     */
    private void checkNotInHandler() {
        if (view.isBound()) {
            throw new IllegalStateException("receive from inside FrameHandler.onFrame: name=" + name());
        }
    }

    int recvFrames(FrameHandler handler, int max) throws InterruptedException {
        Objects.requireNonNull(handler, "handler");
        checkMax(max);
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (max == 0) {
            return 0;
        }
        for (;;) {
            final int n = tryRecvFrames(handler, max);
            if (n > 0 || endOfStream()) {
                return n;
            }
            awaitData(NO_DEADLINE);
        }
    }
}
