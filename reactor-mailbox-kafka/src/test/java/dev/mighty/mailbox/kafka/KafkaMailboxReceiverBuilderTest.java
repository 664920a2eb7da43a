package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Argument checks and the life cycle before {@code start()}: no broker needed (nothing connects). */
@Tag("kafka")
@Timeout(30)
class KafkaMailboxReceiverBuilderTest {

    private static Map<String, Object> config() {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9");
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "g");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        return config;
    }

    @Test
    void shouldRejectBadConfigurationWithAClearMessage() {
        assertThatThrownBy(() -> KafkaMailboxReceiver.builder(null)).isInstanceOf(NullPointerException.class);
        final Map<String, Object> autoCommit = config();
        autoCommit.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
        assertThatThrownBy(() -> KafkaMailboxReceiver.builder(autoCommit))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("enable.auto.commit: true (expected: false or absent; the receiver commits what is"
                        + " acknowledged)");
        final Map<String, Object> noGroup = config();
        noGroup.remove(ConsumerConfig.GROUP_ID_CONFIG);
        assertThatThrownBy(() -> KafkaMailboxReceiver.builder(noGroup))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("group.id: absent");
        final Map<String, Object> badMaxPoll = config();
        badMaxPoll.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 0);
        assertThatThrownBy(() -> KafkaMailboxReceiver.builder(badMaxPoll).topics(List.of("t")).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("max.poll.records: 0 (expected: a positive int)");
    }

    @Test
    void shouldRejectBadBuilderArgumentsWithAClearMessage() {
        final KafkaMailboxReceiver.Builder<String, String> builder = KafkaMailboxReceiver.builder(config());
        assertThatThrownBy(builder::build).isInstanceOf(IllegalStateException.class)
                .hasMessage("topics: not set (expected: topics(List) before build())");
        assertThatThrownBy(() -> builder.topics(List.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("topics: [] (expected: at least one topic)");
        assertThatThrownBy(() -> builder.topics(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> builder.topics(Arrays.asList("a", null))).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> builder.capacity(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity: 0 (expected: 1 .. 1073741824)");
        assertThatThrownBy(() -> builder.commitInterval(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("commitInterval: PT0S (expected: > 0)");
        assertThatThrownBy(() -> builder.pollTimeout(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("pollTimeout: PT-0.001S (expected: > 0)");
        assertThatThrownBy(() -> builder.revocationTimeout(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.commitInterval(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> builder.onDeserializationError(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void shouldLowerMaxPollRecordsToTheCapacityAndCloseHarmlesslyBeforeStart() {
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config())
                .topics(List.of("t"))
                .capacity(100) // rounded up to 128
                .build();
        assertThat(receiver.mailbox().capacity()).isEqualTo(128);
        assertThat(receiver.loop().settings.maxPollRecords).as("min(500, capacity)").isEqualTo(128);
        assertThat(receiver.paused()).isFalse();
        receiver.close();
        receiver.close(Duration.ZERO); // twice: harmless
        assertThat(receiver.mailbox().isClosed()).isTrue();
        assertThat(receiver.mailbox().isTerminated()).isTrue();
        assertThatThrownBy(receiver::start).isInstanceOf(IllegalStateException.class)
                .hasMessage("receiver already started or closed: state=closed");
        assertThatThrownBy(() -> receiver.close(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> receiver.close(null)).isInstanceOf(NullPointerException.class);
    }

    /** N9: a poll thread that cannot start leaves the receiver closed (it was left RUNNING with no thread). */
    @Test
    void shouldCloseTheReceiverWhenItsPollThreadCannotStart() throws Exception {
        final Thread used = new Thread(() -> { });
        used.start();
        used.join();
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config())
                .topics(List.of("t"))
                .threadFactory(task -> used) // a thread that has run already: start() throws
                .build();
        assertThatThrownBy(receiver::start).isInstanceOf(IllegalThreadStateException.class);
        assertThat(receiver.mailbox().isClosed()).isTrue();
        assertThat(receiver.mailbox().closeCause()).isInstanceOf(IllegalThreadStateException.class);
        assertThat(receiver.closeAsync(Duration.ZERO).toCompletableFuture().get(10, TimeUnit.SECONDS)).isNull();
        receiver.close(); // harmless
        assertThatThrownBy(receiver::start).isInstanceOf(IllegalStateException.class)
                .hasMessage("receiver already started or closed: state=closed");
    }

    @Test
    void shouldNotChangeTheCallersConfiguration() {
        final Map<String, Object> config = config();
        final Map<String, Object> copy = new HashMap<>(config);
        final List<String> topics = new ArrayList<>(List.of("t"));
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config)
                .topics(topics).build();
        topics.add("u");
        assertThat(receiver.loop().settings.maxPollRecords).as("Kafka's default").isEqualTo(500);
        receiver.close();
        assertThat(config).isEqualTo(copy);
        assertThat(receiver.toString()).contains("topics=[t]");
    }
}
