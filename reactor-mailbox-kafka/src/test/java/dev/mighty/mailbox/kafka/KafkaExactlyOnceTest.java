package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.committedTo;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.producerConfig;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;

/**
 * {@link KafkaMailboxReceiver#receiveExactlyOnce} against the shared in-process broker: every input record's output
 * is in the output topic exactly once, as a {@code read_committed} reader sees it, across a failed processing, a
 * fenced zombie, a crash mid-transaction and a rebalance; and a stalled downstream buffers nothing beyond the mailbox.
 * Each test has its own topics, group and {@code transactional.id}; every assertion is an invariant (no duplicate,
 * no gap, a bound never passed); the time limits are liveness bounds only.
 */
@Tag("kafka")
@Timeout(180)
@ExtendWith(SharedKafka.class)
class KafkaExactlyOnceTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    private static KafkaMailboxReceiver<String, String> receiver(String group, String topic) {
        final Map<String, Object> config = consumerConfig(kafka, group);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        return KafkaMailboxReceiver.<String, String>builder(config)
                .topics(List.of(topic))
                .capacity(64)
                .transactionBatch(20, Duration.ofMillis(50))
                .build();
    }

    private static KafkaMailboxSender<String, String> sender(String transactionalId) {
        final Map<String, Object> config = producerConfig(kafka);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        config.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10_000);
        return KafkaMailboxSender.<String, String>builder(config).build();
    }

    /** One output per input record: its value, prefixed. */
    private static Function1 copyTo(String outTopic) {
        return record -> Mono.just(output(outTopic, record));
    }

    /** The process function's type, named once. */
    private interface Function1 extends java.util.function.Function<ConsumerRecord<String, String>,
            org.reactivestreams.Publisher<ProducerRecord<String, String>>> {
    }

    /**
     * Copies {@code count} records of {@code eos-NAME-in} ({@code partitions} partitions) to {@code eos-NAME-out},
     * the record {@code failingValue} processed by {@code failure} the first time it comes: runs to the error
     * ({@code checkError} checks it), resumes with the same transactional.id and group to the end, then checks that
     * every input was written exactly once under read_committed (the failed transaction left nothing behind).
     */
    private void failOnceThenResume(String name, int partitions, int count, String failingValue, Function1 failure,
            java.util.function.Consumer<Throwable> checkError) throws Exception {
        final String in = "eos-" + name + "-in";
        final String out = "eos-" + name + "-out";
        final Map<TopicPartition, Long> ends = inAndOut(in, partitions, count, out);
        final AtomicBoolean failed = new AtomicBoolean();
        final Function1 failOnce = record -> {
            if (record.value().equals(failingValue) && failed.compareAndSet(false, true)) {
                return failure.apply(record);
            }
            return Mono.just(output(out, record));
        };
        try (KafkaMailboxSender<String, String> sender = sender("eos-" + name + "-tx")) {
            checkError.accept(runToTheError("eos-" + name + "-group", in, sender, failOnce));
            runToTheEnd("eos-" + name + "-group", in, sender, failOnce, ends);
        }
        assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
    }

    /**
     * Reads {@code topic} from the start as a {@code read_committed} consumer until {@code expected} values came and
     * then a little longer (a duplicate would show), bounded.
     */
    private static List<String> readCommitted(String topic, int partitions, int expected) {
        final Map<String, Object> config = consumerConfig(kafka, "reader-" + topic + "-" + System.nanoTime());
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        final List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            final List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                all.add(new TopicPartition(topic, p));
            }
            consumer.assign(all);
            consumer.seekToBeginning(all);
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            long extra = 0L;
            while (System.nanoTime() - deadline < 0) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    values.add(r.value());
                }
                if (values.size() >= expected) {
                    if (extra == 0L) {
                        extra = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1000);
                    } else if (System.nanoTime() - extra > 0) {
                        break;
                    }
                }
            }
        }
        return values;
    }

    /** Runs {@code process} through a new receiver of {@code group} until the group's offsets reach {@code ends}. */
    private static void runToTheEnd(String group, String in, KafkaMailboxSender<String, String> sender,
            Function1 process, Map<TopicPartition, Long> ends) throws Exception {
        runToTheEnd(receiver(group, in), group, sender, process, ends);
    }

    /** As above, through {@code receiver} (of {@code group}), which it closes. */
    private static void runToTheEnd(KafkaMailboxReceiver<String, String> receiver, String group,
            KafkaMailboxSender<String, String> sender, Function1 process, Map<TopicPartition, Long> ends)
            throws Exception {
        final Disposable d = receiver.receiveExactlyOnce(sender, process).subscribe();
        try {
            assertThat(committedTo(kafka, group, ends)).as("the group's offsets reach the end").isTrue();
        } finally {
            d.dispose();
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /** Runs {@code process} through a new receiver of {@code group} until its stream ends with an error; closes it. */
    private static Throwable runToTheError(String group, String in, KafkaMailboxSender<String, String> sender,
            Function1 process) throws Exception {
        final KafkaMailboxReceiver<String, String> receiver = receiver(group, in);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        receiver.receiveExactlyOnce(sender, process).subscribe(t -> { }, error::set);
        try {
            assertThat(eventually(() -> error.get() != null)).as("the stream ends with an error").isTrue();
        } finally {
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        return error.get();
    }

    /** Creates {@code in} with {@code count} records and an empty one-partition {@code out}; returns {@code in}'s ends. */
    private static Map<TopicPartition, Long> inAndOut(String in, int partitions, int count, String out)
            throws Exception {
        final Map<TopicPartition, Long> ends = loadTopic(kafka, in, partitions, count);
        kafka.createTopic(out, 1);
        return ends;
    }

    /** The one output of {@code record}: its value, prefixed, to {@code out}. */
    private static ProducerRecord<String, String> output(String out, ConsumerRecord<String, String> record) {
        return new ProducerRecord<>(out, record.key(), "out-" + record.value());
    }

    /** The outputs of inputs v-0 .. v-(count-1), each once. */
    private static List<String> expectedOutputs(int count) {
        final List<String> expected = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            expected.add("out-v-" + i);
        }
        return expected;
    }

    @Nested
    class EveryOutputOnce {

        @Test
        void shouldCommitEachBatchWithItsOffsetsAndItsOutputs() throws Exception {
            final String in = "eos-in";
            final String out = "eos-out";
            final int count = 300;
            final Map<TopicPartition, Long> ends = inAndOut(in, 3, count, out);
            final List<CommittedTransaction<String, String>> committed = new CopyOnWriteArrayList<>();
            try (KafkaMailboxSender<String, String> sender = sender("eos-tx")) {
                final KafkaMailboxReceiver<String, String> receiver = receiver("eos-group", in);
                final Disposable d = receiver.receiveExactlyOnce(sender, copyTo(out)).subscribe(committed::add);
                try {
                    assertThat(committedTo(kafka, "eos-group", ends)).as("the group's offsets reach the end").isTrue();
                } finally {
                    d.dispose();
                    receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            }
            assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
            int records = 0;
            int outputs = 0;
            for (CommittedTransaction<String, String> t : committed) {
                assertThat(t.records()).hasSizeLessThanOrEqualTo(20);
                records += t.records().size();
                outputs += t.outputs();
            }
            assertThat(records).isEqualTo(count);
            assertThat(outputs).isEqualTo(count);
        }

        @Test
        void shouldRefuseAReceiverWhoseOverdueHandlerWouldCommitPastTheTransactions() {
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(consumerConfig(kafka, "eos-overdue"))
                    .topics(List.of("eos-overdue"))
                    .maxUnacknowledgedAge(Duration.ofSeconds(1), (partition, offset) -> { })
                    .build();
            try (KafkaMailboxSender<String, String> sender = sender("eos-overdue-tx")) {
                reactor.test.StepVerifier.create(receiver.receiveExactlyOnce(sender, copyTo("x")))
                        .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
                                .hasMessageContaining("maxUnacknowledgedAge"))
                        .verify(Duration.ofSeconds(10));
            } finally {
                receiver.close(Duration.ZERO);
            }
        }

        @Test
        void shouldRefuseASenderThatIsNotTransactional() {
            final KafkaMailboxReceiver<String, String> receiver = receiver("eos-plain", "eos-plain");
            try (KafkaMailboxSender<String, String> plain =
                         KafkaMailboxSender.<String, String>builder(producerConfig(kafka)).build()) {
                assertThatThrownBy(() -> receiver.receiveExactlyOnce(plain, copyTo("x")))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("transactional.id");
            } finally {
                receiver.close(Duration.ZERO);
            }
        }
    }

    /**
     * Tiny mailboxes (1, 2, 4 slots, so every poll is cut by the room and the poll thread waits for it between the
     * transactions' takes) and transactions larger than the mailbox: still every output once, every offset committed.
     */
    @Nested
    class TinyCapacities {

        @org.junit.jupiter.params.ParameterizedTest(name = "capacity {0}")
        @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2, 4})
        void shouldCommitEveryOutputOnceThroughATinyMailbox(int capacity) throws Exception {
            final String in = "eos-tiny-" + capacity + "-in";
            final String out = "eos-tiny-" + capacity + "-out";
            final int count = 120;
            final Map<TopicPartition, Long> ends = inAndOut(in, 3, count, out);
            final Map<String, Object> config = consumerConfig(kafka, "eos-tiny-" + capacity);
            config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(config)
                    .topics(List.of(in))
                    .capacity(capacity)
                    .transactionBatch(7, Duration.ofMillis(20)) // more than the mailbox holds: batches span refills
                    .build();
            try (KafkaMailboxSender<String, String> sender = sender("eos-tiny-tx-" + capacity)) {
                runToTheEnd(receiver, "eos-tiny-" + capacity, sender, copyTo(out), ends);
            }
            assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
        }
    }

    /** A failed processing aborts its transaction; a restart with the same transactional.id completes the rest. */
    @Nested
    class FailedProcessingAbortsAndRedelivers {

        @Test
        void shouldLeaveNoOutputOfTheFailedTransactionAndNoGap() throws Exception {
            failOnceThenResume("fail", 2, 200, "v-101",
                    record -> Mono.error(new IllegalStateException("processing failed")),
                    error -> assertThat(error).isInstanceOf(IllegalStateException.class)
                            .hasMessage("processing failed"));
        }
    }

    /** A send that fails (a record over max.request.size) aborts the transaction and ends the stream with it. */
    @Nested
    class FailedSendAborts {

        @Test
        void shouldEndWithTheSendsErrorAndCommitNothingOfItsTransaction() throws Exception {
            failOnceThenResume("send", 1, 100, "v-42",
                    record -> Mono.just(new ProducerRecord<>("eos-send-out", record.key(),
                            "x".repeat(2 * 1024 * 1024))),
                    error -> assertThat(error)
                            .isInstanceOf(org.apache.kafka.common.errors.RecordTooLargeException.class));
        }
    }

    /** A second instance with the same transactional.id fences the first: it ends with the fencing error. */
    @Nested
    class ZombieIsFenced {

        @Test
        void shouldEndTheZombieAndLetTheNewInstanceCompleteExactlyOnce() throws Exception {
            final String in = "eos-zombie-in";
            final String out = "eos-zombie-out";
            final int count = 200;
            final Map<TopicPartition, Long> ends = inAndOut(in, 2, count, out);
            final CountDownLatch halfway = new CountDownLatch(1);
            final Function1 slow = record -> Mono.delay(Duration.ofMillis(5))
                    .doOnNext(x -> {
                        if (record.value().equals("v-60")) {
                            halfway.countDown();
                        }
                    })
                    .thenReturn(output(out, record));
            final KafkaMailboxSender<String, String> zombieSender = sender("eos-zombie-tx");
            final KafkaMailboxReceiver<String, String> zombie = receiver("eos-zombie-group", in);
            final AtomicReference<Throwable> zombieError = new AtomicReference<>();
            zombie.receiveExactlyOnce(zombieSender, slow).subscribe(t -> { }, zombieError::set);
            assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
            try (KafkaMailboxSender<String, String> successor = sender("eos-zombie-tx")) { // fences the zombie
                assertThat(eventually(() -> zombieError.get() != null)).as("the zombie ends").isTrue();
                assertThat(zombieError.get()).isInstanceOfAny(ProducerFencedException.class,
                        InvalidProducerEpochException.class);
                zombie.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                zombieSender.close(Duration.ofSeconds(5));
                runToTheEnd("eos-zombie-group", in, successor, copyTo(out), ends);
            }
            assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
        }
    }

    /** A crash with a transaction open: its outputs never become visible; the restart redoes the batch once. */
    @Nested
    class CrashMidTransaction {

        @Test
        void shouldNeitherDuplicateNorLoseAcrossACrash() throws Exception {
            final String in = "eos-crash-in";
            final String out = "eos-crash-out";
            final int count = 150;
            final Map<TopicPartition, Long> ends = inAndOut(in, 1, count, out);
            final CountDownLatch stuck = new CountDownLatch(1);
            final CountDownLatch release = new CountDownLatch(1);
            final Function1 hangs = record -> {
                if (record.value().equals("v-70")) {
                    stuck.countDown();
                    return Mono.fromCallable(() -> {
                        release.await(60, TimeUnit.SECONDS); // the crash comes while this transaction is open
                        return output(out, record);
                    });
                }
                return Mono.just(output(out, record));
            };
            final KafkaMailboxSender<String, String> crashedSender = sender("eos-crash-tx");
            final KafkaMailboxReceiver<String, String> crashed = receiver("eos-crash-group", in);
            crashed.receiveExactlyOnce(crashedSender, hangs).subscribe(t -> { }, e -> { });
            assertThat(stuck.await(60, TimeUnit.SECONDS)).isTrue();
            crashed.loop().halt(); // as if the process died: no commit, no abort
            try (KafkaMailboxSender<String, String> restarted = sender("eos-crash-tx")) { // aborts the open one
                final KafkaMailboxReceiver<String, String> next = receiver("eos-crash-group", in);
                final Disposable d = next.receiveExactlyOnce(restarted, copyTo(out)).subscribe();
                try {
                    assertThat(committedTo(kafka, "eos-crash-group", ends)).isTrue();
                } finally {
                    release.countDown(); // the dead instance's transaction thread wakes, fenced
                    d.dispose();
                    next.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                    crashedSender.close(Duration.ofSeconds(5));
                }
            }
            assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
        }
    }

    /** Two instances share the group: the rebalance lets each open transaction end before its partitions go. */
    @Nested
    class RebalanceKeepsExactlyOnce {

        @Test
        void shouldProduceEachOutputOnceWhileASecondMemberJoins() throws Exception {
            final String in = "eos-rebalance-in";
            final String out = "eos-rebalance-out";
            final int count = 400;
            final Map<TopicPartition, Long> ends = inAndOut(in, 4, count, out);
            final AtomicInteger processed = new AtomicInteger();
            final Function1 slow = record -> Mono.delay(Duration.ofMillis(2))
                    .doOnNext(x -> processed.incrementAndGet())
                    .thenReturn(output(out, record));
            try (KafkaMailboxSender<String, String> senderA = sender("eos-rebalance-a");
                    KafkaMailboxSender<String, String> senderB = sender("eos-rebalance-b")) {
                final KafkaMailboxReceiver<String, String> a = receiver("eos-rebalance-group", in);
                final KafkaMailboxReceiver<String, String> b = receiver("eos-rebalance-group", in);
                final Disposable da = a.receiveExactlyOnce(senderA, slow).subscribe();
                assertThat(eventually(() -> processed.get() >= 50)).isTrue();
                final Disposable db = b.receiveExactlyOnce(senderB, slow).subscribe();
                try {
                    assertThat(committedTo(kafka, "eos-rebalance-group", ends)).isTrue();
                } finally {
                    da.dispose();
                    db.dispose();
                    a.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                    b.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            }
            assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
        }
    }

    /**
     * A transaction still processing when its partitions are revoked (past revocationTimeout) cannot commit: its
     * barrier finds the assignment ended, aborts, and the record is processed again, by whoever owns it now, once.
     */
    @Nested
    class RevokedMidTransactionAborts {

        @Test
        void shouldAbortTheTransactionThatOutlivedItsAssignmentAndRedeliverOnce() throws Exception {
            final String in = "eos-revoked-in";
            final String out = "eos-revoked-out";
            final int count = 120;
            final Map<TopicPartition, Long> ends = inAndOut(in, 2, count, out);
            final AtomicInteger seen = new AtomicInteger();
            final CountDownLatch stuck = new CountDownLatch(1);
            final CountDownLatch release = new CountDownLatch(1);
            final Function1 blocksOnce = record -> {
                if (record.value().equals("v-30") && seen.incrementAndGet() == 1) {
                    stuck.countDown();
                    return Mono.fromCallable(() -> {
                        release.await(60, TimeUnit.SECONDS); // held past the revocation
                        return output(out, record);
                    });
                }
                return Mono.just(output(out, record));
            };
            final Map<String, Object> config = consumerConfig(kafka, "eos-revoked-group");
            config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            try (KafkaMailboxSender<String, String> senderA = sender("eos-revoked-a");
                    KafkaMailboxSender<String, String> senderB = sender("eos-revoked-b")) {
                final KafkaMailboxReceiver<String, String> a = KafkaMailboxReceiver.<String, String>builder(config)
                        .topics(List.of(in)).capacity(64).transactionBatch(20, Duration.ofMillis(50))
                        .revocationTimeout(Duration.ofMillis(200))
                        .build();
                final KafkaMailboxReceiver<String, String> b = receiver("eos-revoked-group", in);
                final Disposable da = a.receiveExactlyOnce(senderA, blocksOnce).subscribe();
                assertThat(stuck.await(60, TimeUnit.SECONDS)).isTrue();
                final Disposable db = b.receiveExactlyOnce(senderB, blocksOnce).subscribe();
                try {
                    // the group rebalances while A's transaction waits: A's revocation gives up after 200 ms
                    assertThat(eventually(() -> b.stats().assignedPartitions() > 0)).as("B got partitions").isTrue();
                    TimeUnit.MILLISECONDS.sleep(300);
                    release.countDown();
                    assertThat(committedTo(kafka, "eos-revoked-group", ends)).isTrue();
                } finally {
                    release.countDown();
                    da.dispose();
                    db.dispose();
                    a.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                    b.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            }
            assertThat(seen.get()).as("v-30 processed again after the abort").isGreaterThanOrEqualTo(2);
            assertThat(readCommitted(out, 1, count)).containsExactlyInAnyOrderElementsOf(expectedOutputs(count));
        }
    }

    /** A downstream that stops asking stops the transactions; the receiver pauses; nothing grows past the mailbox. */
    @Nested
    class StalledDownstreamBuffersNothing {

        @Test
        void shouldPauseWithTheMailboxAsTheOnlyBuffer() throws Exception {
            final String in = "eos-stall-in";
            final String out = "eos-stall-out";
            loadTopic(kafka, in, 2, 2000);
            kafka.createTopic(out, 1);
            final AtomicInteger transactions = new AtomicInteger();
            try (KafkaMailboxSender<String, String> sender = sender("eos-stall-tx")) {
                final KafkaMailboxReceiver<String, String> receiver = receiver("eos-stall-group", in);
                final BaseSubscriber<CommittedTransaction<String, String>> stalled = new BaseSubscriber<>() {
                    @Override
                    protected void hookOnSubscribe(Subscription subscription) {
                        request(1); // one transaction, then no more demand
                    }

                    @Override
                    protected void hookOnNext(CommittedTransaction<String, String> value) {
                        transactions.incrementAndGet();
                    }
                };
                receiver.receiveExactlyOnce(sender, copyTo(out)).subscribe(stalled);
                try {
                    assertThat(eventually(receiver::paused)).as("paused for room").isTrue();
                    TimeUnit.MILLISECONDS.sleep(500);
                    assertThat(transactions.get()).isEqualTo(1);
                    // the mailbox, the one batch bufferTimeout may hold and the one the worker holds: bounded
                    assertThat(receiver.mailbox().size()).isLessThanOrEqualTo(receiver.mailbox().capacity());
                    assertThat(receiver.stats().unacknowledged())
                            .isLessThanOrEqualTo(receiver.mailbox().capacity() + 2L * 20 + 64);
                } finally {
                    stalled.dispose();
                    receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            }
            assertThat(readCommitted(out, 1, 1)).hasSizeLessThanOrEqualTo(20);
        }
    }
}
