package dev.mighty.mailbox;

import dev.mighty.mailbox.internal.MailboxRing;

/** Factories for mailboxes. */
public final class Mailboxes {
    /** The builder's default capacity. */
    public static final int DEFAULT_CAPACITY = 1024;
    /** The largest capacity, 2^30. */
    public static final int MAX_CAPACITY = MailboxRing.MAX_CAPACITY;

    private Mailboxes() {
    }

    /**
     * Creates a bounded mailbox with the default settings.
     *
     * @param <T> the message type
     * @param capacity 1 .. 2^30, rounded up to a power of two
     * @return a lock-free many-producer, single-consumer mailbox
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public static <T> Mailbox<T> bounded(int capacity) {
        return new ArrayMailbox<>(capacity, false, "mailbox");
    }

    /**
     * Creates a builder of mailboxes.
     *
     * @param <T> the message type
     * @return a builder: capacity 1024, many producers, name "mailbox"
     */
    public static <T> MailboxBuilder<T> builder() {
        return new MailboxBuilder<>();
    }

    /**
     * As {@link #frames(int, int)} with a max payload of 1 MiB.
     *
     * @param capacity 1 .. 2^24 ({@link FrameMailbox#MAX_CAPACITY}), rounded up to a power of two
     * @return a slab mailbox of {@code capacity} 64-byte slots, many producers, named "frames"
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public static FrameMailbox frames(int capacity) {
        return frames(capacity, FrameMailbox.DEFAULT_MAX_PAYLOAD);
    }

    /**
     * Creates a slab mailbox of frames with a payload limit.
     *
     * @param capacity 1 .. 2^24 ({@link FrameMailbox#MAX_CAPACITY}), rounded up to a power of two
     * @param maxPayload the largest payload accepted, in bytes, {@code 0 .. Integer.MAX_VALUE - 16}; larger ones
     *                   get {@link IllegalArgumentException}; spill buffers up to {@code min(maxPayload, 4 KiB)}
     *                   are kept for reuse
     * @return a slab mailbox of {@code capacity} 64-byte slots, many producers, named "frames"
     * @throws IllegalArgumentException if {@code capacity} or {@code maxPayload} is out of range
     */
    public static FrameMailbox frames(int capacity, int maxPayload) {
        return new FrameMailbox(capacity, maxPayload, Math.min(maxPayload, FrameMailbox.DEFAULT_MAX_RETAINED_SPILL),
                false, "frames");
    }

    static int checkCapacity(int capacity) {
        return MailboxRing.checkCapacity(capacity);
    }
}
