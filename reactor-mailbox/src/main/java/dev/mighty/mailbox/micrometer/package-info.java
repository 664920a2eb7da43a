/**
 * Micrometer meters: {@link dev.mighty.mailbox.micrometer.MailboxMetrics} for mailboxes and
 * {@link dev.mighty.mailbox.micrometer.KafkaReceiverMetrics} for a Kafka receiver's figures (lag, paused partitions,
 * unacknowledged records, commits and their latency). {@code micrometer-core} is an optional dependency: only this
 * package uses it, and a mailbox or a receiver works without it on the class path. {@code KafkaReceiverMetrics} needs
 * {@code kafka-clients} as well (as the receiver it measures does); {@code MailboxMetrics} does not.
 */
package dev.mighty.mailbox.micrometer;
