package dev.mighty.mailbox.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A mailbox closed with a cause ({@code closeExceptionally}, or a {@code MailboxSubscriber} receiving
 * {@code onError}). Emitted once per mailbox, by the closer whose cause won; its thread and stack trace are
 * the closer's.
 */
@Name(ClosedExceptionallyEvent.NAME)
@Label("Mailbox Closed Exceptionally")
@Category("reactor-mailbox")
@Description("A mailbox was closed with a cause; its consumer gets the cause after draining what is left")
@StackTrace(true)
final class ClosedExceptionallyEvent extends Event {
    static final String NAME = "dev.mighty.mailbox.ClosedExceptionally";

    @Label("Mailbox")
    @Description("The mailbox's name, from the builder's name(String)")
    String mailbox;

    @Label("Capacity")
    int capacity;

    @Label("Size")
    @Description("Messages left to drain when the mailbox was closed")
    int size;

    @Label("Cause Class")
    Class<?> causeClass;

    @Label("Cause Message")
    String causeMessage;
}
