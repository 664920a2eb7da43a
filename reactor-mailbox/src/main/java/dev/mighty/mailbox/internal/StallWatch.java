package dev.mighty.mailbox.internal;

/**
 * One mailbox's state for the periodic consumer-stall check. The consumer is stalled when messages were
 * waiting at the previous check and it has received none since: a message has then waited at least a whole
 * period. An idle mailbox (empty at the previous check) is never reported, however long it was idle.
 *
 * <p>Threads: touched only by the stall check, under the registry's monitor ({@link MailboxEvents}).
 */
final class StallWatch {
    /** The mailbox's size at the last check; 0 before the first, so that the first check never reports. */
    private int lastSize;
    /** The receive count at the last check. */
    private long lastReceived;
    /** {@link System#nanoTime()} of the last check that saw progress or an empty mailbox. */
    private long progressNanos;

    /**
     * Records one check.
     *
     * @param size      messages in the mailbox now
     * @param received  the mailbox's receive count now
     * @param nowNanos  {@link System#nanoTime()} now
     * @return how long the consumer has received nothing while messages waited, counted from the last check that
     *         saw progress (at least one period); -1 if it is not stalled
     */
    long observe(int size, long received, long nowNanos) {
        final boolean stalled = lastSize > 0 && received == lastReceived;
        lastSize = size;
        lastReceived = received;
        if (!stalled) {
            progressNanos = nowNanos;
            return -1L;
        }
        return nowNanos - progressNanos;
    }
}
