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
     * @param capacity 1 .. 2^30, rounded up to a power of two
     * @return a lock-free many-producer, single-consumer mailbox
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public static <T> Mailbox<T> bounded(int capacity) {
        return new ArrayMailbox<>(capacity, false, "mailbox");
    }

    /** @return a builder: capacity 1024, many producers, name "mailbox" */
    public static <T> MailboxBuilder<T> builder() {
        return new MailboxBuilder<>();
    }

    /** @return a slab mailbox of {@code capacity} 64-byte slots, max payload 1 MiB */
    public static FrameMailbox frames(int capacity) {
        return frames(capacity, FrameMailbox.DEFAULT_MAX_PAYLOAD);
    }

    /**
     * @param maxPayload the largest payload accepted, in bytes; larger ones get {@link IllegalArgumentException}
     * @return a slab mailbox of {@code capacity} 64-byte slots
     */
    public static FrameMailbox frames(int capacity, int maxPayload) {
        return new FrameMailbox(capacity, maxPayload, Math.min(maxPayload, FrameMailbox.DEFAULT_MAX_RETAINED_SPILL),
                false, "frames");
    }

    static int checkCapacity(int capacity) {
        return MailboxRing.checkCapacity(capacity);
    }
}
