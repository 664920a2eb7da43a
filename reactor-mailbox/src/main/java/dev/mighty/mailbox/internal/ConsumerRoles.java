package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * The consumer-role slot of one {@link MailboxRing}: one subscription at a time may poll, whichever face it uses
 * ({@code MailboxPublisher}, {@code MailboxFlux}). A holder that is cancelled but still finishing its last delivery
 * does not refuse a newcomer: the newcomer is queued behind it and handed the role when the holder detaches.
 *
 * <h2>The slot word</h2>
 * One reference, {@code slot}, changed only by CAS:
 * <pre>
 *   null                     free
 *   R (a ConsumerRole)       held by R
 *   Queued(R, N)             held by R (cancelled), N queued behind it
 * </pre>
 * <pre>
 *   attach(N):  null -> N                      ACQUIRED
 *               R -> Queued(R, N)              QUEUED, if R is cancelled (else REFUSED)
 *               Queued(R, Q) -> Queued(R, N)   QUEUED, if Q is cancelled (else REFUSED); Q never gets the role
 *   detach(R):  R -> null
 *               Queued(R, N) -> N              then N.wake()
 * </pre>
 * A role is installed at most once in the life of the slot: by its own {@code attach} (from {@code null}) or by
 * the detach that replaces the one {@code Queued} node naming it, and a node is freshly allocated by each
 * successful attach, so a CAS that expects it cannot succeed twice. A role that has held the role and detached
 * is therefore never handed it again. (The slot used to be two words, holder and next, and the hand-over two
 * CASes, {@code holder: null -> next} then {@code next: N -> null}. A detach preempted between them left {@code
 * next = N} behind; N ran, ended and detached, and its own detach read the stale {@code next} and handed N the role
 * a second time, after N had ended; N's wake-up came from its own detach, inside its last pass, so N's loop, whose
 * role flag still said "held", never gave the role back: docs/reliability.md, Findings.)
 *
 * <h2>Threads, progress and visibility</h2>
 * Any thread. {@code attach} and {@code detach} are lock-free (a CAS loop that retries only when another attach
 * or detach changed the slot); a queued attach allocates one node. The slot's CAS orders the previous holder's
 * last poll before the next holder's first (pairs with {@code consumerRole()}, a volatile read, made by drains
 * before they poll). Not padded: written on attach/detach only, read once per drain pass.
 */
final class ConsumerRoles {
    /** {@code null}, the holding {@link ConsumerRole}, or a {@link Queued} node (see the class comment). */
    private volatile Object slot;
    private static final VarHandle SLOT;

    static {
        try {
            SLOT = MethodHandles.lookup().findVarHandle(ConsumerRoles.class, "slot", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The slot while a cancelled holder finishes and a successor waits. Immutable; one per successful queueing. */
    private static final class Queued {
        final ConsumerRole holder;
        final ConsumerRole successor;

        Queued(ConsumerRole holder, ConsumerRole successor) {
            this.holder = holder;
            this.successor = successor;
        }
    }

    private boolean casSlot(Object expect, Object update) {
        return SLOT.compareAndSet(this, expect, update);
    }

    /** @return the subscription that holds the role (a queued successor does not), or null */
    ConsumerRole lvHolder() {
        final Object slot = this.slot;
        return slot instanceof Queued ? ((Queued) slot).holder : (ConsumerRole) slot;
    }

    /** @return {@code MailboxRing.ROLE_ACQUIRED}, {@code ROLE_QUEUED} or {@code ROLE_REFUSED} */
    int attach(ConsumerRole role) {
        Objects.requireNonNull(role, "role");
        for (;;) {
            final Object slot = this.slot;
            if (slot == null) {
                if (casSlot(null, role)) {
                    return MailboxRing.ROLE_ACQUIRED;
                }
                continue;
            }
            final ConsumerRole holder;
            if (slot instanceof Queued) {
                final Queued queued = (Queued) slot;
                if (!queued.successor.isCancelled()) {
                    return MailboxRing.ROLE_REFUSED; // a live successor is queued already
                }
                holder = queued.holder; // cancelled: it was when the node was made, and cancel is for good
            } else {
                holder = (ConsumerRole) slot;
                if (!holder.isCancelled()) {
                    return MailboxRing.ROLE_REFUSED;
                }
            }
            // NOTE: a holder that detaches meanwhile changes the slot, so this CAS fails and we look again (and
            // find the role free, or handed to the successor we would have replaced). A successor replaced here
            // was cancelled while queued and never held the role: its loop ends it without a detach.
            if (casSlot(slot, new Queued(holder, role))) {
                return MailboxRing.ROLE_QUEUED; // our wake() comes from the holder's detach, maybe before this
            }
        }
    }

    void detach(ConsumerRole role) {
        for (;;) {
            final Object slot = this.slot;
            if (slot == role) {
                if (casSlot(role, null)) {
                    return;
                }
            } else if (slot instanceof Queued && ((Queued) slot).holder == role) {
                final ConsumerRole successor = ((Queued) slot).successor;
                if (casSlot(slot, successor)) {
                    successor.wake(); // may run the successor's first pass here
                    return;
                }
            } else {
                return; // not the holder (detached already, or never held it): no effect
            }
            // an attach queued or replaced a successor meanwhile: look again
        }
    }
}
