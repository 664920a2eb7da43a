package dev.mighty.mailbox;

/**
 * A snapshot of a mailbox's counters, from {@link Mailbox#stats()}. Each figure is read separately, so
 * under concurrent use the figures are individually correct but not a single atomic cut.
 *
 * @param name             the mailbox's name ({@link MailboxBuilder#name(String)}); by default {@code "mailbox"},
 *                         or {@code "frames"} from {@link Mailboxes#frames(int)}
 * @param capacity         the capacity
 * @param size             admitted and not yet received
 * @param admitted         messages admitted since creation (the producer index; it also counts the rare
 *                         placeholder slot reserve uses to renew its epoch, at most one per
 *                         63 reservations made while nothing was sent)
 * @param received         messages received since creation (the consumer index; placeholders included)
 * @param refused          {@code trySend} (or timed {@code send}) calls refused because the mailbox was full; a
 *                         batched send ({@code trySendMany}, timed {@code sendMany}) counts once when it leaves part
 *                         or all of its run behind for that reason
 * @param rejectedClosed   sends rejected because the mailbox was closed; a batched send counts once per call
 * @param highWaterMark    the highest occupancy seen since creation or the last
 *                         {@link Mailbox#resetHighWaterMark()}, sampled by producers when they refresh their cached limit and by the consumer
 *                         from its batch sizes, so a lower bound of the true peak
 * @param reserved         slots reserved (by the Kafka receiver) and not yet used
 * @param parkedProducers  producers parked now on a full mailbox
 * @param consumerParked   whether the consumer is parked (or a publisher is waiting for data) now
 * @param producerParks    times since creation a producer parked on a full mailbox (or a {@code MailboxSubscriber}
 *                         registered to wait for room): with {@code consumerParks}, why a run was slow
 * @param consumerParks    times since creation the consumer parked on an empty mailbox (or a publisher's drain
 *                         registered to be woken for data; a drain without an executor keeps its registration
 *                         while it has demand, so it counts once per such stretch, not once per message)
 */
public record MailboxStats(
        String name,
        int capacity,
        int size,
        long admitted,
        long received,
        long refused,
        long rejectedClosed,
        int highWaterMark,
        long reserved,
        int parkedProducers,
        boolean consumerParked,
        long producerParks,
        long consumerParks) {
}
