package dev.mighty.mailbox.kafka;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;

/**
 * Where the receiver's {@link KafkaReceiverStats} snapshot lives, with the commit counters behind it.
 * <p>Threads: written by the poll thread only (a refresh before a poll, each completed commit, the finish); read by
 * any thread ({@link #get()}). Progress: wait-free. Visibility: the snapshot is an immutable record published by a
 * volatile store, so a reader sees one whole snapshot; the counters are plain fields of the poll thread.
 */
final class ReceiverStatsCell {
    private final String groupId;
    private final String topicsLabel;
    /** The last snapshot: written (volatile store) by the poll thread only, read by any thread. */
    private volatile KafkaReceiverStats stats;
    // ---- poll thread only: commits completed, each way, their total times and the last one's
    private long commits;
    private long failedCommits;
    private long commitNanos;
    private long failedCommitNanos;
    private long lastCommitNanos;

    ReceiverStatsCell(String groupId, String topicsLabel) {
        this.groupId = groupId;
        this.topicsLabel = topicsLabel;
        this.stats = new KafkaReceiverStats(groupId, topicsLabel, 0, 0, 0, 0L, 0L, -1L, 0L, 0L, 0L, 0L, 0L);
    }

    /** @return the last snapshot. Any thread. */
    KafkaReceiverStats get() {
        return stats;
    }

    /** Poll thread: a commit completed after {@code nanos}; republishes the snapshot with it. */
    void commitDone(boolean succeeded, long nanos) {
        if (succeeded) {
            commits++;
            commitNanos += nanos;
        } else {
            failedCommits++;
            failedCommitNanos += nanos;
        }
        lastCommitNanos = nanos;
        stats = stats.withCommits(commits, failedCommits, commitNanos, failedCommitNanos, lastCommitNanos);
    }

    /** Poll thread: publishes a new snapshot with these ledger figures and the commit counters. */
    void refresh(int assigned, int pausedPartitions, int atBound, long open, long oldest, long lag) {
        stats = new KafkaReceiverStats(groupId, topicsLabel, assigned, pausedPartitions, atBound, open, oldest, lag,
                commits, failedCommits, commitNanos, failedCommitNanos, lastCommitNanos);
    }

    /** Poll thread, at the finish: nothing assigned any more. */
    void closed() {
        refresh(0, 0, 0, 0L, 0L, -1L);
    }

    /**
     * @return the consumer's lag summed over {@code partitions} where it knows it, or -1 if it knows none. Poll
     *         thread.
     */
    static long lag(org.apache.kafka.clients.consumer.Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
        // N13: from the consumer's own fetch metrics ("records-lag" per partition, updated by each fetch), not
        // currentLag(partition): under group.protocol=consumer each call is a round trip to the consumer's network
        // thread, once per partition per refresh. The topic tag may carry '.' as '_' (and 4.x records both forms),
        // so names are compared in that form and each partition counted once.
        final Map<String, Double> byPartition = new HashMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
            final MetricName name = e.getKey();
            if (!"records-lag".equals(name.name()) || !"consumer-fetch-manager-metrics".equals(name.group())) {
                continue;
            }
            final String topic = name.tags().get("topic");
            final String partition = name.tags().get("partition");
            final Object value = e.getValue().metricValue();
            if (topic != null && partition != null && value instanceof Double && !((Double) value).isNaN()) {
                byPartition.put(topic.replace('.', '_') + '/' + partition, (Double) value);
            }
        }
        long sum = 0L;
        boolean known = false;
        for (TopicPartition partition : partitions) {
            final Double lag = byPartition.get(partition.topic().replace('.', '_') + '/' + partition.partition());
            if (lag != null) {
                sum += Math.max(0L, lag.longValue());
                known = true;
            }
        }
        return known ? sum : -1L;
    }
}
