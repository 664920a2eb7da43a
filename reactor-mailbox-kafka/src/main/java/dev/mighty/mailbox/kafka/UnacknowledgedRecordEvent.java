package dev.mighty.mailbox.kafka;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * A partition's oldest unacknowledged record has been the oldest for {@code 30 s}: its committed offset cannot
 * move past it. Committed by the poll thread at the moment it logs the matching WARNING, once per episode: the
 * next one for that partition comes only after every record of the partition was acknowledged (or the partition
 * was revoked and assigned again) and a record stayed open that long again. Its thread is the poll thread.
 *
 * <p>Once per episode rather than periodic (as {@code dev.mighty.mailbox.ConsumerStalled} is): a periodic event
 * runs on the recorder's periodic thread, and the ledgers are the poll thread's alone (plain fields, no lock), so
 * it would need per-partition state published across threads for every partition at every period, when the only
 * news is the start of an episode; how the age goes on growing is the {@code oldest.unacknowledged.age} gauge's
 * job ({@link KafkaMailboxReceiver#oldestUnacknowledgedAge()}, {@link KafkaMailboxReceiver#stats()}). And one
 * event per warning line keeps the recording and the log in step.
 *
 * <p>Created only by {@link KafkaJfr#unacknowledgedRecord}, which the receiver calls only when
 * {@code MailboxEvents.enabled()} (so never without {@code jdk.jfr}, nor under {@code -Ddev.mighty.mailbox.jfr=off}).
 */
@Name(UnacknowledgedRecordEvent.NAME)
@Label("Kafka Receiver Unacknowledged Record")
@Category("reactor-mailbox")
@Description("A partition's oldest unacknowledged record has been open for 30 s; the partition's committed offset"
        + " cannot move past it. Once per episode")
@StackTrace(false)
final class UnacknowledgedRecordEvent extends Event {
    static final String NAME = "dev.mighty.mailbox.kafka.UnacknowledgedRecord";

    @Label("Group Id")
    @Description("The consumer group's group.id")
    String groupId;

    @Label("Topic")
    String topic;

    @Label("Partition")
    int partition;

    @Label("Offset")
    @Description("The offset of the oldest unacknowledged record: the offset the partition's commits are held at")
    long offset;

    @Label("Age")
    @Description("How long that record has been the partition's oldest unacknowledged one (at most since its"
            + " delivery into the mailbox)")
    @Timespan(Timespan.NANOSECONDS)
    long age;

    @Label("Unacknowledged")
    @Description("Records of the partition delivered and not yet acknowledged, counted when the event was made")
    long unacknowledged;

    @Label("Paused At Bound")
    @Description("Whether the partition is paused because its unacknowledged records reached maxUnacknowledged")
    boolean atBound;
}
