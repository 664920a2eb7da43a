/**
 * Micrometer meters of the Kafka bridge: {@link dev.mighty.mailbox.kafka.micrometer.KafkaReceiverMetrics} for a
 * Kafka receiver's figures (lag, paused partitions, unacknowledged records, commits and their latency).
 * {@code micrometer-core} is an optional dependency of {@code reactor-mailbox-kafka}: only this package uses it, and
 * a receiver works without it on the class path. The mailbox's own meters are
 * {@code dev.mighty.mailbox.micrometer.MailboxMetrics}, in the core.
 */
@NullMarked
package dev.mighty.mailbox.kafka.micrometer;

import org.jspecify.annotations.NullMarked;
