package dev.mighty.mailbox.kafka;

/**
 * A snapshot of a {@link KafkaShareReceiver}'s figures, from {@link KafkaShareReceiver#stats()}: what the poll thread
 * knew at the end of its last turn, published with one volatile store (one cut of the poll thread's state). The
 * acknowledgement figures count what the poll thread handed to the share consumer; the broker's answers come back
 * later, and those that fail are counted in {@code failedAcknowledgements}.
 *
 * @param groupId                the share group ({@code group.id})
 * @param topics                 the topics, comma-separated
 * @param polls                  calls of the consumer's {@code poll}, with records or without
 * @param delivered              records sent into the mailbox (a record handed back after a renewal is not counted
 *                               again)
 * @param outstanding            records delivered and not yet settled with the consumer: in the mailbox, in the
 *                               application's hands, or being renewed. At most one poll's records
 *                               ({@code max.poll.records}) plus those being renewed: the receiver polls only when
 *                               every record of the previous poll is acknowledged
 * @param accepted               {@code ACCEPT} acknowledgements handed to the consumer
 * @param released               {@code RELEASE} acknowledgements handed to the consumer, the close's included
 * @param rejected               {@code REJECT} acknowledgements handed to the consumer
 * @param renewals               {@code RENEW} acknowledgements handed to the consumer
 * @param failedAcknowledgements acknowledgements the broker refused (e.g. the record's lock had expired) or the
 *                               consumer would not take, and renewed records the consumer never handed back
 */
public record KafkaShareReceiverStats(String groupId, String topics, long polls, long delivered, int outstanding,
        long accepted, long released, long rejected, long renewals, long failedAcknowledgements) {
}
