package dev.mighty.mailbox;

import org.jspecify.annotations.Nullable;

/**
 * Thrown by a send on a closed mailbox, and by {@link Mailbox#recv()} and {@link Mailbox#recvMany} once a
 * mailbox closed with {@link Mailbox#closeExceptionally(Throwable)} has been drained; in that case
 * {@link #getCause()} is the cause given to {@code closeExceptionally}.
 *
 * <p>Unchecked: a closed mailbox is a state the caller can test for ({@link Mailbox#isClosed()}), not an
 * I/O failure.
 */
public final class MailboxClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what was attempted
     * @param cause the cause given to {@code closeExceptionally}, or {@code null} for a normal close
     */
    public MailboxClosedException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
