package dev.mighty.mailbox.internal;

/**
 * A reserved send found the ring full although permits are outstanding: either {@link MailboxRing#reserve} granted
 * more than was free (a mailbox bug: the over-grant its re-check exists to prevent), or a caller spent permits it
 * did not hold. Never the message's fault, so no adapter treats it as bad input (it is not an
 * {@link IllegalArgumentException}); it propagates to whoever sent, and nothing was claimed.
 */
public final class ReservationInvariantException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    ReservationInvariantException(String message) {
        super(message);
    }
}
