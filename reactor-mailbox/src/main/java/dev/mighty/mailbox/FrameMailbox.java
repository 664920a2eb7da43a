package dev.mighty.mailbox;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * A mailbox of {@link MessageFrame}s stored in a slab of {@link #capacity()} preallocated 64-byte slots,
 * one cache line each: a 16-byte header (kind, length, correlation id) and 48 bytes of inline payload.
 * Admission claims a slot and copies the descriptor into it; a larger payload (up to {@link #maxPayload()})
 * goes to the slot's spill buffer, which the slot keeps and reuses for the next payload that fits, so a burst
 * of same-size messages allocates nothing. A spill buffer over {@link #maxRetainedSpill()} bytes is dropped
 * once its message is received, so memory stays within {@code capacity * (64 + maxRetainedSpill)} plus the
 * payloads in flight.
 *
 * <h2>Zero-garbage paths</h2>
 * {@link #trySend(int, long, ByteBuffer)} / {@link #send(int, long, ByteBuffer)} copy from a caller's buffer
 * and {@link #tryRecvFrames} / {@link #recvFrames} hand the consumer a reused {@link FrameView}: after warm-up
 * they allocate 0 bytes per message. {@link #trySendMany(FrameBatch, int, int)} /
 * {@link #sendMany(FrameBatch, int, int)} send a reused {@link FrameBatch} with one claim for as many frames as fit:
 * a frame fills a cache line, and on x86 a claim per frame waits for the line transfer of the frame before it, so a
 * producer with several frames at hand sends them in runs (docs/benchmarks.md has the figures). The
 * {@code Mailbox<MessageFrame>} methods allocate one frame per received message.
 *
 * <p>Threads, progress, visibility and close are as for every {@link Mailbox}: any thread sends, one
 * consumer receives. A sender may reuse its array or buffer as soon as the send returns.
 */
public final class FrameMailbox implements Mailbox<MessageFrame> {
    /** Bytes per slot: one cache line. */
    public static final int SLOT_SIZE = FrameRing.SLOT_SIZE;
    /** Bytes of header per slot: kind (4), length (4), correlation id (8). */
    public static final int HEADER_SIZE = FrameRing.PAYLOAD_OFFSET;
    /** Bytes of payload stored inline in the slot; larger payloads spill. */
    public static final int INLINE_PAYLOAD = FrameRing.INLINE_PAYLOAD;
    /** Largest capacity of a slab: 2^24 slots (1 GiB); a {@code Mailbox} of references goes to 2^30. */
    public static final int MAX_CAPACITY = FrameRing.MAX_CAPACITY;
    /** Default {@link #maxPayload()}: 1 MiB. */
    public static final int DEFAULT_MAX_PAYLOAD = 1 << 20;
    /** Default {@link #maxRetainedSpill()}: 4 KiB. */
    public static final int DEFAULT_MAX_RETAINED_SPILL = 4 << 10;

    static {
        MailboxRing.installAccess(mailbox -> ((FrameMailbox) mailbox).ring);
    }

    private final FrameRing ring;

    FrameMailbox(int capacity, int maxPayload, int maxRetainedSpill, boolean singleProducer, String name) {
        this.ring = new FrameRing(capacity, maxPayload, maxRetainedSpill, singleProducer, name);
    }

    /**
     * Sends a frame copied from {@code payload}'s position to its limit, without allocating; the buffer's
     * position is left as it was.
     *
     * @param kind the frame's kind, an application-defined tag
     * @param correlationId the frame's correlation id
     * @param payload the bytes to send, from its position to its limit; neither is changed
     * @return {@code true} if admitted, {@code false} if the mailbox is full (occupied + reserved)
     * @throws NullPointerException if {@code payload} is null
     * @throws IllegalArgumentException if the payload is larger than {@link #maxPayload()} (nothing is admitted)
     * @throws MailboxClosedException if closed
     */
    public boolean trySend(int kind, long correlationId, ByteBuffer payload) {
        return ring.trySend(kind, correlationId, payload);
    }

    /**
     * As {@link #trySend(int, long, ByteBuffer)}, parking while the mailbox is full.
     *
     * @param kind the frame's kind, an application-defined tag
     * @param correlationId the frame's correlation id
     * @param payload the bytes to send, from its position to its limit; neither is changed
     * @throws NullPointerException if {@code payload} is null
     * @throws IllegalArgumentException if the payload is larger than {@link #maxPayload()} (nothing is admitted)
     * @throws InterruptedException if interrupted on entry or while parked; nothing is admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before the frame is admitted
     * @throws IllegalStateException if called from inside this mailbox's own receive (a {@link FrameHandler}) while
     *         the mailbox is full: it would wait forever
     */
    public void send(int kind, long correlationId, ByteBuffer payload) throws InterruptedException {
        ring.send(kind, correlationId, payload, FrameRing.noDeadline());
    }

    /**
     * As {@link #trySend(int, long, ByteBuffer)}, parking at most {@code timeout} while full; timeouts behave as
     * in {@link Mailbox#send(Object, Duration)}.
     *
     * @param kind the frame's kind, an application-defined tag
     * @param correlationId the frame's correlation id
     * @param payload the bytes to send, from its position to its limit; neither is changed
     * @param timeout the longest wait for room; {@link Duration#ZERO} tries once, as {@code trySend} does
     * @return {@code true} if admitted, {@code false} if the timeout elapsed first
     * @throws NullPointerException if {@code payload} or {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative, or the payload is larger than
     *         {@link #maxPayload()} (nothing is admitted)
     * @throws InterruptedException if interrupted on entry or while parked; nothing is admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before the frame is admitted
     */
    public boolean send(int kind, long correlationId, ByteBuffer payload, Duration timeout) throws InterruptedException {
        return ring.send(kind, correlationId, payload, FrameRing.deadlineOf(timeout));
    }

    /**
     * Sends {@code batch}'s frames {@code from .. to} without allocating, claiming as many slots as fit with one
     * atomic: the batched form of {@link #trySend(int, long, ByteBuffer)}, and the fast one when a producer has
     * several frames at hand (see {@link FrameBatch} for why). Each payload is copied from the position and
     * length {@link FrameBatch#add} recorded. Semantics as {@link #trySendMany(MessageFrame[], int, int)}: a prefix of
     * the run is admitted, contiguous in the mailbox; the caller keeps the rest.
     *
     * @param batch the frames
     * @param from  the first index of the run, inclusive
     * @param to    the last index of the run, exclusive
     * @return how many were admitted, frame {@code from} first: {@code 0 .. to - from}; 0 when the mailbox is full
     *         (occupied + reserved) or the run is empty
     * @throws NullPointerException if {@code batch} is null
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.size()}, or a payload buffer's limit
     *         no longer covers the bytes {@link FrameBatch#add} recorded (nothing is admitted)
     * @throws IllegalArgumentException if {@code from > to}, or a payload of the run is larger than
     *         {@link #maxPayload()}; nothing is admitted
     * @throws MailboxClosedException if the mailbox is closed and the run is not empty; nothing is admitted
     */
    public int trySendMany(FrameBatch batch, int from, int to) {
        return ring.trySendMany(batch, from, to);
    }

    /**
     * As {@link #trySendMany(FrameBatch, int, int)}, claiming runs and parking while the mailbox is full until all of
     * {@code from .. to} is admitted; semantics as {@link #sendMany(MessageFrame[], int, int)}.
     *
     * @param batch the frames
     * @param from  the first index of the run, inclusive
     * @param to    the last index of the run, exclusive
     * @return {@code to - from}; fewer only if the mailbox closed, or the thread was interrupted, after part of the
     *         run was admitted (the interrupt status is then set again)
     * @throws NullPointerException if {@code batch} is null
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.size()}, or a payload buffer's limit
     *         no longer covers the bytes {@link FrameBatch#add} recorded (nothing is admitted)
     * @throws IllegalArgumentException if {@code from > to}, or a payload of the run is larger than
     *         {@link #maxPayload()}; nothing is admitted
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the run
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the run is admitted
     * @throws IllegalStateException if called from inside this mailbox's own receive while the mailbox is full
     *         (part of the run may have been admitted): it would wait forever
     */
    public int sendMany(FrameBatch batch, int from, int to) throws InterruptedException {
        return ring.sendMany(batch, from, to, FrameRing.noDeadline());
    }

    /**
     * As {@link #sendMany(FrameBatch, int, int)}, parking at most {@code timeout} in all.
     *
     * @param batch   the frames
     * @param from    the first index of the run, inclusive
     * @param to      the last index of the run, exclusive
     * @param timeout the longest wait for room, in all
     * @return how many were admitted: fewer than {@code to - from} also if the timeout elapsed first
     * @throws NullPointerException if {@code batch} or {@code timeout} is null
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.size()}, or a payload buffer's limit
     *         no longer covers the bytes {@link FrameBatch#add} recorded (nothing is admitted)
     * @throws IllegalArgumentException if {@code from > to}, {@code timeout} is negative, or a payload of the run
     *         is larger than {@link #maxPayload()}; nothing is admitted
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the run
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the run is admitted
     */
    public int sendMany(FrameBatch batch, int from, int to, Duration timeout) throws InterruptedException {
        final long deadline = FrameRing.deadlineOf(timeout);
        return ring.sendMany(batch, from, to, deadline);
    }

    /**
     * Hands up to {@code max} frames present now to {@code handler} through a reused {@link FrameView}, without
     * allocating. Consumer only. Semantically similar to {@link #tryRecvMany} with a handler that receives a
     * view instead of a frame; each slot is freed when the handler returns.
     *
     * @param handler called once per frame, on the calling thread; see the <b>WARNING</b> of
     *                {@link FrameHandler#onFrame}
     * @param max the most frames to handle; {@code >= 0}
     * @return how many frames were handled: 0 when empty, also once closed and drained (end of stream is not
     *         reported here; {@link #isTerminated()} tells which)
     * @throws NullPointerException if {@code handler} is null
     * @throws IllegalArgumentException if {@code max} is negative
     * @throws IllegalStateException if called from inside a {@link FrameHandler} of this mailbox
     */
    public int tryRecvFrames(FrameHandler handler, int max) {
        return ring.tryRecvFrames(handler, max);
    }

    /**
     * Parks until at least one frame is present, then as {@link #tryRecvFrames}. Consumer only.
     *
     * @param handler called once per frame, on the calling thread
     * @param max the most frames to handle; {@code >= 0}
     * @return how many frames were handled; 0 only once closed normally and drained (or when {@code max} is 0)
     * @throws NullPointerException if {@code handler} is null
     * @throws IllegalArgumentException if {@code max} is negative
     * @throws InterruptedException if interrupted on entry or while parked
     * @throws MailboxClosedException (with the cause) once closed exceptionally and drained
     */
    public int recvFrames(FrameHandler handler, int max) throws InterruptedException {
        return ring.recvFrames(handler, max);
    }

    /** {@return the largest payload accepted, in bytes} */
    public int maxPayload() {
        return ring.maxPayload;
    }

    /** {@return the largest spill buffer a slot keeps after its message is received, in bytes} */
    public int maxRetainedSpill() {
        return ring.maxRetainedSpill;
    }

    /** @throws IllegalArgumentException if the payload is larger than {@link #maxPayload()} */
    @Override
    public boolean trySend(MessageFrame msg) {
        return ring.trySend(msg);
    }

    /** @throws IllegalArgumentException if the payload is larger than {@link #maxPayload()} */
    @Override
    public SendResult offer(MessageFrame msg) {
        return ring.offer(msg);
    }

    @Override
    public void send(MessageFrame msg) throws InterruptedException {
        ring.send(msg);
    }

    @Override
    public boolean send(MessageFrame msg, Duration timeout) throws InterruptedException {
        return ring.send(msg, timeout);
    }

    /** @throws IllegalArgumentException if a payload is larger than {@link #maxPayload()} (nothing is admitted) */
    @Override
    public int trySendMany(List<? extends MessageFrame> batch, int from, int to) {
        return ring.trySendMany(batch, from, to);
    }

    /** @throws IllegalArgumentException if a payload is larger than {@link #maxPayload()} (nothing is admitted) */
    @Override
    public int trySendMany(MessageFrame[] batch, int from, int to) {
        return ring.trySendMany(batch, from, to);
    }

    @Override
    public int sendMany(List<? extends MessageFrame> batch, int from, int to) throws InterruptedException {
        return ring.sendMany(batch, from, to);
    }

    @Override
    public int sendMany(MessageFrame[] batch, int from, int to) throws InterruptedException {
        return ring.sendMany(batch, from, to);
    }

    @Override
    public int sendMany(List<? extends MessageFrame> batch, int from, int to, Duration timeout)
            throws InterruptedException {
        return ring.sendMany(batch, from, to, timeout);
    }

    @Override
    public int sendMany(MessageFrame[] batch, int from, int to, Duration timeout) throws InterruptedException {
        return ring.sendMany(batch, from, to, timeout);
    }

    @Override
    public @Nullable MessageFrame tryRecv() {
        return ring.tryRecv();
    }

    @Override
    public @Nullable MessageFrame recv() throws InterruptedException {
        return ring.recv();
    }

    @Override
    public @Nullable MessageFrame recv(Duration timeout) throws InterruptedException {
        return ring.recv(timeout);
    }

    @Override
    public int tryRecvMany(Consumer<? super MessageFrame> sink, int max) {
        return ring.tryRecvMany(sink, max);
    }

    @Override
    public int recvMany(Consumer<? super MessageFrame> sink, int max) throws InterruptedException {
        return ring.recvMany(sink, max);
    }

    @Override
    public void close() {
        ring.close();
    }

    @Override
    public void closeExceptionally(Throwable cause) {
        ring.closeExceptionally(cause);
    }

    @Override
    public boolean isClosed() {
        return ring.isClosed();
    }

    @Override
    public boolean isTerminated() {
        return ring.isTerminated();
    }

    @Override
    public @Nullable Throwable closeCause() {
        return ring.closeCause();
    }

    @Override
    public int capacity() {
        return ring.capacity();
    }

    @Override
    public int size() {
        return ring.size();
    }

    @Override
    public int resetHighWaterMark() {
        return ring.resetHighWaterMark();
    }

    @Override
    public MailboxStats stats() {
        return ring.stats();
    }

    @Override
    public String toString() {
        return "FrameMailbox[name=" + ring.name() + ", capacity=" + capacity() + ", size=" + size() + ", closed="
                + isClosed() + "]";
    }
}
