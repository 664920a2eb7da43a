package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;

/**
 * The receiver logs (through {@code System.Logger}, so {@code java.util.logging} here) its rebalances, failures and
 * end, and fails with exceptions: none of them may carry a secret of the consumer configuration. The secrets are
 * set next to a plaintext listener, so the consumer ignores them and the receiver runs normally.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaSecretsTest {
    private static final List<String> SECRETS = List.of("S3CRET-jaas", "S3CRET-keystore", "S3CRET-key",
            "S3CRET-truststore");
    private static EmbeddedKafka kafka;

    private final Logger julLogger = Logger.getLogger("dev.mighty.mailbox.kafka");
    private final List<String> logged = new CopyOnWriteArrayList<>();
    private final Handler capture = new Handler() {
        private final SimpleFormatter formatter = new SimpleFormatter();

        @Override
        public void publish(LogRecord record) {
            logged.add(formatter.format(record)); // message, parameters and the thrown stack trace
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };
    private Level previousLevel;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    @BeforeEach
    void captureLogs() {
        previousLevel = julLogger.getLevel();
        julLogger.setLevel(Level.ALL);
        capture.setLevel(Level.ALL);
        julLogger.addHandler(capture);
    }

    @AfterEach
    void stopCapturing() {
        julLogger.removeHandler(capture);
        julLogger.setLevel(previousLevel);
    }

    private static Map<String, Object> configWithSecrets(String group) {
        final Map<String, Object> config = consumerConfig(kafka, group);
        config.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required"
                + " username=\"u\" password=\"S3CRET-jaas\";");
        config.put("ssl.keystore.password", "S3CRET-keystore");
        config.put("ssl.key.password", "S3CRET-key");
        config.put("ssl.truststore.password", "S3CRET-truststore");
        return config;
    }

    /** A value deserializer that fails on {@code v-5}. */
    public static final class FailingOnFive implements Deserializer<String> {
        private final StringDeserializer strings = new StringDeserializer();

        @Override
        public String deserialize(String topic, byte[] data) {
            final String value = strings.deserialize(topic, data);
            if ("v-5".equals(value)) {
                throw new SerializationException("cannot read " + value);
            }
            return value;
        }
    }

    private static String messages(Throwable t) {
        final StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c).append('\n');
            for (Throwable s : c.getSuppressed()) {
                all.append(messages(s));
            }
        }
        return all.toString();
    }

    private void assertNoSecretIn(String text) {
        for (String secret : SECRETS) {
            assertThat(text).doesNotContain(secret);
        }
    }

    @Test
    void shouldKeepTheSecretsOutOfEveryLogLineAndExceptionWhenTheReceiverRunsRebalancesAndFails() throws Exception {
        final String topic = "secrets";
        kafka.createTopic(topic, 2);
        KafkaTestSupport.produce(kafka, topic, 2, 20);

        // a normal run: assignment, records, commit(), close
        final KafkaMailboxReceiver<String, String> ok = KafkaMailboxReceiver
                .<String, String>builder(configWithSecrets("secrets-ok"))
                .topics(List.of(topic))
                .build();
        final List<String> values = ok.receive().take(20).concatMap(r -> r.commit().thenReturn(r.value()))
                .collectList().block(KafkaTestSupport.WAIT);
        assertThat(values).hasSize(20);
        ok.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertNoSecretIn(ok.toString());

        // a fatal error: the stream ends with it, and it is logged
        final Map<String, Object> failing = configWithSecrets("secrets-fail");
        failing.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, FailingOnFive.class);
        final KafkaMailboxReceiver<String, String> bad = KafkaMailboxReceiver.<String, String>builder(failing)
                .topics(List.of(topic))
                .build();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final Disposable sub = bad.receive().subscribe(ReceivedRecord::acknowledge, error::set);
        try {
            assertThat(eventually(() -> error.get() != null)).isTrue();
        } finally {
            sub.dispose();
        }
        assertNoSecretIn(messages(error.get()));

        // an invalid configuration fails the build
        final Map<String, Object> invalid = configWithSecrets("secrets-invalid");
        invalid.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "not-a-number");
        final Throwable buildError = catchThrowable(() -> KafkaMailboxReceiver.<String, String>builder(invalid)
                .topics(List.of(topic)).build());
        assertThat(buildError).isNotNull();
        assertNoSecretIn(messages(buildError));
        final Map<String, Object> badMaxPoll = configWithSecrets("secrets-invalid");
        badMaxPoll.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "lots");
        final Throwable maxPollError = catchThrowable(() -> KafkaMailboxReceiver.<String, String>builder(badMaxPoll)
                .topics(List.of(topic)).build());
        assertThat(maxPollError).isInstanceOf(IllegalArgumentException.class);
        assertNoSecretIn(messages(maxPollError));

        final List<String> lines = new ArrayList<>(logged);
        assertThat(lines).as("the receiver logged its rebalances and its fatal error")
                .anyMatch(line -> line.contains("assigned"))
                .anyMatch(line -> line.contains("fatal error"));
        for (String line : lines) {
            assertNoSecretIn(line);
        }
    }
}
