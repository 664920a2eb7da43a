package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.Mailbox;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.Disposable;
import reactor.core.scheduler.Schedulers;

/**
 * {@link KafkaShareReceiver} against the in-process broker: the share-group guarantees (every record once when all
 * are accepted, redelivery after release, lock timeout and close, none after reject, renew keeps the lock) and the
 * receiver's own rules (backpressure, close). Each test has its own topic and share group; a group's lock duration
 * is set short (the broker allows 1 s) where a test waits for a lock to expire, and kept long where it must not.
 * Every assertion is one that holds under any interleaving: counts and identities, never how far a thread got.
 */
@Tag("kafka")
@ExtendWith(SharedKafka.class)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class KafkaShareReceiverTest {
    private static final Duration RECV = Duration.ofMillis(100);
    private static EmbeddedKafka kafka;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    /** A share group reading from the start of the log, with this record lock duration. */
    private static String shareGroup(String name, int lockMillis) throws Exception {
        kafka.alterGroupConfigs(name, Map.of("share.auto.offset.reset", "earliest",
                "share.record.lock.duration.ms", Integer.toString(lockMillis)));
        return name;
    }

    private static KafkaShareReceiver<String, String> receiver(String group, String topic, int capacity) {
        final Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        return KafkaShareReceiver.<String, String>builder(config)
                .groupId(group)
                .topics(List.of(topic))
                .capacity(capacity)
                .pollTimeout(Duration.ofMillis(50))
                .closeTimeout(Duration.ofSeconds(10))
                .build();
    }

    private static ReceivedShareRecord<String, String> recv(Mailbox<ReceivedShareRecord<String, String>> mailbox,
            Duration timeout) throws InterruptedException {
        return mailbox.recv(timeout);
    }

    /** Receives until {@code n} records came or {@link KafkaTestSupport#WAIT} passed. */
    private static List<ReceivedShareRecord<String, String>> recvN(KafkaShareReceiver<String, String> receiver, int n)
            throws InterruptedException {
        final List<ReceivedShareRecord<String, String>> got = new ArrayList<>();
        final long deadline = System.nanoTime() + KafkaTestSupport.WAIT.toNanos();
        while (got.size() < n && System.nanoTime() - deadline < 0) {
            final ReceivedShareRecord<String, String> r = recv(receiver.mailbox(), RECV);
            if (r != null) {
                got.add(r);
            }
        }
        return got;
    }

    @Test
    void shouldDeliverEveryRecordExactlyOnceWhenTwoReceiversShareOnePartitionAndAcceptAll() throws Exception {
        final String topic = "share-once";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 60);
        final String group = shareGroup("share-once-g", 30_000);
        final Map<Long, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        final AtomicInteger acceptedByWorkers = new AtomicInteger();
        final AtomicBoolean stop = new AtomicBoolean();
        final List<Thread> workers = new ArrayList<>();
        final List<KafkaShareReceiver<String, String>> receivers = List.of(receiver(group, topic, 4),
                receiver(group, topic, 4));
        for (KafkaShareReceiver<String, String> receiver : receivers) {
            final Thread worker = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        final ReceivedShareRecord<String, String> r = recv(receiver.mailbox(), RECV);
                        if (r != null) {
                            deliveries.computeIfAbsent(r.record().offset(), o -> new AtomicInteger()).incrementAndGet();
                            Thread.sleep(2); // some work per record, so both members hold records at times
                            if (r.accept()) {
                                acceptedByWorkers.incrementAndGet();
                            }
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            workers.add(worker);
            worker.start();
            receiver.start();
        }
        // every record accepted before either closes: a close releases what is in hand, and a released record is
        // rightly delivered again (at least once), to the receiver still open
        assertThat(eventually(() -> acceptedByWorkers.get() == 60)).as("every record accepted").isTrue();
        for (KafkaShareReceiver<String, String> receiver : receivers) {
            receiver.close();
        }
        stop.set(true);
        for (Thread worker : workers) {
            worker.join(TimeUnit.SECONDS.toMillis(10));
        }
        assertThat(deliveries).hasSize(60);
        assertThat(deliveries.values()).allSatisfy(count -> assertThat(count.get()).as("deliveries").isEqualTo(1));
        final long accepted = receivers.get(0).stats().accepted() + receivers.get(1).stats().accepted();
        assertThat(accepted).isEqualTo(60);
        assertThat(receivers.get(0).stats().failedAcknowledgements()
                + receivers.get(1).stats().failedAcknowledgements()).isZero();
    }

    /**
     * Tiny mailboxes (a poll of one or two records), releases among the accepts: every record ends accepted exactly
     * once, each released one after a redelivery with a higher delivery count, and the poll thread, woken only when a
     * poll's records are all settled, never waits out its flush interval per poll (the run stays fast; bounded here
     * by the liveness wait only).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "capacity {0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2})
    void shouldSettleEveryRecordThroughATinyMailboxWithReleasesAmongAccepts(int capacity) throws Exception {
        final String topic = "share-tiny-" + capacity;
        KafkaTestSupport.loadTopic(kafka, topic, 1, 40);
        final String group = shareGroup("share-tiny-g-" + capacity, 30_000);
        final Map<Long, AtomicInteger> accepted = new ConcurrentHashMap<>();
        final Map<Long, Short> releasedAt = new ConcurrentHashMap<>();
        final Map<Long, Short> acceptedAt = new ConcurrentHashMap<>();
        final KafkaShareReceiver<String, String> receiver = receiver(group, topic, capacity);
        final reactor.core.Disposable d = receiver.receive().subscribe(r -> {
            if (r.offset() % 5 == 0 && releasedAt.putIfAbsent(r.offset(), r.deliveryCount()) == null) {
                r.release(); // delivered again, deliveryCount + 1
            } else if (r.accept()) {
                accepted.computeIfAbsent(r.offset(), o -> new AtomicInteger()).incrementAndGet();
                acceptedAt.put(r.offset(), r.deliveryCount());
            }
        });
        try {
            assertThat(eventually(() -> accepted.size() == 40)).as("every record accepted").isTrue();
        } finally {
            d.dispose();
            receiver.close(Duration.ofSeconds(10));
        }
        assertThat(accepted.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        assertThat(releasedAt).hasSize(8);
        releasedAt.forEach((offset, count) -> assertThat(acceptedAt.get(offset)).as("offset %s", offset)
                .isGreaterThan(count));
    }

    @Test
    void shouldRedeliverReleasedRecordWithDeliveryCountPlusOne() throws Exception {
        final String topic = "share-release";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 1);
        try (KafkaShareReceiver<String, String> receiver = receiver(shareGroup("share-release-g", 30_000), topic, 4)) {
            receiver.start();
            final ReceivedShareRecord<String, String> first = recvN(receiver, 1).get(0);
            assertThat(first.deliveryCount()).isEqualTo((short) 1);
            assertThat(first.release()).isTrue();
            assertThat(first.accept()).as("the first outcome wins").isFalse();
            assertThat(first.renew()).as("nothing to renew once settled").isFalse();
            final ReceivedShareRecord<String, String> again = recvN(receiver, 1).get(0);
            assertThat(again.record().offset()).isEqualTo(first.record().offset());
            assertThat(again.value()).isEqualTo("v-0");
            assertThat(again.deliveryCount()).isEqualTo((short) 2);
            assertThat(again.accept()).isTrue();
            assertThat(eventually(() -> receiver.stats().accepted() == 1 && receiver.stats().released() == 1))
                    .isTrue();
        }
    }

    @Test
    void shouldNotRedeliverRejectedRecord() throws Exception {
        final String topic = "share-reject";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 1);
        try (KafkaShareReceiver<String, String> receiver = receiver(shareGroup("share-reject-g", 1_000), topic, 4)) {
            receiver.start();
            final ReceivedShareRecord<String, String> bad = recvN(receiver, 1).get(0);
            assertThat(bad.reject()).isTrue();
            KafkaTestSupport.produce(kafka, topic, 1, 1); // "v-0" again, at offset 1
            final ReceivedShareRecord<String, String> next = recvN(receiver, 1).get(0);
            assertThat(next.record().offset()).isEqualTo(1L);
            assertThat(next.accept()).isTrue();
            // a redelivery would come within a lock period (1 s) of a refused acknowledgement; none comes at all
            assertThat(recv(receiver.mailbox(), Duration.ofMillis(2_500))).isNull();
            assertThat(receiver.stats().rejected()).isEqualTo(1);
        }
    }

    @Test
    void shouldRedeliverToAnotherReceiverAfterTheLockTimeoutWhenOneStopsAcknowledging() throws Exception {
        final String topic = "share-timeout";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 3);
        final String group = shareGroup("share-timeout-g", 1_500);
        try (KafkaShareReceiver<String, String> stalled = receiver(group, topic, 4);
             KafkaShareReceiver<String, String> other = receiver(group, topic, 4)) {
            stalled.start();
            assertThat(eventually(() -> stalled.stats().delivered() > 0)).isTrue();
            final int d = (int) stalled.stats().delivered(); // no poll after this one until its records are settled
            final List<ReceivedShareRecord<String, String>> held = recvN(stalled, d);
            assertThat(held).hasSize(d);
            other.start();
            final List<ReceivedShareRecord<String, String>> got = recvN(other, 3);
            assertThat(got).extracting(r -> r.record().offset()).containsExactlyInAnyOrder(0L, 1L, 2L);
            for (ReceivedShareRecord<String, String> r : got) {
                final boolean wasHeld = held.stream().anyMatch(h -> h.record().offset() == r.record().offset());
                assertThat(r.deliveryCount()).as("delivery count of %s", r).isEqualTo((short) (wasHeld ? 2 : 1));
            }
            got.forEach(ReceivedShareRecord::accept);
            // the stalled receiver's late outcomes are requests the broker refuses: the locks are gone
            held.forEach(ReceivedShareRecord::accept);
            assertThat(eventually(() -> stalled.stats().failedAcknowledgements() == d)).isTrue();
        }
    }

    @Test
    void shouldKeepTheLockWhileRenewingPastTheLockDuration() throws Exception {
        final String topic = "share-renew";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 1);
        final String group = shareGroup("share-renew-g", 1_000);
        final List<Long> seenByOther = new CopyOnWriteArrayList<>();
        try (KafkaShareReceiver<String, String> slow = receiver(group, topic, 4);
             KafkaShareReceiver<String, String> other = receiver(group, topic, 4)) {
            slow.start();
            final ReceivedShareRecord<String, String> record = recvN(slow, 1).get(0);
            assertThat(record.renew()).isTrue();
            other.start();
            final AtomicBoolean stop = new AtomicBoolean();
            final Thread watcher = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        final ReceivedShareRecord<String, String> r = recv(other.mailbox(), RECV);
                        if (r != null) {
                            seenByOther.add(r.record().offset());
                            r.release();
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            watcher.start();
            final long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3_500); // 3.5 lock periods
            while (System.nanoTime() - until < 0) {
                Thread.sleep(250);
                assertThat(record.renew()).isTrue();
            }
            assertThat(record.accept()).isTrue();
            Thread.sleep(1_500); // a lock period and a half: an expired lock would have shown by now
            stop.set(true);
            watcher.join(TimeUnit.SECONDS.toMillis(5));
            assertThat(seenByOther).as("the renewed record never went to the other receiver").isEmpty();
            assertThat(slow.stats().renewals()).isGreaterThanOrEqualTo(3);
            assertThat(eventually(() -> slow.stats().accepted() == 1)).isTrue();
            assertThat(slow.stats().failedAcknowledgements()).isZero();
        }
    }

    @Test
    void shouldReleaseUnsettledRecordsOnCloseSoAnotherReceiverGetsThemAtOnce() throws Exception {
        final String topic = "share-close";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 5);
        final String group = shareGroup("share-close-g", 60_000); // a lock timeout cannot explain a prompt delivery
        final KafkaShareReceiver<String, String> first = receiver(group, topic, 8);
        first.start();
        assertThat(eventually(() -> first.stats().delivered() >= 2)).isTrue();
        final int d = (int) first.stats().delivered(); // no poll after this one until its records are settled
        final List<ReceivedShareRecord<String, String>> inHand = recvN(first, 2);
        final long acceptedOffset = inHand.get(0).record().offset();
        assertThat(inHand.get(0).accept()).isTrue(); // settled before the close: stays accepted
        final long closedAt = System.nanoTime();
        first.close(Duration.ofSeconds(10));
        assertThat(inHand.get(1).isSettled()).as("released by the close").isTrue();
        assertThat(inHand.get(1).accept()).isFalse();
        final List<ReceivedShareRecord<String, String>> left = recvN(first, d - 2); // still in the mailbox
        assertThat(left).hasSize(d - 2).allSatisfy(r -> assertThat(r.isSettled()).isTrue());
        assertThat(recv(first.mailbox(), RECV)).isNull();
        assertThat(first.mailbox().isTerminated()).isTrue();
        assertThat(first.stats().released()).isEqualTo(d - 1);
        assertThat(first.stats().accepted()).isEqualTo(1);
        try (KafkaShareReceiver<String, String> second = receiver(group, topic, 8)) {
            second.start();
            final List<ReceivedShareRecord<String, String>> got = recvN(second, 4);
            assertThat(System.nanoTime() - closedAt).as("well within the 60 s lock")
                    .isLessThan(TimeUnit.SECONDS.toNanos(45));
            assertThat(got).extracting(r -> r.record().offset()).doesNotContain(acceptedOffset).hasSize(4)
                    .doesNotHaveDuplicates();
            for (ReceivedShareRecord<String, String> r : got) {
                // released by the close: delivered twice; never acquired by the first receiver: once
                assertThat(r.deliveryCount()).as("delivery count of %s", r)
                        .isEqualTo((short) (r.record().offset() < d ? 2 : 1));
            }
            got.forEach(ReceivedShareRecord::accept);
        }
    }

    @Test
    void shouldNotPollAgainUntilEveryRecordOfThePollIsAcknowledged() throws Exception {
        final String topic = "share-backpressure";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 20);
        final int capacity = 4; // max.poll.records defaults to min(500, capacity)
        try (KafkaShareReceiver<String, String> receiver = receiver(shareGroup("share-bp-g", 30_000), topic,
                capacity)) {
            final Mailbox<ReceivedShareRecord<String, String>> mailbox = receiver.mailbox();
            final AtomicLong worst = new AtomicLong();
            final AtomicBoolean stop = new AtomicBoolean();
            final Thread sampler = new Thread(() -> {
                while (!stop.get()) {
                    worst.accumulateAndGet(Math.max(receiver.stats().outstanding(), mailbox.size()), Math::max);
                    Thread.onSpinWait();
                }
            });
            sampler.start();
            receiver.start();
            assertThat(eventually(() -> receiver.stats().delivered() > 0)).isTrue();
            final long polls = receiver.stats().polls();
            final long delivered = receiver.stats().delivered();
            assertThat(delivered).isLessThanOrEqualTo(capacity);
            Thread.sleep(500); // a stalled consumer: ten poll timeouts, and not one poll
            assertThat(receiver.stats().polls()).isEqualTo(polls);
            assertThat(receiver.stats().delivered()).isEqualTo(delivered);
            int accepted = 0;
            if (delivered >= 2) {
                assertThat(recvN(receiver, 1).get(0).accept()).isTrue();
                accepted++;
                Thread.sleep(300); // records of the poll still unacknowledged (in the mailbox): still no poll
                assertThat(receiver.stats().polls()).isEqualTo(polls);
            }
            while (accepted < 20) {
                final ReceivedShareRecord<String, String> r = recv(mailbox, Duration.ofSeconds(10));
                assertThat(r).isNotNull();
                assertThat(r.accept()).isTrue();
                accepted++;
            }
            assertThat(eventually(() -> receiver.stats().outstanding() == 0)).isTrue();
            stop.set(true);
            sampler.join();
            assertThat(worst.get()).as("outstanding or in the mailbox, at most one poll's records")
                    .isLessThanOrEqualTo(capacity);
            assertThat(receiver.stats().delivered()).isEqualTo(20);
        }
    }

    @Test
    void shouldCloseSafelyFromThePollThreadAndFromManyThreadsAtOnce() throws Exception {
        final String topic = "share-closes";
        KafkaTestSupport.loadTopic(kafka, topic, 1, 3);
        final KafkaShareReceiver<String, String> receiver = receiver(shareGroup("share-closes-g", 30_000), topic, 4);
        final CountDownLatch ended = new CountDownLatch(1);
        final AtomicInteger onPollThread = new AtomicInteger();
        final Disposable subscription = receiver.receive(Schedulers.immediate())
                .doFinally(signal -> ended.countDown())
                .subscribe(r -> {
                    if (Thread.currentThread().getName().startsWith("kafka-share-poll")) {
                        onPollThread.incrementAndGet();
                    }
                    r.accept();
                    receiver.close(); // on the poll thread: returns at once; the loop stops after this send
                });
        final List<Thread> closers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            final Thread closer = new Thread(() -> receiver.close(Duration.ofSeconds(5)));
            closers.add(closer);
        }
        assertThat(eventually(() -> onPollThread.get() > 0)).isTrue();
        closers.forEach(Thread::start);
        for (Thread closer : closers) {
            closer.join(TimeUnit.SECONDS.toMillis(15));
            assertThat(closer.isAlive()).isFalse();
        }
        receiver.closeAsync(Duration.ZERO).toCompletableFuture().get(15, TimeUnit.SECONDS);
        assertThat(ended.await(15, TimeUnit.SECONDS)).as("the stream ended").isTrue();
        assertThat(receiver.mailbox().isClosed()).isTrue();
        assertThat(receiver.stats().outstanding()).isZero();
        subscription.dispose();
    }
}
