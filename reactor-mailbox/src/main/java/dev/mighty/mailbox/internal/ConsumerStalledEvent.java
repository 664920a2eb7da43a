package dev.mighty.mailbox.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * A periodic event (default every second), emitted for each watched mailbox whose consumer received nothing
 * since the previous check while messages were waiting (see {@link StallWatch}). Emitted by the hook that
 * {@link MailboxJfr#installStallCheck()} registers with {@code FlightRecorder.addPeriodicEvent}, which the
 * recorder runs only while a recording has this event enabled.
 *
 * <p>A consumer without demand counts as stalled: a {@code MailboxPublisher} whose subscriber requested
 * nothing leaves messages waiting, and that is what this event shows.
 */
@Name(ConsumerStalledEvent.NAME)
@Label("Mailbox Consumer Stalled")
@Category("reactor-mailbox")
@Description("Messages waited in a mailbox for at least one period and its consumer received none")
@Period("1 s")
@StackTrace(false)
final class ConsumerStalledEvent extends Event {
    static final String NAME = "dev.mighty.mailbox.ConsumerStalled";

    @Label("Mailbox")
    @Description("The mailbox's name, from the builder's name(String)")
    String mailbox;

    @Label("Capacity")
    int capacity;

    @Label("Size")
    @Description("Messages waiting in the mailbox")
    int size;

    @Label("Stalled For")
    @Description("Time since the check at which messages were waiting and after which none was received")
    @Timespan(Timespan.NANOSECONDS)
    long stalledFor;

    @Label("Received")
    @Description("Messages received since the mailbox was created (unchanged while stalled)")
    long received;

    @Label("Parked Producers")
    @Description("Producers parked now on the full mailbox")
    int parkedProducers;

    @Label("Consumer Waiting")
    @Description("Whether the consumer is registered as waiting for data; true with messages waiting points at a "
            + "subscriber without demand, or a lost wake-up")
    boolean consumerWaiting;
}
