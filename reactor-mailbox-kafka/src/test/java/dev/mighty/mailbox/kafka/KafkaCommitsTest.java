package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.committedTo;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.producerConfig;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;

/**
 * What the receiver's commits carry, against the shared broker: the leader epoch, and on transactional input the
 * consumer's position past the transaction markers (the group's lag reaches 0).
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaCommitsTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    @Test
    void shouldCommitWithTheLeaderEpochOfTheLastRecordCovered() throws Exception {
        final String topic = "commit-epoch";
        final String group = "commit-epoch-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 10);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofHours(1)) // only commit() makes commits here
                .build();
        final List<ReceivedRecord<String, String>> records = receiver.receive()
                .take(10)
                .concatMap(r -> r.commit().thenReturn(r))
                .collectList()
                .block(KafkaTestSupport.WAIT);
        receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThat(records).hasSize(10);
        final ReceivedRecord<String, String> last = records.get(9);
        assertThat(last.record().leaderEpoch()).isPresent();
        final OffsetAndMetadata committed = kafka.committedMetadata(group).get(new TopicPartition(topic, 0));
        assertThat(committed.offset()).isEqualTo(ends.get(new TopicPartition(topic, 0)));
        assertThat(committed.leaderEpoch()).as("the epoch of offset 9").isEqualTo(last.record().leaderEpoch());
    }

    /**
     * N3: a {@code commit()} of a record that a periodic commit already covered completes at the poll thread's next
     * turn (it waited for a commit that never came: the offset had nothing left to move).
     */
    @Test
    void shouldCompleteACommitOfARecordThatAPeriodicCommitAlreadyCovered() throws Exception {
        final String topic = "commit-covered";
        final String group = "commit-covered-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 10);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofMillis(50))
                .build();
        final List<ReceivedRecord<String, String>> records = new CopyOnWriteArrayList<>();
        final Disposable receiving = receiver.receive().subscribe(r -> {
            r.acknowledge();
            records.add(r);
        });
        try {
            assertThat(committedTo(kafka, group, ends)).as("the periodic commits covered all ten").isTrue();
            records.get(3).commitAsync().toCompletableFuture().get(KafkaTestSupport.WAIT.toSeconds(),
                    TimeUnit.SECONDS);
            records.get(9).commit().block(KafkaTestSupport.WAIT);
        } finally {
            receiving.dispose();
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * N6: {@code commit().block()} and {@code doOnConsumer(..)} joined on the poll thread (a subscriber of
     * {@code receive(Schedulers.immediate())}) run there at once instead of waiting for the poll thread's next turn,
     * which they were blocking: a deadlock with no timeout.
     */
    @Test
    void shouldCommitAndRunDoOnConsumerAtOnceWhenCalledOnThePollThread() throws Exception {
        final String topic = "commit-poll-thread";
        final String group = "commit-poll-thread-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 5);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofHours(1)) // only commit() makes commits here
                .build();
        final List<String> threads = new CopyOnWriteArrayList<>();
        final List<Long> positions = receiver.receive(reactor.core.scheduler.Schedulers.immediate())
                .take(5)
                .map(r -> {
                    threads.add(Thread.currentThread().getName());
                    r.commit().block(KafkaTestSupport.WAIT); // on the poll thread: committed now
                    return receiver.doOnConsumer(c -> c.position(new TopicPartition(topic, 0)))
                            .toCompletableFuture().join();
                })
                .collectList()
                .block(KafkaTestSupport.WAIT);
        receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThat(threads).allMatch(name -> name.startsWith("kafka-mailbox-poll-"));
        assertThat(positions).hasSize(5);
        assertThat(kafka.committed(group)).isEqualTo(ends);
    }

    @Test
    void shouldCommitEachRecordBeforeHandingItOnWithReceiveAtmostOnce() throws Exception {
        final String topic = "commit-atmost";
        final String group = "commit-atmost-group";
        final TopicPartition partition = new TopicPartition(topic, 0);
        loadTopic(kafka, topic, 1, 5);
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofHours(1)) // only the per-record commits
                .pollTimeout(Duration.ofMillis(20))
                .build();
        final List<Long> committedAtDelivery = receiver.receiveAtmostOnce()
                .take(5)
                .map(record -> {
                    try {
                        // what the group has committed when the record reaches us: past it already
                        return kafka.committed(group).getOrDefault(partition, -1L) - record.offset();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                })
                .collectList()
                .block(KafkaTestSupport.WAIT);
        receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThat(committedAtDelivery).hasSize(5).allMatch(ahead -> ahead >= 1L);
    }

    @Test
    void shouldCommitPastTheTransactionMarkersOnReadCommittedInputSoTheLagReachesZero() throws Exception {
        final String topic = "commit-txn";
        final String group = "commit-txn-group";
        kafka.createTopic(topic, 1);
        final Map<String, Object> producerConfig = producerConfig(kafka);
        producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "commit-txn-producer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
            producer.initTransactions();
            int i = 0;
            for (int txn = 0; txn < 3; txn++) { // committed, aborted, committed: 5 records each, and a marker
                producer.beginTransaction();
                for (int n = 0; n < 5; n++, i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "v-" + i));
                }
                if (txn == 1) {
                    producer.flush(); // else abortTransaction drops the lingering batch: no records, no marker
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
        // 15 records and 3 markers; the coordinator writes the last marker after commitTransaction returns
        final Map<TopicPartition, Long> ends = Map.of(new TopicPartition(topic, 0), 18L);
        assertThat(eventually(() -> {
            try {
                return kafka.endOffsets(topic, 1).equals(ends);
            } catch (Exception e) {
                return false;
            }
        })).as("the log end").isTrue();

        final Map<String, Object> config = consumerConfig(kafka, group);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(config)
                .topics(List.of(topic))
                .commitInterval(Duration.ofMillis(100))
                .build();
        final List<String> values = new CopyOnWriteArrayList<>();
        final Disposable subscription = receiver.receive().subscribe(r -> {
            values.add(r.value());
            r.acknowledge();
        });
        try {
            // the last record is at offset 16; one past it would leave the group one short of the log end for ever
            assertThat(committedTo(kafka, group, ends)).as("committed to the log end (lag 0)").isTrue();
        } finally {
            subscription.dispose();
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        assertThat(values).containsExactly("v-0", "v-1", "v-2", "v-3", "v-4", "v-10", "v-11", "v-12", "v-13", "v-14");
    }
}
