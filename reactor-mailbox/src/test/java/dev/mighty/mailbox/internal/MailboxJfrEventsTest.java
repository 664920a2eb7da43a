package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import dev.mighty.mailbox.Hang;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import jdk.jfr.Event;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;

/**
 * The JFR events, captured with a {@link RecordingStream} in this JVM. Every wait is bounded; nothing here
 * asserts how fast anything is. Events are matched by a mailbox name unique to the test, and "exactly one" /
 * "none" are asserted after a marker event committed afterwards has arrived (the stream is ordered).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class MailboxJfrEventsTest {
    private static final long AWAIT_NANOS = Hang.TIMEOUT.toNanos();
    private static final String MARKER = "dev.mighty.mailbox.test.Marker";

    /** Committed after the events under test; once it arrives, every earlier event has. */
    @Name(MARKER)
    @StackTrace(false)
    static final class MarkerEvent extends Event {
        String id;
    }

    /** What the tests read from an event, copied out of the stream's (reused) event object. */
    record Seen(String type, String mailbox, long durationNanos, int capacity, int size, String thread,
            String causeClass, String causeMessage, long stalledFor, String markerId) {
        static Seen of(RecordedEvent e) {
            final String type = e.getEventType().getName();
            final boolean marker = MARKER.equals(type);
            return new Seen(type,
                    marker ? null : e.getString("mailbox"),
                    e.getDuration().toNanos(),
                    marker ? 0 : e.getInt("capacity"),
                    marker ? 0 : e.getInt("size"),
                    e.getThread() == null ? null : e.getThread().getJavaName(),
                    e.hasField("causeClass") ? e.getClass("causeClass").getName() : null,
                    e.hasField("causeMessage") ? e.getString("causeMessage") : null,
                    e.hasField("stalledFor") ? e.getDuration("stalledFor").toNanos() : -1L,
                    marker ? e.getString("id") : null);
        }
    }

    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final String id = UUID.randomUUID().toString().substring(0, 8);
    private RecordingStream stream;

    @BeforeEach
    void openStream() {
        stream = new RecordingStream();
        stream.enable(MARKER);
        stream.onEvent(e -> seen.add(Seen.of(e)));
    }

    @AfterEach
    void closeStream() {
        stream.close();
    }

    // ------------------------------------------------------------------ ProducerParked

    @Test
    void shouldRecordOneProducerParkedWhenSendParksLongerThanThreshold() throws Exception {
        stream.enable(ProducerParkedEvent.NAME).withThreshold(Duration.ofMillis(10));
        stream.startAsync();
        final String name = "parked-" + id;
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(1).name(name).build();

        parkOneProducerFor(mb, 50);
        commitMarkerAndAwait();

        final List<Seen> events = events(ProducerParkedEvent.NAME, name);
        assertThat(events).hasSize(1);
        final Seen event = events.get(0);
        assertThat(event.capacity()).isEqualTo(1);
        assertThat(event.size()).as("size when it woke: the slot it will take is free").isZero();
        assertThat(event.thread()).isEqualTo("producer-" + name);
        assertThat(event.durationNanos()).as("at least the 50 ms the test slept").isGreaterThanOrEqualTo(
                TimeUnit.MILLISECONDS.toNanos(50));
    }

    @Test
    void shouldRecordNoProducerParkedWhenParkIsShorterThanThreshold() throws Exception {
        stream.enable(ProducerParkedEvent.NAME).withThreshold(Duration.ofHours(1));
        stream.startAsync();
        final String name = "parked-below-threshold-" + id;
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(1).name(name).build();

        parkOneProducerFor(mb, 20);
        commitMarkerAndAwait();

        assertThat(events(ProducerParkedEvent.NAME, name)).isEmpty();
    }

    @Test
    void shouldHandOutNoEventObjectWhenTheRecordingDisablesTheEvent() {
        // a recording enables our events by default (@Enabled defaults to true): switch this one off
        stream.disable(ProducerParkedEvent.NAME);
        stream.startAsync();

        assertThat(MailboxEvents.producerParking()).isNull();
    }

    @Test
    void shouldHandOutABegunEventWhenARecordingRunsWithDefaultSettings() {
        stream.startAsync(); // no setting for ProducerParked: its annotations decide (enabled, 10 ms threshold)

        final Object token = MailboxEvents.producerParking();
        assertThat(token).isInstanceOf(ProducerParkedEvent.class);
        MailboxEvents.producerParked(token, MailboxRing.of(Mailboxes.bounded(1))); // shorter than 10 ms: dropped
    }

    // ------------------------------------------------------------------ ConsumerStalled

    @Test
    void shouldRecordConsumerStalledWhenMessagesWaitAndNothingIsReceived() throws Exception {
        stream.enable(ConsumerStalledEvent.NAME).withPeriod(Duration.ofMillis(100));
        stream.startAsync();
        final String stalledName = "stalled-" + id;
        final String idleName = "idle-" + id;
        // built after the recorder is initialized: registered for the stall check, which they install
        final Mailbox<String> idle = Mailboxes.<String>builder().capacity(4).name(idleName).build();
        final Mailbox<String> stalled = Mailboxes.<String>builder().capacity(4).name(stalledName).build();
        assertThat(stalled.trySend("a")).isTrue();
        assertThat(stalled.trySend("b")).isTrue();
        assertThat(stalled.trySend("c")).isTrue();

        await(() -> !events(ConsumerStalledEvent.NAME, stalledName).isEmpty(), "a ConsumerStalled event");
        commitMarkerAndAwait();

        final Seen event = events(ConsumerStalledEvent.NAME, stalledName).get(0);
        assertThat(event.capacity()).isEqualTo(4);
        assertThat(event.size()).isEqualTo(3);
        assertThat(event.stalledFor()).as("at least one period").isPositive();
        assertThat(events(ConsumerStalledEvent.NAME, idleName)).as("an idle mailbox never stalls").isEmpty();
        assertThat(idle.size()).isZero();
    }

    // ------------------------------------------------------------------ ClosedExceptionally

    @Test
    void shouldRecordClosedExceptionallyOnceWhenTheFirstCloseHasACause() throws Exception {
        stream.enable(ClosedExceptionallyEvent.NAME);
        stream.startAsync();
        final String normalName = "closed-normally-" + id;
        final String failedName = "closed-failed-" + id;
        final String lateName = "closed-late-" + id;
        final Mailbox<String> normal = Mailboxes.<String>builder().capacity(2).name(normalName).build();
        final Mailbox<String> failed = Mailboxes.<String>builder().capacity(2).name(failedName).build();
        final Mailbox<String> late = Mailboxes.<String>builder().capacity(2).name(lateName).build();

        normal.close();
        assertThat(failed.trySend("left behind")).isTrue();
        failed.closeExceptionally(new IllegalStateException("boom"));
        failed.closeExceptionally(new RuntimeException("second cause: ignored"));
        failed.close();
        late.close();
        late.closeExceptionally(new IllegalStateException("after a normal close: ignored"));
        commitMarkerAndAwait();

        final List<Seen> events = events(ClosedExceptionallyEvent.NAME, failedName);
        assertThat(events).hasSize(1);
        final Seen event = events.get(0);
        assertThat(event.causeClass()).isEqualTo(IllegalStateException.class.getName());
        assertThat(event.causeMessage()).isEqualTo("boom");
        assertThat(event.size()).as("left to drain").isEqualTo(1);
        assertThat(event.capacity()).isEqualTo(2);
        assertThat(event.thread()).isEqualTo(Thread.currentThread().getName());
        assertThat(events(ClosedExceptionallyEvent.NAME, normalName)).isEmpty();
        assertThat(events(ClosedExceptionallyEvent.NAME, lateName)).isEmpty();
    }

    // ------------------------------------------------------------------ registry and stall logic

    @Test
    void shouldNotKeepMailboxAliveWhenWatched() throws Exception {
        stream.startAsync(); // the recorder is initialized: new mailboxes are watched
        final WeakReference<Mailbox<String>> ref = watchedMailbox();

        await(() -> {
            System.gc();
            return ref.get() == null;
        }, "the watched mailbox to be collected");
    }

    @Test
    void shouldReportStallOnlyWhenMessagesWaitedAWholePeriodWithoutReceives() {
        final StallWatch watch = new StallWatch();

        assertThat(watch.observe(3, 0L, 1_000L)).as("first check: no history").isEqualTo(-1L);
        assertThat(watch.observe(3, 0L, 2_000L)).as("waited a period, none received").isEqualTo(1_000L);
        assertThat(watch.observe(4, 0L, 3_000L)).as("still none received").isEqualTo(2_000L);
        assertThat(watch.observe(4, 1L, 4_000L)).as("the consumer took one").isEqualTo(-1L);
        assertThat(watch.observe(4, 1L, 5_000L)).as("stalled again, counted from the progress").isEqualTo(1_000L);
    }

    @Test
    void shouldNotReportStallWhenMailboxWasEmptyAtTheLastCheck() {
        final StallWatch watch = new StallWatch();

        assertThat(watch.observe(0, 10L, 1_000L)).isEqualTo(-1L);
        assertThat(watch.observe(0, 10L, 9_000L)).as("idle for long").isEqualTo(-1L);
        assertThat(watch.observe(5, 10L, 10_000L)).as("messages just arrived").isEqualTo(-1L);
        assertThat(watch.observe(5, 10L, 11_000L)).as("they waited a whole period").isEqualTo(1_000L);
    }

    // ------------------------------------------------------------------ helpers

    /** @return a weak reference to a new mailbox, checked to be watched, and no strong one */
    private static WeakReference<Mailbox<String>> watchedMailbox() {
        final Mailbox<String> mb = Mailboxes.bounded(64);
        assertThat(MailboxEvents.isWatched(MailboxRing.of(mb))).as("watched").isTrue();
        return new WeakReference<>(mb);
    }

    /** Fills {@code mb}, parks one producer on it for at least {@code millis}, then lets it in. */
    private static void parkOneProducerFor(Mailbox<String> mb, long millis) throws Exception {
        assertThat(mb.trySend("fill")).isTrue();
        final Thread producer = new Thread(() -> {
            try {
                mb.send("parked");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "producer-" + mb.stats().name());
        producer.start();
        // WAITING is set inside LockSupport.park, after the event began
        await(() -> mb.stats().parkedProducers() == 1 && producer.getState() == Thread.State.WAITING,
                "the producer to park");
        Thread.sleep(millis);
        assertThat(mb.tryRecv()).isEqualTo("fill");
        producer.join(Hang.TIMEOUT.toMillis());
        assertThat(producer.isAlive()).isFalse();
        assertThat(mb.tryRecv()).isEqualTo("parked");
    }

    private void commitMarkerAndAwait() throws InterruptedException {
        final MarkerEvent marker = new MarkerEvent();
        marker.id = id;
        marker.commit();
        await(() -> seen.stream().anyMatch(s -> MARKER.equals(s.type()) && id.equals(s.markerId())),
                "the marker event");
    }

    private List<Seen> events(String type, String mailbox) {
        return seen.stream().filter(s -> type.equals(s.type()) && mailbox.equals(s.mailbox()))
                .collect(Collectors.toList());
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        final long deadline = System.nanoTime() + AWAIT_NANOS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(10);
        }
    }
}
