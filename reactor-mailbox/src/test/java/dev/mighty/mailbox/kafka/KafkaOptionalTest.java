package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.util.List;
import java.util.function.Function;

import dev.mighty.mailbox.HidingClassLoader;
import dev.mighty.mailbox.Mailbox;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/**
 * {@code kafka-clients} is an optional dependency: everything but {@code dev.mighty.mailbox.kafka} must load and
 * work without it. The classes under test are loaded, child-first, by a loader that sees only
 * {@code target/classes} and its one compile dependency (reactive-streams), whose parent is the platform
 * loader (so nothing of the test class path leaks in), and that refuses {@code org.apache.kafka.*} outright and
 * records every attempt.
 */
@Tag("kafka")
@Timeout(300)
@ExtendWith(SharedKafka.class)
class KafkaOptionalTest {

    /**
     * reactor-core and micrometer-core are optional for the Kafka glue too: only {@code receive()} and
     * {@code ReceivedRecord.commit()} need reactor, only {@code KafkaReceiverMetrics} micrometer. The low-level path
     * (with {@code stats()}) runs against the broker in a loader that has kafka-clients (and slf4j, which it needs)
     * but refuses {@code reactor.*} and {@code io.micrometer.*}.
     */
    @Test
    void shouldReceiveAcknowledgeAndCloseThroughTheMailboxWhenReactorIsNotOnTheClassPath(EmbeddedKafka kafka)
            throws Exception {
        kafka.createTopic("no-reactor", 1);
        KafkaTestSupport.produce(kafka, "no-reactor", 1, 10);
        try (HidingClassLoader loader = HidingClassLoader.without(List.of("reactor.", "io.micrometer."),
                "reactor-core and micrometer-core", KafkaConsumer.class, LoggerFactory.class, NoReactorProbe.class)) {
            @SuppressWarnings("unchecked")
            final Function<String, String> probe = (Function<String, String>) Class
                    .forName(NoReactorProbe.class.getName(), true, loader).getConstructor().newInstance();
            assertThat(probe.getClass().getClassLoader()).isSameAs(loader);
            final Thread current = Thread.currentThread();
            final ClassLoader previous = current.getContextClassLoader();
            current.setContextClassLoader(loader); // Kafka loads its plug-ins (metrics reporters) through it
            try {
                assertThat(probe.apply(kafka.bootstrapServers() + " no-reactor")).isEqualTo("10 kv7 stats=0");
            } finally {
                current.setContextClassLoader(previous);
            }
            assertThat(loader.refused).as("nothing on the low-level path asked for reactor or micrometer").isEmpty();
        }
    }

    @Test
    void shouldHideKafkaFromTheFilteringLoaderSoTheKafkaPackageCannotLink() throws Exception {
        try (HidingClassLoader loader = HidingClassLoader.without("org.apache.kafka.", "kafka-clients")) {
            assertThatThrownBy(() -> Class.forName("org.apache.kafka.clients.consumer.KafkaConsumer", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
            // the Kafka glue needs kafka-clients: it cannot be linked here
            assertThatThrownBy(() -> Class.forName("dev.mighty.mailbox.kafka.KafkaMailboxReceiver", true, loader)
                    .getDeclaredMethods()).isInstanceOf(NoClassDefFoundError.class);
            assertThat(loader.refused).anyMatch(name -> name.startsWith("org.apache.kafka."));
            assertThat(Class.forName("dev.mighty.mailbox.Mailbox", false, loader)).isNotSameAs(Mailbox.class);
        }
    }

    @Test
    void shouldSendReceiveAndPublishWhenKafkaIsNotOnTheClassPath() throws Exception {
        try (HidingClassLoader loader = HidingClassLoader.without("org.apache.kafka.", "kafka-clients")) {
            final Class<?> mailboxes = Class.forName("dev.mighty.mailbox.Mailboxes", true, loader);
            final Class<?> mailboxType = Class.forName("dev.mighty.mailbox.Mailbox", true, loader);
            final Object mailbox = mailboxes.getMethod("bounded", int.class).invoke(null, 16);
            final Method trySend = mailboxType.getMethod("trySend", Object.class);
            assertThat(trySend.invoke(mailbox, "a")).isEqualTo(true);
            assertThat(mailboxType.getMethod("tryRecv").invoke(mailbox)).isEqualTo("a");
            // the frame slab and the Reactive Streams adapters load too
            final Object frames = mailboxes.getMethod("frames", int.class).invoke(null, 8);
            assertThat(frames).isNotNull();
            final Class<?> publisherType = Class.forName("dev.mighty.mailbox.rs.MailboxPublisher", true, loader);
            assertThat(publisherType.getConstructor(mailboxType).newInstance(mailbox)).isNotNull();
            final Class<?> subscriberType = Class.forName("dev.mighty.mailbox.rs.MailboxSubscriber", true, loader);
            assertThat(subscriberType.getConstructor(mailboxType).newInstance(mailbox)).isNotNull();
            mailboxType.getMethod("close").invoke(mailbox);
            assertThat(mailboxType.getMethod("isTerminated").invoke(mailbox)).isEqualTo(true);
            assertThat(loader.refused).as("nothing outside the kafka package asked for Kafka").isEmpty();
        }
    }
}
