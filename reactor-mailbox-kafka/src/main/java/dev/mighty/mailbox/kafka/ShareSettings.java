package dev.mighty.mailbox.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import dev.mighty.mailbox.internal.MailboxRing;
import org.apache.kafka.clients.consumer.ConsumerConfig;

/**
 * The checks of {@link KafkaShareReceiver.Builder}, in one place: each fails early with a message in the
 * {@code name: value (expected: ...)} style.
 */
final class ShareSettings {
    /** The receiver's {@code max.poll.records} unless the configuration sets it (then at most the capacity). */
    static final int DEFAULT_MAX_POLL_RECORDS = 500;
    static final String EXPLICIT = "explicit";
    static final String RECORD_LIMIT = "record_limit";

    private ShareSettings() {
    }

    static List<String> checkTopics(List<String> topics) {
        final List<String> copy = List.copyOf(Objects.requireNonNull(topics, "topics")); // NPE on a null element
        if (copy.isEmpty()) {
            throw new IllegalArgumentException("topics: [] (expected: at least one topic)");
        }
        for (String topic : copy) {
            if (topic.isBlank()) {
                throw new IllegalArgumentException("topics: " + copy + " (expected: no blank topic name)");
            }
        }
        return copy;
    }

    static int checkCapacity(int capacity) {
        if (capacity < 1 || capacity > MailboxRing.MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity: " + capacity + " (expected: 1 .. " + MailboxRing.MAX_CAPACITY
                    + ")");
        }
        return capacity;
    }

    static Duration checkPositive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + ": " + d + " (expected: > 0)");
        }
        return d;
    }

    static Duration checkNotNegative(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative()) {
            throw new IllegalArgumentException(name + ": " + d + " (expected: >= 0)");
        }
        return d;
    }

    /**
     * @return the share consumer's configuration: {@code config} with the group id, explicit acknowledgement, record
     *         limit acquisition and {@code max.poll.records} (an {@code Integer}, at most the mailbox's capacity)
     */
    static Map<String, Object> consumerConfig(Map<String, Object> config, String groupId, int capacity,
            boolean keyDeserializer, boolean valueDeserializer) {
        final Map<String, Object> out = new HashMap<>(config);
        if (groupId != null) {
            out.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        }
        final Object group = out.get(ConsumerConfig.GROUP_ID_CONFIG);
        if (group == null || group.toString().isBlank()) {
            throw new IllegalArgumentException(ConsumerConfig.GROUP_ID_CONFIG + ": " + group
                    + " (expected: a share group id, in the configuration or from groupId(..))");
        }
        requireOr(out, ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, EXPLICIT,
                "the receiver acknowledges each record itself");
        requireOr(out, ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, RECORD_LIMIT,
                "the broker must lock no more records than a poll returns, and a poll's records must fit the mailbox");
        final int rounded = Integer.highestOneBit(Math.max(1, capacity - 1)) << (capacity > 1 ? 1 : 0);
        final Object max = out.get(ConsumerConfig.MAX_POLL_RECORDS_CONFIG);
        final int maxPollRecords;
        if (max == null) {
            maxPollRecords = Math.min(DEFAULT_MAX_POLL_RECORDS, rounded);
        } else {
            maxPollRecords = positiveInt(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, max);
            if (maxPollRecords > rounded) {
                throw new IllegalArgumentException(ConsumerConfig.MAX_POLL_RECORDS_CONFIG + ": " + maxPollRecords
                        + " (expected: <= the mailbox's capacity " + rounded + ": a poll's records must fit it)");
            }
        }
        out.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
        if (keyDeserializer != valueDeserializer) {
            final String missing = keyDeserializer ? ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG
                    : ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG;
            if (out.get(missing) == null) {
                throw new IllegalArgumentException(missing + ": null (expected: a class, or both deserializer "
                        + "instances given to the builder)");
            }
        }
        return out;
    }

    /** Sets {@code key} to {@code value}, or checks that the configuration's value is that one. */
    private static void requireOr(Map<String, Object> config, String key, String value, String why) {
        final Object given = config.get(key);
        if (given == null) {
            config.put(key, value);
        } else if (!value.equals(given.toString().trim().toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException(key + ": " + given + " (expected: " + value + " or absent: " + why
                    + ")");
        }
    }

    private static int positiveInt(String key, Object value) {
        final int n;
        try {
            n = value instanceof Number ? ((Number) value).intValue() : Integer.parseInt(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + ": " + value + " (expected: a positive int)", e);
        }
        if (n < 1) {
            throw new IllegalArgumentException(key + ": " + value + " (expected: a positive int)");
        }
        return n;
    }
}
