/**
 * reactor-mailbox-kafka: the Kafka bridge of reactor-mailbox. {@link dev.mighty.mailbox.kafka} holds
 * {@code KafkaMailboxReceiver} (a consumer group's records into a bounded mailbox, at least once, acknowledged per
 * record) and {@code KafkaMailboxSender} (a publisher's records to Kafka, with a bound on the sends in flight);
 * {@link dev.mighty.mailbox.kafka.micrometer} binds a receiver's figures to a Micrometer registry.
 *
 * <p>It requires {@code dev.mighty.mailbox} (and so {@code org.reactivestreams}) and {@code kafka.clients}, both
 * transitively: their types are in this module's API. It supports kafka-clients 4.x; it is built and tested against
 * the version the project's {@code kafka.version} names. {@code reactor.core} (for {@code receive()},
 * {@code receiveAutoAck()} and {@code ReceivedRecord.commit()}) and {@code micrometer.core} (for
 * {@code dev.mighty.mailbox.kafka.micrometer}) are optional, {@code requires static}: a module using those faces
 * requires its library itself, and the low-level path (the receiver's mailbox, acknowledgements, {@code stats()})
 * neither needs nor loads them. The JFR event is recorded when {@code jdk.jfr} is resolved, as the core's.
 * {@code org.jspecify} is {@code requires static} too: its annotations ({@code @NullMarked} on both packages) are
 * read from the class files by name, and nothing loads them at run time.
 */
module dev.mighty.mailbox.kafka {
    requires transitive dev.mighty.mailbox;
    requires transitive kafka.clients;

    requires static reactor.core;
    requires static micrometer.core;
    requires static jdk.jfr;
    requires static org.jspecify;

    exports dev.mighty.mailbox.kafka;
    exports dev.mighty.mailbox.kafka.micrometer;
}
