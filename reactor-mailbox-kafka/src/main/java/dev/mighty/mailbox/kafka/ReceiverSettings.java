package dev.mighty.mailbox.kafka;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadFactory;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;

/**
 * The settings of a {@link KafkaMailboxReceiver}, immutable and validated: the one place that checks what a
 * {@link KafkaMailboxReceiver.Builder} was given (each setter checks its argument here, {@link #ReceiverSettings}
 * checks the whole) and derives what the parts of the receiver need (the completed consumer configuration, the
 * labels, the poll threshold).
 * <p>Threads: made by the thread that calls {@code build()}; read by any thread afterwards (all fields final).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class ReceiverSettings<K, V> {
    /** Kafka's own default of {@code max.poll.records}. */
    static final int KAFKA_MAX_POLL_RECORDS = 500;

    /** The consumer configuration as the receiver completed it ({@code enable.auto.commit=false}, ...). */
    private final Map<String, Object> consumerConfig;
    final List<String> topics;
    /** Set instead of a topic list for a pattern subscription. */
    final Pattern topicPattern;
    /** Set instead of a subscription for a manual assignment (no group management). */
    final List<TopicPartition> assignment;
    final BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> onAssigned;
    final BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> onRevoked;
    final BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> onLost;
    /** For log lines and thread names: the topics and the group id (never anything else of the configuration). */
    final String label;
    final String groupId;
    /** The topics as {@link KafkaReceiverStats#topics()} gives them. */
    final String topicsLabel;
    /** The mailbox's capacity, a power of two. */
    final int capacity;
    final int maxUnacknowledged;
    /** {@code max.poll.records} as the consumer gets it. */
    final int maxPollRecords;
    /** Reservations the poll thread wants before a normal poll: {@code min(max.poll.records, capacity)}. */
    final int pollThreshold;
    final long commitIntervalNanos;
    final Duration pollTimeout;
    final Duration revocationTimeout;
    final long revocationTimeoutNanos;
    final Consumer<? super RecordDeserializationException> deserializationErrorHandler;
    /** The exactly-once face's batch: at most this many records ... */
    final int transactionRecords;
    /** ... or what came within this long of the first. */
    final Duration transactionWait;
    /** The age at which a partition's oldest unacknowledged record is overdue, or Long.MAX_VALUE (never). */
    final long maxUnacknowledgedAgeNanos;
    /** Takes an overdue record over (it then counts as acknowledged); null: an overdue record is fatal. */
    final BiConsumer<? super TopicPartition, ? super Long> onOverdue;
    private final Function<Map<String, Object>, ? extends org.apache.kafka.clients.consumer.Consumer<K, V>>
            consumerFactory;
    private final ThreadFactory threadFactory;

    /**
     * @throws IllegalStateException if none, or more than one, of topics, a topic pattern and an assignment
     *         were given
     */
    ReceiverSettings(KafkaMailboxReceiver.Builder<K, V> builder) {
        final int sources = (builder.topics == null ? 0 : 1) + (builder.topicPattern == null ? 0 : 1)
                + (builder.assignment == null ? 0 : 1);
        if (sources == 0) {
            throw new IllegalStateException("topics: not set (expected: topics(List) before build())");
        }
        if (sources > 1) {
            throw new IllegalStateException("topics, topicPattern, assignment: " + sources
                    + " set (expected: exactly one)");
        }
        this.topicPattern = builder.topicPattern;
        this.assignment = builder.assignment;
        this.onAssigned = builder.onAssigned;
        this.onRevoked = builder.onRevoked;
        this.onLost = builder.onLost;
        if (builder.topics != null) {
            this.topics = List.copyOf(builder.topics);
        } else if (topicPattern != null) {
            this.topics = List.of(topicPattern.pattern());
        } else {
            this.topics = assignment.stream().map(TopicPartition::topic).distinct().sorted()
                    .collect(java.util.stream.Collectors.toUnmodifiableList());
        }
        this.groupId = String.valueOf(builder.config.get(ConsumerConfig.GROUP_ID_CONFIG));
        this.topicsLabel = String.join(",", topics);
        this.label = topicsLabel + " group=" + groupId;
        this.capacity = builder.capacity;
        this.maxUnacknowledged = builder.maxUnacknowledged;
        final Map<String, Object> config = new HashMap<>(builder.config);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        final Object userMaxPoll = config.get(ConsumerConfig.MAX_POLL_RECORDS_CONFIG);
        if (userMaxPoll == null) {
            this.maxPollRecords = Math.min(KAFKA_MAX_POLL_RECORDS, capacity);
            config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
        } else {
            this.maxPollRecords = positiveInt(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, userMaxPoll);
        }
        this.consumerConfig = config;
        this.pollThreshold = Math.min(maxPollRecords, capacity);
        this.commitIntervalNanos = builder.commitInterval.toNanos();
        this.pollTimeout = builder.pollTimeout;
        this.revocationTimeout = builder.revocationTimeout;
        this.revocationTimeoutNanos = builder.revocationTimeout.toNanos();
        this.deserializationErrorHandler = builder.deserializationErrorHandler;
        this.transactionRecords = builder.transactionRecords > 0 ? builder.transactionRecords : pollThreshold;
        this.transactionWait = builder.transactionWait;
        this.maxUnacknowledgedAgeNanos = builder.maxUnacknowledgedAge == null ? Long.MAX_VALUE
                : ReceiverLifecycle.saturatedNanos(builder.maxUnacknowledgedAge);
        this.onOverdue = builder.onOverdue;
        this.consumerFactory = builder.consumerFactory;
        this.threadFactory = builder.threadFactory;
    }

    /** @return a new consumer, from the factory, with the completed configuration (called once, by the receiver) */
    org.apache.kafka.clients.consumer.Consumer<K, V> newConsumer() {
        return Objects.requireNonNull(consumerFactory.apply(new HashMap<>(consumerConfig)), "consumerFactory result");
    }

    /** @return the poll thread, not started, running {@code body} */
    Thread newPollThread(Runnable body) {
        if (threadFactory == null) {
            final Thread thread = new Thread(body, threadName("poll"));
            thread.setDaemon(true);
            return thread;
        }
        return Objects.requireNonNull(threadFactory.newThread(body), "threadFactory result");
    }

    String threadName(String role) {
        return "kafka-mailbox-" + role + "-" + String.join(",", topics);
    }

    // ---- the checks of the builder's setters

    /** @return a copy of {@code config}, checked: no auto commit, a group id */
    static Map<String, Object> checkConsumerConfig(Map<String, Object> consumerConfig) {
        final Map<String, Object> config = Map.copyOf(Objects.requireNonNull(consumerConfig, "consumerConfig"));
        final Object autoCommit = config.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
        if (autoCommit != null && Boolean.parseBoolean(autoCommit.toString().trim())) {
            throw new IllegalArgumentException(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG + ": " + autoCommit
                    + " (expected: false or absent; the receiver commits what is acknowledged)");
        }
        if (!config.containsKey(ConsumerConfig.GROUP_ID_CONFIG)) {
            throw new IllegalArgumentException(ConsumerConfig.GROUP_ID_CONFIG
                    + ": absent (expected: a consumer group id; the receiver subscribes with group management)");
        }
        return config;
    }

    static List<String> checkTopics(List<String> topics) {
        Objects.requireNonNull(topics, "topics");
        if (topics.isEmpty()) {
            throw new IllegalArgumentException("topics: [] (expected: at least one topic)");
        }
        return List.copyOf(topics); // NPE on a null element
    }

    static List<TopicPartition> checkAssignment(Collection<TopicPartition> partitions) {
        Objects.requireNonNull(partitions, "partitions");
        if (partitions.isEmpty()) {
            throw new IllegalArgumentException("assignment: [] (expected: at least one partition)");
        }
        return List.copyOf(partitions);
    }

    static Duration positive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + ": " + d + " (expected: > 0)");
        }
        return d;
    }

    static Duration nonNegative(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative()) {
            throw new IllegalArgumentException(name + ": " + d + " (expected: >= 0)");
        }
        return d;
    }

    static int checkMaxUnacknowledged(int perPartition) {
        if (perPartition < 1) {
            throw new IllegalArgumentException("maxUnacknowledged: " + perPartition + " (expected: >= 1)");
        }
        return perPartition;
    }

    static int positiveInt(String key, Object value) {
        final int parsed;
        try {
            parsed = value instanceof Number ? ((Number) value).intValue() : Integer.parseInt(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + ": " + value + " (expected: a positive int)", e);
        }
        if (parsed < 1) {
            throw new IllegalArgumentException(key + ": " + value + " (expected: a positive int)");
        }
        return parsed;
    }
}
