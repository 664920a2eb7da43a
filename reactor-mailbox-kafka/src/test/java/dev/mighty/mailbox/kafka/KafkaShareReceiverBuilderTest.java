package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/** {@link KafkaShareReceiver.Builder}'s early checks, and the lifecycle of a receiver that never starts (no broker). */
class KafkaShareReceiverBuilderTest {
    private static Map<String, Object> config() {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1");
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "g");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        return config;
    }

    private static KafkaShareReceiver.Builder<String, String> builder(Map<String, Object> config) {
        return KafkaShareReceiver.<String, String>builder(config).topics(List.of("t"));
    }

    @Test
    void shouldRefuseImplicitAcknowledgementWhenConfigured() {
        final Map<String, Object> config = config();
        config.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "implicit");
        assertThatThrownBy(() -> builder(config).build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("share.acknowledgement.mode: implicit (expected: explicit or absent");
    }

    @Test
    void shouldRefuseBatchOptimizedAcquisitionWhenConfigured() {
        final Map<String, Object> config = config();
        config.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "batch_optimized");
        assertThatThrownBy(() -> builder(config).build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("share.acquire.mode: batch_optimized (expected: record_limit or absent");
    }

    @Test
    void shouldRefuseMaxPollRecordsOverTheCapacityWhenConfigured() {
        final Map<String, Object> config = config();
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 600);
        assertThatThrownBy(() -> builder(config).capacity(300).build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("max.poll.records: 600 (expected: <= the mailbox's capacity 512: a poll's records must"
                        + " fit it)");
    }

    @Test
    void shouldRefuseMissingGroupIdAndTopicsAndBadArguments() {
        final Map<String, Object> config = config();
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        assertThatThrownBy(() -> builder(config).build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("group.id: null (expected: a share group id");
        assertThatThrownBy(() -> KafkaShareReceiver.builder(config()).build())
                .isInstanceOf(IllegalStateException.class).hasMessageStartingWith("topics not set");
        assertThatThrownBy(() -> builder(config()).topics(List.of()))
                .hasMessage("topics: [] (expected: at least one topic)");
        assertThatThrownBy(() -> builder(config()).capacity(0)).hasMessageStartingWith("capacity: 0 (expected: 1 ..");
        assertThatThrownBy(() -> builder(config()).pollTimeout(Duration.ZERO))
                .hasMessage("pollTimeout: PT0S (expected: > 0)");
        assertThatThrownBy(() -> builder(config()).closeTimeout(Duration.ofSeconds(-1)))
                .hasMessage("closeTimeout: PT-1S (expected: >= 0)");
        assertThatThrownBy(() -> builder(config()).groupId(" ")).hasMessage("groupId: \" \" (expected: not blank)");
    }

    @Test
    void shouldCloseHarmlesslyBeforeStartAndRefuseStartAfterwards() {
        final KafkaShareReceiver<String, String> receiver = builder(config()).groupId("other").capacity(3).build();
        assertThat(receiver.stats().groupId()).isEqualTo("other");
        assertThat(receiver.mailbox().capacity()).isEqualTo(4);
        receiver.close();
        receiver.close(Duration.ZERO);
        assertThat(receiver.mailbox().isClosed()).isTrue();
        assertThat(receiver.closeAsync(Duration.ZERO).toCompletableFuture()).isCompleted();
        assertThatThrownBy(receiver::start).isInstanceOf(IllegalStateException.class)
                .hasMessage("share receiver already started or closed: state=closed");
    }
}
