package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxPublisher;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;
import org.junit.jupiter.api.io.TempDir;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The blocking calls from virtual threads, the way JDK 21+ users make them: many producers parked on a small
 * full mailbox, a consumer parked on an empty one, and a {@link MailboxPublisher} whose drain runs on a
 * virtual-thread-per-task executor. Every message arrives exactly once, in order per producer, and no carrier
 * thread is pinned: a {@code jdk.VirtualThreadPinned} event (threshold 0, so any pinned park counts) recorded
 * during the run fails the test. The mailbox parks with {@code LockSupport} and holds no monitor while it does,
 * so it has nothing to pin with on any JDK.
 *
 * <p><b>Note:</b> a receive wakes every parked producer, and all but the few that find room park again, so with
 * thousands of producers parked on a full mailbox each batch costs a wake-up per parked producer. Three messages
 * per producer keep that herd within the build's time budget; the test is about correctness, not its cost.
 *
 * <p>Before the recordings, {@link #warmUpTheParkPath} makes one platform thread park in {@code send} while
 * a recording exists: the first park after the Flight Recorder initializes looks up the mailbox's JFR event type,
 * which loads classes, and class loading cannot unmount a virtual thread (seen here on JDK 25 as one 0.5 ms
 * "Contended monitor enter" pin in {@code BuiltinClassLoader.loadClassOrNull}). That one-time pin belongs to the
 * JDK's class loader, not to a park of ours; every park after it is measured.
 *
 * <p>The test sources are compiled for Java 17, so virtual threads are reached by reflection; on JDK 17 the
 * class is reported as skipped.
 */
@EnabledForJreRange(min = JRE.JAVA_21, disabledReason = "virtual threads need JDK 21 or later")
@Timeout(300)
class VirtualThreadTest {
    private static final String PINNED = "jdk.VirtualThreadPinned";
    private static final int PRODUCERS = 10_000;
    private static final int PER_PRODUCER = 3;
    private static final int CAPACITY = 64;

    @TempDir
    Path dir;

    @BeforeAll
    static void warmUpTheParkPath() throws Exception {
        try (Recording initializesTheRecorder = new Recording()) {
            // Threshold 0: the warm-up park commits a ProducerParked event, so the first commit's class loading (the
            // event writer) happens here, on a platform thread. Left to the test's own run, where a park passes the
            // event's 10 ms threshold only under load, it would happen on a virtual thread with 10,000 others
            // contending for the class loader's lock: a pin JFR reports ("Freeze or preempt failed").
            initializesTheRecorder.enable("dev.mighty.mailbox.ProducerParked").withThreshold(Duration.ZERO)
                    .withStackTrace();
            initializesTheRecorder.start();
            final Mailbox<Long> mailbox = Mailboxes.bounded(1);
            assertThat(mailbox.trySend(0L)).isTrue();
            final Thread producer = new Thread(() -> {
                try {
                    mailbox.send(1L);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "warm-up-producer");
            producer.start();
            final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
            while (mailbox.stats().producerParks() == 0 && System.nanoTime() - deadline < 0) {
                Thread.onSpinWait();
            }
            assertThat(mailbox.stats().producerParks()).as("the warm-up producer parked").isPositive();
            assertThat(mailbox.tryRecv()).isZero();
            producer.join(Hang.TIMEOUT.toMillis());
            assertThat(producer.isAlive()).isFalse();
            assertThat(mailbox.tryRecv()).isEqualTo(1L);
            final Path dump = Files.createTempFile("warm-up", ".jfr");
            try {
                initializesTheRecorder.stop();
                initializesTheRecorder.dump(dump);
                assertThat(RecordingFile.readAllEvents(dump)).as("the warm-up committed a ProducerParked event")
                        .anyMatch(e -> e.getEventType().getName().equals("dev.mighty.mailbox.ProducerParked"));
            } finally {
                Files.deleteIfExists(dump);
            }
        }
    }

    @Test
    void shouldDeliverEveryMessageOnceInOrderWithoutPinningWhenTenThousandVirtualThreadsSendAndOneReceives()
            throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(CAPACITY);
        final SequenceChecker checker = new SequenceChecker(PRODUCERS);
        final long total = (long) PRODUCERS * PER_PRODUCER;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final List<RecordedEvent> pinned;
        try (Recording recording = pinnedRecording()) {
            final List<Thread> threads = new ArrayList<>(PRODUCERS + 1);
            threads.add(startVirtual(() -> {
                try {
                    while (checker.received() < total) {
                        if (mailbox.recvMany(checker::accept, 256) == 0) {
                            throw new AssertionError("recvMany returned 0 on an open mailbox");
                        }
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }));
            for (int p = 0; p < PRODUCERS; p++) {
                final int producer = p;
                threads.add(startVirtual(() -> {
                    try {
                        for (long seq = 0; seq < PER_PRODUCER; seq++) {
                            mailbox.send(SequenceChecker.message(producer, seq)); // parks while full
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join(Hang.TIMEOUT.toMillis());
                assertThat(t.isAlive()).as("%s ended", t).isFalse();
            }
            pinned = stop(recording);
        }
        assertThat(failure.get()).isNull();
        final long[] sent = new long[PRODUCERS];
        Arrays.fill(sent, PER_PRODUCER);
        checker.assertExactlyOnceInOrder(sent);
        assertThat(mailbox.stats().admitted()).isEqualTo(total);
        assertThat(mailbox.stats().received()).isEqualTo(total);
        assertThat(pinned).as("carrier threads pinned").isEmpty();
    }

    @Test
    void shouldDeliverEveryMessageOnceInOrderWithoutPinningWhenThePublisherDrainsOnAVirtualThreadExecutor()
            throws Exception {
        final int producers = 1_000;
        final Mailbox<Long> mailbox = Mailboxes.bounded(CAPACITY);
        final SequenceChecker checker = new SequenceChecker(producers);
        final CheckedSubscriber subscriber = new CheckedSubscriber(checker);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final List<RecordedEvent> pinned;
        final ExecutorService executor = newVirtualThreadPerTaskExecutor();
        try (Recording recording = pinnedRecording()) {
            new MailboxPublisher<>(mailbox, 32, executor).subscribe(subscriber);
            final List<Thread> threads = new ArrayList<>(producers);
            for (int p = 0; p < producers; p++) {
                final int producer = p;
                threads.add(startVirtual(() -> {
                    try {
                        for (long seq = 0; seq < PER_PRODUCER; seq++) {
                            mailbox.send(SequenceChecker.message(producer, seq));
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join(Hang.TIMEOUT.toMillis());
                assertThat(t.isAlive()).as("%s ended", t).isFalse();
            }
            mailbox.close();
            Hang.await(subscriber.terminated, "onComplete after the close");
            pinned = stop(recording);
        } finally {
            executor.shutdown();
        }
        assertThat(failure.get()).isNull();
        assertThat(subscriber.error).isNull();
        assertThat(subscriber.overlapping).as("overlapping signals (§1.3)").isZero();
        final long[] sent = new long[producers];
        Arrays.fill(sent, PER_PRODUCER);
        checker.assertExactlyOnceInOrder(sent);
        assertThat(pinned).as("carrier threads pinned").isEmpty();
    }

    private Recording pinnedRecording() {
        final Recording recording = new Recording();
        recording.enable(PINNED).withThreshold(Duration.ZERO).withStackTrace();
        recording.start();
        return recording;
    }

    private List<RecordedEvent> stop(Recording recording) throws Exception {
        recording.stop();
        final Path file = Files.createTempFile(dir, "pinned", ".jfr");
        recording.dump(file);
        final List<RecordedEvent> events = new ArrayList<>();
        for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
            if (event.getEventType().getName().equals(PINNED)) {
                events.add(event);
            }
        }
        return events;
    }

    /** {@code Thread.ofVirtual().start(task)}, reached by reflection from sources compiled for Java 17. */
    private static Thread startVirtual(Runnable task) throws ReflectiveOperationException {
        final Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        return (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class)
                .invoke(builder, task);
    }

    /** {@code Executors.newVirtualThreadPerTaskExecutor()}, by reflection as above. */
    private static ExecutorService newVirtualThreadPerTaskExecutor() throws ReflectiveOperationException {
        return (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    }

    /** Requests in batches of 16 and feeds the checker; counts signals that overlap (§1.3). */
    private static final class CheckedSubscriber implements Subscriber<Long> {
        final SequenceChecker checker;
        final CountDownLatch terminated = new CountDownLatch(1);
        volatile Throwable error;
        volatile int overlapping;
        private final AtomicInteger inside = new AtomicInteger();
        private Subscription upstream;
        private int left;

        CheckedSubscriber(SequenceChecker checker) {
            this.checker = checker;
        }

        @Override
        public void onSubscribe(Subscription s) {
            enter();
            upstream = s;
            left = 16;
            exit();
            s.request(16);
        }

        @Override
        public void onNext(Long message) {
            enter();
            checker.accept(message);
            final boolean more = --left == 0;
            if (more) {
                left = 16;
            }
            exit();
            if (more) {
                upstream.request(16);
            }
        }

        @Override
        public void onError(Throwable t) {
            error = t;
            terminated.countDown();
        }

        @Override
        public void onComplete() {
            terminated.countDown();
        }

        private void enter() {
            if (inside.getAndIncrement() != 0) {
                overlapping++;
            }
        }

        private void exit() {
            inside.decrementAndGet();
        }
    }
}
