package dev.mighty.mailbox.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * A producer parked on a full mailbox for longer than the threshold (default 10 ms). One event per park: a
 * producer woken by a receive that then loses the freed slot to another producer parks again and starts a new
 * event. The event's duration is the park; its thread and stack trace are the producer's.
 *
 * <p>Created by {@link MailboxJfr#producerParking()} only when a recording has this event enabled.
 */
@Name(ProducerParkedEvent.NAME)
@Label("Mailbox Producer Parked")
@Category("reactor-mailbox")
@Description("A producer parked on a full mailbox (occupied + reserved = capacity) longer than the threshold")
@Threshold("10 ms")
@StackTrace(true)
final class ProducerParkedEvent extends Event {
    static final String NAME = "dev.mighty.mailbox.ProducerParked";

    @Label("Mailbox")
    @Description("The mailbox's name, from the builder's name(String)")
    String mailbox;

    @Label("Capacity")
    int capacity;

    @Label("Size")
    @Description("Messages in the mailbox when the producer woke")
    int size;

    @Label("Reserved")
    @Description("Slots reserved by a MailboxSubscriber when the producer woke; full means size + reserved = capacity")
    long reserved;
}
