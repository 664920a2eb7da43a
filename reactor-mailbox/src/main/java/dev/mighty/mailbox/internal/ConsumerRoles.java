package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * The consumer-role slot of one {@link MailboxRing}: one subscription at a time may poll, whichever face it uses
 * ({@code MailboxPublisher}, {@code MailboxFlux}). A holder that is cancelled but still finishing its last delivery
 * does not refuse a newcomer: the newcomer is queued in {@code next} and handed the role when the holder detaches.
 *
 * <h2>Threads and visibility</h2>
 * Any thread. Both fields change only by CAS; a newcomer's queueing and the holder's detach may race, and
 * {@link #handOff()} is idempotent so either side may complete the hand-over. The role CAS orders the previous
 * holder's last poll before the next holder's first (pairs with {@code consumerRole()} read by drains before they
 * poll). Not padded: written on attach/detach only, read once per drain pass.
 */
final class ConsumerRoles {
    /** The subscription that holds the consumer role, or null. */
    private volatile ConsumerRole holder;
    private static final VarHandle HOLDER;
    /** A subscription accepted while the cancelled holder finishes its last delivery, or null. */
    private volatile ConsumerRole next;
    private static final VarHandle NEXT;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            HOLDER = lookup.findVarHandle(ConsumerRoles.class, "holder", ConsumerRole.class);
            NEXT = lookup.findVarHandle(ConsumerRoles.class, "next", ConsumerRole.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    ConsumerRole lvHolder() {
        return holder;
    }

    private boolean casHolder(ConsumerRole expect, ConsumerRole update) {
        return HOLDER.compareAndSet(this, expect, update);
    }

    private boolean casNext(ConsumerRole expect, ConsumerRole update) {
        return NEXT.compareAndSet(this, expect, update);
    }

    /** @return {@code MailboxRing.ROLE_ACQUIRED}, {@code ROLE_QUEUED} or {@code ROLE_REFUSED} */
    int attach(ConsumerRole role) {
        Objects.requireNonNull(role, "role");
        for (;;) {
            final ConsumerRole current = holder;
            if (current == null) {
                if (casHolder(null, role)) {
                    return MailboxRing.ROLE_ACQUIRED;
                }
                continue;
            }
            if (!current.isCancelled()) {
                return MailboxRing.ROLE_REFUSED;
            }
            final ConsumerRole queued = next;
            if (queued != null && !queued.isCancelled()) {
                return MailboxRing.ROLE_REFUSED;
            }
            if (!casNext(queued, role)) {
                continue;
            }
            // NOTE: the holder may have detached between our read of the holder and the CAS above, seeing no
            // successor; hand off ourselves. handOff() is idempotent, so racing with the holder is benign.
            if (holder == null && handOff() == role) {
                return MailboxRing.ROLE_ACQUIRED;
            }
            return MailboxRing.ROLE_QUEUED;
        }
    }

    void detach(ConsumerRole role) {
        if (casHolder(role, null)) {
            final ConsumerRole successor = handOff();
            if (successor != null) {
                successor.wake();
            }
        }
    }

    /** Moves a queued successor into the empty role; returns it, or null if there was none or the role is taken. */
    private ConsumerRole handOff() {
        for (;;) {
            final ConsumerRole queued = next;
            if (queued == null || holder != null) {
                return null;
            }
            if (casHolder(null, queued)) {
                casNext(queued, null);
                return queued;
            }
        }
    }
}
