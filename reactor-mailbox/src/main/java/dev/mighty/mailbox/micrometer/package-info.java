/**
 * Micrometer meters: {@link dev.mighty.mailbox.micrometer.MailboxMetrics} for mailboxes. {@code micrometer-core} is
 * an optional dependency: only this package uses it, and a mailbox works without it on the class path. The Kafka
 * receiver's meters are in the Kafka bridge's module ({@code dev.mighty.mailbox.kafka.micrometer.KafkaReceiverMetrics},
 * artifact {@code reactor-mailbox-kafka}).
 */
@NullMarked
package dev.mighty.mailbox.micrometer;

import org.jspecify.annotations.NullMarked;
