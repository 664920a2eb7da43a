package dev.mighty.mailbox;

/**
 * The answer of {@link Mailbox#offer(Object)}: a send that never throws on a full or closed mailbox, in the spirit
 * of Reactor's {@code Sinks.EmitResult}, so a caller on a shutdown path needs no {@code try}/{@code catch}.
 */
public enum SendResult {
    /** The message was admitted: the consumer will receive it. */
    OK,
    /** The mailbox is full (occupied + reserved); nothing was admitted. Retry later, or {@code send} to wait. */
    FULL,
    /** The mailbox is closed; nothing was admitted, and nothing will be. */
    CLOSED
}
