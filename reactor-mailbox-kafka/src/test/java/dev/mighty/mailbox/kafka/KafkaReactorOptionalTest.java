package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.function.Function;

import dev.mighty.mailbox.HidingClassLoader;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/**
 * reactor-core and micrometer-core are optional dependencies of the Kafka bridge. The classes under test are loaded,
 * child-first, by a loader that sees only the core's and the bridge's classes, their compile dependencies
 * (reactive-streams, kafka-clients) and the probe, whose parent is the platform loader (so nothing of the test class
 * path leaks in), and that refuses {@code reactor.*} and {@code io.micrometer.*} outright and records every attempt.
 * (That the core needs no Kafka at all is {@link KafkaModuleDescriptorTest}'s.)
 */
@Tag("kafka")
@Timeout(300)
@ExtendWith(SharedKafka.class)
class KafkaReactorOptionalTest {

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
                "reactor-core and micrometer-core", KafkaConsumer.class, LoggerFactory.class,
                KafkaMailboxReceiver.class, NoReactorProbe.class)) {
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
}
