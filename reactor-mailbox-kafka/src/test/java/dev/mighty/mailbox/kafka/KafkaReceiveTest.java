package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.committedTo;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.key;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * The v2 faces of {@link KafkaMailboxReceiver} against the shared in-process broker: {@code receive()}, the bound
 * on unacknowledged records, the bounded close. Each test has its own topic and group; every assertion is an
 * invariant that holds under every interleaving (nothing lost, nothing acknowledged delivered again, a bound
 * never passed), and the only time limits are liveness bounds.
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaReceiveTest {
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    /** A receiver of {@code topic} in {@code group}: capacity 256, commits every 100 ms. */
    private static KafkaMailboxReceiver.Builder<String, String> member(String group, String topic) {
        return KafkaMailboxReceiver.<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .capacity(256)
                .commitInterval(Duration.ofMillis(100));
    }

    @Nested
    class ReceiveCancelHandsThePartitionsOn {

        @Test
        void shouldHandThePartitionsToTheOtherMemberWithNoDuplicateOfAnAcknowledgedRecordWhenReceiveIsCancelled()
                throws Exception {
            final String topic = "rx-cancel";
            final String group = "rx-cancel-group";
            final int count = 6_000;
            final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);

            final Set<Long> ackedByA = ConcurrentHashMap.newKeySet();
            final Map<Long, Integer> deliveredToB = new ConcurrentHashMap<>();
            final AtomicInteger countA = new AtomicInteger();
            final KafkaMailboxReceiver<String, String> a = member(group, topic).revocationTimeout(Duration.ofSeconds(5)).build();
            final KafkaMailboxReceiver<String, String> b = member(group, topic).revocationTimeout(Duration.ofSeconds(5)).build();
            final Disposable subA = a.receive().subscribe(r -> {
                // slow enough (12 s for the topic) that A still has records to go when B joins and when A is
                // cancelled
                countA.incrementAndGet();
                sleep(2);
                ackedByA.add(key(r.partition(), r.offset())); // before the ack: a commit past it implies it is here
                r.acknowledge();
            });
            Disposable subB = null;
            try {
                assertThat(eventually(() -> countA.get() >= 500)).isTrue();
                subB = b.receive().subscribe(r -> {
                    deliveredToB.merge(key(r.partition(), r.offset()), 1, Integer::sum);
                    r.acknowledge();
                });
                assertThat(eventually(() -> !deliveredToB.isEmpty())).as("B got partitions").isTrue();
                subA.dispose(); // A leaves: B must get every partition
                assertThat(a.closeAsync(Duration.ofSeconds(10)).toCompletableFuture().get(30, TimeUnit.SECONDS))
                        .isNull();
                assertThat(committedTo(kafka, group, ends)).as("B committed every partition to its end").isTrue();
            } finally {
                subA.dispose();
                if (subB != null) {
                    subB.dispose();
                }
                b.closeAsync(Duration.ofSeconds(10)).toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
            // every record came to A (acknowledged) or to B, and B got none that A acknowledged
            assertCovered(ends, ackedByA, deliveredToB);
            final List<Long> duplicates = new ArrayList<>();
            for (Long k : deliveredToB.keySet()) {
                if (ackedByA.contains(k)) {
                    duplicates.add(k);
                }
            }
            assertThat(duplicates).as("records A acknowledged and B got again").isEmpty();
            assertThat(deliveredToB.values()).allMatch(n -> n == 1);
        }

        @Test
        void shouldRefuseASecondReceiveAndReceiveAfterStart() throws Exception {
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(consumerConfig(kafka, "rx-twice-group"))
                    .topics(List.of("rx-twice"))
                    .build();
            try {
                final Flux<ReceivedRecord<String, String>> flux = receiver.receive();
                final Disposable first = flux.subscribe();
                StepVerifier.create(receiver.receive()).expectError(IllegalStateException.class)
                        .verify(KafkaTestSupport.WAIT);
                first.dispose();
            } finally {
                receiver.close(Duration.ofSeconds(2));
            }
            final KafkaMailboxReceiver<String, String> started = KafkaMailboxReceiver
                    .<String, String>builder(consumerConfig(kafka, "rx-started-group"))
                    .topics(List.of("rx-twice"))
                    .build();
            try {
                started.start();
                StepVerifier.create(started.receive()).expectError(IllegalStateException.class)
                        .verify(KafkaTestSupport.WAIT);
            } finally {
                started.close(Duration.ofSeconds(2));
            }
        }

        @Test
        void shouldCompleteCommitOnceTheOffsetIsCommittedAndDeliverOffThePollThread() throws Exception {
            final String topic = "rx-commit";
            final String group = "rx-commit-group";
            final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 20);
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(consumerConfig(kafka, group))
                    .topics(List.of(topic))
                    .commitInterval(Duration.ofHours(1)) // only commit() makes commits here
                    .build();
            final Set<String> threads = ConcurrentHashMap.newKeySet();
            final List<String> values = receiver.receive()
                    .doOnNext(r -> threads.add(Thread.currentThread().getName()))
                    .take(20)
                    .concatMap(r -> r.commit().thenReturn(r.value()))
                    .collectList()
                    .block(KafkaTestSupport.WAIT);
            assertThat(values).hasSize(20).startsWith("v-0", "v-1");
            // the last commit() completed, so the group's offset is the log end already: no waiting
            assertThat(kafka.committed(group)).isEqualTo(ends);
            assertThat(threads).allMatch(name -> name.startsWith("kafka-mailbox-receive-"));
            assertThat(receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS))
                    .isNull();
        }
    }

    /** {@code receiveAutoAck()} acknowledges after the record's processing, and never a record whose processing threw. */
    @Nested
    class AutoAckAcknowledgesAfterProcessing {

        @Test
        void shouldCommitUpToButNotIncludingTheRecordWhoseProcessingThrew() throws Exception {
            final String topic = "rx-autoack";
            final String group = "rx-autoack-group";
            loadTopic(kafka, topic, 1, 10);
            final KafkaMailboxReceiver<String, String> receiver = member(group, topic).build();
            final List<Long> processed = new ArrayList<>();
            StepVerifier.create(receiver.receiveAutoAck()
                            .map(r -> {
                                if (r.offset() == 5L) {
                                    throw new IllegalStateException("processing failed at offset 5");
                                }
                                processed.add(r.offset());
                                return r;
                            }))
                    .expectNextCount(5)
                    .expectErrorMessage("processing failed at offset 5")
                    .verify(KafkaTestSupport.WAIT);
            // the stream's end closed the receiver, which commits what is acknowledged: 0 .. 4, not 5
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
            assertThat(processed).containsExactly(0L, 1L, 2L, 3L, 4L);
            assertThat(kafka.committed(group)).isEqualTo(Map.of(new TopicPartition(topic, 0), 5L));
        }
    }

    /** N10: the stream's own scheduler is not disposed under the user code that runs on it. */
    @Nested
    class ReceiveDoesNotInterruptItsWorker {

        @Test
        void shouldNotInterruptTheDownstreamWhenTheStreamEndsOnItsOwnWorker() throws Exception {
            final String topic = "rx-no-interrupt";
            loadTopic(kafka, topic, 1, 5);
            final KafkaMailboxReceiver<String, String> receiver = member("rx-no-interrupt-group", topic).build();
            final AtomicReference<Boolean> interruptedAtComplete = new AtomicReference<>();
            final CountDownLatch done = new CountDownLatch(1);
            receiver.receive()
                    .take(1) // cancels upstream on the worker, then completes there
                    .subscribe(r -> r.acknowledge(), e -> done.countDown(), () -> {
                        interruptedAtComplete.set(Thread.currentThread().isInterrupted());
                        done.countDown();
                    });
            assertThat(done.await(KafkaTestSupport.WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(interruptedAtComplete.get()).as("the worker's thread interrupted under onComplete").isFalse();
            receiver.closeAsync(Duration.ofSeconds(5)).toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    @Nested
    class ReceiveIsFused {

        /**
         * {@code receive()}'s worker polls the mailbox itself (queue fusion): while its subscriber holds the first
         * record, nothing else leaves the mailbox. Unfused, {@code publishOn} would have taken a prefetch of 256 out
         * of it into a queue of its own (a peek operator between the mailbox's flux and {@code publishOn} is enough
         * to refuse the fusion).
         */
        @Test
        void shouldTakeNothingOutOfTheMailboxBeyondWhatTheSubscriberHolds() throws Exception {
            final String topic = "rx-fused";
            loadTopic(kafka, topic, 1, 700);
            final KafkaMailboxReceiver<String, String> receiver = member("rx-fused-group", topic).build();
            final CountDownLatch holding = new CountDownLatch(1);
            final CountDownLatch release = new CountDownLatch(1);
            final Disposable subscription = receiver.receive().subscribe(r -> {
                holding.countDown();
                try {
                    release.await(KafkaTestSupport.WAIT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try {
                assertThat(holding.await(KafkaTestSupport.WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
                final Mailbox<ReceivedRecord<String, String>> mailbox = receiver.mailbox();
                // 700 records: enough to leave the mailbox without room for a poll (the receiver pauses) even after an
                // unfused publishOn's prefetch of 256
                assertThat(eventually(receiver::paused)).isTrue();
                assertThat(mailbox.stats().received()).isEqualTo(1L);
            } finally {
                release.countDown();
                subscription.dispose();
                receiver.close(Duration.ofSeconds(5));
            }
        }
    }

    @Nested
    class MaxUnacknowledgedBoundsTheWorkOut {

        @Test
        void shouldDeliverAtMostTheBoundPlusOnePollPerPartitionWhileNothingIsAcknowledgedThenResume()
                throws Exception {
            final String topic = "rx-bound";
            final String group = "rx-bound-group";
            final int partitions = 2;
            final int count = 4_000;
            final int bound = 100;
            final int maxPoll = 50;
            final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, partitions, count);
            final Map<String, Object> config = consumerConfig(kafka, group);
            config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(config)
                    .topics(List.of(topic))
                    .maxUnacknowledged(bound)
                    .commitInterval(Duration.ofMillis(100))
                    .build();
            final List<ReceivedRecord<String, String>> held = new ArrayList<>(); // guarded by itself
            final AtomicInteger[] perPartition = {new AtomicInteger(), new AtomicInteger()};
            final AtomicInteger maxSeen0 = new AtomicInteger();
            final AtomicInteger maxSeen1 = new AtomicInteger();
            final Set<Long> seen = ConcurrentHashMap.newKeySet();
            final AtomicReference<Boolean> acking = new AtomicReference<>(false);
            final Disposable sub = receiver.receive().subscribe(r -> {
                seen.add(key(r.partition(), r.offset()));
                final int n = perPartition[r.partition()].incrementAndGet();
                if (acking.get()) {
                    r.acknowledge();
                } else {
                    (r.partition() == 0 ? maxSeen0 : maxSeen1).accumulateAndGet(n, Math::max);
                    synchronized (held) {
                        held.add(r);
                    }
                }
            });
            try {
                // nothing is acknowledged: both partitions reach the bound and are paused there
                assertThat(eventually(() -> receiver.partitionsAtUnacknowledgedBound() == partitions)).isTrue();
                TimeUnit.MILLISECONDS.sleep(500); // several more polls: the bound must still hold
                assertThat(maxSeen0.get()).isGreaterThanOrEqualTo(bound).isLessThanOrEqualTo(bound + maxPoll);
                assertThat(maxSeen1.get()).isGreaterThanOrEqualTo(bound).isLessThanOrEqualTo(bound + maxPoll);
                assertThat(receiver.oldestUnacknowledgedAge()).isPositive();
                // the acknowledgements come: the partitions resume and every record arrives
                synchronized (held) {
                    acking.set(true);
                    held.forEach(ReceivedRecord::acknowledge);
                }
                assertThat(eventually(() -> seen.size() == count)).as("resumed: every record delivered").isTrue();
                assertThat(committedTo(kafka, group, ends)).isTrue();
                assertThat(eventually(() -> receiver.oldestUnacknowledgedAge().isZero())).isTrue();
            } finally {
                sub.dispose();
                receiver.close(Duration.ofSeconds(5));
            }
        }
    }

    /** N1: the bound is the open span, so one record dropped without an acknowledgement stops its partition. */
    @Nested
    class MaxUnacknowledgedBoundsTheOpenSpan {

        @Test
        void shouldPauseThePartitionBehindOneRecordDroppedWithoutAnAcknowledgement() throws Exception {
            final String topic = "rx-span";
            final int count = 300;
            final int bound = 20;
            final int maxPoll = 10;
            loadTopic(kafka, topic, 1, count);
            final Map<String, Object> config = consumerConfig(kafka, "rx-span-group");
            config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(config)
                    .topics(List.of(topic))
                    .maxUnacknowledged(bound)
                    .commitInterval(Duration.ofMillis(100))
                    .build();
            final AtomicInteger delivered = new AtomicInteger();
            final Disposable sub = receiver.receive()
                    .doOnNext(r -> delivered.incrementAndGet())
                    .filter(r -> r.offset() != 5L) // dropped without an acknowledgement, as a filter would
                    .subscribe(ReceivedRecord::acknowledge);
            try {
                assertThat(eventually(() -> receiver.partitionsAtUnacknowledgedBound() == 1))
                        .as("paused behind the unacknowledged offset 5").isTrue();
                TimeUnit.MILLISECONDS.sleep(500); // several more polls: the bound must still hold
                // offset 5 and at most the bound plus one poll after it
                assertThat(delivered.get()).isLessThanOrEqualTo(5 + bound + maxPoll).isLessThan(count);
                assertThat(kafka.committed("rx-span-group").getOrDefault(new TopicPartition(topic, 0), 0L))
                        .as("never past the unacknowledged record").isLessThanOrEqualTo(5L);
            } finally {
                sub.dispose();
                receiver.close(Duration.ofSeconds(5));
            }
        }
    }

    /** N1's escalation: a record left unacknowledged past maxUnacknowledgedAge fails the receiver, or a handler. */
    @Nested
    class MaxUnacknowledgedAgeEscalates {

        @Test
        void shouldFailTheStreamNamingTheRecordLeftUnacknowledged() throws Exception {
            final String topic = "rx-age-fail";
            loadTopic(kafka, topic, 1, 50);
            final KafkaMailboxReceiver<String, String> receiver = member("rx-age-fail-group", topic)
                    .maxUnacknowledgedAge(Duration.ofMillis(300))
                    .build();
            try {
                StepVerifier.create(receiver.receive()
                                .filter(r -> r.offset() != 7L) // dropped without an acknowledgement
                                .doOnNext(ReceivedRecord::acknowledge)
                                .then())
                        .expectErrorSatisfies(e -> {
                            assertThat(e).isInstanceOf(UnacknowledgedRecordException.class);
                            final UnacknowledgedRecordException u = (UnacknowledgedRecordException) e;
                            assertThat(u.partition()).isEqualTo(new TopicPartition(topic, 0));
                            assertThat(u.offset()).isEqualTo(7L);
                            assertThat(u.age()).isGreaterThanOrEqualTo(Duration.ofMillis(300));
                        })
                        .verify(Duration.ofSeconds(30));
                // the receiver committed what was acknowledged, and not past the record: its next owner gets it
                assertThat(kafka.committed("rx-age-fail-group").get(new TopicPartition(topic, 0))).isEqualTo(7L);
            } finally {
                receiver.close(Duration.ofSeconds(5));
            }
        }

        @Test
        void shouldHandTheRecordToTheHandlerAndMoveThePartitionOn() throws Exception {
            final String topic = "rx-age-handler";
            final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 1, 200);
            final List<Long> overdue = new java.util.concurrent.CopyOnWriteArrayList<>();
            final KafkaMailboxReceiver<String, String> receiver = member("rx-age-handler-group", topic)
                    .maxUnacknowledged(20) // the dropped record would stop the partition without the handler
                    .maxUnacknowledgedAge(Duration.ofMillis(300), (partition, offset) -> overdue.add(offset))
                    .build();
            final AtomicInteger delivered = new AtomicInteger();
            final Disposable sub = receiver.receive()
                    .doOnNext(r -> delivered.incrementAndGet())
                    .filter(r -> r.offset() != 7L)
                    .subscribe(ReceivedRecord::acknowledge);
            try {
                assertThat(committedTo(kafka, "rx-age-handler-group", ends))
                        .as("committed to the end: the handler took the dropped record over").isTrue();
                assertThat(overdue).containsExactly(7L);
                assertThat(delivered.get()).isEqualTo(200);
            } finally {
                sub.dispose();
                receiver.close(Duration.ofSeconds(5));
            }
        }

        @Test
        void shouldRejectANonPositiveAge() {
            final KafkaMailboxReceiver.Builder<String, String> builder = member("rx-age-bad", "rx-age-bad");
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> builder.maxUnacknowledgedAge(Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAge");
            org.assertj.core.api.Assertions.assertThatThrownBy(
                    () -> builder.maxUnacknowledgedAge(Duration.ofSeconds(1), null))
                    .isInstanceOf(NullPointerException.class);
        }
    }

    /** N7: the close waits only for records handed out, not for those still in the mailbox. */
    @Nested
    class CloseWaitsOnlyForRecordsHandedOut {

        @Test
        void shouldNotWaitForAcknowledgementsOfRecordsStillInTheMailbox() throws Exception {
            final String topic = "rx-close-mailbox";
            final String group = "rx-close-mailbox-group";
            loadTopic(kafka, topic, 1, 50);
            final KafkaMailboxReceiver<String, String> receiver = member(group, topic).build();
            receiver.start();
            final Mailbox<ReceivedRecord<String, String>> mailbox = receiver.mailbox();
            final AtomicReference<ReceivedRecord<String, String>> first = new AtomicReference<>();
            final Thread consumer = new Thread(() -> { // not the closing thread: the close waits for its acks
                try {
                    first.set(mailbox.recv(KafkaTestSupport.WAIT));
                    first.get().acknowledge(); // the one record handed out; the other 49 stay in the mailbox
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            consumer.start();
            consumer.join(KafkaTestSupport.WAIT.toMillis());
            assertThat(first.get()).isNotNull();
            assertThat(eventually(() -> mailbox.size() == 49)).isTrue();
            final long start = System.nanoTime();
            receiver.close(Duration.ofSeconds(30)); // waited ~15 s for the 49 that nobody takes
            final long tookSeconds = (System.nanoTime() - start) / 1_000_000_000L;
            assertThat(tookSeconds).as("close(30 s) took %d s", tookSeconds).isLessThan(8L);
            assertThat(kafka.committed(group)).isEqualTo(Map.of(new TopicPartition(topic, 0), 1L));
        }
    }

    @Nested
    class PausedPollThreadWakesPerPoll {

        @Test
        void shouldNotWakeThePausedPollThreadPerFreedSlotButOnceAPollsWorthIsFree() throws Exception {
            final String topic = "rx-room";
            final int capacity = 16; // = max.poll.records: a poll's worth is the whole mailbox
            final int count = 100;
            loadTopic(kafka, topic, 1, count);
            final KafkaMailboxReceiver<String, String> receiver = member("rx-room-group", topic)
                    .capacity(capacity)
                    .build();
            assertThat(receiver.loop().settings.maxPollRecords).isEqualTo(capacity);
            final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
            final Set<Long> offsets = ConcurrentHashMap.newKeySet();
            receiver.start();
            try {
                // full: occupied = capacity, so the poll thread holds no reservation and waits for a whole poll
                assertThat(eventually(() -> inbox.size() == capacity && receiver.loop().admission.awaitingRoomNow())).isTrue();
                final long wakeups = receiver.loop().admission.roomWakeups();
                final long declined = receiver.loop().admission.roomDeclined();
                for (int i = 1; i < capacity; i++) {
                    final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                    assertThat(r).isNotNull();
                    offsets.add(r.offset());
                    r.acknowledge();
                    // the receive woke the registration on this thread: it reserved the slot for the poll thread,
                    // found less than a poll's worth, and registered again without unparking it
                    assertThat(receiver.loop().admission.roomDeclined() - declined).isEqualTo(i);
                    assertThat(receiver.loop().admission.roomWakeups()).as("poll thread unparked after %s freed slots", i)
                            .isEqualTo(wakeups);
                    assertThat(receiver.loop().admission.awaitingRoomNow()).isTrue();
                }
                // the last slot makes a poll's worth: the receiver polls again and every record arrives
                for (int i = capacity; i <= count; i++) {
                    if (i > capacity && offsets.size() == count) {
                        break;
                    }
                    final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                    assertThat(r).as("record %s", i).isNotNull();
                    offsets.add(r.offset());
                    r.acknowledge();
                }
                assertThat(offsets).hasSize(count);
            } finally {
                receiver.close(Duration.ofSeconds(5));
            }
        }
    }

    @Nested
    class CloseIsBounded {

        @Test
        void shouldReturnWithinAFewSecondsAndRedeliverEveryUnacknowledgedRecordWhenClosedFromTheAcknowledgingThread()
                throws Exception {
            final String topic = "rx-close-acker";
            final String group = "rx-close-acker-group";
            final int count = 3_000;
            final Map<TopicPartition, Long> ends = loadTopic(kafka, topic, 3, count);
            final KafkaMailboxReceiver<String, String> a = member(group, topic).build();
            final Set<Long> ackedByA = ConcurrentHashMap.newKeySet();
            final Set<Long> unackedByA = ConcurrentHashMap.newKeySet();
            final AtomicLong closeNanos = new AtomicLong(-1L);
            final AtomicInteger taken = new AtomicInteger();
            final CountDownLatch closed = new CountDownLatch(1);
            final Thread acker = new Thread(() -> {
                try {
                    while (closeNanos.get() < 0 && a.mailbox().recvMany(r -> {
                        final long k = key(r.partition(), r.offset());
                        if (r.offset() % 3 == 0) {
                            unackedByA.add(k); // never acknowledged: must go to the next member
                        } else {
                            ackedByA.add(k);
                            r.acknowledge();
                        }
                        if (taken.incrementAndGet() == 1_000) {
                            final long start = System.nanoTime();
                            a.close(Duration.ofSeconds(2)); // from the thread that acknowledges
                            closeNanos.set(System.nanoTime() - start);
                        }
                    }, 64) > 0) {
                        // until closed
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    closed.countDown();
                }
            }, "rx-close-acker");
            acker.setDaemon(true);
            a.start();
            acker.start();
            assertThat(closed.await(60, TimeUnit.SECONDS)).isTrue();
            assertThat(closeNanos.get()).as("close(2 s) returned").isNotNegative();
            assertThat(Duration.ofNanos(closeNanos.get())).as("close(2 s) from the acking thread returned")
                    .isLessThan(Duration.ofSeconds(15));

            final Map<Long, Integer> deliveredToB = new ConcurrentHashMap<>();
            final KafkaMailboxReceiver<String, String> b = member(group, topic).build();
            final Disposable subB = b.receive().subscribe(r -> {
                deliveredToB.merge(key(r.partition(), r.offset()), 1, Integer::sum);
                r.acknowledge();
            });
            try {
                assertThat(committedTo(kafka, group, ends)).isTrue();
            } finally {
                subB.dispose();
                b.close(Duration.ofSeconds(5));
            }
            assertThat(unackedByA).isNotEmpty();
            assertThat(deliveredToB.keySet()).as("every record A did not acknowledge").containsAll(unackedByA);
            assertCovered(ends, ackedByA, deliveredToB);
        }

        @Test
        void shouldReturnWithinItsBoundWhenASubscriberOnThePollThreadNeverReturns() throws Exception {
            final String topic = "rx-close-stuck";
            loadTopic(kafka, topic, 1, 10);
            final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                    .<String, String>builder(consumerConfig(kafka, "rx-close-stuck-group"))
                    .topics(List.of(topic))
                    .build();
            final CountDownLatch inside = new CountDownLatch(1);
            final CountDownLatch release = new CountDownLatch(1);
            // trampolined: the first record's onNext runs on the poll thread and blocks it
            final Disposable sub = MailboxFlux.from(receiver.mailbox()).subscribe(r -> {
                inside.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            receiver.start();
            try {
                assertThat(inside.await(45, TimeUnit.SECONDS)).isTrue();
                final long start = System.nanoTime();
                receiver.close(Duration.ofSeconds(1));
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
                // an interrupted close returns at once, flag kept
                Thread.currentThread().interrupt();
                receiver.close(Duration.ofSeconds(30));
                assertThat(Thread.interrupted()).isTrue();
            } finally {
                release.countDown();
                sub.dispose();
            }
            assertThat(receiver.closeAsync(Duration.ZERO).toCompletableFuture().get(30, TimeUnit.SECONDS)).isNull();
            assertThat(receiver.mailbox().isClosed()).isTrue();
        }
    }

    /** Every record up to {@code ends} was acknowledged by the first member or delivered to the second. */
    private static void assertCovered(Map<TopicPartition, Long> ends, Set<Long> ackedByA,
            Map<Long, Integer> deliveredToB) {
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            for (long offset = 0; offset < e.getValue(); offset++) {
                final long k = key(e.getKey().partition(), offset);
                assertThat(ackedByA.contains(k) || deliveredToB.containsKey(k))
                        .as("%s-%s delivered", e.getKey(), offset).isTrue();
            }
        }
    }

    private static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
