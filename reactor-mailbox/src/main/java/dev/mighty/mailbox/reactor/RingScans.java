package dev.mighty.mailbox.reactor;

import dev.mighty.mailbox.internal.MailboxRing;
import reactor.core.Scannable.Attr;

/** The {@code Scannable} keys every face of this package reports the same way: the mailbox's own. */
final class RingScans {
    private RingScans() {
    }

    /**
     * @return {@code NAME} (the mailbox's name), {@code CAPACITY} or {@code BUFFERED} (its size) of {@code ring}, or
     *         null for any other key
     */
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    static Object scan(MailboxRing<?> ring, Attr key) {
        if (key == Attr.NAME) {
            return ring.name();
        }
        if (key == Attr.CAPACITY) {
            return ring.capacity();
        }
        if (key == Attr.BUFFERED) {
            return ring.size();
        }
        return null;
    }
}
