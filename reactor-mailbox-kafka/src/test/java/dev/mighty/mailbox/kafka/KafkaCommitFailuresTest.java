package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.committedTo;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;

/**
 * Commit failures injected through the consumer factory ({@link FaultyConsumer} around a real consumer of the shared
 * broker), and a lost assignment: what each failure's classification does, and that no failure lets a commit claim
 * a record that was not acknowledged, or loses one that was.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaCommitFailuresTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    private static KafkaMailboxReceiver<String, String> receiver(String group, String topic,
            AtomicReference<FaultyConsumer<String, String>> consumer, Duration commitInterval) {
        return KafkaMailboxReceiver.<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(commitInterval)
                .consumerFactory(config -> {
                    final FaultyConsumer<String, String> c = new FaultyConsumer<>(config);
                    consumer.set(c);
                    return c;
                })
                .build();
    }

    /** Receives {@code count} records on this thread, acknowledging each; returns their offsets. */
    private static List<Long> receiveAll(Mailbox<ReceivedRecord<String, String>> inbox, int count)
            throws InterruptedException {
        final List<Long> offsets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
            assertThat(r).as("record %s", i).isNotNull();
            offsets.add(r.offset());
            r.acknowledge();
        }
        return offsets;
    }

    @Test
    void shouldRetryAFailedPeriodicCommitAtTheNextOneWhateverItsClassification() throws Exception {
        final String topic = "fail-async";
        final String group = "fail-async-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 50);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = receiver(group, topic, consumer,
                Duration.ofMillis(50));
        // retriable; refused because the group rebalanced (twice); not authorized (retried for 30 s before fatal)
        consumer.get().commitAsyncFaults.add(new TimeoutException("injected"));
        consumer.get().commitAsyncFaults.add(new CommitFailedException("injected"));
        consumer.get().commitAsyncFaults.add(new RebalanceInProgressException("injected"));
        consumer.get().commitAsyncFaults.add(new GroupAuthorizationException("injected"));
        receiver.start();
        try {
            assertThat(receiveAll(receiver.mailbox(), 50)).hasSize(50);
            assertThat(committedTo(kafka, group, ends)).as("a later periodic commit made it").isTrue();
            assertThat(consumer.get().injected.get()).isEqualTo(4);
            assertThat(receiver.mailbox().isClosed()).as("none of them was fatal").isFalse();
            assertThat(eventually(() -> receiver.stats().failedCommits() >= 4 && receiver.stats().commits() > 0))
                    .as("stats() counts each failed commit and the later successes: %s", receiver.stats()).isTrue();
        } finally {
            receiver.close(Duration.ofSeconds(5));
        }
        assertThat(receiver.mailbox().closeCause()).isNull();
    }

    /**
     * Two runs of non-retriable failures of the periodic commit, each shorter than the (shortened) grace and
     * separated by a successful commit, the second starting more than the grace after the first began: neither is
     * fatal (a success starts the count again), and the commits reach the end. "Shorter than the grace" is checked
     * on the fault callbacks' own timings ({@link FaultyConsumer#faultCallbacks}, which bracket the receiver's clock
     * readings): a run that took longer (a poll thread descheduled for the whole grace) aborts the test as not
     * applicable instead of failing it.
     */
    @Test
    void shouldGoOnWhenNonRetriablePeriodicCommitFailuresStopWithinTheGrace() throws Exception {
        final String topic = "fail-async-grace";
        final String group = "fail-async-grace-group";
        final TopicPartition partition = new TopicPartition(topic, 0);
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 30);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = receiver(group, topic, consumer,
                Duration.ofMillis(50));
        final long grace = TimeUnit.SECONDS.toNanos(2);
        receiver.loop().committer.commitFailureGraceNanos = grace;
        final FaultyConsumer<String, String> faulty = consumer.get();
        final GroupAuthorizationException denied = new GroupAuthorizationException("injected");
        for (int i = 0; i < 3; i++) {
            faulty.commitAsyncFaults.add(denied); // the first three periodic commits fail, one after the other
        }
        receiver.start();
        try {
            assertThat(receiveAll(receiver.mailbox(), 10)).hasSize(10);
            assertThat(committedTo(kafka, group, Map.of(partition, 10L))).as("the commit after the failures").isTrue();
            assertThat(eventually(() -> faulty.faultCallbacks.size() == 3)).isTrue();
            final List<long[]> firstRun = List.copyOf(faulty.faultCallbacks);
            assumeTrue(firstRun.get(2)[1] - firstRun.get(0)[0] < grace, "the first run of failures took the grace");

            // the second run starts more than the grace after the first began: only a reset count keeps it harmless
            final long sinceFirst = System.nanoTime() - firstRun.get(0)[0];
            if (sinceFirst <= grace) {
                TimeUnit.NANOSECONDS.sleep(grace - sinceFirst + TimeUnit.MILLISECONDS.toNanos(10));
            }
            faulty.commitAsyncFaults.add(denied);
            faulty.commitAsyncFaults.add(denied);
            assertThat(receiveAll(receiver.mailbox(), 10)).hasSize(10);
            assertThat(committedTo(kafka, group, Map.of(partition, 20L))).as("the commit after the second run")
                    .isTrue();
            assertThat(eventually(() -> faulty.faultCallbacks.size() == 5)).isTrue();
            final List<long[]> all = List.copyOf(faulty.faultCallbacks);
            assertThat(all.get(3)[0] - firstRun.get(0)[0]).as("the second run began after the grace")
                    .isGreaterThan(grace);
            assumeTrue(all.get(4)[1] - all.get(3)[0] < grace, "the second run of failures took the grace");

            assertThat(receiveAll(receiver.mailbox(), 10)).hasSize(10);
            assertThat(committedTo(kafka, group, ends)).as("the committed offset reaches the end").isTrue();
            assertThat(faulty.injected.get()).isEqualTo(5);
            assertThat(receiver.mailbox().isClosed()).as("neither run was fatal").isFalse();
        } finally {
            receiver.close(Duration.ofSeconds(5));
        }
        assertThat(receiver.mailbox().closeCause()).isNull();
    }

    /**
     * Non-retriable failures of every periodic commit, from a point on: once they have lasted the (shortened) grace,
     * the receiver fails with the failing commit's error; what was acknowledged before is committed by the fatal
     * finish (which commits synchronously, and those commits succeed here). The grace is checked as an ordering:
     * the last fault callback ended (after the receiver's reading of the clock in the fatal one) at least the grace
     * after the first began (before its reading, which starts the count).
     */
    @Test
    void shouldFailWithTheAuthorizationErrorOnceNonRetriablePeriodicCommitFailuresLastTheGrace() throws Exception {
        final String topic = "fail-async-grace-fatal";
        final String group = "fail-async-grace-fatal-group";
        final TopicPartition partition = new TopicPartition(topic, 0);
        loadTopic(kafka, topic, 1, 20);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = receiver(group, topic, consumer,
                Duration.ofMillis(50));
        final long grace = TimeUnit.MILLISECONDS.toNanos(500);
        receiver.loop().committer.commitFailureGraceNanos = grace;
        final FaultyConsumer<String, String> faulty = consumer.get();
        final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
        receiver.start();
        try {
            assertThat(receiveAll(inbox, 10)).hasSize(10);
            assertThat(committedTo(kafka, group, Map.of(partition, 10L))).as("before the failures").isTrue();
            final List<ReceivedRecord<String, String>> held = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                assertThat(r).isNotNull();
                held.add(r);
            }
            final GroupAuthorizationException denied = new GroupAuthorizationException("injected: persists");
            faulty.failEveryCommitAsync = denied;
            held.forEach(ReceivedRecord::acknowledge); // the next periodic commit fails, and every one after it

            assertThat(eventually(inbox::isClosed)).as("the receiver failed").isTrue();
            assertThat(inbox.closeCause()).isSameAs(denied);
            assertThatThrownBy(() -> inbox.recv(KafkaTestSupport.WAIT))
                    .isInstanceOf(MailboxClosedException.class)
                    .extracting(Throwable::getCause).isSameAs(denied);
            final List<long[]> calls = List.copyOf(faulty.faultCallbacks);
            assertThat(calls).as("a failure at the start of the grace and one at its end").hasSizeGreaterThanOrEqualTo(2);
            assertThat(calls.get(calls.size() - 1)[1] - calls.get(0)[0])
                    .as("fatal only once the failures had lasted the grace").isGreaterThanOrEqualTo(grace);
            assertThat(kafka.committed(group).get(partition)).as("what was acknowledged, committed by the finish")
                    .isBetween(10L, 20L); // 20 unless the acknowledging loop above was descheduled for the grace
        } finally {
            receiver.close(Duration.ofSeconds(5));
        }
    }

    /**
     * N12: authorization errors from {@code poll()} get the grace commits get (an ACL being fixed), instead of
     * failing the receiver at once; once they stop, the records arrive.
     */
    @Test
    void shouldGoOnWhenPollAuthorizationErrorsStopWithinTheGrace() throws Exception {
        final String topic = "fail-poll-grace";
        loadTopic(kafka, topic, 1, 10);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = receiver("fail-poll-grace-group", topic, consumer,
                Duration.ofMillis(50));
        final FaultyConsumer<String, String> faulty = consumer.get();
        for (int i = 0; i < 3; i++) {
            faulty.pollFaults.add(new TopicAuthorizationException("injected: not authorized yet"));
        }
        receiver.start();
        try {
            assertThat(receiveAll(receiver.mailbox(), 10)).hasSize(10);
            assertThat(faulty.pollFaults).as("every injected failure was met").isEmpty();
            assertThat(receiver.mailbox().isClosed()).isFalse();
        } finally {
            receiver.close(Duration.ofSeconds(5));
        }
    }

    @Test
    void shouldRetryARetriableFinalCommitWithinTheCloseAndCommitWhatWasAcknowledged() throws Exception {
        final String topic = "fail-sync-retry";
        final String group = "fail-sync-retry-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 20);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = receiver(group, topic, consumer, Duration.ofHours(1));
        receiver.start();
        assertThat(receiveAll(receiver.mailbox(), 20)).hasSize(20);
        consumer.get().commitSyncFaults.add(new TimeoutException("injected"));
        consumer.get().commitSyncFaults.add(new TimeoutException("injected"));
        receiver.close(Duration.ofSeconds(10)); // the third attempt of the final commit succeeds
        assertThat(consumer.get().injected.get()).isEqualTo(2);
        assertThat(receiver.stats().commits()).as("one commit, its retries included").isEqualTo(1);
        assertThat(receiver.stats().failedCommits()).isZero();
        assertThat(receiver.mailbox().closeCause()).isNull();
        assertThat(kafka.committed(group)).isEqualTo(ends);
    }

    @Test
    void shouldCloseNormallyAndLoseNothingWhenTheFinalCommitIsRefusedBecauseTheGroupRebalanced() throws Exception {
        final String topic = "fail-sync-rebalance";
        final String group = "fail-sync-rebalance-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 20);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> first = receiver(group, topic, consumer, Duration.ofHours(1));
        first.start();
        assertThat(receiveAll(first.mailbox(), 20)).hasSize(20);
        consumer.get().commitSyncFaults.add(new CommitFailedException("injected"));
        first.close(Duration.ofSeconds(10));
        assertThat(consumer.get().injected.get()).isEqualTo(1);
        assertThat(first.mailbox().closeCause()).as("a refused commit is not fatal").isNull();
        assertThat(kafka.committed(group)).as("nothing committed").isEmpty();
        // the next member gets every record again: acknowledged but not committed is redelivered, never lost
        final KafkaMailboxReceiver<String, String> next = receiver(group, topic, new AtomicReference<>(),
                Duration.ofMillis(50));
        next.start();
        try {
            assertThat(receiveAll(next.mailbox(), 20)).containsExactlyElementsOf(
                    java.util.stream.LongStream.range(0, 20).boxed().collect(java.util.stream.Collectors.toList()));
            assertThat(committedTo(kafka, group, ends)).isTrue();
        } finally {
            next.close(Duration.ofSeconds(5));
        }
    }

    /**
     * The final commit met a rebalance still under way (a member joined while this one closes): the close polls,
     * paused, so it completes, and commits again; the records acknowledged are not sent to the next owner again
     * (KafkaRebalanceProtocolsTest saw that race under CooperativeStickyAssignor).
     */
    @Test
    void shouldCompleteTheRebalanceAndCommitWhenTheFinalCommitFindsItUnderWay() throws Exception {
        final String topic = "fail-sync-in-progress";
        final String group = "fail-sync-in-progress-group";
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 20);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> first = receiver(group, topic, consumer, Duration.ofHours(1));
        first.start();
        assertThat(receiveAll(first.mailbox(), 20)).hasSize(20);
        consumer.get().commitSyncFaults.add(new RebalanceInProgressException("injected: a rebalance under way"));
        first.close(Duration.ofSeconds(10));
        assertThat(consumer.get().injected.get()).isEqualTo(1);
        assertThat(first.mailbox().closeCause()).isNull();
        assertThat(kafka.committed(group)).as("committed by the retry after the poll").isEqualTo(ends);
    }

    @Test
    void shouldFailTheStreamWithTheErrorWhenTheFinalCommitIsNotAuthorized() throws Exception {
        final String topic = "fail-sync-auth";
        final String group = "fail-sync-auth-group";
        loadTopic(kafka, topic, 1, 10);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final KafkaMailboxReceiver<String, String> receiver = receiver(group, topic, consumer, Duration.ofHours(1));
        receiver.start();
        assertThat(receiveAll(receiver.mailbox(), 10)).hasSize(10);
        final GroupAuthorizationException denied = new GroupAuthorizationException("injected");
        consumer.get().commitSyncFaults.add(denied);
        receiver.close(Duration.ofSeconds(10));
        assertThat(receiver.mailbox().closeCause()).isSameAs(denied);
        assertThat(kafka.committed(group)).as("nothing committed").isEmpty();
    }

    @Test
    void shouldCommitNothingOfALostAssignmentAndRedeliverWhatWasNotCommitted() throws Exception {
        final String topic = "fail-lost";
        final String group = "fail-lost-group";
        final TopicPartition partition = new TopicPartition(topic, 0);
        final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 20);
        final AtomicReference<FaultyConsumer<String, String>> consumer = new AtomicReference<>();
        final Set<TopicPartition> revokedOrLost = ConcurrentHashMap.newKeySet();
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofMillis(50))
                .onRevoked((c, partitions) -> revokedOrLost.addAll(partitions))
                .consumerFactory(config -> {
                    final FaultyConsumer<String, String> c = new FaultyConsumer<>(config);
                    consumer.set(c);
                    return c;
                })
                .build();
        final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
        receiver.start();
        try {
            final List<ReceivedRecord<String, String>> held = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                assertThat(r).isNotNull();
                if (r.offset() < 5) {
                    r.acknowledge();
                } else {
                    held.add(r); // not yet acknowledged when the assignment is lost
                }
            }
            assertThat(committedTo(kafka, group, Map.of(partition, 5L))).isTrue();
            consumer.get().losePartitions();
            assertThat(eventually(() -> held.get(0).isRevoked())).as("the old assignment ended").isTrue();
            assertThat(eventually(() -> revokedOrLost.contains(partition))).as("onRevoked for the lost").isTrue();
            held.forEach(ReceivedRecord::acknowledge); // stale: must move nothing
            final long epoch = held.get(0).assignmentEpoch();
            // the partition came back from the committed offset: 5 .. 19 again, in a new epoch
            final List<Long> again = new ArrayList<>();
            final List<ReceivedRecord<String, String>> redelivered = new ArrayList<>();
            while (again.size() < 15) {
                final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                assertThat(r).isNotNull();
                if (r.assignmentEpoch() == epoch) {
                    continue; // polled before the loss and still in the mailbox: stale as well
                }
                again.add(r.offset());
                redelivered.add(r);
            }
            assertThat(again).containsExactlyElementsOf(
                    java.util.stream.LongStream.range(5, 20).boxed().collect(java.util.stream.Collectors.toList()));
            TimeUnit.MILLISECONDS.sleep(300); // several commit intervals: the stale acks must have moved nothing
            assertThat(kafka.committed(group)).isEqualTo(Map.of(partition, 5L));
            redelivered.forEach(ReceivedRecord::acknowledge);
            assertThat(committedTo(kafka, group, ends)).isTrue();
        } finally {
            receiver.close(Duration.ofSeconds(5));
        }
    }
}
