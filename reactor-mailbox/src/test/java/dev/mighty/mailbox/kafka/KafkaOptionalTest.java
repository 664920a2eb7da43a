package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;

import dev.mighty.mailbox.HidingClassLoader;
import dev.mighty.mailbox.Mailbox;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code kafka-clients} is an optional dependency: everything but {@code dev.mighty.mailbox.kafka} must load and
 * work without it. The classes under test are loaded, child-first, by a loader that sees only
 * {@code target/classes} and its one compile dependency (reactive-streams), whose parent is the platform
 * loader (so nothing of the test class path leaks in), and that refuses {@code org.apache.kafka.*} outright and
 * records every attempt.
 */
@Tag("kafka")
@Timeout(300)
class KafkaOptionalTest {

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
