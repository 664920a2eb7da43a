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
     * @param capacity 1 .. 2^30, rounded up to a power of two; default {@value Mailboxes#DEFAULT_CAPACITY}
     * @throws IllegalArgumentException if out of range
     */
    public MailboxBuilder<T> capacity(int capacity) {
        Mailboxes.checkCapacity(capacity);
        this.capacity = capacity;
        return this;
    }

    /**
     * Declares that at most one thread sends at a time (SPSC). A {@code MailboxSubscriber} counts as a sender.
     */
    public MailboxBuilder<T> singleProducer() {
        this.singleProducer = true;
        return this;
    }

    /** @param name shown in {@link MailboxStats}, JFR events, metrics and error messages; default "mailbox" */
    public MailboxBuilder<T> name(String name) {
        this.name = Objects.requireNonNull(name, "name");
        return this;
    }

    /** For {@link #buildFrames()}: the largest payload accepted; default 1 MiB. */
    public MailboxBuilder<T> maxPayload(int maxPayload) {
        if (maxPayload < 0) {
            throw new IllegalArgumentException("maxPayload: " + maxPayload + " (expected: >= 0)");
        }
        this.maxPayload = maxPayload;
        return this;
    }

    /** For {@link #buildFrames()}: the largest spill buffer a slot keeps; default 4 KiB. */
    public MailboxBuilder<T> maxRetainedSpill(int maxRetainedSpill) {
        if (maxRetainedSpill < 0) {
            throw new IllegalArgumentException("maxRetainedSpill: " + maxRetainedSpill + " (expected: >= 0)");
        }
        this.maxRetainedSpill = maxRetainedSpill;
        return this;
    }

    /** @return a new reference mailbox */
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

    public Mailbox<T> build() {
        final ArrayMailbox<T> mailbox = new ArrayMailbox<>(capacity, singleProducer, name);
        mailbox.waitPolicy(waitPolicy);
        return mailbox;
    }

    /** @return a new slab mailbox of frames, with this builder's capacity, name and payload limits */
    public FrameMailbox buildFrames() {
        final FrameMailbox mailbox = new FrameMailbox(capacity, maxPayload, maxRetainedSpill, singleProducer, name);
        MailboxRing.of(mailbox).waitPolicy(waitPolicy);
        return mailbox;
    }
}
