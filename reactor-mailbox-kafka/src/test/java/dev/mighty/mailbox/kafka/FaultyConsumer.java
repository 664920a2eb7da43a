package dev.mighty.mailbox.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metrics.KafkaMetric;

/**
 * A real {@code KafkaConsumer} (talking to the shared broker) behind a wrapper that injects failures, for the
 * receiver's {@code consumerFactory}: errors queued for {@code commitSync} are thrown before the real commit, errors
 * queued for {@code commitAsync} are handed to the callback at the next {@code poll} (as Kafka completes async
 * commits inside a poll) instead of committing, and {@link #losePartitions()} makes the next poll call the
 * listener's {@code onPartitionsLost} for the whole assignment, then re-assign it from the committed offsets, as a
 * member that missed its session and rejoined would see it. While {@link #failEveryCommitAsync} is set, every
 * {@code commitAsync} fails with it, as a queued fault does (the queue is left alone). Every faulty callback is
 * timed ({@link #faultCallbacks}). Poll thread only, apart from the queues, the flags and the timings.
 */
final class FaultyConsumer<K, V> implements Consumer<K, V> {
    private final KafkaConsumer<K, V> delegate;
    final ConcurrentLinkedQueue<RuntimeException> commitSyncFaults = new ConcurrentLinkedQueue<>();
    /** Thrown by the next polls, one per poll, before the real poll (an authorization error, say). */
    final ConcurrentLinkedQueue<RuntimeException> pollFaults = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<RuntimeException> commitAsyncFaults = new ConcurrentLinkedQueue<>();
    /** Faults thrown or handed to a callback so far. */
    final AtomicInteger injected = new AtomicInteger();
    /** Successful commits passed to the real consumer (sync, or async handed on). */
    final AtomicInteger commits = new AtomicInteger();
    /** Calls of {@code currentLag}: each is a round trip to the network thread under group.protocol=consumer. */
    final AtomicInteger currentLagCalls = new AtomicInteger();
    /** When set, every {@code commitAsync} fails with it (before the queued faults are looked at). */
    volatile RuntimeException failEveryCommitAsync;
    /**
     * Per faulty {@code commitAsync} callback run, in order: {@code {nanoTime before the callback, after it}}. The
     * receiver's own clock reading inside the callback lies between the two.
     */
    final ConcurrentLinkedQueue<long[]> faultCallbacks = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean lose = new AtomicBoolean();
    private final List<Runnable> dueCallbacks = new ArrayList<>();
    private ConsumerRebalanceListener listener;

    FaultyConsumer(Map<String, Object> config) {
        this.delegate = new KafkaConsumer<>(config);
    }

    /** The next poll loses every assigned partition (onPartitionsLost), then gets them back (onPartitionsAssigned). */
    void losePartitions() {
        lose.set(true);
    }

    @Override
    public ConsumerRecords<K, V> poll(Duration timeout) {
        final RuntimeException pollFault = pollFaults.poll();
        if (pollFault != null) {
            injected.incrementAndGet();
            throw pollFault;
        }
        final List<Runnable> due = new ArrayList<>(dueCallbacks);
        dueCallbacks.clear();
        due.forEach(Runnable::run);
        if (lose.compareAndSet(true, false) && listener != null && !delegate.assignment().isEmpty()) {
            final Set<TopicPartition> lost = delegate.assignment();
            listener.onPartitionsLost(lost);
            final Map<TopicPartition, OffsetAndMetadata> committed = delegate.committed(lost);
            for (TopicPartition partition : lost) {
                final OffsetAndMetadata at = committed.get(partition);
                if (at == null) {
                    delegate.seekToBeginning(List.of(partition));
                } else {
                    delegate.seek(partition, at.offset());
                }
            }
            listener.onPartitionsAssigned(lost);
        }
        return delegate.poll(timeout);
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
        final RuntimeException fault = commitSyncFaults.poll();
        if (fault != null) {
            injected.incrementAndGet();
            throw fault;
        }
        delegate.commitSync(offsets, timeout);
        commits.incrementAndGet();
    }

    @Override
    public void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
        final RuntimeException always = failEveryCommitAsync;
        final RuntimeException fault = always != null ? always : commitAsyncFaults.poll();
        if (fault != null) {
            injected.incrementAndGet();
            final Map<TopicPartition, OffsetAndMetadata> copy = new HashMap<>(offsets);
            dueCallbacks.add(() -> {
                final long before = System.nanoTime();
                try {
                    callback.onComplete(copy, fault);
                } finally {
                    faultCallbacks.add(new long[] {before, System.nanoTime()});
                }
            });
            return;
        }
        delegate.commitAsync(offsets, (done, error) -> {
            if (error == null) {
                commits.incrementAndGet();
            }
            callback.onComplete(done, error);
        });
    }

    @Override
    public void subscribe(Collection<String> topics, ConsumerRebalanceListener callback) {
        this.listener = callback;
        delegate.subscribe(topics, callback);
    }

    @Override
    public void subscribe(Pattern pattern, ConsumerRebalanceListener callback) {
        this.listener = callback;
        delegate.subscribe(pattern, callback);
    }

    @Override
    public void subscribe(SubscriptionPattern pattern, ConsumerRebalanceListener callback) {
        this.listener = callback;
        delegate.subscribe(pattern, callback);
    }

    // ---- the rest is the real consumer's

    @Override
    public Set<TopicPartition> assignment() {
        return delegate.assignment();
    }

    @Override
    public Set<String> subscription() {
        return delegate.subscription();
    }

    @Override
    public void subscribe(Collection<String> topics) {
        delegate.subscribe(topics);
    }

    @Override
    public void assign(Collection<TopicPartition> partitions) {
        delegate.assign(partitions);
    }

    @Override
    public void subscribe(Pattern pattern) {
        delegate.subscribe(pattern);
    }

    @Override
    public void subscribe(SubscriptionPattern pattern) {
        delegate.subscribe(pattern);
    }

    @Override
    public void unsubscribe() {
        delegate.unsubscribe();
    }

    @Override
    public void commitSync() {
        delegate.commitSync();
    }

    @Override
    public void commitSync(Duration timeout) {
        delegate.commitSync(timeout);
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        commitSync(offsets, Duration.ofMinutes(1));
    }

    @Override
    public void commitAsync() {
        delegate.commitAsync();
    }

    @Override
    public void commitAsync(OffsetCommitCallback callback) {
        delegate.commitAsync(callback);
    }

    @Override
    public void registerMetricForSubscription(KafkaMetric metric) {
        delegate.registerMetricForSubscription(metric);
    }

    @Override
    public void unregisterMetricFromSubscription(KafkaMetric metric) {
        delegate.unregisterMetricFromSubscription(metric);
    }

    @Override
    public void seek(TopicPartition partition, long offset) {
        delegate.seek(partition, offset);
    }

    @Override
    public void seek(TopicPartition partition, OffsetAndMetadata offsetAndMetadata) {
        delegate.seek(partition, offsetAndMetadata);
    }

    @Override
    public void seekToBeginning(Collection<TopicPartition> partitions) {
        delegate.seekToBeginning(partitions);
    }

    @Override
    public void seekToEnd(Collection<TopicPartition> partitions) {
        delegate.seekToEnd(partitions);
    }

    @Override
    public long position(TopicPartition partition) {
        return delegate.position(partition);
    }

    @Override
    public long position(TopicPartition partition, Duration timeout) {
        return delegate.position(partition, timeout);
    }

    @Override
    public Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions) {
        return delegate.committed(partitions);
    }

    @Override
    public Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions, Duration timeout) {
        return delegate.committed(partitions, timeout);
    }

    @Override
    public Uuid clientInstanceId(Duration timeout) {
        return delegate.clientInstanceId(timeout);
    }

    @Override
    public Map<MetricName, ? extends Metric> metrics() {
        return delegate.metrics();
    }

    @Override
    public List<PartitionInfo> partitionsFor(String topic) {
        return delegate.partitionsFor(topic);
    }

    @Override
    public List<PartitionInfo> partitionsFor(String topic, Duration timeout) {
        return delegate.partitionsFor(topic, timeout);
    }

    @Override
    public Map<String, List<PartitionInfo>> listTopics() {
        return delegate.listTopics();
    }

    @Override
    public Map<String, List<PartitionInfo>> listTopics(Duration timeout) {
        return delegate.listTopics(timeout);
    }

    @Override
    public Set<TopicPartition> paused() {
        return delegate.paused();
    }

    @Override
    public void pause(Collection<TopicPartition> partitions) {
        delegate.pause(partitions);
    }

    @Override
    public void resume(Collection<TopicPartition> partitions) {
        delegate.resume(partitions);
    }

    @Override
    public Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> timestampsToSearch) {
        return delegate.offsetsForTimes(timestampsToSearch);
    }

    @Override
    public Map<TopicPartition, OffsetAndTimestamp> offsetsForTimes(Map<TopicPartition, Long> timestampsToSearch,
            Duration timeout) {
        return delegate.offsetsForTimes(timestampsToSearch, timeout);
    }

    @Override
    public Map<TopicPartition, Long> beginningOffsets(Collection<TopicPartition> partitions) {
        return delegate.beginningOffsets(partitions);
    }

    @Override
    public Map<TopicPartition, Long> beginningOffsets(Collection<TopicPartition> partitions, Duration timeout) {
        return delegate.beginningOffsets(partitions, timeout);
    }

    @Override
    public Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions) {
        return delegate.endOffsets(partitions);
    }

    @Override
    public Map<TopicPartition, Long> endOffsets(Collection<TopicPartition> partitions, Duration timeout) {
        return delegate.endOffsets(partitions, timeout);
    }

    @Override
    public OptionalLong currentLag(TopicPartition topicPartition) {
        currentLagCalls.incrementAndGet();
        return delegate.currentLag(topicPartition);
    }

    @Override
    public ConsumerGroupMetadata groupMetadata() {
        return delegate.groupMetadata();
    }

    @Override
    public void enforceRebalance() {
        delegate.enforceRebalance();
    }

    @Override
    public void enforceRebalance(String reason) {
        delegate.enforceRebalance(reason);
    }

    @Override
    public void close() {
        delegate.close();
    }

    @Deprecated
    @Override
    public void close(Duration timeout) {
        delegate.close(CloseOptions.timeout(timeout));
    }

    @Override
    public void close(CloseOptions option) {
        delegate.close(option);
    }

    @Override
    public void wakeup() {
        delegate.wakeup();
    }
}
