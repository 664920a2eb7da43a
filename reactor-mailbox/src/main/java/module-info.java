/**
 * reactor-mailbox: a bounded many-producer/one-consumer mailbox ({@link dev.mighty.mailbox}), its Reactive
 * Streams adapters ({@link dev.mighty.mailbox.rs}), and optional faces for Reactor, Kafka and Micrometer.
 *
 * <p>Only {@code reactive-streams} is required (and read by every module that reads this one). Each optional
 * package needs its library, which a module using that package requires itself:
 * {@link dev.mighty.mailbox.reactor} needs {@code reactor.core}, {@link dev.mighty.mailbox.kafka}
 * {@code kafka.clients}, {@link dev.mighty.mailbox.micrometer} {@code micrometer.core}. They are
 * {@code requires static}, not {@code requires static transitive}: javac would then demand all three on the
 * module path of every module that reads this one, even one that uses none of them. The JFR events are
 * recorded when {@code jdk.jfr} is resolved (always on the class path; on the module path, when some module
 * requires it or with {@code --add-modules jdk.jfr}), and the mailbox works without it.
 * {@code dev.mighty.mailbox.internal} is not exported: it is not API.
 */
module dev.mighty.mailbox {
    requires transitive org.reactivestreams;

    requires static reactor.core;
    requires static kafka.clients;
    requires static micrometer.core;
    requires static jdk.jfr;
    requires static org.jspecify;

    exports dev.mighty.mailbox;
    exports dev.mighty.mailbox.rs;
    exports dev.mighty.mailbox.reactor;
    exports dev.mighty.mailbox.kafka;
    exports dev.mighty.mailbox.micrometer;
}
