/**
 * reactor-mailbox: a bounded many-producer/one-consumer mailbox ({@link dev.mighty.mailbox}), its Reactive
 * Streams adapters ({@link dev.mighty.mailbox.rs}), and optional faces for Reactor and Micrometer. The Kafka
 * bridge is a module of its own, {@code dev.mighty.mailbox.kafka} (artifact {@code reactor-mailbox-kafka}).
 *
 * <p>Only {@code reactive-streams} is required (and read by every module that reads this one). Each optional
 * package needs its library, which a module using that package requires itself:
 * {@link dev.mighty.mailbox.reactor} needs {@code reactor.core}, {@link dev.mighty.mailbox.micrometer}
 * {@code micrometer.core}. They are {@code requires static}, not {@code requires static transitive}: javac would
 * then demand both on the module path of every module that reads this one, even one that uses neither. The JFR
 * events are recorded when {@code jdk.jfr} is resolved (always on the class path; on the module path, when some
 * module requires it or with {@code --add-modules jdk.jfr}), and the mailbox works without it.
 * {@code org.jspecify} (the {@code @NullMarked} and {@code @Nullable} annotations of the API) is
 * {@code requires static} as well: null checkers and Kotlin read the annotations from the class files, and nothing
 * loads them at run time.
 * {@code dev.mighty.mailbox.internal} is not API: it is exported to the Kafka bridge's module only (see below).
 */
module dev.mighty.mailbox {
    requires transitive org.reactivestreams;

    requires static reactor.core;
    requires static micrometer.core;
    requires static jdk.jfr;
    requires static org.jspecify;

    exports dev.mighty.mailbox;
    exports dev.mighty.mailbox.rs;
    exports dev.mighty.mailbox.reactor;
    exports dev.mighty.mailbox.micrometer;

    // The Kafka bridge's poll loop waits for mailbox room through the ring itself (MailboxRing's room
    // registration, Wakeable, MailboxEvents), as it did inside this module. A stop-gap: to be replaced by a
    // public room-registration API, after which this export goes.
    exports dev.mighty.mailbox.internal to dev.mighty.mailbox.kafka;
}
