/**
 * Apache Kafka glue: {@link dev.mighty.mailbox.kafka.KafkaMailboxReceiver} delivers a consumer group's records
 * into a bounded mailbox (the backpressure boundary between the poll loop and any consumer face), at least once,
 * with per-record acknowledgements ({@link dev.mighty.mailbox.kafka.ReceivedRecord}); and
 * {@link dev.mighty.mailbox.kafka.KafkaMailboxSender} sends a publisher's records with a bound on the sends in
 * flight.
 *
 * <p>{@code org.apache.kafka:kafka-clients} (4.x) is an <b>optional</b> dependency of this library: add it to
 * use this package; the rest of the library neither needs nor loads it. See {@code docs/kafka.md}.
 */
package dev.mighty.mailbox.kafka;
