package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What reactor-kafka users reach for next to {@code receive()}: listeners with the consumer on the poll thread
 * (seek on assignment), {@code doOnConsumer}, manual assignment and pattern subscription, against the shared broker.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaReceiverHooksTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    private static void closed(KafkaMailboxReceiver<?, ?> receiver) throws Exception {
        receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void shouldSeekOnAssignmentOnThePollThreadAndRunDoOnConsumerThere() throws Exception {
        final String topic = "hooks-seek";
        loadTopic(kafka, topic, 2, 40); // 20 per partition
        final Set<String> listenerThreads = ConcurrentHashMap.newKeySet();
        final Set<TopicPartition> revoked = ConcurrentHashMap.newKeySet();
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, "hooks-seek-group"))
                .topics(List.of(topic))
                .onAssigned((consumer, partitions) -> {
                    listenerThreads.add(Thread.currentThread().getName());
                    partitions.forEach(p -> consumer.seek(p, 10L));
                })
                .onRevoked((consumer, partitions) -> revoked.addAll(partitions))
                .build();
        final CompletionStage<Set<TopicPartition>> assignment = receiver.doOnConsumer(c -> {
            listenerThreads.add(Thread.currentThread().getName());
            return c.assignment();
        });
        final List<ReceivedRecord<String, String>> records = receiver.receive()
                .doOnNext(ReceivedRecord::acknowledge)
                .take(20)
                .collectList()
                .block(KafkaTestSupport.WAIT);
        assertThat(records).allMatch(r -> r.offset() >= 10L);
        assertThat(records.stream().filter(r -> r.partition() == 0)).hasSize(10);
        // run at the poll thread's first turn: before or after the assignment, whichever came first
        assertThat(assignment.toCompletableFuture().get(30, TimeUnit.SECONDS))
                .isIn(Set.of(), Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
        closed(receiver); // take(20) completed the stream, which closes the receiver; this waits for it
        assertThat(listenerThreads).allMatch(name -> name.startsWith("kafka-mailbox-poll-"));
        final CompletionStage<Object> afterClose = receiver.doOnConsumer(c -> "never");
        assertThat(afterClose.toCompletableFuture()).failsWithin(Duration.ofSeconds(5))
                .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(IllegalStateException.class);
    }

    /**
     * N11: partitions the member lost (its poll interval ran out: the group moved on without it) go to
     * {@code onLost}, not to {@code onRevoked}, whose listener may commit for partitions it no longer owns.
     */
    @Test
    void shouldReportLostPartitionsToOnLostNotToOnRevoked() throws Exception {
        final String topic = "hooks-lost";
        loadTopic(kafka, topic, 1, 5);
        final Map<String, Object> config = consumerConfig(kafka, "hooks-lost-group");
        config.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 1_000);
        final Set<TopicPartition> assigned = ConcurrentHashMap.newKeySet();
        final Set<TopicPartition> revoked = ConcurrentHashMap.newKeySet();
        final Set<TopicPartition> lost = ConcurrentHashMap.newKeySet();
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(config)
                .topics(List.of(topic))
                .onAssigned((consumer, partitions) -> assigned.addAll(partitions))
                .onRevoked((consumer, partitions) -> revoked.addAll(partitions))
                .onLost((consumer, partitions) -> lost.addAll(partitions))
                .build();
        receiver.start();
        try {
            assertThat(KafkaTestSupport.eventually(() -> !assigned.isEmpty())).isTrue();
            // hold the poll thread past max.poll.interval.ms: the member is dropped and its partitions are lost
            receiver.doOnConsumer(c -> {
                try {
                    Thread.sleep(4_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return null;
            }).toCompletableFuture().get(30, TimeUnit.SECONDS);
            assertThat(KafkaTestSupport.eventually(() -> !lost.isEmpty())).as("onLost called").isTrue();
            assertThat(lost).containsExactly(new TopicPartition(topic, 0));
            assertThat(revoked).as("a lost partition is not reported as revoked").isEmpty();
        } finally {
            closed(receiver);
        }
    }

    /**
     * N5: a close whose wake-up lands in a user listener's own consumer call ends the stream normally: the
     * listener's {@code WakeupException} is the close's wake-up, not a failure ({@code onError(WakeupException)}).
     */
    @Test
    void shouldCompleteWhenTheClosesWakeupLandsInAListenersConsumerCall() throws Exception {
        final String topic = "hooks-wakeup";
        loadTopic(kafka, topic, 1, 5);
        final java.util.concurrent.CountDownLatch inListener = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch closing = new java.util.concurrent.CountDownLatch(1);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, "hooks-wakeup-group"))
                .topics(List.of(topic))
                .onAssigned((consumer, partitions) -> {
                    inListener.countDown();
                    try {
                        closing.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    partitions.forEach(consumer::position); // a blocking call: meets the close's wake-up
                })
                .build();
        final java.util.concurrent.CompletableFuture<Void> ended = receiver.receive().then().toFuture();
        assertThat(inListener.await(30, TimeUnit.SECONDS)).isTrue();
        final CompletionStage<Void> closed = receiver.closeAsync(Duration.ofSeconds(5)); // wakes the consumer
        closing.countDown();
        closed.toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThat(ended.get(30, TimeUnit.SECONDS)).as("completed, not onError(WakeupException)").isNull();
    }

    /** A static member (group.instance.id) leaves the group on close, as the docs say (its default is to stay). */
    @Test
    void shouldLeaveTheGroupOnCloseAsAStaticMember() throws Exception {
        final String topic = "hooks-static";
        final String group = "hooks-static-group";
        loadTopic(kafka, topic, 1, 5);
        final Map<String, Object> config = consumerConfig(kafka, group);
        config.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1");
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of(topic))
                .build();
        final List<ReceivedRecord<String, String>> got = receiver.receive().take(5).collectList()
                .block(KafkaTestSupport.WAIT);
        assertThat(got).hasSize(5);
        closed(receiver);
        assertThat(kafka.members(group)).as("left at once, not after the session timeout").isZero();
    }

    @Test
    void shouldReadOnlyTheAssignedPartitionAndCommitItWhenAssignedManually() throws Exception {
        final String topic = "hooks-assign";
        final String group = "hooks-assign-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 2, 40);
        final TopicPartition one = new TopicPartition(topic, 1);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .assignment(List.of(one))
                .build();
        final List<ReceivedRecord<String, String>> records = receiver.receive()
                .take(20)
                .concatMap(r -> r.commit().thenReturn(r))
                .collectList()
                .block(KafkaTestSupport.WAIT);
        assertThat(records).allMatch(r -> r.partition() == 1).hasSize(20);
        closed(receiver);
        assertThat(kafka.committed(group)).isEqualTo(Map.of(one, ends.get(one)));
    }

    @Test
    void shouldReceiveFromEveryMatchingTopicWhenSubscribedByPattern() throws Exception {
        loadTopic(kafka, "hooks-pat-a", 1, 5);
        loadTopic(kafka, "hooks-pat-b", 1, 5);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, "hooks-pat-group"))
                .topicPattern(Pattern.compile("hooks-pat-.*"))
                .build();
        final List<String> topics = receiver.receive()
                .doOnNext(ReceivedRecord::acknowledge)
                .take(10)
                .map(ReceivedRecord::topic)
                .collectList()
                .block(KafkaTestSupport.WAIT);
        assertThat(topics).containsOnly("hooks-pat-a", "hooks-pat-b").hasSize(10);
        closed(receiver);
    }
}
