package dev.mighty.mailbox;

import java.util.Objects;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * Builds a {@link Mailbox} or a {@link FrameMailbox}; from {@link Mailboxes#builder()}. Not thread-safe;
 * each {@code build} returns a new mailbox.
 *
 * @param <T> the message type
 */
public final class MailboxBuilder<T> {
    private int capacity = Mailboxes.DEFAULT_CAPACITY;
    private boolean singleProducer;
    private String name = "mailbox";
    private int maxPayload = FrameMailbox.DEFAULT_MAX_PAYLOAD;
    private int maxRetainedSpill = FrameMailbox.DEFAULT_MAX_RETAINED_SPILL;
    private WaitPolicy waitPolicy = WaitPolicy.defaults();

    MailboxBuilder() {
    }

    /**
     * Sets the capacity.
     *
     * @param capacity 1 .. 2^30, rounded up to a power of two; default {@value Mailboxes#DEFAULT_CAPACITY}.
     *                 {@link #buildFrames()} takes at most {@link FrameMailbox#MAX_CAPACITY} (2^24)
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public MailboxBuilder<T> capacity(int capacity) {
        Mailboxes.checkCapacity(capacity);
        this.capacity = capacity;
        return this;
    }

    /**
     * Declares that at most one thread sends at a time (SPSC). A {@code MailboxSubscriber} counts as a sender.
     *
     * @return this builder
     */
    public MailboxBuilder<T> singleProducer() {
        this.singleProducer = true;
        return this;
    }

    /**
     * Sets the mailbox's name.
     *
     * @param name shown in {@link MailboxStats}, JFR events, metrics and error messages; default "mailbox"
     * @return this builder
     * @throws NullPointerException if {@code name} is null
     */
    public MailboxBuilder<T> name(String name) {
        this.name = Objects.requireNonNull(name, "name");
        return this;
    }

    /**
     * For {@link #buildFrames()}: the largest payload accepted; a send of a larger one throws
     * {@link IllegalArgumentException}.
     *
     * @param maxPayload in bytes, {@code 0 .. Integer.MAX_VALUE - 16}; default 1 MiB
     * @return this builder
     * @throws IllegalArgumentException if {@code maxPayload} is negative (a value over the upper bound fails in
     *         {@link #buildFrames()})
     */
    public MailboxBuilder<T> maxPayload(int maxPayload) {
        if (maxPayload < 0) {
            throw new IllegalArgumentException("maxPayload: " + maxPayload + " (expected: >= 0)");
        }
        this.maxPayload = maxPayload;
        return this;
    }

    /**
     * For {@link #buildFrames()}: the largest spill buffer a slot keeps for its next payload once its message is
     * received; a larger one is dropped, so received messages leave at most {@code capacity * maxRetainedSpill}
     * bytes of spill buffers behind.
     *
     * @param maxRetainedSpill in bytes, {@code >= 0} (0 keeps none); default 4 KiB
     * @return this builder
     * @throws IllegalArgumentException if {@code maxRetainedSpill} is negative
     */
    public MailboxBuilder<T> maxRetainedSpill(int maxRetainedSpill) {
        if (maxRetainedSpill < 0) {
            throw new IllegalArgumentException("maxRetainedSpill: " + maxRetainedSpill + " (expected: >= 0)");
        }
        this.maxRetainedSpill = maxRetainedSpill;
        return this;
    }

    /**
     * How {@code recv} and {@code recvMany} wait on an empty mailbox before they park: {@link WaitPolicy#defaults()}
     * unless given. The faces that drain on other threads take their own policy (see {@link WaitPolicy}).
     *
     * @param waitPolicy the consumer's back-off before parking
     * @return this builder
     * @throws NullPointerException if {@code waitPolicy} is null
     */
    public MailboxBuilder<T> waitPolicy(WaitPolicy waitPolicy) {
        this.waitPolicy = Objects.requireNonNull(waitPolicy, "waitPolicy");
        return this;
    }

    /** {@return a new reference mailbox} */
    public Mailbox<T> build() {
        final ArrayMailbox<T> mailbox = new ArrayMailbox<>(capacity, singleProducer, name);
        mailbox.waitPolicy(waitPolicy);
        return mailbox;
    }

    /**
     * {@return a new slab mailbox of frames, with this builder's capacity, name and payload limits}
     * @throws IllegalArgumentException if the capacity is over {@link FrameMailbox#MAX_CAPACITY}, or
     *         {@code maxPayload} over {@code Integer.MAX_VALUE - 16}
     */
    public FrameMailbox buildFrames() {
        final FrameMailbox mailbox = new FrameMailbox(capacity, maxPayload, maxRetainedSpill, singleProducer, name);
        MailboxRing.of(mailbox).waitPolicy(waitPolicy);
        return mailbox;
    }
}
