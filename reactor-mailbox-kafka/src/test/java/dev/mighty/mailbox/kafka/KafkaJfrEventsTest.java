package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.KafkaTestSupport.consumerConfig;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.eventually;
import static dev.mighty.mailbox.kafka.KafkaTestSupport.loadTopic;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import dev.mighty.mailbox.Mailbox;
import jdk.jfr.Event;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The receiver's JFR event ({@link UnacknowledgedRecordEvent}), captured with a {@link RecordingStream} in this JVM
 * against the shared broker. Every wait is bounded; nothing asserts how fast anything is. "Exactly one" and "none"
 * are asserted once later checks of the poll thread are known to have run (the published oldest age grew past the
 * event's) and a marker event committed after them has arrived (the stream is ordered).
 */
@Tag("kafka")
@Timeout(120)
@ExtendWith(SharedKafka.class)
class KafkaJfrEventsTest {
    private static final String MARKER = "dev.mighty.mailbox.test.KafkaMarker";
    private static EmbeddedKafka kafka;

    /** Committed after the events under test; once it arrives, every earlier event has. */
    @Name(MARKER)
    @StackTrace(false)
    static final class MarkerEvent extends Event {
        String id;
    }

    /** What the tests read from an event, copied out of the stream's (reused) event object. */
    record Seen(String type, String groupId, String topic, int partition, long offset, long ageNanos,
            long unacknowledged, boolean atBound, String thread, String markerId) {
        static Seen of(RecordedEvent e) {
            final String type = e.getEventType().getName();
            if (MARKER.equals(type)) {
                return new Seen(type, null, null, -1, -1L, -1L, -1L, false, null, e.getString("id"));
            }
            return new Seen(type, e.getString("groupId"), e.getString("topic"), e.getInt("partition"),
                    e.getLong("offset"), e.getDuration("age").toNanos(), e.getLong("unacknowledged"),
                    e.getBoolean("atBound"), e.getThread() == null ? null : e.getThread().getJavaName(), null);
        }
    }

    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final String id = UUID.randomUUID().toString().substring(0, 8);
    private RecordingStream stream;

    @BeforeAll
    static void broker(EmbeddedKafka broker) {
        kafka = broker;
    }

    @BeforeEach
    void openStream() {
        stream = new RecordingStream();
        stream.enable(MARKER);
        stream.enable(UnacknowledgedRecordEvent.NAME);
        stream.onEvent(e -> seen.add(Seen.of(e)));
        stream.startAsync();
    }

    @AfterEach
    void closeStream() {
        stream.close();
    }

    /**
     * Partition 0 keeps one record unacknowledged, partition 1 has every record acknowledged. The threshold is
     * lowered (to 1 ns) only after the acknowledgements, so partition 1 never had a record open at a check that used
     * it, whatever the scheduling: one event for partition 0, none for partition 1.
     */
    @Test
    void shouldRecordOneEventPerEpisodeForThePartitionWhoseOldestRecordStaysUnacknowledged() throws Exception {
        final String topic = "jfr-unacked-" + id;
        final String group = topic + "-group";
        loadTopic(kafka, topic, 2, 20); // offsets 0..9 on each partition
        final KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver
                .<String, String>builder(consumerConfig(kafka, group))
                .topics(List.of(topic))
                .commitInterval(Duration.ofMillis(50))
                .build();
        receiver.loop().ledgers.longOpenNanos = Long.MAX_VALUE; // no episode can start before the acknowledgements below
        final Mailbox<ReceivedRecord<String, String>> inbox = receiver.mailbox();
        receiver.start();
        try {
            ReceivedRecord<String, String> open = null;
            for (int i = 0; i < 20; i++) {
                final ReceivedRecord<String, String> r = inbox.recv(KafkaTestSupport.WAIT);
                assertThat(r).as("record %s", i).isNotNull();
                if (r.partition() == 0 && r.offset() == 3) {
                    open = r; // never acknowledged until the end
                } else {
                    r.acknowledge();
                }
            }
            assertThat(open).isNotNull();
            receiver.loop().ledgers.longOpenNanos = 1L; // volatile: the poll thread that reads it sees the acknowledgements above

            assertThat(eventually(() -> !events(topic, 0).isEmpty())).as("an event for partition 0").isTrue();
            final Seen event = events(topic, 0).get(0);
            // two later checks of the poll thread (each publishes a larger oldest age): no second event may follow
            assertThat(eventually(() -> receiver.oldestUnacknowledgedAge().toNanos() > event.ageNanos())).isTrue();
            final long later = receiver.oldestUnacknowledgedAge().toNanos();
            assertThat(eventually(() -> receiver.oldestUnacknowledgedAge().toNanos() > later)).isTrue();
            commitMarkerAndAwait();

            assertThat(events(topic, 0)).as("once per episode").hasSize(1);
            assertThat(events(topic, 1)).as("every record of partition 1 was acknowledged").isEmpty();
            assertThat(event.groupId()).isEqualTo(group);
            assertThat(event.offset()).as("the oldest unacknowledged record").isEqualTo(3L);
            assertThat(event.ageNanos()).isPositive();
            assertThat(event.unacknowledged()).isEqualTo(1L);
            assertThat(event.atBound()).isFalse();
            assertThat(event.thread()).as("committed by the poll thread").isEqualTo(receiver.threadName("poll"));
            open.acknowledge();
        } finally {
            receiver.close(Duration.ofSeconds(5));
        }
    }

    private void commitMarkerAndAwait() throws InterruptedException {
        final MarkerEvent marker = new MarkerEvent();
        marker.id = id;
        marker.commit();
        assertThat(eventually(() -> seen.stream().anyMatch(s -> MARKER.equals(s.type()) && id.equals(s.markerId()))))
                .as("the marker event").isTrue();
    }

    private List<Seen> events(String topic, int partition) {
        return seen.stream()
                .filter(s -> UnacknowledgedRecordEvent.NAME.equals(s.type()) && topic.equals(s.topic())
                        && s.partition() == partition)
                .collect(Collectors.toList());
    }
}
