/**
 * Apache Kafka glue: {@link dev.mighty.mailbox.kafka.KafkaMailboxReceiver} delivers a consumer group's records
 * into a bounded mailbox (the backpressure boundary between the poll loop and any consumer face), at least once,
 * with per-record acknowledgements ({@link dev.mighty.mailbox.kafka.ReceivedRecord}); and
 * {@link dev.mighty.mailbox.kafka.KafkaMailboxSender} sends a publisher's records with a bound on the sends in
 * flight.
 *
 * <p>The package is the artifact {@code dev.mighty:reactor-mailbox-kafka} (module {@code dev.mighty.mailbox.kafka}),
 * which depends on {@code org.apache.kafka:kafka-clients} (4.x) and on the core, {@code reactor-mailbox}.
 * See {@code docs/kafka.md}.
 */
@NullMarked
package dev.mighty.mailbox.kafka;

import org.jspecify.annotations.NullMarked;
